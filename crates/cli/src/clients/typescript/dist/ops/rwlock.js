"use strict";
// The read-write lock's operations (src/rwlock.rs, lua/rwlock).
Object.defineProperty(exports, "__esModule", { value: true });
exports.RwLock = void 0;
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
const wait_1 = require("../wait");
class RwLock extends wait_1.QueuedResource {
    fair;
    writerKey;
    readersKey;
    intentsKey;
    constructor(name, leaseMs, prefix, waitMode, pollIntervalMs, fair = false, placeMs = 0) {
        const vars = { prefix, name };
        const writer = (0, contract_1.key)("rwlock", "writer", vars);
        super("rwlock", vars, writer, leaseMs, waitMode, pollIntervalMs, placeMs);
        this.fair = fair;
        this.writerKey = writer;
        this.readersKey = (0, contract_1.key)("rwlock", "readers", vars);
        this.intentsKey = (0, contract_1.key)("rwlock", "intents", vars);
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
    tryAs(io, role, token) {
        return (0, wait_1.once)(this.attempt(io, role, token), (hint) => new errors_1.LockBusy(this.writerKey, hint));
    }
    read(io, timeoutMs) {
        return this.waitAs(io, "read", (0, wait_1.newToken)(), timeoutMs);
    }
    write(io, timeoutMs) {
        return this.waitAs(io, "write", (0, wait_1.newToken)(), timeoutMs);
    }
    waitAs(io, role, token, timeoutMs) {
        const leave = () => this.release(io, { token, role });
        return this.waitFor(io, token, timeoutMs, (placeMs) => this.attempt(io, role, token, placeMs), leave);
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
        return this.holding((io) => this.waitAs(io, role, (0, wait_1.newToken)(), timeoutMs), (io, l) => this.extend(io, l, this.leaseMs), (io, l) => this.release(io, l));
    }
}
exports.RwLock = RwLock;
