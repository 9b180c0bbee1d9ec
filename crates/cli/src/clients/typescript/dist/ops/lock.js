"use strict";
// The lock's operations (src/lock, lua/lock).
Object.defineProperty(exports, "__esModule", { value: true });
exports.Lock = void 0;
const contract_1 = require("../contract");
const call_1 = require("../call");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
const wait_1 = require("../wait");
/** What replication "auto" asks for when the lock's primary has replicas: one replica, one second. */
const DEFAULT_ACKNOWLEDGED = [1, 1000];
class Lock extends wait_1.QueuedResource {
    name;
    fair;
    replication;
    replicas;
    replicationTimeoutMs;
    key;
    fenceKey;
    constructor(name, leaseMs, prefix, waitMode, pollIntervalMs, fair = false, replication = "none", replicas = 1, replicationTimeoutMs = 1000, placeMs = 0) {
        const vars = { prefix, name };
        const lockKey = (0, contract_1.key)("lock", "lock", vars);
        super("lock", vars, lockKey, leaseMs, waitMode, pollIntervalMs, placeMs);
        this.name = name;
        this.fair = fair;
        this.replication = replication;
        this.replicas = replicas;
        this.replicationTimeoutMs = replicationTimeoutMs;
        if (replication === "acknowledged" && replicas === 0) {
            throw new errors_1.InvalidArgument("replicas", "must be at least 1", null);
        }
        this.key = lockKey;
        this.fenceKey = (0, contract_1.key)("lock", "fence", vars);
    }
    /** The WAIT an acquire sends after its script (replicas, timeout ms), or null (tryAcquire skips it for replication "none"). */
    async waits(io) {
        if (this.replication === "none") {
            return null;
        }
        if (this.replication === "acknowledged") {
            return [this.replicas, this.replicationTimeoutMs];
        }
        // auto: the primary of the lock's slot has replicas (asked once per acquire)
        const [info] = await io.all([new call_1.Cmd(["INFO", "replication"], this.key)]);
        return /^connected_slaves:[1-9]/m.test((0, driver_1.text)(info)) ? DEFAULT_ACKNOWLEDGED : null;
    }
    async attempt(io, token, placeMs, waits) {
        const call = scripts.Lock.acquire(this.key, this.fenceKey, this.queueKey, this.placesKey, token, this.leaseMs, placeMs, this.fair, []);
        let reply;
        if (waits === null) {
            reply = (0, driver_1.int)(await io.one(call));
        }
        else {
            // WAIT right after the script, in one pipeline on one connection to the lock's node.
            const [r, a] = await io.all([call, new call_1.Cmd(["WAIT", String(waits[0]), String(waits[1])], this.key)]);
            reply = (0, driver_1.int)(r);
            const acked = (0, driver_1.int)(a);
            if (reply > 0 && acked < waits[0]) {
                // Its token is never used: free the lock now (best effort).
                await this.release(io, token).catch(() => false);
                throw new errors_1.NotReplicated(this.key, reply, Math.max(acked, 0), waits[0]);
            }
        }
        return reply > 0 ? [{ token, fence: reply }, null] : [null, (0, wait_1.busyMs)(reply)];
    }
    tryAcquire(io) {
        return this.tryAcquireAs(io, (0, wait_1.newToken)());
    }
    async tryAcquireAs(io, token) {
        const waits = this.replication === "none" ? null : await this.waits(io);
        return (0, wait_1.once)(this.attempt(io, token, 0, waits), (hint) => new errors_1.LockBusy(this.key, hint));
    }
    acquire(io, timeoutMs) {
        return this.acquireAs(io, (0, wait_1.newToken)(), timeoutMs);
    }
    async acquireAs(io, token, timeoutMs) {
        const waits = await this.waits(io);
        return this.waitFor(io, token, timeoutMs, (placeMs) => this.attempt(io, token, placeMs, waits), () => this.release(io, token));
    }
    async release(io, token) {
        return (0, driver_1.int)(await io.one(scripts.Lock.release(this.key, this.queueKey, this.placesKey, token, this.channel))) === 1;
    }
    async extend(io, token, leaseMs) {
        return (0, driver_1.int)(await io.one(scripts.Lock.extend(this.key, token, leaseMs))) === 1;
    }
    async owned(io, token) {
        const ms = (0, driver_1.int)(await io.one(scripts.Lock.owned(this.key, token)));
        return ms === 0 ? null : ms > 0 ? ms : -1;
    }
    async status(io) {
        const [pttl, fence] = await io.all([(0, call_1.cmd)("PTTL", this.key), (0, call_1.cmd)("GET", this.fenceKey)]);
        const ttl = (0, driver_1.int)(pttl);
        return {
            key: this.key,
            held: ttl !== -2,
            remainingLeaseMs: ttl >= 0 ? ttl : null,
            fence: fence === null ? 0 : (0, driver_1.int)(fence),
        };
    }
    holder(timeoutMs) {
        return this.holding((io) => this.acquire(io, timeoutMs), (io, lease) => this.extend(io, lease.token, this.leaseMs), (io, lease) => this.release(io, lease.token), (lease) => lease.fence);
    }
}
exports.Lock = Lock;
