// The semaphore's operations (src/semaphore.rs, lua/semaphore).

import { key } from "../contract";
import { Io, int } from "../driver";
import { NoPermit } from "../errors";
import type { Holder } from "../hold";
import type { Permit } from "../records";
import * as scripts from "../scripts";
import { Attempt, WaitSettings, busyMs, defaultPlaceMs, newToken, untilAcquired } from "../wait";

export class Semaphore {
  readonly key: string;
  readonly channel: string;
  readonly queueKey: string;
  readonly placesKey: string;
  private readonly wait: WaitSettings;
  /** How long a waiter keeps its place in the queue unless renewed (ms). */
  readonly placeMs: number;
  /** Whether the last acquire had to wait (the next one subscribes first). */
  private readonly contended = { last: false };

  constructor(
    name: string,
    readonly limit: number,
    readonly leaseMs: number,
    prefix: string,
    waitMode: string,
    pollIntervalMs: number,
    readonly fair: boolean = false,
    placeMs: number = 0,
  ) {
    this.placeMs = placeMs || defaultPlaceMs(leaseMs);
    this.key = key("semaphore", "permits", { prefix, name });
    this.channel = key("semaphore", "wake", { prefix, name });
    this.queueKey = key("semaphore", "queue", { prefix, name });
    this.placesKey = key("semaphore", "places", { prefix, name });
    this.wait = { key: this.key, channel: this.channel, notified: waitMode === "notified", pollMs: pollIntervalMs };
  }

  private async attempt(io: Io, token: string, placeMs = 0): Promise<Attempt<Permit>> {
    const reply = int(await io.one(scripts.Semaphore.acquire(
          this.key, this.queueKey, this.placesKey, token, this.limit, this.leaseMs, placeMs, this.fair,
        )));
    return reply === 1 ? [{ token }, null] : [null, busyMs(reply)];
  }

  tryAcquire(io: Io): Promise<Permit> {
    return this.tryAcquireAs(io, newToken());
  }

  async tryAcquireAs(io: Io, token: string): Promise<Permit> {
    const [got, hint] = await this.attempt(io, token);
    if (got === null) {
      throw new NoPermit(this.key, hint);
    }
    return got;
  }

  acquire(io: Io, timeoutMs: number): Promise<Permit> {
    return this.acquireAs(io, newToken(), timeoutMs);
  }

  acquireAs(io: Io, token: string, timeoutMs: number): Promise<Permit> {
    const queued = { to: token, leave: () => this.release(io, token), contended: this.contended };
    return untilAcquired(io, this.wait, timeoutMs, () => this.attempt(io, token, this.placeMs), Math.floor(this.placeMs / 2), queued);
  }

  async release(io: Io, token: string): Promise<boolean> {
    return int(await io.one(scripts.Semaphore.release(this.key, this.queueKey, this.placesKey, token, this.limit, this.channel))) === 1;
  }

  async extend(io: Io, token: string, leaseMs: number): Promise<boolean> {
    return int(await io.one(scripts.Semaphore.extend(this.key, token, leaseMs))) === 1;
  }

  holder(timeoutMs: number): Holder<Permit> {
    return {
      key: this.key,
      leaseMs: this.leaseMs,
      acquire: (io) => this.acquire(io, timeoutMs),
      extend: (io, p) => this.extend(io, p.token, this.leaseMs),
      release: (io, p) => this.release(io, p.token),
      token: (p) => p.token,
      fence: () => null,
    };
  }
}
