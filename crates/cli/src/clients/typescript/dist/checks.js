"use strict";
// The input checks the generated classes run before anything is sent, one
// per type of the API description: each refuses a bad input with
// InvalidArgument (nothing sent, nothing written) and returns the input
// normalized (a Buffer for bytes, a Day for a date).
Object.defineProperty(exports, "__esModule", { value: true });
exports.str = str;
exports.name = name;
exports.token = token;
exports.prefix = prefix;
exports.bytes = bytes;
exports.int = int;
exports.range = range;
exports.uint = uint;
exports.ms = ms;
exports.float = float;
exports.bool = bool;
exports.date = date;
exports.json = json;
exports.oneOf = oneOf;
exports.opt = opt;
exports.list = list;
exports.pair = pair;
exports.map = map;
exports.record = record;
exports.options = options;
exports.fn = fn;
const days_1 = require("./days");
const errors_1 = require("./errors");
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
function what(v) {
    if (v === null) {
        return "null";
    }
    if (Array.isArray(v)) {
        return "an array";
    }
    return typeof v;
}
function str(name, v) {
    if (typeof v !== "string") {
        throw bad(name, `must be a string, got ${what(v)}`);
    }
    return v;
}
/** Not empty, no `{` or `}`. */
function name(what, v) {
    const s = str(what, v);
    if (s.length === 0 || s.includes("{") || s.includes("}")) {
        throw bad(what, "must not be empty and must not contain '{' or '}'");
    }
    return s;
}
function token(what, v) {
    const s = str(what, v);
    if (s.length === 0) {
        throw bad(what, "must not be empty");
    }
    return s;
}
function prefix(what, v) {
    const s = str(what, v);
    if (s.includes("{") || s.includes("}")) {
        throw bad(what, "must not contain '{' or '}'");
    }
    return s;
}
/** Text (its UTF-8) or bytes, as a Buffer. */
function bytes(name, v) {
    if (typeof v === "string") {
        return Buffer.from(v, "utf8");
    }
    if (Buffer.isBuffer(v)) {
        return v;
    }
    if (v instanceof Uint8Array) {
        return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    }
    throw bad(name, `must be a string, a Buffer or a Uint8Array, got ${what(v)}`);
}
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;
/**
 * A signed 64-bit integer: a safe integer number, or a bigint for the whole
 * range. A number within ±(2^53 − 1) comes back as a number, a larger
 * bigint as a bigint.
 */
function int(name, v) {
    if (typeof v === "bigint") {
        if (v < I64_MIN || v > I64_MAX) {
            throw bad(name, `must be a 64-bit signed integer, got ${v}`);
        }
        return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    }
    if (typeof v !== "number" || !Number.isSafeInteger(v)) {
        throw bad(name, `must be an integer (a safe integer number, or a bigint), got ${String(v)}`);
    }
    return v;
}
/** An integer from lo to hi (numbers; a bigint in range is taken as its number). */
function range(name, v, lo, hi) {
    const n = typeof v === "bigint" && v >= BigInt(lo) && v <= BigInt(hi) ? Number(v) : v;
    if (typeof n !== "number" || !Number.isSafeInteger(n)) {
        throw bad(name, `must be an integer, got ${String(v)}`);
    }
    if (n < lo || n > hi) {
        throw bad(name, `must be from ${lo} to ${hi}, got ${n}`);
    }
    return n;
}
/** A non-negative integer (at most 2^53 − 1). */
function uint(name, v) {
    return range(name, v, 0, Number.MAX_SAFE_INTEGER);
}
/** A duration in whole milliseconds, at least 1. */
function ms(name, v) {
    return range(name, v, 1, Number.MAX_SAFE_INTEGER);
}
function float(name, v) {
    if (typeof v !== "number" || !Number.isFinite(v)) {
        throw bad(name, "must be a finite number");
    }
    return v;
}
function bool(name, v) {
    if (typeof v !== "boolean") {
        throw bad(name, `must be true or false, got ${what(v)}`);
    }
    return v;
}
/**
 * A calendar day: 'YYYY-MM-DD', or a Date at midnight (UTC midnight, as
 * new Date('2026-01-02') makes, is that UTC day; local midnight, as
 * new Date(2026, 0, 2) makes, that local day). A Date with a time of day
 * is an instant, not a day, and is refused.
 */
function date(name, v) {
    const day = (0, days_1.dayOf)(v);
    if (day === null) {
        const shown = v instanceof Date ? v.toISOString() : JSON.stringify(v) ?? String(v);
        throw bad(name, `must be 'YYYY-MM-DD' or a Date at midnight (a Date with a time of day is an instant: pick the day in the zone you mean), got ${shown}`);
    }
    return day;
}
/** A JSON value. */
function json(name, v) {
    let encoded;
    try {
        encoded = JSON.stringify(v);
    }
    catch (e) {
        throw bad(name, `must be JSON: ${e.message}`);
    }
    if (encoded === undefined) {
        throw bad(name, `must be JSON, got ${what(v)}`);
    }
    return v;
}
function oneOf(name, v, words) {
    if (typeof v !== "string" || !words.includes(v)) {
        throw bad(name, `must be one of ${words.join(", ")}, got ${JSON.stringify(v) ?? String(v)}`);
    }
    return v;
}
function opt(v, each) {
    return v === null || v === undefined ? null : each(v);
}
function list(name, v, each) {
    if (!Array.isArray(v)) {
        throw bad(name, `must be an array, got ${what(v)}`);
    }
    return v.map((x) => each(x));
}
function pair(name, v, first, second) {
    if (!Array.isArray(v) || v.length !== 2) {
        throw bad(name, "must be pairs [a, b]");
    }
    return [first(v[0]), second(v[1])];
}
/** A map: a Map or a plain object, as a Map. */
function map(name, v, key, value) {
    const entries = v instanceof Map
        ? [...v.entries()]
        : v !== null && typeof v === "object" && !Array.isArray(v)
            ? Object.entries(v)
            : (() => {
                throw bad(name, `must be a Map or an object, got ${what(v)}`);
            })();
    return new Map(entries.map(([k, x]) => [key(k), value(x)]));
}
/** A record (a plain object with exactly these fields), each field checked. */
function record(name, v, fields) {
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
        throw bad(name, `must be an object, got ${what(v)}`);
    }
    const given = v;
    const names = Object.keys(fields);
    const extra = Object.keys(given).filter((k) => !names.includes(k));
    if (extra.length > 0) {
        throw bad(name, `has no field ${extra.join(", ")} (its fields: ${names.join(", ")})`);
    }
    const out = {};
    for (const k of names) {
        out[k] = fields[k](given[k]);
    }
    return out;
}
/** The options object of the optional inputs: an object (or undefined) naming only these. */
function options(name, v, names) {
    if (v === undefined) {
        return {};
    }
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
        throw bad(name, `must be an object of optional inputs, got ${what(v)}`);
    }
    const extra = Object.keys(v).filter((k) => !names.includes(k));
    if (extra.length > 0) {
        throw bad(name, `has no option ${extra.join(", ")} (its options: ${names.join(", ")})`);
    }
    return v;
}
/** A function (the body of `using`). */
function fn(name, v) {
    if (typeof v !== "function") {
        throw bad(name, `must be a function, got ${what(v)}`);
    }
    return v;
}
