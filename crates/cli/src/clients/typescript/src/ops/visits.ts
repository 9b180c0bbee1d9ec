// The visit counter's operations (src/visits, lua/visits).

import { Request, cmd, nodeCmd } from "../call";
import { key } from "../contract";
import { Day, Zone, days as dayRange, endOfDay, iso } from "../days";
import { ANY, Io, int, pairs, text } from "../driver";
import { DayExpired, DayOpen, InvalidArgument, LayoutMismatch, RedisPatternsError } from "../errors";
import { crc32 } from "../hashing";
import type { BatchVisits, ShardPlan, Visit } from "../records";
import * as scripts from "../scripts";

const MAX_GRACE_S = 366 * 86400;
const UNION_SETS = 512;

type Member = number | bigint;

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

/** crc32 of the member's decimal text, mod shards. */
export function shardOf(member: Member, shards: number): number {
  return crc32(String(member)) % shards;
}

export class VisitCounter {
  private readonly zone: Zone;

  constructor(
    readonly name: string,
    readonly shards: number,
    readonly timeZone: string,
    private readonly prefix: string,
    private readonly retentionS: number | null,
    private readonly lateWindowS: number | null,
  ) {
    if (retentionS !== null && retentionS > MAX_GRACE_S) {
      throw bad("retention", "must be whole seconds, at most 366 days");
    }
    if (lateWindowS !== null) {
      if (lateWindowS > MAX_GRACE_S) {
        throw bad("late window", "must be whole seconds, at most 366 days");
      }
      if (retentionS !== null && lateWindowS > retentionS) {
        throw bad(
          "late window",
          `${lateWindowS} s is longer than the retention's grace of ${retentionS} s: late visits would find their day's keys gone`,
        );
      }
    }
    this.zone = new Zone(timeZone);
  }

  private vars(day: Day): Record<string, string> {
    return { prefix: this.prefix, name: this.name, "YYYY-MM-DD": iso(day) };
  }

  counterKey(day: Day): string {
    return key("visits", "counter", this.vars(day));
  }

  metaKey(day: Day): string {
    return key("visits", "meta", this.vars(day));
  }

  shardKey(day: Day, index: number): string {
    return key("visits", "shard", { ...this.vars(day), shard: String(index) });
  }

  private expireAt(day: Day): number {
    return this.retentionS === null ? 0 : endOfDay(day, this.zone) + this.retentionS;
  }

  private acceptUntil(day: Day): number {
    return this.lateWindowS === null ? 0 : endOfDay(day, this.zone) + this.lateWindowS;
  }

  private addCall(day: Day, member: Member): Request {
    return scripts.Visits.add(
      this.counterKey(day),
      this.shardKey(day, shardOf(member, this.shards)),
      this.metaKey(day),
      this.expireAt(day),
      this.acceptUntil(day),
      member,
      this.shards,
    );
  }

  async add(io: Io, day: Day, member: Member): Promise<Visit> {
    const [isNew, count] = (await io.one(this.addCall(day, member))) as unknown[];
    return { new: int(isNew) === 1, count: Math.max(int(count), 0) };
  }

  addNow(io: Io, member: Member): Promise<Visit> {
    return this.add(io, this.zone.dayAt(Date.now()), member);
  }

  addAt(io: Io, atMs: number, member: Member): Promise<Visit> {
    return this.add(io, this.zone.dayAt(atMs), member);
  }

  dayOf(atMs: number): string {
    return iso(this.zone.dayAt(atMs));
  }

  memberFromStringId(id: string): number {
    const c = crc32(id);
    return c >= 2 ** 31 ? c - 2 ** 32 : c;
  }

  async addPipelined(io: Io, day: Day, members: readonly Member[]): Promise<Visit[]> {
    if (members.length === 0) {
      return [];
    }
    const replies = await io.all(members.map((m) => this.addCall(day, m)));
    return replies.map((r: unknown[]) => ({ new: int(r[0]) === 1, count: Math.max(int(r[1]), 0) }));
  }

  async addBatch(io: Io, day: Day, members: readonly Member[]): Promise<BatchVisits> {
    const expire = this.expireAt(day);
    const accept = this.acceptUntil(day);
    if (members.length === 0) {
      return { count: await this.count(io, day), new: [] };
    }
    const groups = new Map<number, Member[]>();
    const place: ([number, number] | null)[] = [];
    const seen = new Set<string>();
    for (const m of members) {
      const id = String(m);
      if (seen.has(id)) {
        place.push(null);
        continue;
      }
      seen.add(id);
      const s = shardOf(m, this.shards);
      let g = groups.get(s);
      if (g === undefined) {
        g = [];
        groups.set(s, g);
      }
      g.push(m);
      place.push([s, g.length - 1]);
    }
    const offset = new Map<number, number>();
    let at = 1;
    const args: Member[] = [];
    for (const [s, g] of groups) {
      offset.set(s, at);
      at += g.length;
      args.push(g.length, ...g);
    }
    const reply = (await io.one(
      scripts.Visits.addBatch(
        this.counterKey(day),
        this.metaKey(day),
        [...groups.keys()].map((s) => this.shardKey(day, s)),
        expire,
        accept,
        this.shards,
        args,
      ),
    )) as unknown[];
    const isNew = place.map((p) => (p === null ? false : int(reply[(offset.get(p[0]) as number) + p[1]]) === 1));
    return { count: Math.max(int(reply[0]), 0), new: isNew };
  }

