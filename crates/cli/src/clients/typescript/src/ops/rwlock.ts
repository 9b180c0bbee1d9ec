// The read-write lock's operations (src/rwlock.rs, lua/rwlock).

import { key } from "../contract";
import { Io, int } from "../driver";
import { LockBusy } from "../errors";
import type { Holder } from "../hold";
import type { RwLease } from "../records";
import * as scripts from "../scripts";
import { Attempt, QueuedResource, busyMs, newToken, once } from "../wait";

type Role = "read" | "write";

export class RwLock extends QueuedResource<RwLease> {
  readonly writerKey: string;
  readonly readersKey: string;
  readonly intentsKey: string;

  constructor(
    name: string,
    leaseMs: number,
    prefix: string,
    waitMode: string,
    pollIntervalMs: number,
    readonly fair: boolean = false,
    placeMs: number = 0,
  ) {
    const vars = { prefix, name };
    const writer = key("rwlock", "writer", vars);
    super("rwlock", vars, writer, leaseMs, waitMode, pollIntervalMs, placeMs);
    this.writerKey = writer;
    this.readersKey = key("rwlock", "readers", vars);
    this.intentsKey = key("rwlock", "intents", vars);
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

  tryAs(io: Io, role: Role, token: string): Promise<RwLease> {
    return once(this.attempt(io, role, token), (hint) => new LockBusy(this.writerKey, hint));
  }

  read(io: Io, timeoutMs: number): Promise<RwLease> {
    return this.waitAs(io, "read", newToken(), timeoutMs);
  }

  write(io: Io, timeoutMs: number): Promise<RwLease> {
    return this.waitAs(io, "write", newToken(), timeoutMs);
  }

  waitAs(io: Io, role: Role, token: string, timeoutMs: number): Promise<RwLease> {
    const leave = () => this.release(io, { token, role });
    return this.waitFor(io, token, timeoutMs, (placeMs) => this.attempt(io, role, token, placeMs), leave);
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
    return this.holding(
      (io) => this.waitAs(io, role, newToken(), timeoutMs),
      (io, l) => this.extend(io, l, this.leaseMs),
      (io, l) => this.release(io, l),
    );
  }
}
