"use strict";
// The sharded hash's operations (src/sharded_hash, lua/sharded_hash).
Object.defineProperty(exports, "__esModule", { value: true });
exports.ShardedHash = void 0;
exports.requestKey = requestKey;
exports.noRequestKey = noRequestKey;
exports.binomialTail = binomialTail;
exports.planShards = planShards;
const call_1 = require("../call");
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const hashing_1 = require("../hashing");
const scripts = require("../scripts");
const layout_1 = require("./layout");
const ID = /^(0|[1-9][0-9]*)$/;
/** The most rejections an import report lists (the others are counted). */
const MAX_REJECTIONS = 100;
/** An import's counts as it goes. */
class Tally {
    items = 0;
    inserted = 0;
    present = 0;
    rejected = 0;
    rejections = [];
    reject(position, reason) {
        this.rejected += 1;
        if (this.rejections.length < MAX_REJECTIONS) {
            this.rejections.push({ position, reason });
        }
    }
    report() {
        const { items, inserted, present, rejected, rejections } = this;
        return { items, inserted, present, unknown: 0, rejected, rejections };
    }
}
const LAYOUT_VERSION = 1;
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
/** The key remembering one call with a request id, in k's slot (manifest: request_key). */
function requestKey(k, requestId) {
    const n = Buffer.byteLength(requestId);
    if (n < 1 || n > 200) {
        throw bad("request id", "must be 1 to 200 bytes");
    }
    const opened = k.indexOf("{");
    const closed = opened >= 0 ? k.indexOf("}", opened + 1) : -1;
    if (closed > opened + 1) {
        return `${k}:req:${requestId}`;
    }
    if (k.includes("}")) {
        throw bad("key", `'${k}' has no hash tag but contains '}'`);
    }
    return `{${k}}:req:${requestId}`;
}
function noRequestKey(k) {
    const opened = k.indexOf("{");
    const closed = opened >= 0 ? k.indexOf("}", opened + 1) : -1;
    return closed > opened + 1 ? `${k}:req` : `{${k}}:req`;
}
class ShardedHash {
    base;
    fieldsPerShard;
    maxId;
    separator;
    strict;
    entries;
    value;
    shards;
    metaKey;
    byId;
    layout;
    constructor(base, shards, fieldsPerShard, maxId, separator, strict, entries, value, recordsLayout) {
        this.base = base;
        this.fieldsPerShard = fieldsPerShard;
        this.maxId = maxId;
        this.separator = separator;
        this.strict = strict;
        this.entries = entries;
        this.value = value;
        if (!base) {
            throw bad("base", "must not be empty");
        }
        if (!separator) {
            throw bad("separator", "must not be empty");
        }
        if (separator.includes("{") || separator.includes("}")) {
            throw bad("separator", "must not contain '{' or '}' (shard keys carry no hash tag)");
        }
        if (fieldsPerShard === 0 && shards === 0) {
            throw bad("shard count", "must be at least 1");
        }
        if (fieldsPerShard === 0 && shards > 2 ** 32 - 1) {
            throw bad("shard count", "must be at most 4294967295");
        }
        this.byId = fieldsPerShard > 0;
        this.shards = this.byId ? Math.floor(maxId / fieldsPerShard) + 1 : shards;
        this.metaKey = (0, contract_1.key)("sharded_hash", "meta", { base });
        this.layout = new layout_1.LayoutClaim(this.metaKey, () => this.layoutFields(), recordsLayout);
    }
    layoutFields() {
        const out = new Map([
            ["pattern", "sharded_hash"],
            ["version", String(LAYOUT_VERSION)],
            ["separator", ":"],
        ]);
        if (this.byId) {
            out.set("scheme", "by_id").set("fields_per_shard", String(this.fieldsPerShard)).set("max_id", String(this.maxId));
        }
        else {
            out.set("scheme", "crc32").set("shards", String(this.shards));
        }
        return out;
    }
    keyOfShard(shard) {
        return (0, contract_1.key)("sharded_hash", "shard", { base: this.base, separator: this.separator, shard });
    }
    shardOf(field) {
        if (!this.byId) {
            return (0, hashing_1.crc32)(field) % this.shards;
        }
        const s = field.toString("latin1");
        if (!ID.test(s)) {
            throw bad("field", `\`${field.toString("utf8")}\` is not a decimal integer id`);
        }
        const n = Number(s);
        if (n > this.maxId) {
            throw new errors_1.IdOutOfRange(n, this.maxId);
        }
        return Math.floor(n / this.fieldsPerShard);
    }
    shardKey(field) {
        return this.keyOfShard(this.shardOf(field));
    }
    checkPair(field, value) {
        if (this.strict) {
            for (const [what, b] of [
                ["field", field],
                ["value", value],
            ]) {
                if (b.length > this.value) {
                    throw new errors_1.ListpackValueTooLong(what, b.length, this.value);
                }
            }
        }
    }
    claimLayout(io) {
        return this.layout.claim(io);
    }
    async write(io, items, onlyAbsent) {
        const byShard = new Map();
        items.forEach(([f, v], i) => {
            const shard = this.shardOf(f);
            this.checkPair(f, v);
            const g = byShard.get(shard);
            if (g === undefined) {
                byShard.set(shard, [i]);
            }
            else {
                g.push(i);
            }
        });
        await this.layout.beforeWrite(io);
        const batch = [];
        for (const shard of [...byShard.keys()].sort((a, b) => a - b)) {
            const k = this.keyOfShard(shard);
            const idx = byShard.get(shard);
            const flat = idx.flatMap((i) => items[i]);
            if (this.strict) {
                batch.push(scripts.ShardedHash.put(k, onlyAbsent, this.entries, flat));
            }
            else if (onlyAbsent) {
                batch.push(...idx.map((i) => (0, call_1.cmd)("HSETNX", k, ...items[i])));
            }
            else {
                batch.push((0, call_1.cmd)("HSET", k, ...flat));
            }
        }
        if (batch.length === 0) {
            return 0;
        }
        return (await io.all(batch)).reduce((n, r) => n + (0, driver_1.int)(r), 0);
    }
    async set(io, field, value) {
        return (await this.write(io, [[field, value]], false)) === 1;
    }
    async setIfAbsent(io, field, value) {
        return (await this.write(io, [[field, value]], true)) === 1;
    }
    setMany(io, items) {
        return this.write(io, items, false);
    }
    setIfAbsentMany(io, items) {
        return this.write(io, items, true);
    }
    async get(io, field) {
        return (0, driver_1.bytes)(await io.one((0, call_1.cmd)("HGET", this.shardKey(field), field)));
    }
    async getMany(io, fields) {
        const byShard = new Map();
        fields.forEach((f, i) => {
            const s = this.shardOf(f);
            const g = byShard.get(s);
            if (g === undefined) {
                byShard.set(s, [i]);
            }
            else {
                g.push(i);
            }
        });
        const order = [...byShard.keys()].sort((a, b) => a - b);
        const out = fields.map(() => null);
        if (order.length === 0) {
            return out;
        }
        const replies = await io.all(order.map((s) => (0, call_1.cmd)("HMGET", this.keyOfShard(s), ...byShard.get(s).map((i) => fields[i]))));
        order.forEach((s, j) => {
            byShard.get(s).forEach((i, n) => {
                out[i] = (0, driver_1.bytes)(replies[j][n]);
            });
        });
        return out;
    }
    async delete(io, field) {
        return (0, driver_1.int)(await io.one((0, call_1.cmd)("HDEL", this.shardKey(field), field))) === 1;
    }
    async exists(io, field) {
        return (0, driver_1.int)(await io.one((0, call_1.cmd)("HEXISTS", this.shardKey(field), field))) === 1;
    }
    async incrBy(io, field, delta, request) {
        const k = this.shardKey(field);
        this.checkPair(field, Buffer.alloc(0));
        await this.layout.beforeWrite(io);
        if (!this.strict && request === null) {
            return (0, driver_1.int)(await io.one((0, call_1.cmd)("HINCRBY", k, field, String(delta))));
        }
        const [rk, ttl] = request === null ? [noRequestKey(k), 0] : [requestKey(k, request[0]), request[1]];
        const entries = this.strict ? this.entries : 0;
        return (0, driver_1.int)(await io.one(scripts.ShardedHash.incr(k, rk, field, delta, entries, ttl)));
    }
    incr(io, field, delta) {
        return this.incrBy(io, field, delta, null);
    }
    incrOnce(io, field, delta, requestId, requestTtlMs) {
        return this.incrBy(io, field, delta, [requestId, requestTtlMs]);
    }
    async len(io) {
        const batch = [];
        for (let s = 0; s < this.shards; s++) {
            batch.push((0, call_1.cmd)("HLEN", this.keyOfShard(s)));
        }
        return (await io.all(batch)).reduce((n, r) => n + (0, driver_1.int)(r), 0);
    }
    async isEmpty(io) {
        return (await this.len(io)) === 0;
    }
    async inspect(io, sample) {
        if (sample === 0) {
            throw bad("sample", "must be at least 1");
        }
        const picks = [];
        for (let i = 0; i < Math.min(sample, this.shards); i++) {
            picks.push(sample >= this.shards ? i : Math.floor((i * this.shards) / sample));
        }
        const batch = picks.flatMap((s) => {
            const k = this.keyOfShard(s);
            return [new call_1.Cmd(["OBJECT", "ENCODING", k], k), (0, call_1.cmd)("HLEN", k)];
        });
        const replies = await io.batch(batch);
        let missing = 0;
        let listpack = 0;
        let converted = 0;
        let maxLen = 0;
        let total = 0;
        const convertedKeys = [];
        picks.forEach((s, i) => {
            const enc = replies[2 * i];
            const nReply = replies[2 * i + 1];
            if (nReply instanceof Error) {
                throw nReply;
            }
            const n = (0, driver_1.int)(nReply);
            maxLen = Math.max(maxLen, n);
            total += n;
            if (enc === null || (enc instanceof Error && enc.message.includes("no such key"))) {
                missing += 1;
            }
            else if (enc instanceof Error) {
                throw enc;
            }
            else if (["listpack", "ziplist"].includes((0, driver_1.text)(enc))) {
                listpack += 1;
            }
            else {
                converted += 1;
                if (convertedKeys.length < 100) {
                    convertedKeys.push(this.keyOfShard(s));
                }
            }
        });
        return { sampled: picks.length, missing, listpack, converted, convertedKeys, maxLen, sampledLen: total };
    }
    /** Why an import rejects an item (null: it goes into the batch). */
    stage(field, value) {
        try {
            this.shardOf(field);
        }
        catch (e) {
            if (e instanceof errors_1.RedisPatternsError) {
                return "bad_field";
            }
            throw e;
        }
        try {
            this.checkPair(field, value);
        }
        catch (e) {
            if (e instanceof errors_1.ListpackValueTooLong) {
                return "value_too_long";
            }
            throw e;
        }
        return null;
    }
    /** One batch of an import: one write per shard (strict) or HSETNX per item; a full shard rejects its items. */
    async importBatch(io, part, tally) {
        const byShard = new Map();
        for (const item of part) {
            const shard = this.shardOf(item.field);
            byShard.set(shard, [...(byShard.get(shard) ?? []), item]);
        }
        const calls = [];
        const covers = [];
        for (const shard of [...byShard.keys()].sort((a, b) => a - b)) {
            const k = this.keyOfShard(shard);
            const group = byShard.get(shard);
            if (this.strict) {
                calls.push(scripts.ShardedHash.put(k, true, this.entries, group.flatMap((g) => [g.field, g.value])));
                covers.push(group.map((g) => g.position));
            }
            else {
                for (const g of group) {
                    calls.push((0, call_1.cmd)("HSETNX", k, g.field, g.value));
                    covers.push([g.position]);
                }
            }
        }
        const replies = await io.batch(calls);
        covers.forEach((positions, i) => {
            const reply = replies[i];
            if (reply instanceof errors_1.ShardFull) {
                positions.forEach((p) => tally.reject(p, "shard_full"));
            }
            else if (reply instanceof Error) {
                throw reply;
            }
            else {
                const n = Math.max((0, driver_1.int)(reply), 0);
                tally.inserted += n;
                tally.present += positions.length - n;
            }
        });
    }
    async importItems(io, items, batch) {
        if (batch === 0) {
            throw bad("batch", "must be at least 1");
        }
        const tally = new Tally();
        await this.layout.beforeWrite(io);
        for (let at = 0; at < items.length; at += batch) {
            const good = [];
            items.slice(at, at + batch).forEach(([field, value], i) => {
                tally.items += 1;
                const why = this.stage(field, value);
                if (why === null) {
                    good.push({ position: at + i + 1, field, value });
                }
                else {
                    tally.reject(at + i + 1, why);
                }
            });
            if (good.length > 0) {
                await this.importBatch(io, good, tally);
            }
        }
        return tally.report();
    }
    static async planned(io, base, expected) {
        if (!base) {
            throw bad("base", "must not be empty");
        }
        const [[entries, value], source] = await limits(io);
        const shards = planShards(expected, entries);
        const h = new ShardedHash(base, shards, 0, 0, ":", true, entries, value, false);
        const bound = shards * binomialTail(Math.max(expected, 1), 1 / shards, entries);
        return [
            h,
            {
                shards,
                expected,
                entriesLimit: entries,
                valueLimit: value,
                limitsSource: source,
                meanPerShard: expected / shards,
                overflowBound: bound,
            },
        ];
    }
    static async listpackLimits(io) {
        const [[entries, value], source] = await limits(io);
        return source === "server" ? { entries, value } : null;
    }
    static async open(io, base) {
        const [meta, stored] = await layout_1.Layouts.existing(io, "sharded_hash", base);
        const mismatch = () => new errors_1.LayoutMismatch(meta, JSON.stringify(stored), "a sharded_hash layout of version 1");
        if (stored.pattern !== "sharded_hash" || stored.version !== "1" || stored.separator !== ":") {
            throw mismatch();
        }
        if (stored.scheme === "crc32") {
            return new ShardedHash(base, Number(stored.shards), 0, 0, ":", true, 512, 64, true);
        }
        if (stored.scheme === "by_id") {
            return new ShardedHash(base, 0, Number(stored.fields_per_shard), Number(stored.max_id), ":", true, 512, 64, true);
        }
        throw mismatch();
    }
}
exports.ShardedHash = ShardedHash;
/** The server's hash-max-listpack-entries/-value (CONFIG GET), or the defaults. */
async function limits(io) {
    const names = ["hash-max-listpack-entries", "hash-max-listpack-value"];
    let got;
    try {
        got = await io.batch(names.map((n) => (0, call_1.nodeCmd)(driver_1.ANY, "CONFIG", "GET", n)));
    }
    catch (e) {
        if (e instanceof errors_1.RedisPatternsError) {
            return [[512, 64], "default_because_denied"];
        }
        throw e;
    }
    const vals = [];
    for (const reply of got) {
        if (reply instanceof Error) {
            return [[512, 64], "default_because_denied"];
        }
        vals.push(...(0, driver_1.pairs)(reply).map(([, v]) => (0, driver_1.int)(v)));
    }
    if (vals.length !== 2) {
        return [[512, 64], "default_because_unreported"];
    }
    return [[vals[0], vals[1]], "server"];
}
/** P(X > limit) for X ~ Binomial(n, p), exactly as src/sharded_hash/plan.rs sums it. */
function binomialTail(n, p, limit) {
    if (limit >= n || p <= 0) {
        return 0;
    }
    if (p >= 1) {
        return 1;
    }
    const k0 = limit + 1;
    let lnC = 0;
    for (let i = 0; i < k0; i++) {
        lnC += Math.log((n - i) / (i + 1));
    }
    let term = Math.exp(lnC + k0 * Math.log(p) + (n - k0) * Math.log1p(-p));
    const odds = p / (1 - p);
    let total = 0;
    let k = k0;
    for (;;) {
        total += term;
        if (k >= n) {
            break;
        }
        const ratio = ((n - k) / (k + 1)) * odds;
        term *= ratio;
        k += 1;
        if (ratio < 1 && (term === 0 || term < total * 1e-17)) {
            break;
        }
    }
    return Math.min(total, 1);
}
/**
 * The smallest shard count for which shards * P(Bin(expected, 1/shards) >
 * entries) <= 1e-9 (src/sharded_hash/plan.rs: the same search, so every
 * client plans the same count).
 */
function planShards(expected, entries, target = 1e-9) {
    const n = Math.max(expected, 1);
    const bound = (s) => s * binomialTail(n, 1 / s, entries);
    let lo = Math.max(Math.ceil(n / entries), 1);
    if (bound(lo) > target) {
        let hi = lo * 2;
        while (bound(hi) > target) {
            if (hi >= 2 ** 32 - 1) {
                throw bad("expected", `${expected} entries cannot be kept under ${entries} per shard`);
            }
            lo = hi;
            hi = Math.min(hi * 2, 2 ** 32 - 1);
        }
        while (hi - lo > 1) {
            const mid = lo + Math.floor((hi - lo) / 2);
            if (bound(mid) <= target) {
                hi = mid;
            }
            else {
                lo = mid;
            }
        }
        lo = hi;
    }
    return lo;
}
