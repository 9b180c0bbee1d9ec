"use strict";
// The semaphore's operations (src/semaphore.rs, lua/semaphore).
Object.defineProperty(exports, "__esModule", { value: true });
exports.Semaphore = void 0;
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
const wait_1 = require("../wait");
class Semaphore extends wait_1.QueuedResource {
    limit;
    fair;
    key;
    constructor(name, limit, leaseMs, prefix, waitMode, pollIntervalMs, fair = false, placeMs = 0) {
        const vars = { prefix, name };
        const permits = (0, contract_1.key)("semaphore", "permits", vars);
        super("semaphore", vars, permits, leaseMs, waitMode, pollIntervalMs, placeMs);
        this.limit = limit;
        this.fair = fair;
        this.key = permits;
    }
    async attempt(io, token, placeMs = 0) {
        const reply = (0, driver_1.int)(await io.one(scripts.Semaphore.acquire(this.key, this.queueKey, this.placesKey, token, this.limit, this.leaseMs, placeMs, this.fair)));
        return reply === 1 ? [{ token }, null] : [null, (0, wait_1.busyMs)(reply)];
    }
    tryAcquire(io) {
        return this.tryAcquireAs(io, (0, wait_1.newToken)());
    }
    tryAcquireAs(io, token) {
        return (0, wait_1.once)(this.attempt(io, token), (hint) => new errors_1.NoPermit(this.key, hint));
    }
    acquire(io, timeoutMs) {
        return this.acquireAs(io, (0, wait_1.newToken)(), timeoutMs);
    }
    acquireAs(io, token, timeoutMs) {
        return this.waitFor(io, token, timeoutMs, (placeMs) => this.attempt(io, token, placeMs), () => this.release(io, token));
    }
    async release(io, token) {
        return (0, driver_1.int)(await io.one(scripts.Semaphore.release(this.key, this.queueKey, this.placesKey, token, this.limit, this.channel))) === 1;
    }
    async extend(io, token, leaseMs) {
        return (0, driver_1.int)(await io.one(scripts.Semaphore.extend(this.key, token, leaseMs))) === 1;
    }
    holder(timeoutMs) {
        return this.holding((io) => this.acquire(io, timeoutMs), (io, p) => this.extend(io, p.token, this.leaseMs), (io, p) => this.release(io, p.token));
    }
}
exports.Semaphore = Semaphore;
