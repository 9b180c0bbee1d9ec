import { Io } from "../driver";
import type { Holder } from "../hold";
import type { RwLease } from "../records";
type Role = "read" | "write";
export declare class RwLock {
    readonly leaseMs: number;
    readonly fair: boolean;
    readonly writerKey: string;
    readonly readersKey: string;
    readonly intentsKey: string;
    readonly channel: string;
    readonly queueKey: string;
    readonly placesKey: string;
    private readonly wait;
    /** How long a waiter keeps its place in the queue unless renewed (ms). */
    readonly placeMs: number;
    /** Whether the last acquire had to wait (the next one subscribes first). */
    private readonly contended;
    constructor(name: string, leaseMs: number, prefix: string, waitMode: string, pollIntervalMs: number, fair?: boolean, placeMs?: number);
    /** writer, readers, intents, queue, places: the keys of every acquire and release. */
    private keys;
    private attempt;
    tryRead(io: Io): Promise<RwLease>;
    tryWrite(io: Io): Promise<RwLease>;
    tryAs(io: Io, role: Role, token: string): Promise<RwLease>;
    read(io: Io, timeoutMs: number): Promise<RwLease>;
    write(io: Io, timeoutMs: number): Promise<RwLease>;
    waitAs(io: Io, role: Role, token: string, timeoutMs: number): Promise<RwLease>;
    release(io: Io, lease: RwLease): Promise<boolean>;
    extend(io: Io, lease: RwLease, durationMs: number): Promise<boolean>;
    holder(role: Role, timeoutMs: number): Holder<RwLease>;
}
export {};
