// The lock's operations (src/lock, lua/lock).

import { key } from "../contract";
import { Cmd, cmd } from "../call";
import { Io, int, text } from "../driver";
import { InvalidArgument, LockBusy, NotReplicated } from "../errors";
import type { Holder } from "../hold";
import type { Lease, LockStatus } from "../records";
import * as scripts from "../scripts";
import { Attempt, WaitSettings, busyMs, defaultPlaceMs, newToken, untilAcquired } from "../wait";

/** What replication "auto" asks for when the lock's primary has replicas: one replica, one second. */
const DEFAULT_ACKNOWLEDGED: [number, number] = [1, 1000];

export class Lock {
  readonly key: string;
  readonly fenceKey: string;
  readonly channel: string;
  readonly queueKey: string;
  readonly placesKey: string;
  private readonly wait: WaitSettings;
  /** How long a waiter keeps its place in the queue unless renewed (ms). */
  readonly placeMs: number;
  /** Whether the last acquire had to wait (the next one subscribes first). */
  private readonly contended = { last: false };

  constructor(
    readonly name: string,
    readonly leaseMs: number,
    prefix: string,
    waitMode: string,
    pollIntervalMs: number,
    readonly fair: boolean = false,
    private readonly replication: string = "none",
    private readonly replicas: number = 1,
    private readonly replicationTimeoutMs: number = 1000,
    placeMs: number = 0,
  ) {
    this.placeMs = placeMs || defaultPlaceMs(leaseMs);
    if (replication === "acknowledged" && replicas === 0) {
      throw new InvalidArgument("replicas", "must be at least 1", null);
    }
    this.key = key("lock", "lock", { prefix, name });
    this.fenceKey = key("lock", "fence", { prefix, name });
    this.channel = key("lock", "wake", { prefix, name });
    this.queueKey = key("lock", "queue", { prefix, name });
    this.placesKey = key("lock", "places", { prefix, name });
    this.wait = { key: this.key, channel: this.channel, notified: waitMode === "notified", pollMs: pollIntervalMs };
  }

  /** The WAIT an acquire sends after its script (replicas, timeout ms), or null (tryAcquire skips it for replication "none"). */
  private async waits(io: Io): Promise<[number, number] | null> {
    if (this.replication === "none") {
      return null;
    }
    if (this.replication === "acknowledged") {
      return [this.replicas, this.replicationTimeoutMs];
    }
    // auto: the primary of the lock's slot has replicas (asked once per acquire)
    const [info] = await io.all([new Cmd(["INFO", "replication"], this.key)]);
    return /^connected_slaves:[1-9]/m.test(text(info)) ? DEFAULT_ACKNOWLEDGED : null;
  }

  private async attempt(io: Io, token: string, placeMs: number, waits: [number, number] | null): Promise<Attempt<Lease>> {
    const call = scripts.Lock.acquire(
      this.key, this.fenceKey, this.queueKey, this.placesKey, token, this.leaseMs, placeMs, this.fair, [],
    );
    let reply: number;
    if (waits === null) {
      reply = int(await io.one(call));
    } else {
      // WAIT right after the script, in one pipeline on one connection to the lock's node.
      const [r, a] = await io.all([call, new Cmd(["WAIT", String(waits[0]), String(waits[1])], this.key)]);
      reply = int(r);
      const acked = int(a);
      if (reply > 0 && acked < waits[0]) {
        // Its token is never used: free the lock now (best effort).
        await this.release(io, token).catch(() => false);
        throw new NotReplicated(this.key, reply, Math.max(acked, 0), waits[0]);
      }
    }
    return reply > 0 ? [{ token, fence: reply }, null] : [null, busyMs(reply)];
  }

  tryAcquire(io: Io): Promise<Lease> {
    return this.tryAcquireAs(io, newToken());
  }

  async tryAcquireAs(io: Io, token: string): Promise<Lease> {
    const waits = this.replication === "none" ? null : await this.waits(io);
    const [got, hint] = await this.attempt(io, token, 0, waits);
    if (got === null) {
      throw new LockBusy(this.key, hint);
    }
    return got;
  }

  acquire(io: Io, timeoutMs: number): Promise<Lease> {
    return this.acquireAs(io, newToken(), timeoutMs);
  }

  async acquireAs(io: Io, token: string, timeoutMs: number): Promise<Lease> {
    const queued = { to: token, leave: () => this.release(io, token), contended: this.contended };
    const waits = await this.waits(io);
    return untilAcquired(io, this.wait, timeoutMs, () => this.attempt(io, token, this.placeMs, waits), Math.floor(this.placeMs / 2), queued);
  }

  async release(io: Io, token: string): Promise<boolean> {
    return int(await io.one(scripts.Lock.release(this.key, this.queueKey, this.placesKey, token, this.channel))) === 1;
  }

  async extend(io: Io, token: string, leaseMs: number): Promise<boolean> {
    return int(await io.one(scripts.Lock.extend(this.key, token, leaseMs))) === 1;
  }

  async owned(io: Io, token: string): Promise<number | null> {
    const ms = int(await io.one(scripts.Lock.owned(this.key, token)));
    return ms === 0 ? null : ms > 0 ? ms : -1;
  }

  async status(io: Io): Promise<LockStatus> {
    const [pttl, fence] = await io.all([cmd("PTTL", this.key), cmd("GET", this.fenceKey)]);
    const ttl = int(pttl);
    return {
      key: this.key,
      held: ttl !== -2,
      remainingLeaseMs: ttl >= 0 ? ttl : null,
      fence: fence === null ? 0 : int(fence),
    };
  }

  holder(timeoutMs: number): Holder<Lease> {
    return {
      key: this.key,
      leaseMs: this.leaseMs,
      acquire: (io) => this.acquire(io, timeoutMs),
      extend: (io, lease) => this.extend(io, lease.token, this.leaseMs),
      release: (io, lease) => this.release(io, lease.token),
      token: (lease) => lease.token,
      fence: (lease) => lease.fence,
    };
  }
}
