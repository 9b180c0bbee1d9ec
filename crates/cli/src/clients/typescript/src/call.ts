// The requests an operation sends (one script call, one plain command) and
// the argument checks of the generated script functions (scripts.ts), which
// refuse an argument outside its header's declaration before anything is
// sent.

import { InvalidArgument } from "./errors";

/** A key or argument as sent: text (UTF-8) or bytes. */
export type Arg = string | Buffer;

/** One call of a bundled script with its keys and (encoded) arguments. */
export class Call {
  constructor(
    readonly script: string,
    readonly keys: Arg[],
    readonly args: Arg[],
  ) {}
}

/**
 * One plain command. `key` is the key that routes it on a cluster (null: a
 * keyless command); `node` sends it to that primary (a name from
 * Io.nodes(), or ANY for a keyless command any node answers).
 */
export class Cmd {
  readonly node: string | null;
  constructor(
    readonly args: Arg[],
    readonly key: Arg | null,
    node: string | null = null,
  ) {
    this.node = node;
  }
}

/** A plain command routed by its first argument after the name (its key). */
export function cmd(name: string, key: Arg, ...rest: (Arg | number)[]): Cmd {
  return new Cmd([name, key, ...rest.map(wire)], key);
}

/** A command for one node (SCAN of a primary, a keyless CONFIG GET or TIME). */
export function nodeCmd(node: string, ...args: (Arg | number)[]): Cmd {
  return new Cmd(args.map(wire), null, node);
}

export type Request = Call | Cmd;

function wire(v: Arg | number): Arg {
  return typeof v === "number" ? String(v) : v;
}

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

// The checks of the generated script functions, one per header type.

export function int(name: string, v: unknown, lo: number | bigint, hi: number | bigint, reason: string): void {
  const ok = (typeof v === "number" && Number.isSafeInteger(v)) || typeof v === "bigint";
  if (!ok || (v as number | bigint) < lo || (v as number | bigint) > hi) {
    throw bad(name, reason);
  }
}

export function float(name: string, v: unknown, reason: string): void {
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw bad(name, reason);
  }
}

export function bool(name: string, v: unknown, reason: string): void {
  if (typeof v !== "boolean") {
    throw bad(name, reason);
  }
}

export function oneOf(name: string, v: unknown, words: readonly string[], reason: string): void {
  if (typeof v !== "string" || !words.includes(v)) {
    throw bad(name, reason);
  }
}

export function text(name: string, v: unknown, nonEmpty: boolean, reason: string): void {
  if (typeof v !== "string" && !Buffer.isBuffer(v)) {
    throw bad(name, "must be a string or a Buffer");
  }
  if (nonEmpty && v.length === 0) {
    throw bad(name, reason);
  }
}

/** The part of a key that picks its cluster slot. */
export function hashTag(name: Arg): Buffer {
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
const sameTag = new Map<string, string>();

export function tagged(name: string, v: unknown, key: unknown, reason: string): void {
  const strings = typeof v === "string" && typeof key === "string";
  if (strings && sameTag.get(v) === key) {
    return;
  }
  text(name, v, true, reason);
  if ((typeof key !== "string" && !Buffer.isBuffer(key)) || !hashTag(v as Arg).equals(hashTag(key))) {
    throw bad(name, reason);
  }
  if (strings) {
    if (sameTag.size >= 1024) {
      sameTag.clear();
    }
    sameTag.set(v, key);
  }
}

export function many<T>(name: string, v: readonly T[]): readonly T[] {
  if (!Array.isArray(v)) {
    throw bad(name, "must be an array");
  }
  return v;
}

export function key(name: string, k: unknown): Arg {
  if (typeof k !== "string" && !Buffer.isBuffer(k)) {
    throw bad(name, "a key must be a string or a Buffer");
  }
  return k;
}

export function keys(name: string, ks: readonly Arg[]): Arg[] {
  return many(name, ks).map((k) => key(name, k));
}

/** A number or bigint as the script reads it. */
export function num(v: number | bigint): string {
  return String(v);
}
