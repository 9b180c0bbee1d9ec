import { Io } from "../driver";
import type { Holder } from "../hold";
import type { RwLease } from "../records";
import { QueuedResource } from "../wait";
type Role = "read" | "write";
export declare class RwLock extends QueuedResource<RwLease> {
    readonly fair: boolean;
    readonly writerKey: string;
    readonly readersKey: string;
    readonly intentsKey: string;
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
