// The read-write lock's operations (src/rwlock.rs, lua/rwlock).

import { key } from "../contract";
import { Io, int } from "../driver";
import { LockBusy } from "../errors";
import type { Holder } from "../hold";
import type { RwLease } from "../records";
import * as scripts from "../scripts";
import { Attempt, WaitSettings, busyMs, defaultPlaceMs, newToken, untilAcquired } from "../wait";

type Role = "read" | "write";

export class RwLock {
  readonly writerKey: string;
  readonly readersKey: string;
  readonly intentsKey: string;
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
    readonly leaseMs: number,
    prefix: string,
    waitMode: string,
    pollIntervalMs: number,
    readonly fair: boolean = false,
    placeMs: number = 0,
  ) {
    this.placeMs = placeMs || defaultPlaceMs(leaseMs);
    this.writerKey = key("rwlock", "writer", { prefix, name });
    this.readersKey = key("rwlock", "readers", { prefix, name });
    this.intentsKey = key("rwlock", "intents", { prefix, name });
    this.channel = key("rwlock", "wake", { prefix, name });
    this.queueKey = key("rwlock", "queue", { prefix, name });
    this.placesKey = key("rwlock", "places", { prefix, name });
    this.wait = { key: this.writerKey, channel: this.channel, notified: waitMode === "notified", pollMs: pollIntervalMs };
  }

  /** writer, readers, intents, queue, places: the keys of every acquire and release. */
  private keys(): [string, string, string, string, string] {
    return [this.writerKey, this.readersKey, this.intentsKey, this.queueKey, this.placesKey];
  }

  private async attempt(io: Io, role: Role, token: string, placeMs = 0): Promise<Attempt<RwLease>> {
    const call =
      role === "read"
        ? scripts.Rwlock.readAcquire(...this.keys(), token, this.leaseMs, placeMs)
        : scripts.Rwlock.writeAcquire(...this.keys(), token, this.leaseMs, placeMs, this.fair);
    const reply = int(await io.one(call));
    return reply === 1 ? [{ token, role }, null] : [null, busyMs(reply)];
  }

  tryRead(io: Io): Promise<RwLease> {
    return this.tryAs(io, "read", newToken());
  }

  tryWrite(io: Io): Promise<RwLease> {
    return this.tryAs(io, "write", newToken());
  }

  async tryAs(io: Io, role: Role, token: string): Promise<RwLease> {
    const [got, hint] = await this.attempt(io, role, token);
    if (got === null) {
      throw new LockBusy(this.writerKey, hint);
    }
    return got;
  }

  read(io: Io, timeoutMs: number): Promise<RwLease> {
    return this.waitAs(io, "read", newToken(), timeoutMs);
  }

  write(io: Io, timeoutMs: number): Promise<RwLease> {
    return this.waitAs(io, "write", newToken(), timeoutMs);
  }

  waitAs(io: Io, role: Role, token: string, timeoutMs: number): Promise<RwLease> {
    const queued = { to: token, leave: () => this.release(io, { token, role }), contended: this.contended };
    return untilAcquired(io, this.wait, timeoutMs, () => this.attempt(io, role, token, this.placeMs), Math.floor(this.placeMs / 2), queued);
  }

  async release(io: Io, lease: RwLease): Promise<boolean> {
    const release = lease.role === "read" ? scripts.Rwlock.readRelease : scripts.Rwlock.writeRelease;
    return int(await io.one(release(...this.keys(), lease.token, this.channel))) === 1;
  }

  async extend(io: Io, lease: RwLease, durationMs: number): Promise<boolean> {
    const call =
      lease.role === "read"
        ? scripts.Rwlock.readExtend(this.readersKey, lease.token, durationMs)
        : scripts.Rwlock.writeExtend(this.writerKey, lease.token, durationMs);
    return int(await io.one(call)) === 1;
  }

  holder(role: Role, timeoutMs: number): Holder<RwLease> {
    return {
      key: this.writerKey,
      leaseMs: this.leaseMs,
      acquire: (io) => this.waitAs(io, role, newToken(), timeoutMs),
      extend: (io, l) => this.extend(io, l, this.leaseMs),
      release: (io, l) => this.release(io, l),
      token: (l) => l.token,
      fence: () => null,
    };
  }
}
