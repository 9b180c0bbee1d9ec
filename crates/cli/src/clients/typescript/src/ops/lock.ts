// The lock's operations (src/lock, lua/lock).

import { key } from "../contract";
import { Cmd, cmd } from "../call";
import { Io, int, text } from "../driver";
import { InvalidArgument, LockBusy, NotReplicated } from "../errors";
import type { Holder } from "../hold";
import type { Lease, LockStatus } from "../records";
import * as scripts from "../scripts";
import { Attempt, QueuedResource, busyMs, newToken, once } from "../wait";

/** What replication "auto" asks for when the lock's primary has replicas: one replica, one second. */
const DEFAULT_ACKNOWLEDGED: [number, number] = [1, 1000];

export class Lock extends QueuedResource<Lease> {
  readonly key: string;
  readonly fenceKey: string;

  constructor(
    readonly name: string,
    leaseMs: number,
    prefix: string,
    waitMode: string,
    pollIntervalMs: number,
    readonly fair: boolean = false,
    private readonly replication: string = "none",
    private readonly replicas: number = 1,
    private readonly replicationTimeoutMs: number = 1000,
    placeMs: number = 0,
  ) {
    const vars = { prefix, name };
    const lockKey = key("lock", "lock", vars);
    super("lock", vars, lockKey, leaseMs, waitMode, pollIntervalMs, placeMs);
    if (replication === "acknowledged" && replicas === 0) {
      throw new InvalidArgument("replicas", "must be at least 1", null);
    }
    this.key = lockKey;
    this.fenceKey = key("lock", "fence", vars);
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
    return once(this.attempt(io, token, 0, waits), (hint) => new LockBusy(this.key, hint));
  }

  acquire(io: Io, timeoutMs: number): Promise<Lease> {
    return this.acquireAs(io, newToken(), timeoutMs);
  }

  async acquireAs(io: Io, token: string, timeoutMs: number): Promise<Lease> {
    const waits = await this.waits(io);
    return this.waitFor(io, token, timeoutMs, (placeMs) => this.attempt(io, token, placeMs, waits), () => this.release(io, token));
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
    return this.holding(
      (io) => this.acquire(io, timeoutMs),
      (io, lease) => this.extend(io, lease.token, this.leaseMs),
      (io, lease) => this.release(io, lease.token),
      (lease) => lease.fence,
    );
  }
}
