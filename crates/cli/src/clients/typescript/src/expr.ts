// Set expressions over event bitmaps (src/analytics/expr.rs, compile.rs, eval.rs): the JSON form read and
// checked, compiled to the BITOP program analytics.query runs (AND, OR, XOR only: the same result on every
// server), or evaluated client-side over fetched bitmaps (a cluster where they are in several slots).

import { InvalidArgument } from "./errors";

export const MAX_LEAVES = 1000;
export const MAX_AT_LEAST = 32;
export const LABEL = /^(H:\d{4}-\d{2}-\d{2}T\d{2}|D:\d{4}-\d{2}-\d{2}|W:\d{4}-W\d{2}|M:\d{4}-\d{2}|Y:\d{4}|U)$/;

/** A checked node. */
export type Node =
  | { op: "event"; key: string }
  | { op: "and" | "or" | "xor" | "one" | "diff"; of: Node[] }
  | { op: "not"; x: Node }
  | { op: "at_least"; n: number; of: Node[] };

const NARY = ["and", "or", "xor", "one", "diff"];

function bad(why: string): InvalidArgument {
  return new InvalidArgument("expression", why, null);
}

type KeyOf = (event: string, period: string) => string;

function list(v: unknown, op: string, keyOf: KeyOf, leaves: string[]): Node[] {
  if (!Array.isArray(v)) {
    throw bad(`\`${op}\` takes a list of expressions`);
  }
  return v.map((x) => readNode(x, keyOf, leaves));
}

function readNode(v: unknown, keyOf: KeyOf, leaves: string[]): Node {
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw bad(`${JSON.stringify(v)} is not an object`);
  }
  const o = v as Record<string, unknown>;
  if ("event" in o) {
    const [event, period] = [o.event, o.period];
    if (typeof event !== "string" || typeof period !== "string") {
      throw bad(`${JSON.stringify(v)}: an event takes a name and a period label`);
    }
    if (!LABEL.test(period)) {
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
  return { op: op as "and", of };
}

function check(n: Node, inAnd: boolean): void {
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
    if (n.n === 0 || n.n > MAX_AT_LEAST || n.n > n.of.length) {
      throw bad(`at least ${n.n} of ${n.of.length} (n from 1 to ${MAX_AT_LEAST} and at most the operands)`);
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
export function read(v: unknown, keyOf: KeyOf): [Node, string[]] {
  const leaves: string[] = [];
  const node = readNode(v, keyOf, leaves);
  if (leaves.length > MAX_LEAVES) {
    throw bad(`names more than ${MAX_LEAVES} bitmaps`);
  }
  check(node, false);
  return [node, leaves];
}

/** An AND's positive part (one node) and what its NOTs subtract. */
function splitAnd(v: Node[]): [Node, Node[]] {
  const pos = v.filter((x) => x.op !== "not");
  const neg = v.flatMap((x) => (x.op === "not" ? [x.x] : []));
  return [pos.length === 1 ? pos[0] : { op: "and", of: pos }, neg];
}

/** An operand: the result (-1), a register (r >= 0) or an input ("i" + index). */
type Operand = number | string;
const RESULT = -1;

/** The BITOP steps of analytics.query over KEYS indices: 1 the result, then the registers, then the inputs. */
export class Program {
  readonly inputs: string[] = [];
  registers = 0;
  private readonly raw: [string, Operand, Operand[]][] = [];
  private readonly free: number[] = [];

  private reg(): number {
    return this.free.pop() ?? this.registers++;
  }

  private release(o: Operand): void {
    if (typeof o === "number" && o >= 0) {
      this.free.push(o);
    }
  }

  private step(op: string, dst: Operand, srcs: Operand[]): void {
    this.raw.push([op, dst, [...srcs]]);
  }

  private leaf(key: string): Operand {
    if (!this.inputs.includes(key)) {
      this.inputs.push(key);
    }
    return `i${this.inputs.indexOf(key)}`;
  }

  private operand(n: Node): Operand {
    if (n.op === "event") {
      return this.leaf(n.key);
    }
    const r = this.reg();
    this.eval(n, r);
    return r;
  }

  private nary(op: string, v: Node[], dst: Operand): void {
    const srcs = v.map((x) => this.operand(x));
    this.step(op, dst, srcs);
    srcs.forEach((s) => this.release(s));
  }

  eval(n: Node, dst: Operand): void {
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
  private diff(a: Node, rest: Node[], dst: Operand): void {
    let x: Operand = dst;
    if (a.op === "event") {
      x = this.leaf(a.key);
    } else {
      this.eval(a, dst);
    }
    let y: Operand;
    if (rest.length === 1) {
      y = this.operand(rest[0]);
    } else {
      y = this.reg();
      this.nary("OR", rest, y);
    }
    if (x !== dst) {
      this.step("AND", dst, [x, y]);
      this.step("XOR", dst, [dst, x]);
    } else {
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
  private one(v: Node[], dst: Operand): void {
    if (v.length === 1) {
      return this.nary("OR", v, dst);
    }
    this.eval(v[0], dst);
    const [twos, t] = [this.reg(), this.reg()];
    v.slice(1).forEach((e, i) => {
      const x = this.operand(e);
      if (i === 0) {
        this.step("AND", twos, [dst, x]);
      } else {
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
  private atLeast(n: number, v: Node[], dst: Operand): void {
    if (n === 1) {
      return this.nary("OR", v, dst);
    }
    const at: Operand[] = [...Array.from({ length: n - 1 }, () => this.reg()), dst];
    const t = this.reg();
    v.forEach((e, i) => {
      const x = this.operand(e);
      for (let j = Math.min(i, n - 1); j > 0; j--) {
        if (j === i) {
          this.step("AND", at[j], [at[j - 1], x]);
        } else {
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

  steps(): string[] {
    const index = (o: Operand): number =>
      typeof o === "string" ? 2 + this.registers + Number(o.slice(1)) : o === RESULT ? 1 : 2 + o;
    return this.raw.map(([op, d, srcs]) => [op, index(d), ...srcs.map(index)].join(" "));
  }
}

export function compile(node: Node): Program {
  const p = new Program();
  p.eval(node, RESULT);
  return p;
}

function zip(a: Buffer, b: Buffer, f: (x: number, y: number) => number): Buffer {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) {
    out[i] = f(a[i], b[i]) & 0xff;
  }
  return out;
}

/** The bitmap of n over fetched bitmaps of one length. */
export function evaluate(n: Node, bitmapOf: Map<string, Buffer>, len: number): Buffer {
  const all = (v: Node[]): Buffer[] => v.map((e) => evaluate(e, bitmapOf, len));
  const fold = (bs: Buffer[], f: (x: number, y: number) => number): Buffer => bs.slice(1).reduce((acc, b) => zip(acc, b, f), bs[0]);
  const empty = (): Buffer => Buffer.alloc(len);
  switch (n.op) {
    case "event":
      return bitmapOf.get(n.key) as Buffer;
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
export function popcount(b: Buffer): number {
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
export function answer(result: Buffer, what: string, at: number, limit: number): number[] {
  const bits = result.length * 8;
  const has = (i: number): boolean => i < bits && ((result[Math.floor(i / 8)] >> (7 - (i % 8))) & 1) === 1;
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
export function padded(blobs: (Buffer | null)[]): [Buffer[], number] {
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
