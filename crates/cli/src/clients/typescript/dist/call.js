"use strict";
// The requests an operation sends (one script call, one plain command) and
// the argument checks of the generated script functions (scripts.ts), which
// refuse an argument outside its header's declaration before anything is
// sent.
Object.defineProperty(exports, "__esModule", { value: true });
exports.Cmd = exports.Call = void 0;
exports.cmd = cmd;
exports.nodeCmd = nodeCmd;
exports.int = int;
exports.float = float;
exports.bool = bool;
exports.oneOf = oneOf;
exports.text = text;
exports.hashTag = hashTag;
exports.tagged = tagged;
exports.many = many;
exports.key = key;
exports.keys = keys;
exports.num = num;
const errors_1 = require("./errors");
/** One call of a bundled script with its keys and (encoded) arguments. */
class Call {
    script;
    keys;
    args;
    constructor(script, keys, args) {
        this.script = script;
        this.keys = keys;
        this.args = args;
    }
}
exports.Call = Call;
/**
 * One plain command. `key` is the key that routes it on a cluster (null: a
 * keyless command); `node` sends it to that primary (a name from
 * Io.nodes(), or ANY for a keyless command any node answers).
 */
class Cmd {
    args;
    key;
    node;
    constructor(args, key, node = null) {
        this.args = args;
        this.key = key;
        this.node = node;
    }
}
exports.Cmd = Cmd;
/** A plain command routed by its first argument after the name (its key). */
function cmd(name, key, ...rest) {
    return new Cmd([name, key, ...rest.map(wire)], key);
}
/** A command for one node (SCAN of a primary, a keyless CONFIG GET or TIME). */
function nodeCmd(node, ...args) {
    return new Cmd(args.map(wire), null, node);
}
function wire(v) {
    return typeof v === "number" ? String(v) : v;
}
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
// The checks of the generated script functions, one per header type.
function int(name, v, lo, hi, reason) {
    const ok = (typeof v === "number" && Number.isSafeInteger(v)) || typeof v === "bigint";
    if (!ok || v < lo || v > hi) {
        throw bad(name, reason);
    }
}
function float(name, v, reason) {
    if (typeof v !== "number" || !Number.isFinite(v)) {
        throw bad(name, reason);
    }
}
function bool(name, v, reason) {
    if (typeof v !== "boolean") {
        throw bad(name, reason);
    }
}
function oneOf(name, v, words, reason) {
    if (typeof v !== "string" || !words.includes(v)) {
        throw bad(name, reason);
    }
}
function text(name, v, nonEmpty, reason) {
    if (typeof v !== "string" && !Buffer.isBuffer(v)) {
        throw bad(name, "must be a string or a Buffer");
    }
    if (nonEmpty && v.length === 0) {
        throw bad(name, reason);
    }
}
/** The part of a key that picks its cluster slot. */
function hashTag(name) {
    const b = typeof name === "string" ? Buffer.from(name) : name;
    const start = b.indexOf(0x7b);
    if (start >= 0) {
        const end = b.indexOf(0x7d, start + 1);
        if (end > start + 1) {
            return b.subarray(start + 1, end);
        }
    }
    return b;
}
/**
 * Text values found to carry the hash tag of the key they map to: a pattern
 * checks its channel against its key at every release, always the same two
 * (emptied past 1,024 values).
 */
const sameTag = new Map();
function tagged(name, v, key, reason) {
    const strings = typeof v === "string" && typeof key === "string";
    if (strings && sameTag.get(v) === key) {
        return;
    }
    text(name, v, true, reason);
    if ((typeof key !== "string" && !Buffer.isBuffer(key)) || !hashTag(v).equals(hashTag(key))) {
        throw bad(name, reason);
    }
    if (strings) {
        if (sameTag.size >= 1024) {
            sameTag.clear();
        }
        sameTag.set(v, key);
    }
}
function many(name, v) {
    if (!Array.isArray(v)) {
        throw bad(name, "must be an array");
    }
    return v;
}
function key(name, k) {
    if (typeof k !== "string" && !Buffer.isBuffer(k)) {
        throw bad(name, "a key must be a string or a Buffer");
    }
    return k;
}
function keys(name, ks) {
    return many(name, ks).map((k) => key(name, k));
}
/** A number or bigint as the script reads it. */
function num(v) {
    return String(v);
}
