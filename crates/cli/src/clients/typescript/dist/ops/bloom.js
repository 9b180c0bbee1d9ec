"use strict";
// Bloom filters on plain bitmaps (src/bloom, lua/bloom): sized filters and
// the PHP JSHash bitmap.
Object.defineProperty(exports, "__esModule", { value: true });
exports.JsHashBloom = exports.Bloom = void 0;
const call_1 = require("../call");
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const hashing_1 = require("../hashing");
const scripts = require("../scripts");
const C = contract_1.CONSTANTS.bloom;
const KEY_OVERHEAD = 256;
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
function item(v) {
    if (v.length > 512 * 1024 * 1024) {
        throw bad("item", "must be at most 512 MiB");
    }
    return v;
}
/** A bulk load (Rust: Load::into_op): batches of `batch` items, one multiAdd each, after `start` skipped positions. */
async function load(multiAdd, items, batch, start) {
    if (batch === 0) {
        throw bad("batch size", "must be at least 1");
    }
    let done = Math.min(start, items.length);
    let added = 0;
    let unknown = 0;
    while (done < items.length) {
        const buf = [];
        let at = done;
        for (; at < items.length && buf.length < batch; at++) {
            const v = items[at];
            if (v !== null) {
                buf.push(v);
            }
        }
        const flags = buf.length > 0 ? await multiAdd(buf) : [];
        done = at;
        added += flags.filter((f) => f === true).length;
        unknown += flags.filter((f) => f === null).length;
    }
    return { done, added, unknown };
}
/**
 * The config hash of the filter `name`; when `k` holds another type (WRONGTYPE) and
 * `name` ends in `:<j>`, it is block j of the spread filter before it: refused naming both.
 */
