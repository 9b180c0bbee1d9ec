"use strict";
// Packed records (src/packed.rs, lua/packed).
Object.defineProperty(exports, "__esModule", { value: true });
exports.PackedRecords = void 0;
const call_1 = require("../call");
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
const layout_1 = require("./layout");
const sharded_hash_1 = require("./sharded_hash");
const MAX_SHARD_BYTES = 512 * 1024 * 1024;
const DEFAULT_SHARD_BYTES = 65_530;
const SCAN_BATCH_BYTES = 16 << 20;
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
class PackedRecords {
    base;
    width;
    maxId;
    idsPerShard;
    shards;
    metaKey;
    dense;
    layout;
    constructor(base, width, maxId, idsPerShard, layout, recordsLayout) {
        this.base = base;
        this.width = width;
        this.maxId = maxId;
        if (!base) {
            throw bad("base", "must not be empty");
        }
        if (width === 0) {
            throw bad("width", "must be at least 1 byte");
        }
        if (width > MAX_SHARD_BYTES) {
            throw bad("width", `must be at most ${MAX_SHARD_BYTES} bytes`);
        }
        const ids = idsPerShard || Math.max(Math.floor(DEFAULT_SHARD_BYTES / width), 1);
        if (ids * width > MAX_SHARD_BYTES) {
            throw bad("ids per shard", `${ids} records of ${width} bytes exceed the ${MAX_SHARD_BYTES}-byte string limit`);
        }
        this.idsPerShard = ids;
        this.dense = layout === "dense";
        this.shards = Math.floor(maxId / ids) + 1;
        this.metaKey = (0, contract_1.key)("packed", "meta", { base });
        this.layout = new layout_1.LayoutClaim(this.metaKey, () => this.fields(), recordsLayout);
    }
    fields() {
        return new Map([
            ["pattern", "packed"],
            ["version", "1"],
            ["width", String(this.width)],
            ["ids_per_shard", String(this.idsPerShard)],
        ]);
    }
    keyOfShard(shard) {
        return (0, contract_1.key)("packed", "shard", { base: this.base, shard });
    }
    locate(id) {
        if (id > this.maxId) {
            throw new errors_1.IdOutOfRange(id, this.maxId);
        }
        return [this.keyOfShard(Math.floor(id / this.idsPerShard)), (id % this.idsPerShard) * this.width];
    }
    reserve() {
        return this.dense ? this.idsPerShard * this.width : 0;
    }
    padded(b) {
        const out = Buffer.alloc(this.width);
        ((0, driver_1.bytes)(b) ?? Buffer.alloc(0)).copy(out, 0, 0, this.width);
        return out;
    }
    record(v) {
        if (v.length !== this.width) {
            throw bad("record", `is ${v.length} bytes, the width is ${this.width}`);
        }
        return v;
    }
    claimLayout(io) {
        return this.layout.claim(io);
    }
    async get(io, id) {
        const [k, off] = this.locate(id);
        return this.padded(await io.one((0, call_1.cmd)("GETRANGE", k, off, off + this.width - 1)));
    }
    async getMany(io, ids) {
        const located = ids.map((i) => this.locate(i));
        if (located.length === 0) {
            return [];
        }
        const got = await io.all(located.map(([k, off]) => (0, call_1.cmd)("GETRANGE", k, off, off + this.width - 1)));
        return got.map((b) => this.padded(b));
    }
    set(io, id, value) {
        return this.setMany(io, [[id, value]]);
    }
    async setMany(io, items) {
        const byShard = new Map();
        for (const [id, value] of items) {
            const [, off] = this.locate(id);
            const shard = Math.floor(id / this.idsPerShard);
            const entry = [Buffer.from(String(off)), this.record(value)];
            const g = byShard.get(shard);
            if (g === undefined) {
                byShard.set(shard, entry);
            }
            else {
                g.push(...entry);
            }
        }
        await this.layout.beforeWrite(io);
        const batch = [...byShard.keys()]
            .sort((a, b) => a - b)
            .map((s) => scripts.Packed.put(this.keyOfShard(s), this.reserve(), byShard.get(s)));
        if (batch.length > 0) {
            await io.all(batch);
        }
    }
    async addTo(io, id, offset, size, signed, delta, request) {
        if (offset + size > this.width) {
            throw bad("field", `bytes ${offset}..${offset + size} lie outside the ${this.width}-byte record`);
        }
        if ((delta < 0 ? -delta : delta) > 2 ** 53) {
            throw bad("delta", "must be within +-2^53");
        }
        const [k, off] = this.locate(id);
        const [rk, ttl] = request === null ? [(0, sharded_hash_1.noRequestKey)(k), 0] : [(0, sharded_hash_1.requestKey)(k, request[0]), request[1]];
        await this.layout.beforeWrite(io);
        return (0, driver_1.int)(await io.one(scripts.Packed.add(k, rk, this.reserve(), off + offset, size, signed, Number(delta), ttl)));
    }
    add(io, id, offset, size, signed, delta) {
        return this.addTo(io, id, offset, size, signed, delta, null);
    }
    addOnce(io, id, offset, size, signed, delta, requestId, requestTtlMs) {
        return this.addTo(io, id, offset, size, signed, delta, [requestId, requestTtlMs]);
    }
    async compareAndSet(io, id, expected, next) {
        const [k, off] = this.locate(id);
        const exp = this.record(expected);
        const nw = this.record(next);
        await this.layout.beforeWrite(io);
        const [done, current] = (await io.one(scripts.Packed.swap(k, this.reserve(), off, exp, nw)));
        return (0, driver_1.int)(done) === 1 ? null : this.padded(current);
    }
    async countBy(io, offset, size, signed) {
        if (offset + size > this.width) {
            throw bad("field", `bytes ${offset}..${offset + size} lie outside the ${this.width}-byte record`);
        }
        const counts = new Map();
        for (const [, rec] of await this.scan(io)) {
            if (rec.some((b) => b !== 0)) {
                const v = signed ? rec.readIntLE(offset, size) : rec.readUIntLE(offset, size);
                counts.set(v, (counts.get(v) ?? 0) + 1);
            }
        }
        return [...counts].sort((a, b) => a[0] - b[0]);
    }
    async scan(io) {
        const per = Math.max(Math.floor(SCAN_BATCH_BYTES / (this.idsPerShard * this.width)), 1);
        const out = [];
        for (let first = 0; first < this.shards; first += per) {
            const shards = [];
            for (let s = first; s < Math.min(first + per, this.shards); s++) {
                shards.push(s);
            }
            const got = await io.all(shards.map((s) => (0, call_1.cmd)("GET", this.keyOfShard(s))));
            shards.forEach((s, j) => {
                const b = (0, driver_1.bytes)(got[j]);
                if (b === null) {
                    return;
                }
                for (let i = 0; i < Math.floor(b.length / this.width); i++) {
                    const id = s * this.idsPerShard + i;
                    if (id > this.maxId) {
                        break;
                    }
                    out.push([id, Buffer.from(b.subarray(i * this.width, (i + 1) * this.width))]);
                }
            });
        }
        return out;
    }
    static async storedLayout(io, base) {
        const [meta, stored] = await layout_1.Layouts.stored(io, "packed", base);
        if (stored === null) {
            return null;
        }
        const width = Number(stored.width);
        const idsPerShard = Number(stored.ids_per_shard);
        if (!Number.isSafeInteger(width) || !Number.isSafeInteger(idsPerShard) || !stored.width || !stored.ids_per_shard) {
            throw new errors_1.LayoutMismatch(meta, JSON.stringify(stored), "a packed layout of version 1");
        }
        return { width, idsPerShard };
    }
    static async open(io, base, width, maxId) {
        const meta = base ? (0, contract_1.key)("packed", "meta", { base }) : "";
        const stored = await PackedRecords.storedLayout(io, base);
        if (stored === null) {
            throw new errors_1.LayoutMissing(meta);
        }
        if (stored.width !== width) {
            throw new errors_1.LayoutMismatch(meta, `ids_per_shard=${stored.idsPerShard}, width=${stored.width}, version=1`, `ids_per_shard=${stored.idsPerShard}, width=${width}, version=1`);
        }
        return new PackedRecords(base, width, maxId, stored.idsPerShard, "dense", true);
    }
}
exports.PackedRecords = PackedRecords;
