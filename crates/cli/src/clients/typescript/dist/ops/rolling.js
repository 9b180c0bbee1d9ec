"use strict";
// The rolling store (src/rolling, lua/rolling): the add's retry when another
// writer moved the head (the rolling retry protocol of the manifest).
Object.defineProperty(exports, "__esModule", { value: true });
exports.RollingStore = void 0;
const checks_1 = require("../checks");
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
const MAX_SHARDS = 65_536;
/** The longest TTL the scripts accept (ttl plus the index margin), from the contract. */
const MAX_TTL_MS = contract_1.CONSTANTS.rolling.max_ttl_ms;
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
class RollingStore {
    limit;
    shardSize;
    ttlMs;
    prefix;
    marginMs;
    shards;
    capacity;
    heads = new Map();
    constructor(limit, shardSize, ttlMs, prefix, marginMs) {
        this.limit = limit;
        this.shardSize = shardSize;
        this.ttlMs = ttlMs;
        this.prefix = prefix;
        this.marginMs = marginMs;
        if (shardSize < 1) {
            throw bad("shard_size", "must be at least 1");
        }
        if (limit < shardSize) {
            throw bad("limit", `must be at least shard_size (${shardSize}), got ${limit}`);
        }
        this.shards = Math.ceil(limit / shardSize) + 1;
        if (this.shards > MAX_SHARDS) {
            throw bad("limit", `limit / shard_size gives ${this.shards} shards, at most ${MAX_SHARDS} are allowed`);
        }
        if (ttlMs + marginMs > MAX_TTL_MS) {
            throw bad("ttl", `ttl plus the index margin must be at most ${MAX_TTL_MS} ms`);
        }
        this.capacity = this.shards * shardSize;
    }
    metaKey(k) {
        return (0, contract_1.key)("rolling", "meta", { prefix: this.prefix, key: (0, checks_1.name)("key", k) });
    }
    window(k, first, count) {
        const out = [];
        for (let i = 0; i < count; i++) {
            const s = (first + i) % this.shards;
            out.push((0, contract_1.key)("rolling", "slot_hash", { prefix: this.prefix, key: k, slot: s }));
            out.push((0, contract_1.key)("rolling", "slot_order", { prefix: this.prefix, key: k, slot: s }));
        }
        return out;
    }
    hashes(k) {
        const out = [];
        for (let s = 0; s < this.shards; s++) {
            out.push((0, contract_1.key)("rolling", "slot_hash", { prefix: this.prefix, key: k, slot: s }));
        }
        return out;
    }
    async add(io, k, field, value) {
        const meta = this.metaKey(k);
        const encoded = Buffer.from(JSON.stringify(value), "utf8");
        let guess = this.heads.get(k) ?? 0;
        const windows = contract_1.CONSTANTS.rolling.windows;
        for (let attempt = 0; attempt <= windows.length; attempt++) {
            const [first, count] = attempt < windows.length && windows[attempt] < this.shards ? [guess, windows[attempt]] : [0, this.shards];
            const reply = (await io.one(scripts.Rolling.add(meta, this.window(k, first, count), first, this.shards, this.shardSize, field, encoded, this.ttlMs, this.ttlMs + this.marginMs)));
            const [status, head, gen, evicted] = reply.map(driver_1.int);
            this.heads.set(k, head);
            if (status !== 0) {
                return { slot: head, generation: gen, replaced: status === 2, evicted, misses: attempt };
            }
            guess = head;
            if (count === this.shards) {
                break;
            }
        }
        throw new errors_1.UnexpectedReply("rolling.add found no head even with the whole ring passed");
    }
    async get(io, k, field) {
        const v = await io.one(scripts.Rolling.get(this.metaKey(k), this.hashes(k), field));
        return v === null ? null : JSON.parse((0, driver_1.text)(v));
    }
    async recent(io, k, n) {
        const flat = (await io.one(scripts.Rolling.recent(this.metaKey(k), this.window(k, 0, this.shards), Math.min(n, this.capacity))));
        const out = [];
        for (let i = 0; i + 1 < flat.length; i += 2) {
            out.push([(0, driver_1.text)(flat[i]), JSON.parse((0, driver_1.text)(flat[i + 1]))]);
        }
        return out;
    }
    async len(io, k) {
        return (0, driver_1.int)(await io.one(scripts.Rolling.len(this.metaKey(k), this.hashes(k))));
    }
    async clear(io, k) {
        return (0, driver_1.int)(await io.one(scripts.Rolling.clear(this.metaKey(k), this.window(k, 0, this.shards))));
    }
}
exports.RollingStore = RollingStore;
