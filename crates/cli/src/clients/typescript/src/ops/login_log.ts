// The monthly login log of the PHP recipe (src/login_log, lua/login_log).

import { Cmd, Request, cmd } from "../call";
import { key } from "../contract";
import {
  Day,
  days as dayRange,
  decodeBits,
  expireAt,
  firstOfMonth,
  fold,
  fromParts,
  iso,
  monthLabel,
  months,
  nextMonth,
  parse,
  parts,
  compact,
} from "../days";
import { Io, SERVER, bytes, int, pairs, slot, text } from "../driver";
import { InvalidArgument } from "../errors";
import type { ActiveUser, Expiry, MonthLogins, ReindexReport } from "../records";
import * as scripts from "../scripts";
import { checkSettings, checkUid, readGroups } from "./signin";

/** Before this day of the month a sync covers the previous month too. */
const LAST_MONTH_UNTIL_DAY = 8;

const MIN_RETENTION_DAYS = 32;
const TYPE = /^[A-Za-z0-9-]+$/;

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

export function checkType(userType: string): void {
  if (!TYPE.test(userType)) {
    throw bad("user type", `\`${userType}\` must be non-empty ASCII letters, digits or '-'`);
  }
}

function monthOf(year: number | bigint, month: number): Day {
  const d = fromParts(Number(year), month, 1);
  if (d === null) {
    throw bad("month", `${year}-${String(month).padStart(2, "0")} is not a valid month`);
  }
  return d;
}

