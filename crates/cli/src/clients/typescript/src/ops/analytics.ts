// Bitmap analytics (src/analytics, lua/analytics): marks in one bitmap per period, periods in UTC.

import { randomBytes } from "crypto";

import { cmd } from "../call";
import { key } from "../contract";
import { Io, bytes, int, slot } from "../driver";
import { InvalidArgument, UidOutOfRange } from "../errors";
import * as expr from "../expr";
import type { Cohort, EventStreak, Page } from "../records";
import * as scripts from "../scripts";
import { MAX_OFFSET, checkSettings } from "./signin";
const MAX_RANGE = 1000;
const ORDER = ["hour", "day", "week", "month", "year"];
const GRANULARITY: Record<string, string> = { H: "hour", D: "day", W: "week", M: "month", Y: "year" };

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

const pad = (n: number, w = 2): string => String(n).padStart(w, "0");

/** The period labels of the UTC instant `atS`, one per granularity, finest first. */
export function labels(atS: number, granularities: readonly string[]): string[] {
  const t = new Date(atS * 1000);
  const [y, m, d, h] = [t.getUTCFullYear(), t.getUTCMonth() + 1, t.getUTCDate(), t.getUTCHours()];
  const day = `${pad(y, 4)}-${pad(m)}-${pad(d)}`;
  // ISO week: the week of the Thursday of this week.
  const thursday = new Date(Date.UTC(y, m - 1, d + 3 - ((t.getUTCDay() + 6) % 7)));
  const isoYear = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - Date.UTC(isoYear, 0, 1)) / 86400000 / 7) + 1;
  const by: Record<string, string> = {
    hour: `H:${day}T${pad(h)}`,
    day: `D:${day}`,
    week: `W:${pad(isoYear, 4)}-W${pad(week)}`,
    month: `M:${pad(y, 4)}-${pad(m)}`,
    year: `Y:${pad(y, 4)}`,
  };
  return granularities.map((g) => by[g]);
}

/** The label of the period n periods after the one labelled label (hour, day, ISO week, month or year). */
export function offset(label: string, n: number): string {
  const m = /^([HDWMY]):(\d{4})(?:-W?(\d{2}))?(?:-(\d{2}))?(?:T(\d{2}))?$/.exec(label);
  if (!expr.LABEL.test(label) || m === null) {
    throw bad("first", `\`${label}\` is not a period label (H:, D:, W:, M: or Y:)`);
  }
  const [kind, y, a, b, h] = [m[1], Number(m[2]), Number(m[3] ?? 1), Number(m[4] ?? 1), Number(m[5] ?? 0)];
  const fmtDay = (t: Date): string => `${pad(t.getUTCFullYear(), 4)}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}`;
  const valid = (t: Date): boolean => t.getUTCFullYear() === y && t.getUTCMonth() + 1 === a && t.getUTCDate() === b;
  switch (kind) {
    case "H":
    case "D": {
      const t = new Date(Date.UTC(y, a - 1, b, h));
      if (!valid(t) || h > 23) {
        throw bad("first", `\`${label}\` is not a period of the calendar`);
      }
      if (kind === "D") {
        return `D:${fmtDay(new Date(Date.UTC(y, a - 1, b + n)))}`;
      }
      const moved = new Date(t.getTime() + n * 3600000);
      return `H:${fmtDay(moved)}T${pad(moved.getUTCHours())}`;
    }
    case "W": {
      // The Monday of ISO week a: the week of January 4th, then a-1 weeks on.
      const jan4 = new Date(Date.UTC(y, 0, 4));
      const monday = (weeks: number): number => Date.UTC(y, 0, 4 - ((jan4.getUTCDay() + 6) % 7) + 7 * (a - 1 + weeks)) / 1000;
      if (a < 1 || labels(monday(0), ["week"])[0] !== label) {
        throw bad("first", `\`${label}\` is not a period of the calendar`);
      }
      return labels(monday(n), ["week"])[0];
    }
    case "M": {
      if (a < 1 || a > 12) {
        throw bad("first", `\`${label}\` is not a period of the calendar`);
      }
      const months = y * 12 + a - 1 + n;
      return `M:${pad(Math.floor(months / 12), 4)}-${pad((months % 12) + 1)}`;
    }
    default:
      return `Y:${pad(y + n, 4)}`;
  }
}

