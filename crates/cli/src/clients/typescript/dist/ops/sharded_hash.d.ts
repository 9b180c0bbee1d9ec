import { Io } from "../driver";
import type { HashPlan, Health, ImportReport, ListpackLimits } from "../records";
/** The key remembering one call with a request id, in k's slot (manifest: request_key). */
export declare function requestKey(k: string, requestId: string): string;
export declare function noRequestKey(k: string): string;
type Pair = [Buffer, Buffer];
export declare class ShardedHash {
    readonly base: string;
    private readonly fieldsPerShard;
    private readonly maxId;
    private readonly separator;
    private readonly strict;
    private readonly entries;
    private readonly value;
    readonly shards: number;
    readonly metaKey: string;
    private readonly byId;
    private readonly layout;
    constructor(base: string, shards: number, fieldsPerShard: number, maxId: number, separator: string, strict: boolean, entries: number, value: number, recordsLayout: boolean);
    layoutFields(): Map<string, string>;
    keyOfShard(shard: number): string;
    shardOf(field: Buffer): number;
    shardKey(field: Buffer): string;
    private checkPair;
    claimLayout(io: Io): Promise<void>;
    private write;
    set(io: Io, field: Buffer, value: Buffer): Promise<boolean>;
    setIfAbsent(io: Io, field: Buffer, value: Buffer): Promise<boolean>;
    setMany(io: Io, items: readonly Pair[]): Promise<number>;
    setIfAbsentMany(io: Io, items: readonly Pair[]): Promise<number>;
    get(io: Io, field: Buffer): Promise<Buffer | null>;
    getMany(io: Io, fields: readonly Buffer[]): Promise<(Buffer | null)[]>;
    delete(io: Io, field: Buffer): Promise<boolean>;
    exists(io: Io, field: Buffer): Promise<boolean>;
    private incrBy;
    incr(io: Io, field: Buffer, delta: number | bigint): Promise<number>;
    incrOnce(io: Io, field: Buffer, delta: number | bigint, requestId: string, requestTtlMs: number): Promise<number>;
    len(io: Io): Promise<number>;
    isEmpty(io: Io): Promise<boolean>;
    inspect(io: Io, sample: number): Promise<Health>;
    /** Why an import rejects an item (null: it goes into the batch). */
    private stage;
    /** One batch of an import: one write per shard (strict) or HSETNX per item; a full shard rejects its items. */
    private importBatch;
    importItems(io: Io, items: readonly Pair[], batch: number): Promise<ImportReport>;
    static planned(io: Io, base: string, expected: number): Promise<[ShardedHash, HashPlan]>;
    static listpackLimits(io: Io): Promise<ListpackLimits | null>;
    static open(io: Io, base: string): Promise<ShardedHash>;
}
/** P(X > limit) for X ~ Binomial(n, p), exactly as src/sharded_hash/plan.rs sums it. */
export declare function binomialTail(n: number, p: number, limit: number): number;
/**
 * The smallest shard count for which shards * P(Bin(expected, 1/shards) >
 * entries) <= 1e-9 (src/sharded_hash/plan.rs: the same search, so every
 * client plans the same count).
 */
export declare function planShards(expected: number, entries: number, target?: number): number;
export {};
