// Days, ranges, months, time zones and expiry, as the day-keyed patterns
// compute them (src/bitmap/days.rs, src/visits/day.rs). A Day is a
// calendar day counted from 1970-01-01 (day 0).

import { InvalidArgument } from "./errors";

export type Day = number;

export const MAX_RANGE_DAYS = 3660;
const MS_PER_DAY = 86_400_000;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

/** The day of year-month-day, or null when there is no such day. */
export function fromParts(y: number, m: number, d: number): Day | null {
  const t = Date.UTC(y, m - 1, d);
  const back = new Date(t);
  if (y < 0 || y > 9999 || back.getUTCFullYear() !== y || back.getUTCMonth() !== m - 1 || back.getUTCDate() !== d) {
    return null;
  }
  return Math.round(t / MS_PER_DAY);
}

/** 'YYYY-MM-DD', or a Date at UTC or local midnight, as a Day (null: not a day). */
export function dayOf(v: unknown): Day | null {
  if (typeof v === "string") {
    const m = DATE.exec(v);
    return m === null ? null : fromParts(Number(m[1]), Number(m[2]), Number(m[3]));
  }
  if (v instanceof Date && !Number.isNaN(v.getTime())) {
    if (v.getTime() % MS_PER_DAY === 0) {
      return v.getTime() / MS_PER_DAY;
    }
    if (v.getHours() === 0 && v.getMinutes() === 0 && v.getSeconds() === 0 && v.getMilliseconds() === 0) {
      return fromParts(v.getFullYear(), v.getMonth() + 1, v.getDate());
    }
  }
  return null;
}

export interface Parts {
  y: number;
  m: number;
  d: number;
}

export function parts(day: Day): Parts {
  const t = new Date(day * MS_PER_DAY);
  return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: t.getUTCDate() };
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/** YYYY-MM-DD */
export function iso(day: Day): string {
  const p = parts(day);
  return `${pad(p.y, 4)}-${pad(p.m, 2)}-${pad(p.d, 2)}`;
}

/** YYYYMMDD */
export function compact(day: Day): string {
  return iso(day).replace(/-/g, "");
}

/** YYYY-MM */
export function monthLabel(day: Day): string {
  return iso(day).slice(0, 7);
}

/** 'YYYY-MM-DD' as a Day (throws on anything else). */
export function parse(text: string): Day {
  const d = dayOf(text);
  if (d === null) {
    throw bad("date", `${JSON.stringify(text)} is not YYYY-MM-DD`);
  }
  return d;
}

export function firstOfMonth(day: Day): Day {
  const p = parts(day);
  return fromParts(p.y, p.m, 1) as Day;
}

export function nextMonth(day: Day): Day {
  const p = parts(day);
  return (p.m === 12 ? fromParts(p.y + 1, 1, 1) : fromParts(p.y, p.m + 1, 1)) as Day;
}

/** Every day of first..last (never reversed, at most 3660 days). */
export function days(first: Day, last: Day): Day[] {
  if (first > last) {
    throw bad("day range", `reversed: ${iso(first)} is after ${iso(last)}`);
  }
  if (last - first >= MAX_RANGE_DAYS) {
    throw bad("day range", `must span at most ${MAX_RANGE_DAYS} days`);
  }
  const out: Day[] = [];
  for (let d = first; d <= last; d++) {
    out.push(d);
  }
  return out;
}

/** [first day, last day] of each calendar month of first..last, cut to the range. */
export function months(first: Day, last: Day): [Day, Day][] {
  const out: [Day, Day][] = [];
  for (const d of days(first, last)) {
    const cur = out[out.length - 1];
    if (cur === undefined || monthLabel(cur[0]) !== monthLabel(d)) {
      out.push([d, d]);
    } else {
      cur[1] = d;
    }
  }
  return out;
}

/** 0 when kept forever, else 00:00 UTC of periodEnd plus the retention, in unix seconds. */
export function expireAt(retentionS: number | null, periodEnd: Day): number {
  if (retentionS === null) {
    return 0;
  }
  const at = periodEnd * 86400 + retentionS;
  if (at <= 0) {
    throw bad("retention", `a period ending at ${iso(periodEnd)} would expire before 1970`);
  }
  return at;
}