async function config(io, name, k) {
    let raw;
    try {
        raw = await io.one((0, call_1.cmd)("HGETALL", k));
    }
    catch (e) {
        const at = name.lastIndexOf(":");
        const base = at < 0 ? "" : name.slice(0, at);
        const j = at < 0 ? "" : name.slice(at + 1);
        if (e instanceof errors_1.Server && e.code === "WRONGTYPE" && base !== "" && /^[0-9]+$/.test(j)) {
            throw new errors_1.BloomConfigMismatch((0, contract_1.render)(C.config_holds_block, { key: k, name, j, base }));
        }
        throw e;
    }
    return new Map((0, driver_1.pairs)(raw).map(([a, b]) => [a, b.toString("utf8")]));
}
class Bloom {
    name;
    prefix;
    params;
    spread;
    pText;
    configKey;
    blockKeys;
    constructor(name, prefix, params, spread, pText) {
        this.name = name;
        this.prefix = prefix;
        this.params = params;
        this.spread = spread;
        this.pText = pText;
        this.configKey = (0, contract_1.key)("bloom", "config", { prefix, name });
        const role = spread ? "block_spread" : "block";
        this.blockKeys = params.blockBits.map((_, j) => (0, contract_1.key)("bloom", role, { prefix, name, j }));
    }
    createCall() {
        const p = this.params;
        return scripts.Bloom.create(this.configKey, this.spread ? [] : this.blockKeys, p.m, p.k, p.n, this.pText, p.blockBits.join(","), C.scheme, C.scheme_version, this.spread);
    }
    async initBlocks(io, create) {
        const replies = await io.batch(this.blockKeys.map((k, j) => scripts.Bloom.initBlock(k, this.params.blockBits[j], create)));
        return replies.map((r, j) => this.blockTaken(j, r));
    }
    /** Block j of a spread filter holding another type (WRONGTYPE) is the config of the filter `<name>:<j>`: refused naming both. */
    blockTaken(j, reply) {
        if (!this.spread || !(reply instanceof errors_1.Server) || reply.code !== "WRONGTYPE") {
            return reply;
        }
        return new errors_1.BloomConfigMismatch((0, contract_1.render)(C.block_is_config, { key: this.blockKeys[j], j, name: this.name }));
    }
    static async create(io, name, expected, fpRate, prefix, spreadBlocks, maxMemory) {
        const [m, k, blocks] = (0, hashing_1.bloomParams)(expected, fpRate);
        const bf = new Bloom(name, prefix, { n: expected, p: fpRate, m, k, blockBits: blocks }, spreadBlocks, (0, hashing_1.formatP)(fpRate));
        const needed = blocks.reduce((n, b) => n + Math.ceil((b + 1) / 8) + KEY_OVERHEAD, 0) + KEY_OVERHEAD;
        const cfg = await config(io, name, bf.configKey);
        if (cfg.size > 0) {
            const stored = Bloom.fromConfig(name, prefix, cfg);
            const want = bf.params;
            const have = stored.params;
            const checks = [
                ["n", String(have.n), String(want.n)],
                ["p", stored.pText, bf.pText],
                ["m/k", `(${have.m}, ${have.k})`, `(${want.m}, ${want.k})`],
                ["spread", stored.spread ? "1" : "0", spreadBlocks ? "1" : "0"],
            ];
            for (const [field, a, b] of checks) {
                if (a !== b) {
                    throw new errors_1.BloomConfigMismatch(`${field} stored ${a} requested ${b}`);
                }
            }
            await io.one(stored.createCall());
            if (stored.spread) {
                const failed = (await stored.initBlocks(io, false)).find((r) => r instanceof Error);
                if (failed !== undefined) {
                    throw failed;
                }
            }
            return stored;
        }
        if (needed > maxMemory) {
            throw new errors_1.NotEnoughMemory(`bloom filter ${name}`, needed, maxMemory, "ceiling", null);
        }
        if (!spreadBlocks) {
            await io.one(bf.createCall());
            return bf;
        }
        const replies = await bf.initBlocks(io, true);
        const failed = replies.find((r) => r instanceof Error);
        if (failed !== undefined) {
            const created = bf.blockKeys.filter((_, j) => replies[j] === 1);
            if (created.length > 0) {
                await io.all(created.map((bk) => (0, call_1.cmd)("DEL", bk)));
            }
            throw failed;
        }
        await io.one(bf.createCall());
        return bf;
    }
    static fromConfig(name, prefix, cfg) {
        const configKey = (0, contract_1.key)("bloom", "config", { prefix, name });
        if (cfg.get("scheme") !== C.scheme || cfg.get("version") !== String(C.scheme_version)) {
            throw new errors_1.BloomConfigMismatch(`scheme stored ${cfg.get("scheme")} v${cfg.get("version")} requested ${C.scheme} v${C.scheme_version}`);
        }
        const num = (f) => {
            const v = cfg.get(f);
            const n = v === undefined || v === "" ? NaN : Number(v);
            if (!Number.isFinite(n)) {
                throw new errors_1.BloomConfigMismatch(`${configKey} is not understood`);
            }
            return n;
        };
        const blocks = (cfg.get("block_bits") ?? "").split(",").map((b) => {
            const n = b === "" ? NaN : Number(b);
            if (!Number.isSafeInteger(n)) {
                throw new errors_1.BloomConfigMismatch(`${configKey} is not understood`);
            }
            return n;
        });
        const params = { n: num("n"), p: num("p"), m: num("m"), k: num("k"), blockBits: blocks };
        if (!cfg.has("spread")) {
            throw new errors_1.BloomConfigMismatch(`${configKey} is not understood`);
        }
        return new Bloom(name, prefix, params, cfg.get("spread") === "1", cfg.get("p"));
    }
    static async open(io, name, prefix) {
        const configKey = (0, contract_1.key)("bloom", "config", { prefix, name });
        const cfg = await config(io, name, configKey);
        if (cfg.size === 0) {
            throw new errors_1.BloomMissing(`no config hash ${configKey}`);
        }
        const bf = Bloom.fromConfig(name, prefix, cfg);
        const sentinels = await io.all(bf.blockKeys.map((k, j) => (0, call_1.cmd)("GETBIT", k, bf.params.blockBits[j])));
        bf.blockKeys.forEach((k, j) => {
            if ((0, driver_1.int)(sentinels[j]) !== 1) {
                throw new errors_1.BloomMissing(`block ${k} is missing or lost its sentinel bit`);
            }
        });
        return bf;
    }
    locate(v) {
        return (0, hashing_1.sizedOffsets)(v, this.params.blockBits, this.params.k);
    }
    async items(io, items, add) {
        const perCall = Math.max(1, Math.floor(C.chunk_offsets / this.params.k));
        const groups = new Map();
        items.forEach((it, i) => {
            const [block, offsets] = this.locate(item(it));
            const g = groups.get(block);
            if (g === undefined) {
                groups.set(block, [[i, offsets]]);
            }
            else {
                g.push([i, offsets]);
            }
        });
        const calls = [];
        const owners = [];
        for (const block of [...groups.keys()].sort((a, b) => a - b)) {
            const g = groups.get(block);
            for (let at = 0; at < g.length; at += perCall) {
                const part = g.slice(at, at + perCall);
                const offsets = part.flatMap(([, offs]) => offs);
                const fn = add ? scripts.Bloom.add : scripts.Bloom.exists;
                calls.push(fn(this.blockKeys[block], this.params.blockBits[block], this.params.k, offsets));
                owners.push(part.map(([i]) => i));
            }
        }
        const out = items.map(() => false);
        if (calls.length === 0) {
            return out;
        }
        const replies = await io.all(calls);
        owners.forEach((owner, j) => {
            owner.forEach((i, n) => {
                out[i] = (0, driver_1.int)(replies[j][n]) === 1;
            });
        });
        return out;
    }
    async add(io, v) {
        return (await this.items(io, [v], true))[0];
    }
    async exists(io, v) {
        return (await this.items(io, [v], false))[0];
    }
    multiAdd(io, items) {
        return this.items(io, items, true);
    }
    multiExists(io, items) {
        return this.items(io, items, false);
    }
    async bitsSet(io) {
        const batch = this.blockKeys.flatMap((k, j) => [(0, call_1.cmd)("BITCOUNT", k), (0, call_1.cmd)("GETBIT", k, this.params.blockBits[j])]);
        const got = (await io.all(batch)).map(driver_1.int);
        this.blockKeys.forEach((k, j) => {
            if (got[2 * j + 1] !== 1) {
                throw new errors_1.BloomMissing(`block ${k} is missing or lost its sentinel bit`);
            }
        });
        return this.blockKeys.map((_, j) => got[2 * j] - 1);
    }
    estimate(bitsSet) {
        const k = this.params.k;
        let total = 0;
        bitsSet.forEach((x, j) => {
            const bits = this.params.blockBits[j];
            total += -(bits / k) * Math.log(1 - Math.min(x, bits - 1) / bits);
        });
        return Math.floor(total + 0.5);
    }
    async approxCount(io) {
        return this.estimate(await this.bitsSet(io));
    }
    async info(io) {
        const bitsSet = await this.bitsSet(io);
        const total = this.params.blockBits.reduce((a, b) => a + b, 0);
        const fp = bitsSet.reduce((acc, x, j) => {
            const b = this.params.blockBits[j];
            return acc + (b / total) * (x / b) ** this.params.k;
        }, 0);
        return {
            name: this.name,
            configKey: this.configKey,
            blockKeys: [...this.blockKeys],
            params: this.params,
            bitsSet,
            approxCount: this.estimate(bitsSet),
            currentFpRate: fp,
        };
    }
    async clear(io) {
        const bits = this.params.blockBits;
        if (this.spread) {
            await io.all(this.blockKeys.map((k, j) => scripts.Bloom.clear([k], [bits[j]])));
        }
        else {
            await io.one(scripts.Bloom.clear(this.blockKeys, bits));
        }
    }
    load(io, items, batch, start) {
        return load((b) => this.multiAdd(io, b), items, batch, start);
    }
    async destroy(io) {
        const keys = [this.configKey, ...this.blockKeys];
        if (this.spread) {
            await io.all(keys.map((k) => (0, call_1.cmd)("DEL", k)));
        }
        else {
            await io.one((0, call_1.cmd)("DEL", keys[0], ...keys.slice(1)));
        }
    }
}
exports.Bloom = Bloom;
class JsHashBloom {
    limitMemory;
    key;
    constructor(key, prefix, limitMemory) {
        this.limitMemory = limitMemory;
        if (!key) {
            throw bad("key", "must not be empty");
        }
        this.key = prefix + key;
    }
    offset(v) {
        if (v.length === 0) {
            throw bad("item", "must not be empty in a JSHash filter");
        }
        return (0, hashing_1.jshash)(v, this.limitMemory);
    }
    async multiAdd(io, items) {
        const offsets = items.map((i) => this.offset(i));
        if (offsets.length === 0) {
            return [];
        }
        return (await io.one(scripts.Bloom.jshashAdd(this.key, offsets))).map((f) => (0, driver_1.int)(f) === 1);
    }
    async multiExists(io, items) {
        const offsets = items.map((i) => this.offset(i));
        if (offsets.length === 0) {
            return [];
        }
        return (await io.one(scripts.Bloom.jshashExists(this.key, offsets))).map((f) => (0, driver_1.int)(f) === 1);
    }
    async add(io, v) {
        return (await this.multiAdd(io, [v]))[0];
    }
    async exists(io, v) {
        return (await this.multiExists(io, [v]))[0];
    }
    load(io, items, batch, start) {
        return load((b) => this.multiAdd(io, b), items, batch, start);
    }
}
exports.JsHashBloom = JsHashBloom;
