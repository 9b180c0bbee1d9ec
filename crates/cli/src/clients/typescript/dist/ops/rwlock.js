"use strict";
// The read-write lock's operations (src/rwlock.rs, lua/rwlock).
Object.defineProperty(exports, "__esModule", { value: true });
exports.RwLock = void 0;
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
const wait_1 = require("../wait");
class RwLock {
    leaseMs;
    fair;
    writerKey;
    readersKey;
    intentsKey;
    channel;
    queueKey;
    placesKey;
    wait;
    /** How long a waiter keeps its place in the queue unless renewed (ms). */
    placeMs;
    /** Whether the last acquire had to wait (the next one subscribes first). */
    contended = { last: false };
    constructor(name, leaseMs, prefix, waitMode, pollIntervalMs, fair = false, placeMs = 0) {
        this.leaseMs = leaseMs;
        this.fair = fair;
        this.placeMs = placeMs || (0, wait_1.defaultPlaceMs)(leaseMs);
        this.writerKey = (0, contract_1.key)("rwlock", "writer", { prefix, name });
        this.readersKey = (0, contract_1.key)("rwlock", "readers", { prefix, name });
        this.intentsKey = (0, contract_1.key)("rwlock", "intents", { prefix, name });
        this.channel = (0, contract_1.key)("rwlock", "wake", { prefix, name });
        this.queueKey = (0, contract_1.key)("rwlock", "queue", { prefix, name });
        this.placesKey = (0, contract_1.key)("rwlock", "places", { prefix, name });
        this.wait = { key: this.writerKey, channel: this.channel, notified: waitMode === "notified", pollMs: pollIntervalMs };
    }
    /** writer, readers, intents, queue, places: the keys of every acquire and release. */
    keys() {
        return [this.writerKey, this.readersKey, this.intentsKey, this.queueKey, this.placesKey];
    }
    async attempt(io, role, token, placeMs = 0) {
        const call = role === "read"
            ? scripts.Rwlock.readAcquire(...this.keys(), token, this.leaseMs, placeMs)
            : scripts.Rwlock.writeAcquire(...this.keys(), token, this.leaseMs, placeMs, this.fair);
        const reply = (0, driver_1.int)(await io.one(call));
        return reply === 1 ? [{ token, role }, null] : [null, (0, wait_1.busyMs)(reply)];
    }
    tryRead(io) {
        return this.tryAs(io, "read", (0, wait_1.newToken)());
    }
    tryWrite(io) {
        return this.tryAs(io, "write", (0, wait_1.newToken)());
    }
    async tryAs(io, role, token) {
        const [got, hint] = await this.attempt(io, role, token);
        if (got === null) {
            throw new errors_1.LockBusy(this.writerKey, hint);
        }
        return got;
    }
    read(io, timeoutMs) {
        return this.waitAs(io, "read", (0, wait_1.newToken)(), timeoutMs);
    }
    write(io, timeoutMs) {
        return this.waitAs(io, "write", (0, wait_1.newToken)(), timeoutMs);
    }
    waitAs(io, role, token, timeoutMs) {
        const queued = { to: token, leave: () => this.release(io, { token, role }), contended: this.contended };
        return (0, wait_1.untilAcquired)(io, this.wait, timeoutMs, () => this.attempt(io, role, token, this.placeMs), Math.floor(this.placeMs / 2), queued);
    }
    async release(io, lease) {
        const release = lease.role === "read" ? scripts.Rwlock.readRelease : scripts.Rwlock.writeRelease;
        return (0, driver_1.int)(await io.one(release(...this.keys(), lease.token, this.channel))) === 1;
    }
    async extend(io, lease, durationMs) {
        const call = lease.role === "read"
            ? scripts.Rwlock.readExtend(this.readersKey, lease.token, durationMs)
            : scripts.Rwlock.writeExtend(this.writerKey, lease.token, durationMs);
        return (0, driver_1.int)(await io.one(call)) === 1;
    }
    holder(role, timeoutMs) {
        return {
            key: this.writerKey,
            leaseMs: this.leaseMs,
            acquire: (io) => this.waitAs(io, role, (0, wait_1.newToken)(), timeoutMs),
            extend: (io, l) => this.extend(io, l, this.leaseMs),
            release: (io, l) => this.release(io, l),
            token: (l) => l.token,
            fence: () => null,
        };
    }
}
exports.RwLock = RwLock;
