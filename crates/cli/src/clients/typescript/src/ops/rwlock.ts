// The read-write lock's operations (src/rwlock.rs, lua/rwlock).

import { key } from "../contract";
import { Io, int } from "../driver";
import { LockBusy, RedisPatternsError } from "../errors";
import type { Holder } from "../hold";
import type { RwLease } from "../records";
import * as scripts from "../scripts";
import { Attempt, WaitSettings, busyMs, newToken, untilAcquired } from "../wait";

type Role = "read" | "write";

export class RwLock {
  readonly writerKey: string;
  readonly readersKey: string;
  readonly intentsKey: string;
  readonly channel: string;
  private readonly wait: WaitSettings;

  constructor(
    name: string,
    readonly leaseMs: number,
    prefix: string,
    waitMode: string,
    pollIntervalMs: number,
  ) {
    this.writerKey = key("rwlock", "writer", { prefix, name });
    this.readersKey = key("rwlock", "readers", { prefix, name });
    this.intentsKey = key("rwlock", "intents", { prefix, name });
    this.channel = key("rwlock", "wake", { prefix, name });
    this.wait = { key: this.writerKey, channel: this.channel, notified: waitMode === "notified", pollMs: pollIntervalMs };
  }

  private async attempt(io: Io, role: Role, token: string): Promise<Attempt<RwLease>> {
    const call =
      role === "read"
        ? scripts.Rwlock.readAcquire(this.writerKey, this.readersKey, this.intentsKey, token, this.leaseMs)
        : scripts.Rwlock.writeAcquire(this.writerKey, this.readersKey, this.intentsKey, token, this.leaseMs, this.leaseMs);
    const reply = int(await io.one(call));
    return reply === 1 ? [{ token, role }, null] : [null, busyMs(reply)];
  }

  private async withdraw(io: Io, token: string): Promise<void> {
    try {
      await this.release(io, { token, role: "write" });
    } catch (e) {
      if (!(e instanceof RedisPatternsError)) {
        throw e;
      }
    }
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
      if (role === "write") {
        await this.withdraw(io, token);
      }
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

  async waitAs(io: Io, role: Role, token: string, timeoutMs: number): Promise<RwLease> {
    const maxWait = role === "write" ? Math.floor(this.leaseMs / 2) : null;
    try {
      return await untilAcquired(io, this.wait, timeoutMs, () => this.attempt(io, role, token), maxWait);
    } catch (e) {
      if (role === "write" && e instanceof RedisPatternsError) {
        await this.withdraw(io, token);
      }
      throw e;
    }
  }

  async release(io: Io, lease: RwLease): Promise<boolean> {
    const call =
      lease.role === "read"
        ? scripts.Rwlock.readRelease(this.readersKey, lease.token, this.channel)
        : scripts.Rwlock.writeRelease(this.writerKey, this.intentsKey, lease.token, this.channel);
    return int(await io.one(call)) === 1;
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
