// Notified waiting, written once for the lock, the semaphore and the
// read-write lock (the protocol of src/lock/wait.rs; manifest: the
// `acquire` protocols): after a refused attempt, subscribe to the
// resource's wake channel (a zero-timeout wait), try once more (a release
// in between is not missed), then wait for a release's message or for the
// holder's remaining lease (plus 1 ms), whichever comes first, and try
// again, until the timeout (LockTimeout). A lost message costs at most the
// holder's lease. Polling mode sleeps interval * uniform(0.5, 1.5) between
// attempts instead.
//
// Woken one at a time (the lock and the semaphore: `queue.to` is the
// waiter's token): a refused attempt keeps the waiter's place in the
// resource's queue, a release publishes the token of the next live waiter,
// and only a message naming this waiter (or `released`) ends its wait;
// every wait lasts at most maxWaitMs (half the place, which each attempt
// renews). A resource whose last acquire had to wait (`queue.contended`)
// subscribes before its first attempt. At the timeout `queue.leave` gives
// the place up.

import { randomBytes } from "crypto";

import { key } from "./contract";
import type { Io } from "./driver";
import { LockTimeout } from "./errors";
import type { Holder } from "./hold";

/** One attempt: what it got, or null and the holder's remaining lease in ms (null: unknown). */
export type Attempt<T> = [T | null, number | null];

/** The remaining lease of a refusal `-<ms>` (null: unknown). */
export function busyMs(reply: number): number | null {
  return reply < 0 ? -reply : null;
}

/**
 * How long a waiter keeps its place in the queue unless renewed, by default: a third of the
 * lease (at least 1 ms), so that a waiter that disappeared is skipped three times sooner than a
 * holder that did; a live waiter renews it every half place.
 */
export function defaultPlaceMs(leaseMs: number): number {
  return Math.max(Math.floor(leaseMs / 3), 1);
}

/** An unguessable owner token: 16 random bytes as lowercase hex. */
export function newToken(): string {
  return randomBytes(16).toString("hex");
}

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
  contended: { last: boolean };
}

export async function untilAcquired<T>(
  io: Io,
  w: WaitSettings,
  timeoutMs: number,
  attempt: () => Promise<Attempt<T>>,
  maxWaitMs: number | null = null,
  queue: Queued | null = null,
): Promise<T> {
  const started = performance.now();
  const to = queue === null ? null : queue.to;
  let subscribed = false;
  let refused = false;
  if (w.notified && timeoutMs > 0 && queue !== null && queue.contended.last) {
    subscribed = true;
    await io.wait(w.channel, 0, to);
  }
  for (;;) {
    const [got, hint] = await attempt();
    if (got !== null) {
      if (queue !== null) {
        queue.contended.last = refused;
      }
      return got;
    }
    refused = true;
    const waited = performance.now() - started;
    if (waited >= timeoutMs) {
      if (queue !== null) {
        await queue.leave().catch(() => undefined); // the place ends by itself otherwise
      }
      throw new LockTimeout(w.key, Math.floor(waited));
    }
    const left = timeoutMs - waited;
    const most = maxWaitMs === null ? left : Math.min(left, maxWaitMs);
    if (!w.notified) {
      await io.sleep(Math.min(w.pollMs * (0.5 + Math.random()), most));
    } else if (!subscribed) {
      subscribed = true;
      await io.wait(w.channel, 0, to);
    } else {
      await io.wait(w.channel, hint === null ? most : Math.min(hint + 1, most), to);
    }
  }
}

/** The attempt's lease, or `busy(hint)` thrown (LockBusy, NoPermit) with the holder's remaining lease. */
export async function once<L>(attempt: Promise<Attempt<L>>, busy: (hint: number | null) => Error): Promise<L> {
  const [got, hint] = await attempt;
  if (got === null) {
    throw busy(hint);
  }
  return got;
}

/**
 * What the lock, the semaphore and the read-write lock share: the wake channel, the queue of
 * waiters and their places (the pattern's `wake`, `queue` and `places` keys), how long a place
 * lasts, how to wait and whether the last acquire had to wait (the next one subscribes first).
 */
export abstract class QueuedResource<L extends { token: string }> {
  readonly channel: string;
  readonly queueKey: string;
  readonly placesKey: string;
  /** How long a waiter keeps its place in the queue unless renewed (ms). */
  readonly placeMs: number;
  private readonly settings: WaitSettings;
  private readonly contended = { last: false };

  protected constructor(
    pattern: string,
    vars: { prefix: string; name: string },
    waitKey: string,
    readonly leaseMs: number,
    waitMode: string,
    pollIntervalMs: number,
    placeMs: number,
  ) {
    this.placeMs = placeMs || defaultPlaceMs(leaseMs);
    this.channel = key(pattern, "wake", vars);
    this.queueKey = key(pattern, "queue", vars);
    this.placesKey = key(pattern, "places", vars);
    this.settings = { key: waitKey, channel: this.channel, notified: waitMode === "notified", pollMs: pollIntervalMs };
  }

  /** Attempts (each renewing the waiter's place) until one gets it; at the timeout `leave` gives the place up. */
  protected waitFor(io: Io, token: string, timeoutMs: number, attempt: (placeMs: number) => Promise<Attempt<L>>, leave: () => Promise<unknown>): Promise<L> {
    const queued = { to: token, leave, contended: this.contended };
    return untilAcquired(io, this.settings, timeoutMs, () => attempt(this.placeMs), Math.floor(this.placeMs / 2), queued);
  }

  /** A hold of the resource (`acquire` waiting), its lease renewed by `extend`, given back by `release`. */
  protected holding(
    acquire: (io: Io) => Promise<L>,
    extend: (io: Io, lease: L) => Promise<boolean>,
    release: (io: Io, lease: L) => Promise<boolean>,
    fence: (lease: L) => number | null = () => null,
  ): Holder<L> {
    return { key: this.settings.key, leaseMs: this.leaseMs, acquire, extend, release, token: (l) => l.token, fence };
  }
}
