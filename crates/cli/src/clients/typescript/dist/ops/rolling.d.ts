import { Io } from "../driver";
import type { Added } from "../records";
export declare class RollingStore {
    private readonly limit;
    private readonly shardSize;
    private readonly ttlMs;
    private readonly prefix;
    private readonly marginMs;
    readonly shards: number;
    readonly capacity: number;
    private readonly heads;
    constructor(limit: number, shardSize: number, ttlMs: number, prefix: string, marginMs: number);
    metaKey(k: string): string;
    private window;
    private hashes;
    add(io: Io, k: string, field: string, value: unknown): Promise<Added>;
    get(io: Io, k: string, field: string): Promise<unknown>;
    recent(io: Io, k: string, n: number): Promise<[string, unknown][]>;
    len(io: Io, k: string): Promise<number>;
    clear(io: Io, k: string): Promise<number>;
}
