"use strict";
// Set expressions over event bitmaps (src/analytics/expr.rs, compile.rs, eval.rs): the JSON form read and
// checked, compiled to the BITOP program analytics.query runs (AND, OR, XOR only: the same result on every
// server), or evaluated client-side over fetched bitmaps (a cluster where they are in several slots).
Object.defineProperty(exports, "__esModule", { value: true });
exports.Program = exports.LABEL = exports.MAX_AT_LEAST = exports.MAX_LEAVES = void 0;
exports.read = read;
exports.compile = compile;
exports.evaluate = evaluate;
exports.popcount = popcount;
exports.answer = answer;
exports.padded = padded;
const errors_1 = require("./errors");
exports.MAX_LEAVES = 1000;
exports.MAX_AT_LEAST = 32;
exports.LABEL = /^(H:\d{4}-\d{2}-\d{2}T\d{2}|D:\d{4}-\d{2}-\d{2}|W:\d{4}-W\d{2}|M:\d{4}-\d{2}|Y:\d{4}|U)$/;
const NARY = ["and", "or", "xor", "one", "diff"];
function bad(why) {
    return new errors_1.InvalidArgument("expression", why, null);
}
function list(v, op, keyOf, leaves) {
    if (!Array.isArray(v)) {
        throw bad(`\`${op}\` takes a list of expressions`);
    }
    return v.map((x) => readNode(x, keyOf, leaves));
}
function readNode(v, keyOf, leaves) {
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
        throw bad(`${JSON.stringify(v)} is not an object`);
    }
    const o = v;
    if ("event" in o) {
        const [event, period] = [o.event, o.period];
        if (typeof event !== "string" || typeof period !== "string") {
            throw bad(`${JSON.stringify(v)}: an event takes a name and a period label`);
        }
        if (!exports.LABEL.test(period)) {
            throw bad(`\`${period}\` is not a period label (H:, D:, W:, M:, Y: or U)`);
        }
        leaves.push(keyOf(event, period));
        return { op: "event", key: leaves[leaves.length - 1] };
    }
    if ("at_least" in o) {
        const n = o.at_least;
        if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
            throw bad(`${JSON.stringify(v)}: at_least takes a count`);
        }
        return { op: "at_least", n, of: list(o.of, "of", keyOf, leaves) };
    }
    const entries = Object.entries(o);
    if (entries.length !== 1) {
        throw bad(`${JSON.stringify(v)}: one operator per object`);
    }
    const [op, arg] = entries[0];
    if (op === "not") {
        return { op: "not", x: readNode(arg, keyOf, leaves) };
    }
    if (!NARY.includes(op)) {
        throw bad(`unknown operator \`${op}\``);
    }
    const of = list(arg, op, keyOf, leaves);
    if (op === "diff" && of.length === 0) {
        throw bad("`diff` of nothing");
    }
    return { op: op, of };
}
function check(n, inAnd) {
    if (n.op === "event") {
        return;
    }
    if (n.op === "not") {
        if (!inAnd) {
            throw bad("NOT is only allowed as an operand of AND");
        }
        return check(n.x, false);
    }
    if (n.op === "at_least") {
        if (n.n === 0 || n.n > exports.MAX_AT_LEAST || n.n > n.of.length) {
            throw bad(`at least ${n.n} of ${n.of.length} (n from 1 to ${exports.MAX_AT_LEAST} and at most the operands)`);
        }
        return n.of.forEach((x) => check(x, false));
    }
    if (n.of.length === 0) {
        throw bad("an operator of nothing");
    }
    if (n.op === "and") {
        if (n.of.every((x) => x.op === "not")) {
            throw bad("AND of NOTs alone");
        }
        return n.of.forEach((x) => check(x, true));
    }
    if (n.op === "diff" && n.of.length < 2) {
        throw bad("DIFF of nothing to subtract");
    }
    n.of.forEach((x) => check(x, false));
}
/** The checked expression and the key of each leaf, in order. */
function read(v, keyOf) {
    const leaves = [];
    const node = readNode(v, keyOf, leaves);
    if (leaves.length > exports.MAX_LEAVES) {
        throw bad(`names more than ${exports.MAX_LEAVES} bitmaps`);
    }
    check(node, false);
    return [node, leaves];
}
/** An AND's positive part (one node) and what its NOTs subtract. */
function splitAnd(v) {
    const pos = v.filter((x) => x.op !== "not");
    const neg = v.flatMap((x) => (x.op === "not" ? [x.x] : []));
    return [pos.length === 1 ? pos[0] : { op: "and", of: pos }, neg];
}
const RESULT = -1;
/** The BITOP steps of analytics.query over KEYS indices: 1 the result, then the registers, then the inputs. */
class Program {
    inputs = [];
    registers = 0;
    raw = [];
    free = [];
    reg() {
        return this.free.pop() ?? this.registers++;
    }
    release(o) {
        if (typeof o === "number" && o >= 0) {
            this.free.push(o);
        }
    }
    step(op, dst, srcs) {
        this.raw.push([op, dst, [...srcs]]);
    }
    leaf(key) {
        if (!this.inputs.includes(key)) {
            this.inputs.push(key);
        }
        return `i${this.inputs.indexOf(key)}`;
    }
    operand(n) {
        if (n.op === "event") {
            return this.leaf(n.key);
        }
        const r = this.reg();
        this.eval(n, r);
        return r;
    }
    nary(op, v, dst) {
        const srcs = v.map((x) => this.operand(x));
        this.step(op, dst, srcs);
        srcs.forEach((s) => this.release(s));
    }
    eval(n, dst) {
        switch (n.op) {
            case "event":
                return this.step("OR", dst, [this.leaf(n.key)]);
            case "or":
            case "xor":
                return this.nary(n.op.toUpperCase(), n.of, dst);
            case "and": {
                const [first, neg] = splitAnd(n.of);
                return neg.length > 0 ? this.diff(first, neg, dst) : this.nary("AND", n.of, dst);
            }
            case "diff":
                return this.diff(n.of[0], n.of.slice(1), dst);
            case "one":
                return this.one(n.of, dst);
            case "at_least":
                return this.atLeast(n.n, n.of, dst);
            case "not":
                throw new Error("checked: NOT only inside AND");
        }
    }
    /** a AND NOT (OR rest) as a XOR (a AND (OR rest)). */
    diff(a, rest, dst) {
        let x = dst;
        if (a.op === "event") {
            x = this.leaf(a.key);
        }
        else {
            this.eval(a, dst);
        }
        let y;
        if (rest.length === 1) {
            y = this.operand(rest[0]);
        }
        else {
            y = this.reg();
            this.nary("OR", rest, y);
        }
        if (x !== dst) {
            this.step("AND", dst, [x, y]);
            this.step("XOR", dst, [dst, x]);
        }
        else {
            const t = typeof y === "number" ? y : this.reg();
            this.step("AND", t, [dst, y]);
            this.step("XOR", dst, [dst, t]);
            if (t !== y) {
                this.release(t);
            }
        }
        this.release(y);
    }
    /** In exactly one: ones XOR-ed, twos OR-ed from ones AND x, then ones AND NOT twos. */
    one(v, dst) {
        if (v.length === 1) {
            return this.nary("OR", v, dst);
        }
        this.eval(v[0], dst);
        const [twos, t] = [this.reg(), this.reg()];
        v.slice(1).forEach((e, i) => {
            const x = this.operand(e);
            if (i === 0) {
                this.step("AND", twos, [dst, x]);
            }
            else {
                this.step("AND", t, [dst, x]);
                this.step("OR", twos, [twos, t]);
            }
            this.step("XOR", dst, [dst, x]);
            this.release(x);
        });
        this.step("AND", t, [dst, twos]);
        this.step("XOR", dst, [dst, t]);
        this.release(t);
        this.release(twos);
    }
    /** at[j]: the ids in at least j+1 of the operands so far; at[n-1] is dst. */
    atLeast(n, v, dst) {
        if (n === 1) {
            return this.nary("OR", v, dst);
        }
        const at = [...Array.from({ length: n - 1 }, () => this.reg()), dst];
        const t = this.reg();
        v.forEach((e, i) => {
            const x = this.operand(e);
            for (let j = Math.min(i, n - 1); j > 0; j--) {
                if (j === i) {
                    this.step("AND", at[j], [at[j - 1], x]);
                }
                else {
                    this.step("AND", t, [at[j - 1], x]);
                    this.step("OR", at[j], [at[j], t]);
                }
            }
            this.step("OR", at[0], i === 0 ? [x] : [at[0], x]);
            this.release(x);
        });
        this.release(t);
        at.forEach((r) => this.release(r));
    }
    steps() {
        const index = (o) => typeof o === "string" ? 2 + this.registers + Number(o.slice(1)) : o === RESULT ? 1 : 2 + o;
        return this.raw.map(([op, d, srcs]) => [op, index(d), ...srcs.map(index)].join(" "));
    }
}
exports.Program = Program;
function compile(node) {
    const p = new Program();
    p.eval(node, RESULT);
    return p;
}
function zip(a, b, f) {
    const out = Buffer.alloc(a.length);
    for (let i = 0; i < a.length; i++) {
        out[i] = f(a[i], b[i]) & 0xff;
    }
    return out;
}
/** The bitmap of n over fetched bitmaps of one length. */
function evaluate(n, bitmapOf, len) {
    const all = (v) => v.map((e) => evaluate(e, bitmapOf, len));
    const fold = (bs, f) => bs.slice(1).reduce((acc, b) => zip(acc, b, f), bs[0]);
    const empty = () => Buffer.alloc(len);
    switch (n.op) {
        case "event":
            return bitmapOf.get(n.key);
        case "or":
            return fold(all(n.of), (x, y) => x | y);
        case "xor":
            return fold(all(n.of), (x, y) => x ^ y);
        case "and": {
            const [first, neg] = splitAnd(n.of);
            if (neg.length > 0) {
                return evaluate({ op: "diff", of: [first, ...neg] }, bitmapOf, len);
            }
            return fold(all(n.of), (x, y) => x & y);
        }
        case "diff": {
            const [a, ...rest] = all(n.of);
            return zip(a, fold(rest, (x, y) => x | y), (x, y) => x & ~y);
        }
        case "one": {
            let [ones, twos] = [empty(), empty()];
            for (const x of all(n.of)) {
                twos = zip(twos, zip(ones, x, (p, q) => p & q), (p, q) => p | q);
                ones = zip(ones, x, (p, q) => p ^ q);
            }
            return zip(ones, twos, (x, y) => x & ~y);
        }
        case "at_least": {
            const at = Array.from({ length: n.n }, empty);
            for (const x of all(n.of)) {
                for (let j = n.n - 1; j > 0; j--) {
                    at[j] = zip(at[j], zip(at[j - 1], x, (p, q) => p & q), (p, q) => p | q);
                }
                at[0] = zip(at[0], x, (p, q) => p | q);
            }
            return at[n.n - 1];
        }
        case "not":
            throw new Error("checked: NOT only inside AND");
    }
}
/** How many bits are set. */
function popcount(b) {
    let n = 0;
    for (const byte of b) {
        let x = byte;
        while (x !== 0) {
            n += x & 1;
            x >>= 1;
        }
    }
    return n;
}
/** The reply analytics.query gives for the result bitmap. */
function answer(result, what, at, limit) {
    const bits = result.length * 8;
    const has = (i) => i < bits && ((result[Math.floor(i / 8)] >> (7 - (i % 8))) & 1) === 1;
    if (what === "COUNT") {
        return [popcount(result)];
    }
    if (what === "MEMBER") {
        return [has(at) ? 1 : 0];
    }
    const out = [-1];
    let pos = at;
    while (out.length <= limit && pos < bits) {
        if (has(pos)) {
            out.push(pos);
        }
        pos++;
    }
    if (pos < bits) {
        out[0] = pos;
    }
    return out;
}
/** Fetched bitmaps (null: missing) padded to one length, and that length. */
function padded(blobs) {
    const len = Math.max(0, ...blobs.map((b) => (b === null ? 0 : b.length)));
    return [
        blobs.map((b) => {
            const out = Buffer.alloc(len);
            b?.copy(out);
            return out;
        }),
        len,
    ];
}
