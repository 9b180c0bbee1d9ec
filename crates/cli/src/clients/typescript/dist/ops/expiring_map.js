"use strict";
// The expiring map's operations on the portable path (src/expiring_map, lua/expiring_map): each value
// carries its expiry in its first 6 bytes; the scripts read the server's clock and never return an
// expired entry.
Object.defineProperty(exports, "__esModule", { value: true });
exports.ExpiringMap = exports.MAX_TTL_MS = exports.EXPIRY_BYTES = void 0;
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const hashing_1 = require("../hashing");
const scripts = require("../scripts");
const layout_1 = require("./layout");
const sharded_hash_1 = require("./sharded_hash");
/** The bytes the portable path adds before each value: its expiry. */
exports.EXPIRY_BYTES = 6;
/** The longest time to live or max-idle time, in milliseconds (the scripts' bound). */
exports.MAX_TTL_MS = 999_999_999_999_999;
/** The version of the layout fields written in the meta key. */
const LAYOUT_VERSION = 1;
/** What a client of the portable path can open (a native layout is the Rust crate's). */
const PORTABLE_LAYOUT = "an expiring_map layout of version 1 on the portable path (this client has no native path)";
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
/** A duration as the scripts take it (0 for none), refused outside 1 ..= MAX_TTL_MS. */
function millis(name, ms) {
    if (ms === null) {
        return 0;
    }
    if (ms < 1 || ms > exports.MAX_TTL_MS) {
        throw bad(name, `must be from 1 ms to ${exports.MAX_TTL_MS} ms`);
    }
    return ms;
}
class ExpiringMap {
    base;
    shards;
    cap;
    entries_;
    value;
    recordsLayout;
    idle;
    metaKey;
    claimed = false;
    constructor(base, shards, cap, maxIdleMs, entries_, value, recordsLayout) {
        this.base = base;
        this.shards = shards;
        this.cap = cap;
        this.entries_ = entries_;
        this.value = value;
        this.recordsLayout = recordsLayout;
        if (!base) {
            throw bad("base", "must not be empty");
        }
        if (shards === 0) {
            throw bad("shard count", "must be at least 1");
        }
        if (shards > 2 ** 32 - 1) {
            throw bad("shard count", "must be at most 4294967295");
        }
        if (value <= exports.EXPIRY_BYTES) {
            throw bad("limits", `a value limit of ${value} leaves no room for the expiry`);
        }
        this.idle = millis("max_idle", maxIdleMs);
        this.metaKey = (0, contract_1.key)("expiring_map", "meta", { base });
    }
    layoutFields() {
        return new Map([
            ["pattern", "expiring_map"],
            ["version", String(LAYOUT_VERSION)],
            ["scheme", "crc32"],
            ["separator", ":"],
            ["shards", String(this.shards)],
            ["path", "portable"],
        ]);
    }
    async claimLayout(io) {
        await layout_1.Layouts.claim(io, this.metaKey, this.layoutFields());
        this.claimed = true;
    }
    static async open(io, base) {
        if (!base) {
            throw bad("base", "must not be empty");
        }
        const meta = (0, contract_1.key)("expiring_map", "meta", { base });
        const stored = await layout_1.Layouts.read(io, meta);
        if (stored === null) {
            throw new errors_1.LayoutMissing(meta);
        }
        const want = { pattern: "expiring_map", version: "1", scheme: "crc32", separator: ":", path: "portable" };
        const shards = stored.shards ?? "";
        if (Object.entries(want).some(([k, v]) => stored[k] !== v) || !/^[0-9]+$/.test(shards) || Number(shards) === 0) {
            throw new errors_1.LayoutMismatch(meta, (0, layout_1.describe)(new Map(Object.entries(stored))), PORTABLE_LAYOUT);
        }
        return new ExpiringMap(base, Number(shards), 0, null, 512, 64, true);
    }
    keyOfShard(shard) {
        return (0, contract_1.key)("expiring_map", "shard", { base: this.base, shard });
    }
    shardKey(field) {
        return this.keyOfShard((0, hashing_1.crc32)(field) % this.shards);
    }
    checkPair(field, value) {
        if (field.length > this.value) {
            throw new errors_1.ListpackValueTooLong("field", field.length, this.value);
        }
        if (value.length + exports.EXPIRY_BYTES > this.value) {
            throw new errors_1.ListpackValueTooLong("value with its expiry", value.length + exports.EXPIRY_BYTES, this.value);
        }
    }
    /** Positions by shard, shards in order. */
    byShard(fields) {
        const by = new Map();
        fields.forEach((f, i) => {
            const s = (0, hashing_1.crc32)(f) % this.shards;
            by.set(s, [...(by.get(s) ?? []), i]);
        });
        return [...by.keys()].sort((a, b) => a - b).map((s) => [this.keyOfShard(s), by.get(s)]);
    }
    async write(io, items, ttlMs, onlyAbsent) {
        const ttl = millis("ttl", ttlMs);
        items.forEach(([f, v]) => this.checkPair(f, v));
        if (items.length === 0) {
            throw bad("pairs", "must not be empty");
        }
        if (this.recordsLayout && !this.claimed) {
            await this.claimLayout(io);
        }
        const limit = Math.min(this.entries_, exports.MAX_TTL_MS);
        const cap = Math.min(this.cap, exports.MAX_TTL_MS);
        const batch = this.byShard(items.map(([f]) => f)).map(([k, idx]) => scripts.ExpiringMap.put(k, onlyAbsent, ttl, limit, cap, idx.flatMap((i) => items[i])));
        let added = 0;
        let evicted = 0;
        for (const r of await io.all(batch)) {
            added += Math.max((0, driver_1.int)(r[0]), 0);
            evicted += Math.max((0, driver_1.int)(r[1]), 0);
        }
        return { new: added, evicted };
    }
    async put(io, field, value, ttlMs) {
        return (await this.write(io, [[field, value]], ttlMs, false)).new === 1;
    }
    async putIfAbsent(io, field, value, ttlMs) {
        return (await this.write(io, [[field, value]], ttlMs, true)).new === 1;
    }
    putMany(io, items, ttlMs) {
        return this.write(io, items, ttlMs, false);
    }
    putIfAbsentMany(io, items, ttlMs) {
        return this.write(io, items, ttlMs, true);
    }
    async get(io, field) {
        return (await this.getMany(io, [field]))[0];
    }
    async getMany(io, fields) {
        const out = fields.map(() => null);
        const by = this.byShard(fields);
        if (by.length === 0) {
            return out;
        }
        const replies = await io.all(by.map(([k, idx]) => scripts.ExpiringMap.get(k, this.idle, idx.map((i) => fields[i]))));
        by.forEach(([, idx], j) => {
            idx.forEach((i, n) => {
                out[i] = (0, driver_1.bytes)(replies[j][n]);
            });
        });
        return out;
    }
    async remove(io, field) {
        return (0, driver_1.int)(await io.one(scripts.ExpiringMap.remove(this.shardKey(field), [field]))) === 1;
    }
    async ttlOf(io, field) {
        return (0, driver_1.int)(await io.one(scripts.ExpiringMap.ttl(this.shardKey(field), field)));
    }
    async persist(io, field) {
        const got = (0, driver_1.int)(await io.one(scripts.ExpiringMap.expire(this.shardKey(field), field, 0)));
        return got === 1 ? true : got === -1 ? false : null;
    }
    async expire(io, field, ttlMs) {
        const ttl = millis("ttl", ttlMs);
        return (0, driver_1.int)(await io.one(scripts.ExpiringMap.expire(this.shardKey(field), field, ttl))) === 1;
    }
    asHash() {
        return new sharded_hash_1.ShardedHash(this.base, this.shards, 0, 0, ":", false, this.entries_, this.value, false);
    }
    len(io) {
        return this.asHash().len(io);
    }
    inspect(io, sample) {
        return this.asHash().inspect(io, sample);
    }
    /** The keys of the shards from `from`, and the next start. */
    range(from, count) {
        if (count === 0) {
            throw bad("count", "must be at least 1");
        }
        if (from >= this.shards) {
            throw bad("from", `must be a shard below ${this.shards}`);
        }
        const end = Math.min(from + count, this.shards);
        const keys = [];
        for (let s = from; s < end; s++) {
            keys.push(this.keyOfShard(s));
        }
        return [keys, end < this.shards ? end : null];
    }
    async sweep(io, fromShard, count) {
        const [keys, next] = this.range(fromShard, count);
        let removed = 0;
        let live = 0;
        for (const r of await io.all(keys.map((k) => scripts.ExpiringMap.sweep(k)))) {
            removed += (0, driver_1.int)(r[0]);
            live += (0, driver_1.int)(r[1]);
        }
        return { shards: keys.length, removed, live, next };
    }
    async entries(io, fromShard, count) {
        const [keys, next] = this.range(fromShard, count);
        const entries = [];
        for (const r of await io.all(keys.map((k) => scripts.ExpiringMap.entries(k)))) {
            const flat = r;
            for (let i = 0; i + 2 < flat.length; i += 3) {
                const at = (0, driver_1.int)(flat[i + 2]);
                entries.push({ field: (0, driver_1.bytes)(flat[i]), value: (0, driver_1.bytes)(flat[i + 1]), expiresAtMs: at > 0 ? at : null });
            }
        }
        return { entries, next };
    }
}
exports.ExpiringMap = ExpiringMap;
