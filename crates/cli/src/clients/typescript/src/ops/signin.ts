// Daily sign-in bitmaps (src/signin, src/bitmap, lua/signin).

import { randomBytes } from "crypto";

import { Request, cmd } from "../call";
import { key } from "../contract";
import { Day, compact, days as dayRange, decodeBits, expireAt, fold, iso } from "../days";
import { Io, bytes, int, slot } from "../driver";
import { InvalidArgument, UidOutOfRange } from "../errors";
import type { Streak } from "../records";
import * as scripts from "../scripts";

export const MAX_OFFSET = 4294967295;

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

/** The settings of a bitmap pattern (sign-in, login log, analytics): a prefix that names keys, ids within a bitmap. */
export function checkSettings(prefix: string, maxUid: number, what = "max uid"): void {
  if (/\s/.test(prefix)) {
    throw bad("prefix", "must not contain whitespace");
  }
  if (prefix.includes("{") || prefix.includes("}")) {
    throw bad("prefix", "must not contain '{' or '}'");
  }
  if (maxUid > MAX_OFFSET) {
    throw bad(what, `${maxUid} is above the largest bit offset ${MAX_OFFSET}`);
  }
}

export function checkUid(uid: number, maxUid: number): void {
  if (uid > maxUid) {
    throw new UidOutOfRange(`uid ${uid} is above the configured maximum ${maxUid}`);
  }
}

export function tmpKey(base: string): string {
  return `${base}:tmp:${randomBytes(8).toString("hex")}`;
}

/** The temporary key of one script over `keys`, or null when they must be fetched (cluster, other slots). */
export function combined(io: Io, base: string, keys: readonly string[]): string | null {
  const tmp = tmpKey(base);
  if (!io.cluster) {
    return tmp;
  }
  const s = slot(tmp);
  return keys.every((k) => slot(k) === s) ? tmp : null;
}

/** Per [base, keys] group: one signin.combine call, or a GET of each key. */
export function readGroups(io: Io, op: "OR" | "AND", groups: readonly [string, string[]][]): Request[] {
  const batch: Request[] = [];
  for (const [base, keys] of groups) {
    const tmp = combined(io, base, keys);
    if (tmp !== null) {
      batch.push(scripts.Signin.combine(tmp, keys, op));
    } else {
      batch.push(...keys.map((k) => cmd("GET", k)));
    }
  }
  return batch;
}

export class SignIn {
  constructor(
    private readonly prefix: string,
    private readonly tag: string | null,
    private readonly maxUid: number,
    private readonly retentionS: number | null,
  ) {
    checkSettings(prefix, maxUid);
  }

  key(day: Day): string {
    const d = compact(day);
    return this.tag === null
      ? key("signin", "day", { prefix: this.prefix, YYYYMMDD: d })
      : key("signin", "day_tagged", { prefix: this.prefix, tag: this.tag, YYYYMMDD: d });
  }

  private base(): string {
    if (this.tag !== null) {
      return `${this.prefix}{${this.tag}}`;
    }
    return this.prefix.replace(/:+$/, "") || "signin";
  }

  async signIn(io: Io, uid: number, day: Day): Promise<boolean> {
    checkUid(uid, this.maxUid);
    const expire = expireAt(this.retentionS, day + 1);
    return int(await io.one(scripts.Signin.mark(this.key(day), uid, this.maxUid, expire))) === 1;
  }

  async signedIn(io: Io, uid: number, day: Day): Promise<boolean> {
    if (uid > this.maxUid) {
      return false;
    }
    return int(await io.one(cmd("GETBIT", this.key(day), uid))) === 1;
  }

  async count(io: Io, day: Day): Promise<number> {
    return Math.max(int(await io.one(cmd("BITCOUNT", this.key(day)))), 0);
  }

  private async users(io: Io, op: "OR" | "AND", from: Day, to: Day): Promise<number[]> {
    const keys = dayRange(from, to).map((d) => this.key(d));
    const replies = await io.all(readGroups(io, op, [[this.base(), keys]]));
    return decodeBits(fold(op, replies.map(bytes)));
  }

  private async countOf(io: Io, op: "OR" | "AND", from: Day, to: Day): Promise<number> {
    const keys = dayRange(from, to).map((d) => this.key(d));
    const tmp = combined(io, this.base(), keys);
    if (tmp !== null) {
      return Math.max(int(await io.one(scripts.Signin.count(tmp, keys, op))), 0);
    }
    const replies = await io.all(keys.map((k) => cmd("GET", k)));
    return decodeBits(fold(op, replies.map(bytes))).length;
  }

  activeAny(io: Io, from: Day, to: Day): Promise<number[]> {
    return this.users(io, "OR", from, to);
  }

  activeEvery(io: Io, from: Day, to: Day): Promise<number[]> {
    return this.users(io, "AND", from, to);
  }

  countAny(io: Io, from: Day, to: Day): Promise<number> {
    return this.countOf(io, "OR", from, to);
  }

  countEvery(io: Io, from: Day, to: Day): Promise<number> {
    return this.countOf(io, "AND", from, to);
  }

  async daysSignedInOn(io: Io, uid: number, from: Day, to: Day): Promise<Day[]> {
    const range = dayRange(from, to);
    checkUid(uid, this.maxUid);
    const bits = await io.all(range.map((d) => cmd("GETBIT", this.key(d), uid)));
    return range.filter((_, i) => int(bits[i]) === 1);
  }

  async daysSignedIn(io: Io, uid: number, from: Day, to: Day): Promise<string[]> {
    return (await this.daysSignedInOn(io, uid, from, to)).map(iso);
  }

  async streak(io: Io, uid: number, from: Day, to: Day): Promise<Streak> {
    const signed = await this.daysSignedInOn(io, uid, from, to);
    let longest = 0;
    let ends: Day | null = null;
    let run = 0;
    let prev: Day | null = null;
    for (const d of signed) {
      run = prev !== null && prev + 1 === d ? run + 1 : 1;
      if (run > longest) {
        longest = run;
        ends = d;
      }
      prev = d;
    }
    return { longest, longestEnds: ends === null ? null : iso(ends), current: prev === to ? run : 0 };
  }
}
