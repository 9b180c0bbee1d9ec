"use strict";
// The expiring map's operations (src/expiring_map, lua/expiring_map) on its two paths: portable (each
// value carries its expiry in its first 6 bytes; the scripts read the server's clock and never return
// an expired entry) and native (the server's per-field TTL: HPEXPIRE, HPTTL, HPERSIST, and HSETEX in
// the write's script).
Object.defineProperty(exports, "__esModule", { value: true });
exports.ExpiringMap = exports.MAX_TTL_MS = exports.EXPIRY_BYTES = void 0;
const call_1 = require("../call");
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
/** What this client can open. */
const READABLE_LAYOUT = "an expiring_map layout of version 1 on the portable or the native path";
const PATHS = ["portable", "native"];
const C = contract_1.CONSTANTS.expiring_map;
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
    path;
    idle;
    metaKey;
    layout;
    native;
    /** Whether the server was found to have the native path's commands (asked once). */
    probed = false;
    constructor(base, shards, cap, maxIdleMs, entries_, value, recordsLayout, path = "portable") {
        this.base = base;
        this.shards = shards;
        this.cap = cap;
        this.entries_ = entries_;
        this.value = value;
        this.path = path;
        if (!base) {
            throw bad("base", "must not be empty");
        }
        if (shards === 0) {
            throw bad("shard count", "must be at least 1");
        }
        if (shards > 2 ** 32 - 1) {
            throw bad("shard count", "must be at most 4294967295");
        }
        if (!PATHS.includes(path)) {
            throw bad("path", "must be portable or native");
        }
        this.native = path === "native";
        if (value <= exports.EXPIRY_BYTES && !this.native) {
            throw bad("limits", `a value limit of ${value} leaves no room for the expiry`);
        }
        this.idle = millis("max_idle", maxIdleMs);
        this.metaKey = (0, contract_1.key)("expiring_map", "meta", { base });
        this.layout = new layout_1.LayoutClaim(this.metaKey, () => this.layoutFields(), recordsLayout);
    }
    layoutFields() {
        return new Map([
            ["pattern", "expiring_map"],
            ["version", String(LAYOUT_VERSION)],
            ["scheme", "crc32"],
            ["separator", ":"],
            ["shards", String(this.shards)],
            ["path", this.path],
        ]);
    }
    claimLayout(io) {
        return this.layout.claim(io);
    }
    static async open(io, base) {
        const [meta, stored] = await layout_1.Layouts.existing(io, "expiring_map", base);
        const want = { pattern: "expiring_map", version: "1", scheme: "crc32", separator: ":" };
        const shards = stored.shards ?? "";
        const path = stored.path ?? "";
        if (Object.entries(want).some(([k, v]) => stored[k] !== v) ||
            !/^[0-9]+$/.test(shards) ||
            Number(shards) === 0 ||
            !PATHS.includes(path)) {
            throw new errors_1.LayoutMismatch(meta, (0, layout_1.describe)(new Map(Object.entries(stored))), READABLE_LAYOUT);
        }
        return new ExpiringMap(base, Number(shards), 0, null, 512, 64, true, path);
    }
    /**
     * On the native path, the first call asks whether the server has per-field TTLs (native_probe:
     * read-only commands, one batch); without them InvalidArgument (path), nothing else sent.
     */
    async onPath(io) {
        if (!this.native || this.probed) {
            return;
        }
        const shard = this.keyOfShard(0);
        const replies = await io.batch(C.native_probe.map((c) => (0, call_1.cmd)(c, shard, "FIELDS", 1, "probe")));
        if (replies.some((r) => r instanceof Error && /unknown command/i.test(r.message))) {
            throw bad("path", C.native_refusal);
        }
        this.probed = true;
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
        const [extra, what] = this.native ? [0, "value"] : [exports.EXPIRY_BYTES, "value with its expiry"];
        if (value.length + extra > this.value) {
            throw new errors_1.ListpackValueTooLong(what, value.length + extra, this.value);
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
        await this.onPath(io);
        await this.layout.beforeWrite(io);
        const limit = Math.min(this.entries_, exports.MAX_TTL_MS);
        const cap = Math.min(this.cap, exports.MAX_TTL_MS);
        // Both scripts take the same arguments and answer new + evicted * 2^32 (exact below 2^53).
        const put = this.native ? scripts.ExpiringMap.putNative : scripts.ExpiringMap.put;
        const batch = this.byShard(items.map(([f]) => f)).map(([k, idx]) => put(k, onlyAbsent, ttl, limit, cap, idx.flatMap((i) => items[i])));
        let added = 0;
        let evicted = 0;
        for (const reply of await io.all(batch)) {
            const r = Math.max((0, driver_1.int)(reply), 0);
            added += r % 2 ** 32;
            evicted += Math.floor(r / 2 ** 32);
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
        await this.onPath(io);
        const batch = [];
        for (const [k, idx] of by) {
            const part = idx.map((i) => fields[i]);
            if (!this.native) {
                batch.push(scripts.ExpiringMap.get(k, this.idle, part));
                continue;
            }
            // HMGET never returns an expired field; max-idle: HPEXPIRE ... GT keeps a later expiry or none.
            batch.push((0, call_1.cmd)("HMGET", k, ...part));
            if (this.idle > 0) {
                batch.push((0, call_1.cmd)("HPEXPIRE", k, this.idle, "GT", "FIELDS", part.length, ...part));
            }
        }
        const step = this.native && this.idle > 0 ? 2 : 1;
        const replies = await io.all(batch);
        by.forEach(([, idx], j) => {
            idx.forEach((i, n) => {
                out[i] = (0, driver_1.bytes)(replies[j * step][n]);
            });
        });
        return out;
    }
    async remove(io, field) {
        await this.onPath(io);
        const k = this.shardKey(field);
        return (0, driver_1.int)(await io.one(this.native ? (0, call_1.cmd)("HDEL", k, field) : scripts.ExpiringMap.remove(k, [field]))) === 1;
    }
    async ttlOf(io, field) {
        await this.onPath(io);
        const k = this.shardKey(field);
        if (this.native) {
            return (0, driver_1.int)((await io.one((0, call_1.cmd)("HPTTL", k, "FIELDS", 1, field)))[0]);
        }
        return (0, driver_1.int)(await io.one(scripts.ExpiringMap.ttl(k, field)));
    }
    /** expire.lua, or HPEXPIRE / HPERSIST (ttl 0): 1 set, -1 none to remove, -2 no live entry. */
    async expiryCall(io, field, ttl) {
        await this.onPath(io);
        const k = this.shardKey(field);
        if (!this.native) {
            return (0, driver_1.int)(await io.one(scripts.ExpiringMap.expire(k, field, ttl)));
        }
        const c = ttl > 0 ? (0, call_1.cmd)("HPEXPIRE", k, ttl, "FIELDS", 1, field) : (0, call_1.cmd)("HPERSIST", k, "FIELDS", 1, field);
        return (0, driver_1.int)((await io.one(c))[0]);
    }
    async persist(io, field) {
        const got = await this.expiryCall(io, field, 0);
        return got === 1 ? true : got === -1 ? false : null;
    }
    async expire(io, field, ttlMs) {
        return (await this.expiryCall(io, field, millis("ttl", ttlMs))) === 1;
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
        await this.onPath(io);
        let removed = 0;
        let live = 0;
        if (this.native) {
            // The server removes expired fields itself: count the live ones.
            for (const r of await io.all(keys.map((k) => (0, call_1.cmd)("HKEYS", k)))) {
                live += r.length;
            }
            return { shards: keys.length, removed, live, next };
        }
        for (const r of await io.all(keys.map((k) => scripts.ExpiringMap.sweep(k)))) {
            removed += (0, driver_1.int)(r[0]);
            live += (0, driver_1.int)(r[1]);
        }
        return { shards: keys.length, removed, live, next };
    }
    async entries(io, fromShard, count) {
        const [keys, next] = this.range(fromShard, count);
        await this.onPath(io);
        if (this.native) {
            return this.nativeEntries(io, keys, next);
        }
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
    /** HGETALL of each shard, then HPEXPIRETIME of the fields read (one gone since, -2, is left out). */
    async nativeEntries(io, keys, next) {
        const read = await io.all(keys.map((k) => (0, call_1.cmd)("HGETALL", k)));
        const asked = [];
        keys.forEach((k, j) => {
            const got = bufferPairs(read[j]);
            if (got.length > 0) {
                asked.push([k, got]);
            }
        });
        const entries = [];
        if (asked.length === 0) {
            return { entries, next };
        }
        const ats = await io.all(asked.map(([k, p]) => (0, call_1.cmd)("HPEXPIRETIME", k, "FIELDS", p.length, ...p.map(([f]) => f))));
        asked.forEach(([, p], j) => {
            p.forEach(([field, value], n) => {
                const at = (0, driver_1.int)(ats[j][n]);
                if (at !== -2) {
                    entries.push({ field, value, expiresAtMs: at > 0 ? at : null });
                }
            });
        });
        return { entries, next };
    }
}
exports.ExpiringMap = ExpiringMap;
/** An HGETALL reply (a flat array, or an object when ioredis made one) as (field, value) pairs in order. */
function bufferPairs(v) {
    const flat = Array.isArray(v)
        ? v
        : v !== null && typeof v === "object"
            ? Object.entries(v).flat()
            : [];
    const out = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
        out.push([(0, driver_1.bytes)(flat[i]) ?? Buffer.from(String(flat[i])), (0, driver_1.bytes)(flat[i + 1]) ?? Buffer.alloc(0)]);
    }
    return out;
}
