import { Io } from "../driver";
import type { Holder } from "../hold";
import type { Permit } from "../records";
export declare class Semaphore {
    readonly limit: number;
    readonly leaseMs: number;
    readonly fair: boolean;
    readonly key: string;
    readonly channel: string;
    readonly queueKey: string;
    readonly placesKey: string;
    private readonly wait;
    /** How long a waiter keeps its place in the queue unless renewed (ms). */
    readonly placeMs: number;
    /** Whether the last acquire had to wait (the next one subscribes first). */
    private readonly contended;
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