/** Where the period labelled label starts (unix seconds, UTC). */
export function start(label: string, name: string): number {
  const m = /^([HDWMY]):(\d{4})(?:-W?(\d{2}))?(?:-(\d{2}))?(?:T(\d{2}))?$/.exec(label);
  if (!expr.LABEL.test(label) || m === null) {
    throw bad(name, `\`${label}\` is not a period label (H:, D:, W:, M: or Y:)`);
  }
  // offset() checks the label against the calendar.
  offset(label, 0);
  const [kind, y, a, b, h] = [m[1], Number(m[2]), Number(m[3] ?? 1), Number(m[4] ?? 1), Number(m[5] ?? 0)];
  switch (kind) {
    case "H":
    case "D":
      return Date.UTC(y, a - 1, b, h) / 1000;
    case "W": {
      const jan4 = new Date(Date.UTC(y, 0, 4));
      return Date.UTC(y, 0, 4 - ((jan4.getUTCDay() + 6) % 7) + 7 * (a - 1)) / 1000;
    }
    case "M":
      return Date.UTC(y, a - 1, 1) / 1000;
    default:
      return Date.UTC(y, 0, 1) / 1000;
  }
}

/** The labels from first to last inclusive (one granularity, at most MAX_RANGE). */
function periods(first: string, last: string): string[] {
  if (start(first, "range") > start(last, "range")) {
    throw bad("range", `${first} is after ${last}`);
  }
  if (first[0] !== last[0]) {
    throw bad("range", `${first} and ${last} are periods of different granularities`);
  }
  const out = [first];
  while (out[out.length - 1] !== last) {
    if (out.length === MAX_RANGE) {
      throw bad("range", `${first} to ${last} is more than ${MAX_RANGE} periods`);
    }
    out.push(offset(out[out.length - 1], 1));
  }
  return out;
}

/** Whether every period of granularity coarse is made of whole periods of fine. */
function divides(fine: string, coarse: string): boolean {
  const [f, c] = [ORDER.indexOf(fine), ORDER.indexOf(coarse)];
  return f === c || (f < c && (fine === "hour" || fine === "day" || (fine === "month" && coarse === "year")));
}

/** The expression of "at least atLeast of the ofLast periods ending with last" (AND when they are equal). */
function active(event: string, atLeast: number, ofLast: number, last: string): unknown {
  const leaves = Array.from({ length: ofLast }, (_, i) => ({ event, period: offset(last, i - ofLast + 1) }));
  return atLeast === ofLast ? { and: leaves } : { at_least: atLeast, of: leaves };
}

function tmpKey(base: string): string {
  return `${base}:tmp:${randomBytes(8).toString("hex")}`;
}

/** The table of analytics.cohort's reply: every return bitmap's count, then per row its size and cells. */
function table(periods: string[], rows: number, columns: number, flat: number[]): Cohort {
  const returns = rows + columns - 1;
  let at = returns;
  const [sizes, counts]: [number[], (number | null)[][]] = [[], []];
  for (let i = 0; i < rows; i++) {
    const size = Math.max(flat[at], 0);
    at += 1;
    const cells = Math.min(columns, returns - i);
    const row: (number | null)[] = [];
    for (let k = 0; k < cells; k++) {
      row.push(size > 0 && flat[i + k] > 0 ? Math.max(flat[at + k], 0) : null);
    }
    at += cells;
    sizes.push(size);
    counts.push(row);
  }
  return { periods, sizes, counts };
}

export class Analytics {
  private readonly granularities: string[];

  constructor(
    private readonly prefix: string,
    private readonly tag: string | null,
    private readonly maxId: number,
    granularities: readonly string[] | null,
    private readonly hll: boolean = false,
  ) {
    checkSettings(prefix, maxId, "max id");
    const gs = granularities ?? ["day", "week", "month"];
    this.granularities = ORDER.filter((g) => gs.includes(g));
    if (this.granularities.length === 0) {
      throw bad("granularities", "must not be empty");
    }
  }

  key(event: string, period: string): string {
    if (/\s/.test(event)) {
      throw bad("event", `\`${event}\` must not contain whitespace`);
    }
    return this.tag === null
      ? key("analytics", "event", { prefix: this.prefix, event, period })
      : key("analytics", "event_tagged", { prefix: this.prefix, tag: this.tag, event, period });
  }

