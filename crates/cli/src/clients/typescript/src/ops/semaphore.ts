// The semaphore's operations (src/semaphore.rs, lua/semaphore).

import { key } from "../contract";
import { Io, int } from "../driver";
import { NoPermit } from "../errors";
import type { Holder } from "../hold";
import type { Permit } from "../records";
import * as scripts from "../scripts";
import { Attempt, QueuedResource, busyMs, newToken, once } from "../wait";

export class Semaphore extends QueuedResource<Permit> {
  readonly key: string;

  constructor(
    name: string,
    readonly limit: number,
    leaseMs: number,
    prefix: string,
    waitMode: string,
    pollIntervalMs: number,
    readonly fair: boolean = false,
    placeMs: number = 0,
  ) {
    const vars = { prefix, name };
    const permits = key("semaphore", "permits", vars);
    super("semaphore", vars, permits, leaseMs, waitMode, pollIntervalMs, placeMs);
    this.key = permits;
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

  tryAcquireAs(io: Io, token: string): Promise<Permit> {
    return once(this.attempt(io, token), (hint) => new NoPermit(this.key, hint));
  }

  acquire(io: Io, timeoutMs: number): Promise<Permit> {
    return this.acquireAs(io, newToken(), timeoutMs);
  }

  acquireAs(io: Io, token: string, timeoutMs: number): Promise<Permit> {
    return this.waitFor(io, token, timeoutMs, (placeMs) => this.attempt(io, token, placeMs), () => this.release(io, token));
  }

  async release(io: Io, token: string): Promise<boolean> {
    return int(await io.one(scripts.Semaphore.release(this.key, this.queueKey, this.placesKey, token, this.limit, this.channel))) === 1;
  }

  async extend(io: Io, token: string, leaseMs: number): Promise<boolean> {
    return int(await io.one(scripts.Semaphore.extend(this.key, token, leaseMs))) === 1;
  }

  holder(timeoutMs: number): Holder<Permit> {
    return this.holding(
      (io) => this.acquire(io, timeoutMs),
      (io, p) => this.extend(io, p.token, this.leaseMs),
      (io, p) => this.release(io, p.token),
    );
  }
}
