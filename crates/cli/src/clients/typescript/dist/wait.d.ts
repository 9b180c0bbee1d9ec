import type { Io } from "./driver";
import type { Holder } from "./hold";
/** One attempt: what it got, or null and the holder's remaining lease in ms (null: unknown). */
export type Attempt<T> = [T | null, number | null];
/** The remaining lease of a refusal `-<ms>` (null: unknown). */
export declare function busyMs(reply: number): number | null;
/**
 * How long a waiter keeps its place in the queue unless renewed, by default: a third of the
 * lease (at least 1 ms), so that a waiter that disappeared is skipped three times sooner than a
 * holder that did; a live waiter renews it every half place.
 */
export declare function defaultPlaceMs(leaseMs: number): number;
/** An unguessable owner token: 16 random bytes as lowercase hex. */
export declare function newToken(): string;
export interface WaitSettings {
    key: string;
    channel: string;
    notified: boolean;
    pollMs: number;
}
/** A waiter in a resource's queue: its token, how it gives its place up, and whether the resource's last acquire had to wait. */
export interface Queued {
    to: string;
    leave: () => Promise<unknown>;
    contended: {
        last: boolean;
    };
}
export declare function untilAcquired<T>(io: Io, w: WaitSettings, timeoutMs: number, attempt: () => Promise<Attempt<T>>, maxWaitMs?: number | null, queue?: Queued | null): Promise<T>;
/** The attempt's lease, or `busy(hint)` thrown (LockBusy, NoPermit) with the holder's remaining lease. */
export declare function once<L>(attempt: Promise<Attempt<L>>, busy: (hint: number | null) => Error): Promise<L>;
/**
 * What the lock, the semaphore and the read-write lock share: the wake channel, the queue of
 * waiters and their places (the pattern's `wake`, `queue` and `places` keys), how long a place
 * lasts, how to wait and whether the last acquire had to wait (the next one subscribes first).
 */
export declare abstract class QueuedResource<L extends {
    token: string;
}> {
    readonly leaseMs: number;
    readonly channel: string;
    readonly queueKey: string;
    readonly placesKey: string;
    /** How long a waiter keeps its place in the queue unless renewed (ms). */
    readonly placeMs: number;
    private readonly settings;
    private readonly contended;
    protected constructor(pattern: string, vars: {
        prefix: string;
        name: string;
    }, waitKey: string, leaseMs: number, waitMode: string, pollIntervalMs: number, placeMs: number);
    /** Attempts (each renewing the waiter's place) until one gets it; at the timeout `leave` gives the place up. */
    protected waitFor(io: Io, token: string, timeoutMs: number, attempt: (placeMs: number) => Promise<Attempt<L>>, leave: () => Promise<unknown>): Promise<L>;
    /** A hold of the resource (`acquire` waiting), its lease renewed by `extend`, given back by `release`. */
    protected holding(acquire: (io: Io) => Promise<L>, extend: (io: Io, lease: L) => Promise<boolean>, release: (io: Io, lease: L) => Promise<boolean>, fence?: (lease: L) => number | null): Holder<L>;
}