  async mark(io: Io, event: string, id: number, atS: number | bigint): Promise<boolean> {
    const keys = labels(Number(atS), this.granularities).map((p) => this.key(event, p));
    if (id > this.maxId) {
      throw new UidOutOfRange(`id ${id} is above the configured maximum ${this.maxId}`);
    }
    if (this.hll) {
      const values = [...keys.map(() => "0"), "0", String(id)];
      const reply = (await io.one(scripts.Analytics.markHll(`${keys[0]}:hll`, keys, this.maxId, values))) as unknown[];
      return int(reply[1]) === 1;
    }
    const values = [...keys.map(() => 0), id];
    return int(await io.one(scripts.Analytics.mark(keys, this.maxId, values))) === 1;
  }

  async markString(io: Io, event: string, id: string, atS: number | bigint): Promise<boolean> {
    const finest = this.key(event, labels(Number(atS), this.granularities)[0]);
    const reply = (await io.one(scripts.Analytics.markHll(`${finest}:hll`, [], this.maxId, ["0", id]))) as unknown[];
    return int(reply[0]) === 1;
  }

  async markUniqueString(io: Io, event: string, id: string): Promise<boolean> {
    const unique = this.key(event, "U");
    const reply = (await io.one(scripts.Analytics.markHll(`${unique}:hll`, [], this.maxId, ["0", id]))) as unknown[];
    return int(reply[0]) === 1;
  }

  async countUniques(io: Io, event: string, first: string, last: string | null): Promise<number> {
    if (first === "U" || last === "U") {
      if (first !== "U" || (last !== null && last !== "U")) {
        throw bad("range", "the unique event (U) is no range: first U, last null or U");
      }
      return Math.max(int(await io.one(cmd("PFCOUNT", `${this.key(event, "U")}:hll`))), 0);
    }
    const to = last ?? first;
    if (first.slice(0, 1) !== to.slice(0, 1)) {
      throw bad("range", `${first} and ${to} are periods of different granularities`);
    }
    const [begin, end] = [start(first, "range"), start(offset(to, 1), "range")];
    if (begin > start(to, "range")) {
      throw bad("range", `${first} is after ${to}`);
    }
    const finest = this.granularities[0];
    if (!divides(finest, GRANULARITY[first[0]])) {
      throw bad("period", `${first} is not made of whole periods of the finest granularity (${finest}), where the HyperLogLogs are`);
    }
    const keys: string[] = [];
    for (let p = labels(begin, [finest])[0]; start(p, "range") < end; p = offset(p, 1)) {
      if (keys.length === MAX_RANGE) {
        throw bad("range", `${first} to ${to} is more than ${MAX_RANGE} ${finest} periods`);
      }
      keys.push(`${this.key(event, p)}:hll`);
    }
    return Math.max(int(await io.one(cmd("PFCOUNT", keys[0], ...keys.slice(1)))), 0);
  }

  async streak(io: Io, event: string, id: number, first: string, last: string): Promise<EventStreak> {
    this.key(event, first);
    const ps = periods(first, last);
    if (id > this.maxId) {
      return { longest: 0, longestEnds: null, current: 0, marked: 0 };
    }
    const call = scripts.Analytics.streak(ps.map((p) => this.key(event, p)), id);
    const r = ((await io.one(call)) as unknown[]).map(int);
    return { longest: r[0], longestEnds: r[1] > 0 ? ps[r[1] - 1] : null, current: r[2], marked: r[3] };
  }

  async activeCount(io: Io, event: string, atLeast: number, ofLast: number, last: string): Promise<number> {
    return this.queryCount(io, active(event, atLeast, ofLast, last), null, 60000);
  }

  async activeContains(io: Io, event: string, atLeast: number, ofLast: number, last: string, id: number): Promise<boolean> {
    return this.queryContains(io, active(event, atLeast, ofLast, last), id, null, 60000);
  }

  async activeMembers(io: Io, event: string, atLeast: number, ofLast: number, last: string, from: number, limit: number): Promise<Page> {
    return this.queryMembers(io, active(event, atLeast, ofLast, last), from, limit, null, 60000);
  }

  async markUnique(io: Io, event: string, id: number): Promise<boolean> {
    const keys = [this.key(event, "U")];
    if (id > this.maxId) {
      throw new UidOutOfRange(`id ${id} is above the configured maximum ${this.maxId}`);
    }
    if (this.hll) {
      const reply = (await io.one(scripts.Analytics.markHll(`${keys[0]}:hll`, keys, this.maxId, ["0", "0", String(id)]))) as unknown[];
      return int(reply[1]) === 1;
    }
    return int(await io.one(scripts.Analytics.mark(keys, this.maxId, [0, id]))) === 1;
  }