function glob(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

export class LoginLog {
  constructor(
    private readonly prefix: string,
    private readonly maxUid: number,
    private readonly retentionS: number | null,
  ) {
    checkSettings(prefix, maxUid);
  }

  monthOf(day: Day): string {
    return iso(firstOfMonth(day));
  }

  syncMonths(today: Day): string[] {
    const first = firstOfMonth(today);
    const before = parts(today).d < LAST_MONTH_UNTIL_DAY ? [iso(firstOfMonth(first - 1))] : [];
    return [...before, iso(first)];
  }

  logKey(userType: string, uid: number, day: Day): string {
    return key("login_log", "log", { prefix: this.prefix, type: userType, uid, "YYYY-MM": monthLabel(day) });
  }

  indexKey(userType: string, day: Day): string {
    return key("login_log", "day_index", {
      prefix: this.prefix,
      type: userType,
      YYYYMMDD: compact(day),
      "YYYY-MM": monthLabel(day),
    });
  }

  typesKey(day: Day): string {
    return key("login_log", "types", { prefix: this.prefix, "YYYY-MM": monthLabel(day) });
  }

  private tag(day: Day): string {
    return `${this.prefix}{${monthLabel(day)}}`;
  }

  async record(io: Io, userType: string, uid: number, day: Day): Promise<boolean> {
    checkType(userType);
    checkUid(uid, this.maxUid);
    const logExp = expireAt(this.retentionS, nextMonth(day));
    const indexExp = expireAt(this.retentionS, day + 1);
    const log = this.logKey(userType, uid, day);
    const index = this.indexKey(userType, day);
    const types = this.typesKey(day);
    const d = parts(day).d;
    if (!io.cluster || slot(log) === slot(index)) {
      const call = scripts.LoginLog.record(log, index, types, d, uid, this.maxUid, userType, logExp, indexExp);
      return int(await io.one(call)) === 1;
    }
    const [first] = await io.all([
      scripts.LoginLog.mark(log, d, logExp),
      scripts.LoginLog.index(index, types, uid, this.maxUid, userType, indexExp),
    ]);
    return int(first) === 1;
  }

  async loggedInOn(io: Io, userType: string, uid: number, day: Day): Promise<boolean> {
    checkType(userType);
    return int(await io.one(cmd("GETBIT", this.logKey(userType, uid, day), parts(day).d))) === 1;
  }

  async daysInMonth(io: Io, userType: string, uid: number, year: number | bigint, month: number): Promise<number> {
    checkType(userType);
    return Math.max(int(await io.one(cmd("BITCOUNT", this.logKey(userType, uid, monthOf(year, month))))), 0);
  }

  async loggedInInMonth(io: Io, userType: string, uid: number, year: number | bigint, month: number): Promise<boolean> {
    return (await this.daysInMonth(io, userType, uid, year, month)) > 0;
  }

  async loggedInBetween(io: Io, userType: string, uid: number, from: Day, to: Day): Promise<boolean> {
    checkType(userType);
    const ms = months(from, to);
    const got = await io.all(
      ms.map(([a, b]) => cmd("BITCOUNT", this.logKey(userType, uid, a), parts(a).d, parts(b).d, "BIT")),
    );
    return got.some((n) => int(n) > 0);
  }

  async loginDays(io: Io, userType: string, uid: number, from: Day, to: Day): Promise<string[]> {
    checkType(userType);
    const ms = months(from, to);
    const replies = await io.all(
      ms.map(([a, b]) => scripts.LoginLog.days(this.logKey(userType, uid, a), parts(a).d, parts(b).d)),
    );
    return ms.flatMap(([a], i) => (replies[i] as unknown[]).map((d) => iso(a - parts(a).d + int(d))));
  }

  private async union(io: Io, userType: string, ms: readonly [Day, Day][]): Promise<Buffer> {
    const groups: [string, string[]][] = ms.map(([a, b]) => [
      this.tag(a),
      dayRange(a, b).map((d) => this.indexKey(userType, d)),
    ]);
    return fold("OR", (await io.all(readGroups(io, "OR", groups))).map(bytes));
  }

  async activeUsers(io: Io, userType: string, from: Day, to: Day): Promise<number[]> {
    checkType(userType);
    return decodeBits(await this.union(io, userType, months(from, to)));
  }

  private async types(io: Io, ms: readonly [Day, Day][]): Promise<string[]> {
    const sets = await io.all(ms.map(([a]) => cmd("SMEMBERS", this.typesKey(a))));
    const all = new Set<string>();
    for (const s of sets as unknown[][]) {
      s.forEach((t) => all.add(text(t)));
    }
    return [...all].sort();
  }

  typesBetween(io: Io, from: Day, to: Day): Promise<string[]> {
    return this.types(io, months(from, to));
  }

  async allActiveUsers(io: Io, from: Day, to: Day): Promise<ActiveUser[]> {
    const ms = months(from, to);
    const out: ActiveUser[] = [];
    for (const t of await this.types(io, ms)) {
      for (const uid of decodeBits(await this.union(io, t, ms))) {
        out.push({ userType: t, uid });
      }
    }
    return out;
  }

  monthUsers(io: Io, month: Day): Promise<ActiveUser[]> {
    const first = firstOfMonth(month);
    return this.allActiveUsers(io, first, nextMonth(first) - 1);
  }

  async monthLogins(io: Io, month: Day, users: readonly ActiveUser[]): Promise<MonthLogins[]> {
    const first = firstOfMonth(month);
    if (users.length === 0) {
      return [];
    }
    const logs = await io.all(users.map((u) => cmd("GET", this.logKey(u.userType, u.uid, first))));
    const label = monthLabel(first);
    return users.map((u, i) => ({
      month: label,
      userType: u.userType,
      uid: u.uid,
      days: decodeBits(bytes(logs[i])).filter((d) => d >= 1 && d <= 31),
    }));
  }

  private exportsKey(): string {
    return `${this.prefix}exports`;
  }

  async markExported(io: Io, month: Day, on: Day): Promise<void> {
    await io.one(cmd("HSET", this.exportsKey(), monthLabel(month), iso(on)));
  }

  async exports(io: Io): Promise<[string, string][]> {
    const out: [string, string][] = [];
    for (const [m, d] of pairs(await io.one(cmd("HGETALL", this.exportsKey())))) {
      try {
        out.push([iso(parse(`${m}-01`)), iso(parse(d.toString("utf8")))]);
      } catch {
        continue;
      }
    }
    return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  }

  async expireMonth(io: Io, month: Day, keepDays: number, today: Day): Promise<Expiry> {
    if (keepDays < MIN_RETENTION_DAYS) {
      throw bad("retention", `must be at least ${MIN_RETENTION_DAYS} days after a month ends`);
    }
    const first = firstOfMonth(month);
    const end = nextMonth(first);
    const label = monthLabel(first);
    if (today - end < keepDays) {
      return { outcome: "kept", month: label, keys: null, lastExport: null };
    }
    const last = await io.one(cmd("HGET", this.exportsKey(), label));
    const lastExport = last === null ? null : text(last);
    if (lastExport === null || parse(lastExport) < end) {
      return { outcome: "not_exported", month: label, keys: null, lastExport };
    }
    const users = await this.monthUsers(io, first);
    const doomed = users.map((u) => this.logKey(u.userType, u.uid, first));
    for (const t of await this.types(io, [[first, first]])) {
      doomed.push(...dayRange(first, end - 1).map((d) => this.indexKey(t, d)));
    }
    doomed.push(this.typesKey(first));
    const batch: Request[] = [...doomed.map((k) => cmd("DEL", k)), cmd("HDEL", this.exportsKey(), label)];
    const got = await io.all(batch);
    const keys = got.slice(0, -1).reduce((n: number, x) => n + int(x), 0);
    return { outcome: "deleted", month: label, keys, lastExport: null };
  }

  private monthPrefix(year: number | bigint, month: number, count: number): [Day, string] {
    const first = monthOf(year, month);
    if (count === 0) {
      throw bad("count", "must be at least 1");
    }
    return [first, `${this.prefix}${monthLabel(first)}_`];
  }

  /** One page of a reindex: a SCAN on every node not done (`at` moves on: a cursor, or null when done), then the logs found: [logs, days, new, skipped]. */
  private async page(io: Io, first: Day, monthPrefix: string, count: number, at: Map<string, string | null>): Promise<number[]> {
    const pattern = `${glob(monthPrefix)}*`;
    const todo = [...at].filter(([, c]) => c !== null).map(([n]) => n);
    const pages = await io.all(
      todo.map((n) => {
        const args = ["SCAN", at.get(n) as string, "MATCH", pattern, "COUNT", String(count), "TYPE", "string"];
        return new Cmd(args, null, n === SERVER ? null : n);
      }),
    );
    const found: [string, string, number][] = [];
    let skipped = 0;
    todo.forEach((n, i) => {
      const [next, keys] = pages[i] as [unknown, unknown[]];
      at.set(n, text(next) === "0" ? null : text(next));
      for (const k of keys) {
        const parsed = this.parseKey(text(k), monthPrefix);
        if (parsed === null) {
          skipped += 1;
        } else {
          found.push(parsed);
        }
      }
    });
    if (found.length === 0) {
      return [0, 0, 0, skipped];
    }
    const bits = await io.all(found.map(([k]) => cmd("GETRANGE", k, 0, 3)));
    const calls: Request[] = [];
    found.forEach(([, userType, uid], i) => {
      for (const d of decodeBits(bytes(bits[i]))) {
        const p = parts(first);
        const day = d < 1 || d > 31 ? null : fromParts(p.y, p.m, d);
        if (day !== null) {
          const exp = expireAt(this.retentionS, day + 1);
          calls.push(scripts.LoginLog.index(this.indexKey(userType, day), this.typesKey(day), uid, this.maxUid, userType, exp));
        }
      }
    });
    const got = calls.length > 0 ? await io.all(calls) : [];
    return [found.length, got.length, got.reduce((n: number, x) => n + int(x), 0), skipped];
  }

  async reindex(io: Io, year: number | bigint, month: number, count: number): Promise<ReindexReport> {
    const [first, monthPrefix] = this.monthPrefix(year, month, count);
    const at = new Map<string, string | null>((await io.nodes()).map((n) => [n, "0"]));
    const total = [0, 0, 0, 0];
    while ([...at.values()].some((c) => c !== null)) {
      (await this.page(io, first, monthPrefix, count, at)).forEach((n, i) => {
        total[i] += n;
      });
    }
    const [logs, dayCount, fresh, skipped] = total;
    return { logs, days: dayCount, new: fresh, unknown: 0, skipped, done: true, cursor: cursorText(at) };
  }

  async reindexPage(io: Io, year: number | bigint, month: number, cursor: string, count: number): Promise<ReindexReport> {
    const named = cursorOf(cursor);
    const [first, monthPrefix] = this.monthPrefix(year, month, count);
    const at = new Map<string, string | null>((await io.nodes()).map((n) => [n, named.has(n) ? (named.get(n) as string | null) : "0"]));
    const page = [...at.values()].some((c) => c !== null) ? await this.page(io, first, monthPrefix, count, at) : [0, 0, 0, 0];
    const [logs, dayCount, fresh, skipped] = page;
    const done = at.size > 0 && [...at.values()].every((c) => c === null);
    return { logs, days: dayCount, new: fresh, unknown: 0, skipped, done, cursor: cursorText(at) };
  }

  private parseKey(k: string, monthPrefix: string): [string, string, number] | null {
    if (!k.startsWith(monthPrefix)) {
      return null;
    }
    const rest = k.slice(monthPrefix.length);
    const at = rest.lastIndexOf("_");
    const userType = at < 0 ? "" : rest.slice(0, at);
    const uid = at < 0 ? rest : rest.slice(at + 1);
    if (!TYPE.test(userType)) {
      return null;
    }
    if (!/^[0-9]+$/.test(uid) || (uid.length > 1 && uid.startsWith("0"))) {
      return null;
    }
    const n = Number(uid);
    return n <= this.maxUid ? [k, userType, n] : null;
  }
}

/** A reindex cursor as text (Rust: ReindexCursor's Display): 0, or <node>@<cursor>|done joined by ",". */
function cursorText(at: Map<string, string | null>): string {
  return at.size === 0 ? "0" : [...at].map(([n, c]) => `${n}@${c ?? "done"}`).join(",");
}

/** The nodes of a reindex cursor's text (Rust: ReindexCursor::from_str). */
function cursorOf(s: string): Map<string, string | null> {
  const out = new Map<string, string | null>();
  if (s === "0") {
    return out;
  }
  const refused = () => bad("reindex cursor", `${JSON.stringify(s)} is not 0 or <node>@<cursor>|done,...`);
  for (const part of s.split(",")) {
    const at = part.lastIndexOf("@");
    const node = at < 0 ? "" : part.slice(0, at);
    const c = part.slice(at + 1);
    if (node === "" || node.includes("@")) {
      throw refused();
    }
    if (c === "done") {
      out.set(node, null);
    } else if (/^[0-9]{1,20}$/.test(c) && BigInt(c) < 2n ** 64n) {
      out.set(node, c);
    } else {
      throw refused();
    }
  }
  return out;
}
