"use strict";
// Stored layouts (src/layout.rs, lua/layout/claim.lua).
Object.defineProperty(exports, "__esModule", { value: true });
exports.LayoutClaim = exports.Layouts = void 0;
exports.describe = describe;
const call_1 = require("../call");
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
/** `shards=64, scheme=crc32, version=1` as the Rust crate prints a layout. */
function describe(fields) {
    const parts = [...fields.keys()]
        .filter((k) => k !== "pattern" && k !== "version")
        .sort()
        .map((k) => `${k}=${fields.get(k)}`);
    if (fields.has("version")) {
        parts.push(`version=${fields.get("version")}`);
    }
    return parts.join(", ");
}
function same(a, b) {
    return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
}
class Layouts {
    static async claim(io, metaKey, fields) {
        const flat = [...fields.keys()].sort().flatMap((k) => [k, fields.get(k)]);
        const reply = (await io.one(scripts.Layout.claim(metaKey, flat)));
        const stored = new Map();
        for (let i = 0; i + 1 < reply.length; i += 2) {
            stored.set((0, driver_1.text)(reply[i]), (0, driver_1.text)(reply[i + 1]));
        }
        if (!same(stored, fields)) {
            throw new errors_1.LayoutMismatch(metaKey, describe(stored), describe(fields));
        }
    }
    static async read(io, metaKey) {
        const got = (0, driver_1.pairs)(await io.one((0, call_1.cmd)("HGETALL", metaKey)));
        return got.length === 0 ? null : Object.fromEntries(got.map(([k, v]) => [k, v.toString("utf8")]));
    }
    /** The meta key of the pattern's instance `base` (an empty base: InvalidArgument) and its stored layout (null: none). */
    static async stored(io, pattern, base) {
        if (!base) {
            throw new errors_1.InvalidArgument("base", "must not be empty", null);
        }
        const meta = (0, contract_1.key)(pattern, "meta", { base });
        return [meta, await Layouts.read(io, meta)];
    }
    /** As stored(), a missing layout thrown (LayoutMissing). */
    static async existing(io, pattern, base) {
        const [meta, stored] = await Layouts.stored(io, pattern, base);
        if (stored === null) {
            throw new errors_1.LayoutMissing(meta);
        }
        return [meta, stored];
    }
}
exports.Layouts = Layouts;
/**
 * The layout of one instance of a pattern in its meta key: claimed by the instance's first write
 * when it records its layout (the record_layout setting), or by claimLayout; every claim checks
 * the stored layout against the instance's.
 */
class LayoutClaim {
    metaKey;
    fields;
    onFirstWrite;
    claimed = false;
    constructor(metaKey, fields, onFirstWrite) {
        this.metaKey = metaKey;
        this.fields = fields;
        this.onFirstWrite = onFirstWrite;
    }
    /** Before a write: the first one claims the layout when the instance records it. */
    async beforeWrite(io) {
        if (this.onFirstWrite && !this.claimed) {
            await this.claim(io);
        }
    }
    async claim(io) {
        await Layouts.claim(io, this.metaKey, this.fields());
        this.claimed = true;
    }
}
exports.LayoutClaim = LayoutClaim;