  async count(io: Io, event: string, period: string): Promise<number> {
    return Math.max(int(await io.one(cmd("BITCOUNT", this.key(event, period)))), 0);
  }

  private base(event: string): string {
    return `${this.prefix}{${this.tag ?? event}}`;
  }

  private async query(
    io: Io,
    e: unknown,
    answer: string,
    at: number,
    limit: number,
    cache: string | null,
    ttlMs: number,
  ): Promise<number[]> {
    const events: string[] = [];
    const [node, leaves] = expr.read(e, (event, period) => {
      if (event === "" || event.includes("{") || event.includes("}")) {
        throw bad("event", "must not be empty and must not contain '{' or '}'");
      }
      events.push(event);
      return this.key(event, period);
    });
    const base = this.base(events[0]);
    if (cache !== null && /\s/.test(cache)) {
      throw bad("cache", `\`${cache}\` must not contain whitespace`);
    }
    const [result, ttl] = cache !== null ? [`${base}:cache:${cache}`, ttlMs] : [tmpKey(base), 0];
    if (!io.cluster || leaves.every((k) => slot(k) === slot(result))) {
      const p = expr.compile(node);
      const operands = [...Array.from({ length: p.registers }, () => tmpKey(base)), ...p.inputs];
      const call = scripts.Analytics.query(result, operands, false, p.registers, answer, at, limit, ttl, p.steps());
      return ((await io.one(call)) as unknown[]).map(int);
    }
    const keys = [...new Set(leaves)].sort();
    const [bitmaps, len] = expr.padded((await io.all(keys.map((k) => cmd("GET", k)))).map(bytes));
    const of = new Map(keys.map((k, i) => [k, bitmaps[i]]));
    return expr.answer(expr.evaluate(node, of, len), answer, at, limit);
  }

  async queryCount(io: Io, e: unknown, cache: string | null, ttlMs: number): Promise<number> {
    return Math.max((await this.query(io, e, "COUNT", 0, 0, cache, ttlMs))[0], 0);
  }

  async queryContains(io: Io, e: unknown, id: number, cache: string | null, ttlMs: number): Promise<boolean> {
    if (id > MAX_OFFSET) {
      expr.read(e, (event, period) => this.key(event, period));
      return false;
    }
    return (await this.query(io, e, "MEMBER", id, 0, cache, ttlMs))[0] === 1;
  }

  async queryMembers(io: Io, e: unknown, from: number, limit: number, cache: string | null, ttlMs: number): Promise<Page> {
    if (from > MAX_OFFSET) {
      expr.read(e, (event, period) => this.key(event, period));
      return { ids: [], next: null };
    }
    const reply = await this.query(io, e, "MEMBERS", from, limit, cache, ttlMs);
    return { ids: reply.slice(1), next: reply[0] >= 0 ? reply[0] : null };
  }

  async cohort(io: Io, cohortEvent: string, returnEvent: string, first: string, rows: number, columns: number): Promise<Cohort> {
    const periods = Array.from({ length: rows + columns - 1 }, (_, i) => offset(first, i));
    const bitmaps = [
      ...periods.slice(0, rows).map((p) => this.key(cohortEvent, p)),
      ...periods.map((p) => this.key(returnEvent, p)),
    ];
    const tmp = tmpKey(this.base(cohortEvent));
    if (!io.cluster || bitmaps.every((k) => slot(k) === slot(tmp))) {
      const flat = ((await io.one(scripts.Analytics.cohort(tmp, bitmaps, rows, columns))) as unknown[]).map(int);
      return table(periods.slice(0, rows), rows, columns, flat);
    }
    const [blobs] = expr.padded((await io.all(bitmaps.map((k) => cmd("GET", k)))).map(bytes));
    const [cohorts, back] = [blobs.slice(0, rows), blobs.slice(rows)];
    const flat = back.map(expr.popcount);
    cohorts.forEach((c, i) => {
      flat.push(expr.popcount(c));
      for (const r of back.slice(i, i + columns)) {
        flat.push(expr.popcount(Buffer.from(c.map((x, j) => x & r[j]))));
      }
    });
    return table(periods.slice(0, rows), rows, columns, flat);
  }
}
