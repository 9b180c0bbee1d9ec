"use strict";
// The semaphore's operations (src/semaphore.rs, lua/semaphore).
Object.defineProperty(exports, "__esModule", { value: true });
exports.Semaphore = void 0;
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
const wait_1 = require("../wait");
class Semaphore {
    limit;
    leaseMs;
    fair;
    key;
    channel;
    queueKey;
    placesKey;
    wait;
    /** How long a waiter keeps its place in the queue unless renewed (ms). */
    placeMs;
    /** Whether the last acquire had to wait (the next one subscribes first). */
    contended = { last: false };
    constructor(name, limit, leaseMs, prefix, waitMode, pollIntervalMs, fair = false, placeMs = 0) {
        this.limit = limit;
        this.leaseMs = leaseMs;
        this.fair = fair;
        this.placeMs = placeMs || (0, wait_1.defaultPlaceMs)(leaseMs);
        this.key = (0, contract_1.key)("semaphore", "permits", { prefix, name });
        this.channel = (0, contract_1.key)("semaphore", "wake", { prefix, name });
        this.queueKey = (0, contract_1.key)("semaphore", "queue", { prefix, name });
        this.placesKey = (0, contract_1.key)("semaphore", "places", { prefix, name });
        this.wait = { key: this.key, channel: this.channel, notified: waitMode === "notified", pollMs: pollIntervalMs };
    }
    async attempt(io, token, placeMs = 0) {
        const reply = (0, driver_1.int)(await io.one(scripts.Semaphore.acquire(this.key, this.queueKey, this.placesKey, token, this.limit, this.leaseMs, placeMs, this.fair)));
        return reply === 1 ? [{ token }, null] : [null, (0, wait_1.busyMs)(reply)];
    }
    tryAcquire(io) {
        return this.tryAcquireAs(io, (0, wait_1.newToken)());
    }
    async tryAcquireAs(io, token) {
        const [got, hint] = await this.attempt(io, token);
        if (got === null) {
            throw new errors_1.NoPermit(this.key, hint);
        }
        return got;
    }
    acquire(io, timeoutMs) {
        return this.acquireAs(io, (0, wait_1.newToken)(), timeoutMs);
    }
    acquireAs(io, token, timeoutMs) {
        const queued = { to: token, leave: () => this.release(io, token), contended: this.contended };
        return (0, wait_1.untilAcquired)(io, this.wait, timeoutMs, () => this.attempt(io, token, this.placeMs), Math.floor(this.placeMs / 2), queued);
    }
    async release(io, token) {
        return (0, driver_1.int)(await io.one(scripts.Semaphore.release(this.key, this.queueKey, this.placesKey, token, this.limit, this.channel))) === 1;
    }
    async extend(io, token, leaseMs) {
        return (0, driver_1.int)(await io.one(scripts.Semaphore.extend(this.key, token, leaseMs))) === 1;
    }
    holder(timeoutMs) {
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
exports.Semaphore = Semaphore;
