import { Io } from "../driver";
import type { EntriesPage, Health, PutReport, SweepReport } from "../records";
/** The bytes the portable path adds before each value: its expiry. */
export declare const EXPIRY_BYTES = 6;
/** The longest time to live or max-idle time, in milliseconds (the scripts' bound). */
export declare const MAX_TTL_MS = 999999999999999;
type Pair = [Buffer, Buffer];
export declare class ExpiringMap {
    readonly base: string;
    readonly shards: number;
    readonly cap: number;
    private readonly entries_;
    private readonly value;
    readonly path: string;
    private readonly idle;
    readonly metaKey: string;
    private readonly layout;
    private readonly native;
    /** Whether the server was found to have the native path's commands (asked once). */
    private probed;
    constructor(base: string, shards: number, cap: number, maxIdleMs: number | null, entries_: number, value: number, recordsLayout: boolean, path?: string);
    layoutFields(): Map<string, string>;
    claimLayout(io: Io): Promise<void>;
    static open(io: Io, base: string): Promise<ExpiringMap>;
    /**
     * On the native path, the first call asks whether the server has per-field TTLs (native_probe:
     * read-only commands, one batch); without them InvalidArgument (path), nothing else sent.
     */
    private onPath;
    private keyOfShard;
    shardKey(field: Buffer): string;
    private checkPair;
    /** Positions by shard, shards in order. */
    private byShard;
    private write;
    put(io: Io, field: Buffer, value: Buffer, ttlMs: number | null): Promise<boolean>;
    putIfAbsent(io: Io, field: Buffer, value: Buffer, ttlMs: number | null): Promise<boolean>;
    putMany(io: Io, items: readonly Pair[], ttlMs: number | null): Promise<PutReport>;
    putIfAbsentMany(io: Io, items: readonly Pair[], ttlMs: number | null): Promise<PutReport>;
    get(io: Io, field: Buffer): Promise<Buffer | null>;
    getMany(io: Io, fields: readonly Buffer[]): Promise<(Buffer | null)[]>;
    remove(io: Io, field: Buffer): Promise<boolean>;
    ttlOf(io: Io, field: Buffer): Promise<number>;
    /** expire.lua, or HPEXPIRE / HPERSIST (ttl 0): 1 set, -1 none to remove, -2 no live entry. */
    private expiryCall;
    persist(io: Io, field: Buffer): Promise<boolean | null>;
    expire(io: Io, field: Buffer, ttlMs: number): Promise<boolean>;
    private asHash;
    len(io: Io): Promise<number>;
    inspect(io: Io, sample: number): Promise<Health>;
    /** The keys of the shards from `from`, and the next start. */
    private range;
    sweep(io: Io, fromShard: number, count: number): Promise<SweepReport>;
    entries(io: Io, fromShard: number, count: number): Promise<EntriesPage>;
    /** HGETALL of each shard, then HPEXPIRETIME of the fields read (one gone since, -2, is left out). */
    private nativeEntries;
}
export {};
