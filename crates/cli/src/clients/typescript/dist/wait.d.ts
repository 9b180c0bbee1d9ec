import type { Io } from "./driver";
/** One attempt: what it got, or null and the holder's remaining lease in ms (null: unknown). */
export type Attempt<T> = [T | null, number | null];
/** The remaining lease of a refusal `-<ms>` (null: unknown). */
export declare function busyMs(reply: number): number | null;
/** An unguessable owner token: 16 random bytes as lowercase hex. */
/**
 * How long a waiter keeps its place in the queue unless renewed, by default: a third of the
 * lease (at least 1 ms), so that a waiter that disappeared is skipped three times sooner than a
 * holder that did; a live waiter renews it every half place.
 */
export declare function defaultPlaceMs(leaseMs: number): number;
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
