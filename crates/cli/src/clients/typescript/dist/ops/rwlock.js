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
    writerKey;
    readersKey;
    intentsKey;
    channel;
    wait;
    constructor(name, leaseMs, prefix, waitMode, pollIntervalMs) {
        this.leaseMs = leaseMs;
        this.writerKey = (0, contract_1.key)("rwlock", "writer", { prefix, name });
        this.readersKey = (0, contract_1.key)("rwlock", "readers", { prefix, name });
        this.intentsKey = (0, contract_1.key)("rwlock", "intents", { prefix, name });
        this.channel = (0, contract_1.key)("rwlock", "wake", { prefix, name });
        this.wait = { key: this.writerKey, channel: this.channel, notified: waitMode === "notified", pollMs: pollIntervalMs };
    }
    async attempt(io, role, token) {
        const call = role === "read"
            ? scripts.Rwlock.readAcquire(this.writerKey, this.readersKey, this.intentsKey, token, this.leaseMs)
            : scripts.Rwlock.writeAcquire(this.writerKey, this.readersKey, this.intentsKey, token, this.leaseMs, this.leaseMs);
        const reply = (0, driver_1.int)(await io.one(call));
        return reply === 1 ? [{ token, role }, null] : [null, (0, wait_1.busyMs)(reply)];
    }
    async withdraw(io, token) {
        try {
            await this.release(io, { token, role: "write" });
        }
        catch (e) {
            if (!(e instanceof errors_1.RedisPatternsError)) {
                throw e;
            }
        }
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
            if (role === "write") {
                await this.withdraw(io, token);
            }
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
    async waitAs(io, role, token, timeoutMs) {
        const maxWait = role === "write" ? Math.floor(this.leaseMs / 2) : null;
        try {
            return await (0, wait_1.untilAcquired)(io, this.wait, timeoutMs, () => this.attempt(io, role, token), maxWait);
        }
        catch (e) {
            if (role === "write" && e instanceof errors_1.RedisPatternsError) {
                await this.withdraw(io, token);
            }
            throw e;
        }
    }
    async release(io, lease) {
        const call = lease.role === "read"
            ? scripts.Rwlock.readRelease(this.readersKey, lease.token, this.channel)
            : scripts.Rwlock.writeRelease(this.writerKey, this.intentsKey, lease.token, this.channel);
        return (0, driver_1.int)(await io.one(call)) === 1;
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