  async count(io: Io, day: Day): Promise<number> {
    const n = await io.one(cmd("GET", this.counterKey(day)));
    return n === null ? 0 : Math.max(int(n), 0);
  }

  async finalCount(io: Io, day: Day): Promise<number> {
    const end = endOfDay(day, this.zone);
    const expire = this.retentionS === null ? null : end + this.retentionS;
    const accept = this.lateWindowS === null ? null : end + this.lateWindowS;
    const [nowReply, count] = await io.all([nodeCmd(ANY, "TIME"), cmd("GET", this.counterKey(day))]);
    const now = int((nowReply as unknown[])[0]);
    const when = (at: number) => new Date(at * 1000).toISOString().replace(".000Z", "+00:00");
    if (accept === null) {
      throw new DayOpen(`${iso(day)} accepts visits as long as its keys live (the counter has no late window)`);
    }
    if (now < accept) {
      throw new DayOpen(`${iso(day)} accepts visits until ${when(accept)} (its end plus the late window)`);
    }
    if (expire !== null && now >= expire) {
      throw new DayExpired(`${iso(day)}'s keys expired at ${when(expire)} (its end plus the retention's grace)`);
    }
    return count === null ? 0 : Math.max(int(count), 0);
  }

  async contains(io: Io, day: Day, member: Member): Promise<boolean> {
    const reply = (await io.one(
      scripts.Visits.contains(this.counterKey(day), this.shardKey(day, shardOf(member, this.shards)), member),
    )) as unknown[] | null;
    return reply !== null && reply.length > 0 && int(reply[0]) === 1;
  }

  async shardSizes(io: Io, day: Day): Promise<number[]> {
    const batch: Request[] = [];
    for (let i = 0; i < this.shards; i++) {
      batch.push(cmd("SCARD", this.shardKey(day, i)));
    }
    return (await io.all(batch)).map(int);
  }

  async distinctOver(io: Io, over: readonly Day[]): Promise<number> {
    const distinct = [...new Set(over)].sort((a, b) => a - b);
    if (distinct.length === 0) {
      return 0;
    }
    if (distinct.length === 1) {
      return this.count(io, distinct[0]);
    }
    const per = Math.max(Math.floor(UNION_SETS / distinct.length), 1);
    let total = 0;
    for (let first = 0; first < this.shards; first += per) {
      const idx: number[] = [];
      for (let i = first; i < Math.min(first + per, this.shards); i++) {
        idx.push(i);
      }
      const sets = await io.all(idx.flatMap((i) => distinct.map((d) => cmd("SMEMBERS", this.shardKey(d, i)))));
      idx.forEach((_, j) => {
        const union = new Set<string>();
        for (const s of sets.slice(j * distinct.length, (j + 1) * distinct.length) as unknown[][]) {
          s.forEach((m) => union.add(text(m)));
        }
        total += union.size;
      });
    }
    return total;
  }

  distinctBetween(io: Io, from: Day, to: Day): Promise<number> {
    return this.distinctOver(io, dayRange(from, to));
  }

  storedShards(io: Io, day: Day): Promise<number | null> {
    return this.storedShardsBetween(io, day, day);
  }

  async storedShardsBetween(io: Io, from: Day, to: Day): Promise<number | null> {
    const keys = dayRange(from, to).map((d) => this.metaKey(d));
    const got = await io.all(keys.map((k) => cmd("HGET", k, "shards")));
    let found: [string, number] | null = null;
    keys.forEach((k, i) => {
      if (got[i] === null) {
        return;
      }
      const n = int(got[i]);
      if (found !== null && found[1] !== n) {
        throw new LayoutMismatch(k, `shards=${n}`, `shards=${found[1]} (stored at ${found[0]})`);
      }
      found = found ?? [k, n];
    });
    return found === null ? null : (found as [string, number])[1];
  }

  static async planned(
    io: Io,
    name: string,
    expectedDailyUniques: number,
    timeZone: string,
  ): Promise<[VisitCounter, ShardPlan]> {
    if (expectedDailyUniques === 0) {
      throw bad("expected daily uniques", "must be at least 1");
    }
    let limit = 512;
    let source: ShardPlan["limitsSource"] = "default_because_unreported";
    try {
      const got = pairs(await io.one(nodeCmd(ANY, "CONFIG", "GET", "set-max-intset-entries")));
      if (got.length > 0) {
        limit = int(got[0][1]);
        source = "server";
      }
    } catch (e) {
      if (!(e instanceof RedisPatternsError)) {
        throw e;
      }
      source = "default_because_denied";
    }
    const shards = planShards(expectedDailyUniques, limit);
    return [
      new VisitCounter(name, shards, timeZone, "visits:", 172800, 300),
      { shards, maxIntsetEntries: limit, limitsSource: source },
    ];
  }
}

/** src/visits/shards.rs plan_shards: the mean m per shard with m + 4 sqrt(m) <= the limit. */
export function planShards(expected: number, maxIntsetEntries: number): number {
  if (maxIntsetEntries < 64) {
    throw bad("max intset entries", `${maxIntsetEntries} is too small to plan shards (at least 64)`);
  }
  const root = (-4 + Math.sqrt(16 + 4 * maxIntsetEntries)) / 2;
  const mean = Math.max(Math.floor(root * root), 1);
  const shards = Math.ceil(expected / mean);
  if (shards > 2 ** 20) {
    throw bad("expected daily uniques", `${expected} needs more than ${2 ** 20} shards`);
  }
  return Math.max(shards, 1);
}