/** A time zone: UTC, a fixed offset +HH:MM, or an IANA zone name. */
export class Zone {
  private readonly fixedMs: number | null;
  private readonly format: Intl.DateTimeFormat | null;

  constructor(readonly name: string) {
    const m = /^([+-])(\d{2}):(\d{2})$/.exec(name);
    if (name === "UTC" || m !== null) {
      const ms = m === null ? 0 : (Number(m[2]) * 60 + Number(m[3])) * 60_000;
      this.fixedMs = m !== null && m[1] === "-" ? -ms : ms;
      this.format = null;
      return;
    }
    this.fixedMs = null;
    try {
      this.format = new Intl.DateTimeFormat("en-US", {
        timeZone: name,
        hourCycle: "h23",
        year: "numeric",
        month: "numeric",
        day: "numeric",
        hour: "numeric",
        minute: "numeric",
        second: "numeric",
      });
    } catch {
      throw bad("time_zone", `${JSON.stringify(name)} is not UTC, +HH:MM or a known IANA zone`);
    }
  }

  /** The zone's offset from UTC at an instant, in ms. */
  offsetAt(instantMs: number): number {
    if (this.fixedMs !== null || this.format === null) {
      return this.fixedMs ?? 0;
    }
    const p: Record<string, number> = {};
    for (const part of this.format.formatToParts(new Date(instantMs))) {
      if (part.type !== "literal") {
        p[part.type] = Number(part.value);
      }
    }
    const local = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
    return local - (instantMs - (((instantMs % 1000) + 1000) % 1000));
  }

  /** The local calendar day of an instant. */
  dayAt(instantMs: number): Day {
    return Math.floor((instantMs + this.offsetAt(instantMs)) / MS_PER_DAY);
  }
}

/**
 * The first instant of the day after `day` in `zone`, as unix seconds (a
 * DST gap at midnight: the first valid local time after it; ambiguous: the
 * earlier).
 */
export function endOfDay(day: Day, zone: Zone): number {
  const midnight = (day + 1) * MS_PER_DAY;
  for (let minute = 0; minute <= 24 * 60; minute++) {
    const local = midnight + minute * 60_000;
    const candidates = [local - zone.offsetAt(local - MS_PER_DAY), local - zone.offsetAt(local + MS_PER_DAY)];
    const valid = candidates.filter((t) => t + zone.offsetAt(t) === local).sort((a, b) => a - b);
    if (valid.length > 0) {
      return Math.floor(valid[0] / 1000);
    }
  }
  throw bad("day", `${iso(day)}: the zone has no valid local time on the next day`);
}

/** The offsets of the set bits, ascending (bit 0: the high bit of byte 0). */
export function decodeBits(bitmap: Buffer | null): number[] {
  const out: number[] = [];
  if (bitmap === null) {
    return out;
  }
  for (let i = 0; i < bitmap.length; i++) {
    const byte = bitmap[i];
    for (let bit = 0; bit < 8; bit++) {
      if (byte & (0x80 >> bit)) {
        out.push(i * 8 + bit);
      }
    }
  }
  return out;
}

/** OR or AND of bitmaps, as BITOP (a missing key is empty). */
export function fold(op: "OR" | "AND", bitmaps: readonly (Buffer | null)[]): Buffer {
  let acc: Buffer | null = null;
  for (const raw of bitmaps) {
    const b = raw ?? Buffer.alloc(0);
    if (acc === null) {
      acc = Buffer.from(b);
    } else if (op === "OR") {
      const out = Buffer.alloc(Math.max(acc.length, b.length));
      for (let i = 0; i < out.length; i++) {
        out[i] = (acc[i] ?? 0) | (b[i] ?? 0);
      }
      acc = out;
    } else {
      const out = Buffer.alloc(Math.min(acc.length, b.length));
      for (let i = 0; i < out.length; i++) {
        out[i] = acc[i] & b[i];
      }
      acc = out;
    }
  }
  return acc ?? Buffer.alloc(0);
}
