import { Io } from "../driver";
import type { Holder } from "../hold";
import type { Permit } from "../records";
import { QueuedResource } from "../wait";
export declare class Semaphore extends QueuedResource<Permit> {
    readonly limit: number;
    readonly fair: boolean;
    readonly key: string;
    constructor(name: string, limit: number, leaseMs: number, prefix: string, waitMode: string, pollIntervalMs: number, fair?: boolean, placeMs?: number);
    private attempt;
    tryAcquire(io: Io): Promise<Permit>;
    tryAcquireAs(io: Io, token: string): Promise<Permit>;
    acquire(io: Io, timeoutMs: number): Promise<Permit>;
    acquireAs(io: Io, token: string, timeoutMs: number): Promise<Permit>;
    release(io: Io, token: string): Promise<boolean>;
    extend(io: Io, token: string, leaseMs: number): Promise<boolean>;
    holder(timeoutMs: number): Holder<Permit>;
}
