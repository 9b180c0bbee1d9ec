import { Io } from "../driver";
import type { Holder } from "../hold";
import type { Lease, LockStatus } from "../records";
import { QueuedResource } from "../wait";
export declare class Lock extends QueuedResource<Lease> {
    readonly name: string;
    readonly fair: boolean;
    private readonly replication;
    private readonly replicas;
    private readonly replicationTimeoutMs;
    readonly key: string;
    readonly fenceKey: string;
    constructor(name: string, leaseMs: number, prefix: string, waitMode: string, pollIntervalMs: number, fair?: boolean, replication?: string, replicas?: number, replicationTimeoutMs?: number, placeMs?: number);
    /** The WAIT an acquire sends after its script (replicas, timeout ms), or null (tryAcquire skips it for replication "none"). */
    private waits;
    private attempt;
    tryAcquire(io: Io): Promise<Lease>;
    tryAcquireAs(io: Io, token: string): Promise<Lease>;
    acquire(io: Io, timeoutMs: number): Promise<Lease>;
    acquireAs(io: Io, token: string, timeoutMs: number): Promise<Lease>;
    release(io: Io, token: string): Promise<boolean>;
    extend(io: Io, token: string, leaseMs: number): Promise<boolean>;
    owned(io: Io, token: string): Promise<number | null>;
    status(io: Io): Promise<LockStatus>;
    holder(timeoutMs: number): Holder<Lease>;
}
