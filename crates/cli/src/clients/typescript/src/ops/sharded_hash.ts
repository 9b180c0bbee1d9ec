// The sharded hash's operations (src/sharded_hash, lua/sharded_hash).

import { Cmd, Request, cmd, nodeCmd } from "../call";
import { key } from "../contract";
import { ANY, Io, bytes, int, pairs, text } from "../driver";
import { IdOutOfRange, InvalidArgument, LayoutMismatch, ListpackValueTooLong, RedisPatternsError, ShardFull } from "../errors";
import { crc32 } from "../hashing";
import type { HashPlan, Health, ImportReport, ListpackLimits, Rejection } from "../records";
import * as scripts from "../scripts";
import { LayoutClaim, Layouts } from "./layout";

const ID = /^(0|[1-9][0-9]*)$/;
/** The most rejections an import report lists (the others are counted). */
const MAX_REJECTIONS = 100;

type RejectReason = Rejection["reason"];

/** An item of an import that goes into its batch. */
interface Staged {
  position: number;
  field: Buffer;
  value: Buffer;
}

/** An import's counts as it goes. */
class Tally {
  items = 0;
  inserted = 0;
  present = 0;
  rejected = 0;
  rejections: Rejection[] = [];

  reject(position: number, reason: RejectReason): void {
    this.rejected += 1;
    if (this.rejections.length < MAX_REJECTIONS) {
      this.rejections.push({ position, reason });
    }
  }

  report(): ImportReport {
    const { items, inserted, present, rejected, rejections } = this;
    return { items, inserted, present, unknown: 0, rejected, rejections };
  }
}
const LAYOUT_VERSION = 1;

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

/** The key remembering one call with a request id, in k's slot (manifest: request_key). */
export function requestKey(k: string, requestId: string): string {
  const n = Buffer.byteLength(requestId);
  if (n < 1 || n > 200) {
    throw bad("request id", "must be 1 to 200 bytes");
  }
  const opened = k.indexOf("{");
  const closed = opened >= 0 ? k.indexOf("}", opened + 1) : -1;
  if (closed > opened + 1) {
    return `${k}:req:${requestId}`;
  }
  if (k.includes("}")) {
    throw bad("key", `'${k}' has no hash tag but contains '}'`);
  }
  return `{${k}}:req:${requestId}`;
}

export function noRequestKey(k: string): string {
  const opened = k.indexOf("{");
  const closed = opened >= 0 ? k.indexOf("}", opened + 1) : -1;
  return closed > opened + 1 ? `${k}:req` : `{${k}}:req`;
}

type Pair = [Buffer, Buffer];

export class ShardedHash {
  readonly shards: number;
  readonly metaKey: string;
  private readonly byId: boolean;
  private readonly layout: LayoutClaim;

  constructor(
    readonly base: string,
    shards: number,
    private readonly fieldsPerShard: number,
    private readonly maxId: number,
    private readonly separator: string,
    private readonly strict: boolean,
    private readonly entries: number,
    private readonly value: number,
    recordsLayout: boolean,
  ) {
    if (!base) {
      throw bad("base", "must not be empty");
    }
    if (!separator) {
      throw bad("separator", "must not be empty");
    }
    if (separator.includes("{") || separator.includes("}")) {
      throw bad("separator", "must not contain '{' or '}' (shard keys carry no hash tag)");
    }
    if (fieldsPerShard === 0 && shards === 0) {
      throw bad("shard count", "must be at least 1");
    }
    if (fieldsPerShard === 0 && shards > 2 ** 32 - 1) {
      throw bad("shard count", "must be at most 4294967295");
    }
    this.byId = fieldsPerShard > 0;
    this.shards = this.byId ? Math.floor(maxId / fieldsPerShard) + 1 : shards;
    this.metaKey = key("sharded_hash", "meta", { base });
    this.layout = new LayoutClaim(this.metaKey, () => this.layoutFields(), recordsLayout);
  }

  layoutFields(): Map<string, string> {
    const out = new Map([
      ["pattern", "sharded_hash"],
      ["version", String(LAYOUT_VERSION)],
      ["separator", ":"],
    ]);
    if (this.byId) {
      out.set("scheme", "by_id").set("fields_per_shard", String(this.fieldsPerShard)).set("max_id", String(this.maxId));
    } else {
      out.set("scheme", "crc32").set("shards", String(this.shards));
    }
    return out;
  }

  keyOfShard(shard: number): string {
    return key("sharded_hash", "shard", { base: this.base, separator: this.separator, shard });
  }

  shardOf(field: Buffer): number {
    if (!this.byId) {
      return crc32(field) % this.shards;
    }
    const s = field.toString("latin1");
    if (!ID.test(s)) {
      throw bad("field", `\`${field.toString("utf8")}\` is not a decimal integer id`);
    }
    const n = Number(s);
    if (n > this.maxId) {
      throw new IdOutOfRange(n, this.maxId);
    }
    return Math.floor(n / this.fieldsPerShard);
  }

  shardKey(field: Buffer): string {
    return this.keyOfShard(this.shardOf(field));
  }

  private checkPair(field: Buffer, value: Buffer): void {
    if (this.strict) {
      for (const [what, b] of [
        ["field", field],
        ["value", value],
      ] as const) {
        if (b.length > this.value) {
          throw new ListpackValueTooLong(what, b.length, this.value);
        }
      }
    }
  }

  claimLayout(io: Io): Promise<void> {
    return this.layout.claim(io);
  }

  private async write(io: Io, items: readonly Pair[], onlyAbsent: boolean): Promise<number> {
    const byShard = new Map<number, number[]>();
    items.forEach(([f, v], i) => {
      const shard = this.shardOf(f);
      this.checkPair(f, v);
      const g = byShard.get(shard);
      if (g === undefined) {
        byShard.set(shard, [i]);
      } else {
        g.push(i);
      }
    });
    await this.layout.beforeWrite(io);
    const batch: Request[] = [];
    for (const shard of [...byShard.keys()].sort((a, b) => a - b)) {
      const k = this.keyOfShard(shard);
      const idx = byShard.get(shard) as number[];
      const flat = idx.flatMap((i) => items[i]);
      if (this.strict) {
        batch.push(scripts.ShardedHash.put(k, onlyAbsent, this.entries, flat));
      } else if (onlyAbsent) {
        batch.push(...idx.map((i) => cmd("HSETNX", k, ...items[i])));
      } else {
        batch.push(cmd("HSET", k, ...flat));
      }
    }
    if (batch.length === 0) {
      return 0;
    }
    return (await io.all(batch)).reduce((n: number, r) => n + int(r), 0);
  }

  async set(io: Io, field: Buffer, value: Buffer): Promise<boolean> {
    return (await this.write(io, [[field, value]], false)) === 1;
  }

  async setIfAbsent(io: Io, field: Buffer, value: Buffer): Promise<boolean> {
    return (await this.write(io, [[field, value]], true)) === 1;
  }

  setMany(io: Io, items: readonly Pair[]): Promise<number> {
    return this.write(io, items, false);
  }

  setIfAbsentMany(io: Io, items: readonly Pair[]): Promise<number> {
    return this.write(io, items, true);
  }

  async get(io: Io, field: Buffer): Promise<Buffer | null> {
    return bytes(await io.one(cmd("HGET", this.shardKey(field), field)));
  }

  async getMany(io: Io, fields: readonly Buffer[]): Promise<(Buffer | null)[]> {
    const byShard = new Map<number, number[]>();
    fields.forEach((f, i) => {
      const s = this.shardOf(f);
      const g = byShard.get(s);
      if (g === undefined) {
        byShard.set(s, [i]);
      } else {
        g.push(i);
      }
    });
    const order = [...byShard.keys()].sort((a, b) => a - b);
    const out: (Buffer | null)[] = fields.map(() => null);
    if (order.length === 0) {
      return out;
    }
    const replies = await io.all(
      order.map((s) => cmd("HMGET", this.keyOfShard(s), ...(byShard.get(s) as number[]).map((i) => fields[i]))),
    );
    order.forEach((s, j) => {
      (byShard.get(s) as number[]).forEach((i, n) => {
        out[i] = bytes((replies[j] as unknown[])[n]);
      });
    });
    return out;
  }

  async delete(io: Io, field: Buffer): Promise<boolean> {
    return int(await io.one(cmd("HDEL", this.shardKey(field), field))) === 1;
  }

  async exists(io: Io, field: Buffer): Promise<boolean> {
    return int(await io.one(cmd("HEXISTS", this.shardKey(field), field))) === 1;
  }

  private async incrBy(io: Io, field: Buffer, delta: number | bigint, request: [string, number] | null): Promise<number> {
    const k = this.shardKey(field);
    this.checkPair(field, Buffer.alloc(0));
    await this.layout.beforeWrite(io);
    if (!this.strict && request === null) {
      return int(await io.one(cmd("HINCRBY", k, field, String(delta))));
    }
    const [rk, ttl] = request === null ? [noRequestKey(k), 0] : [requestKey(k, request[0]), request[1]];
    const entries = this.strict ? this.entries : 0;
    return int(await io.one(scripts.ShardedHash.incr(k, rk, field, delta, entries, ttl)));
  }

  incr(io: Io, field: Buffer, delta: number | bigint): Promise<number> {
    return this.incrBy(io, field, delta, null);
  }

  incrOnce(io: Io, field: Buffer, delta: number | bigint, requestId: string, requestTtlMs: number): Promise<number> {
    return this.incrBy(io, field, delta, [requestId, requestTtlMs]);
  }

  async len(io: Io): Promise<number> {
    const batch: Request[] = [];
    for (let s = 0; s < this.shards; s++) {
      batch.push(cmd("HLEN", this.keyOfShard(s)));
    }
    return (await io.all(batch)).reduce((n: number, r) => n + int(r), 0);
  }

  async isEmpty(io: Io): Promise<boolean> {
    return (await this.len(io)) === 0;
  }

  async inspect(io: Io, sample: number): Promise<Health> {
    if (sample === 0) {
      throw bad("sample", "must be at least 1");
    }
    const picks: number[] = [];
    for (let i = 0; i < Math.min(sample, this.shards); i++) {
      picks.push(sample >= this.shards ? i : Math.floor((i * this.shards) / sample));
    }
    const batch: Request[] = picks.flatMap((s) => {
      const k = this.keyOfShard(s);
      return [new Cmd(["OBJECT", "ENCODING", k], k), cmd("HLEN", k)];
    });
    const replies = await io.batch(batch);
    let missing = 0;
    let listpack = 0;
    let converted = 0;
    let maxLen = 0;
    let total = 0;
    const convertedKeys: string[] = [];
    picks.forEach((s, i) => {
      const enc = replies[2 * i];
      const nReply = replies[2 * i + 1];
      if (nReply instanceof Error) {
        throw nReply;
      }
      const n = int(nReply);
      maxLen = Math.max(maxLen, n);
      total += n;
      if (enc === null || (enc instanceof Error && enc.message.includes("no such key"))) {
        missing += 1;
      } else if (enc instanceof Error) {
        throw enc;
      } else if (["listpack", "ziplist"].includes(text(enc))) {
        listpack += 1;
      } else {
        converted += 1;
        if (convertedKeys.length < 100) {
          convertedKeys.push(this.keyOfShard(s));
        }
      }
    });
    return { sampled: picks.length, missing, listpack, converted, convertedKeys, maxLen, sampledLen: total };
  }

  /** Why an import rejects an item (null: it goes into the batch). */
  private stage(field: Buffer, value: Buffer): RejectReason | null {
    try {
      this.shardOf(field);
    } catch (e) {
      if (e instanceof RedisPatternsError) {
        return "bad_field";
      }
      throw e;
    }
    try {
      this.checkPair(field, value);
    } catch (e) {
      if (e instanceof ListpackValueTooLong) {
        return "value_too_long";
      }
      throw e;
    }
    return null;
  }

  /** One batch of an import: one write per shard (strict) or HSETNX per item; a full shard rejects its items. */
  private async importBatch(io: Io, part: readonly Staged[], tally: Tally): Promise<void> {
    const byShard = new Map<number, Staged[]>();
    for (const item of part) {
      const shard = this.shardOf(item.field);
      byShard.set(shard, [...(byShard.get(shard) ?? []), item]);
    }
    const calls: Request[] = [];
    const covers: number[][] = [];
    for (const shard of [...byShard.keys()].sort((a, b) => a - b)) {
      const k = this.keyOfShard(shard);
      const group = byShard.get(shard) as Staged[];
      if (this.strict) {
        calls.push(scripts.ShardedHash.put(k, true, this.entries, group.flatMap((g) => [g.field, g.value])));
        covers.push(group.map((g) => g.position));
      } else {
        for (const g of group) {
          calls.push(cmd("HSETNX", k, g.field, g.value));
          covers.push([g.position]);
        }
      }
    }
    const replies = await io.batch(calls);
    covers.forEach((positions, i) => {
      const reply = replies[i];
      if (reply instanceof ShardFull) {
        positions.forEach((p) => tally.reject(p, "shard_full"));
      } else if (reply instanceof Error) {
        throw reply;
      } else {
        const n = Math.max(int(reply), 0);
        tally.inserted += n;
        tally.present += positions.length - n;
      }
    });
  }

  async importItems(io: Io, items: readonly Pair[], batch: number): Promise<ImportReport> {
    if (batch === 0) {
      throw bad("batch", "must be at least 1");
    }
    const tally = new Tally();
    await this.layout.beforeWrite(io);
    for (let at = 0; at < items.length; at += batch) {
      const good: Staged[] = [];
      items.slice(at, at + batch).forEach(([field, value], i) => {
        tally.items += 1;
        const why = this.stage(field, value);
        if (why === null) {
          good.push({ position: at + i + 1, field, value });
        } else {
          tally.reject(at + i + 1, why);
        }
      });
      if (good.length > 0) {
        await this.importBatch(io, good, tally);
      }
    }
    return tally.report();
  }

  static async planned(io: Io, base: string, expected: number): Promise<[ShardedHash, HashPlan]> {
    if (!base) {
      throw bad("base", "must not be empty");
    }
    const [[entries, value], source] = await limits(io);
    const shards = planShards(expected, entries);
    const h = new ShardedHash(base, shards, 0, 0, ":", true, entries, value, false);
    const bound = shards * binomialTail(Math.max(expected, 1), 1 / shards, entries);
    return [
      h,
      {
        shards,
        expected,
        entriesLimit: entries,
        valueLimit: value,
        limitsSource: source,
        meanPerShard: expected / shards,
        overflowBound: bound,
      },
    ];
  }

  static async listpackLimits(io: Io): Promise<ListpackLimits | null> {
    const [[entries, value], source] = await limits(io);
    return source === "server" ? { entries, value } : null;
  }

  static async open(io: Io, base: string): Promise<ShardedHash> {
    const [meta, stored] = await Layouts.existing(io, "sharded_hash", base);
    const mismatch = () => new LayoutMismatch(meta, JSON.stringify(stored), "a sharded_hash layout of version 1");
    if (stored.pattern !== "sharded_hash" || stored.version !== "1" || stored.separator !== ":") {
      throw mismatch();
    }
    if (stored.scheme === "crc32") {
      return new ShardedHash(base, Number(stored.shards), 0, 0, ":", true, 512, 64, true);
    }
    if (stored.scheme === "by_id") {
      return new ShardedHash(base, 0, Number(stored.fields_per_shard), Number(stored.max_id), ":", true, 512, 64, true);
    }
    throw mismatch();
  }
}

type Source = HashPlan["limitsSource"];

/** The server's hash-max-listpack-entries/-value (CONFIG GET), or the defaults. */
async function limits(io: Io): Promise<[[number, number], Source]> {
  const names = ["hash-max-listpack-entries", "hash-max-listpack-value"];
  let got: unknown[];
  try {
    got = await io.batch(names.map((n) => nodeCmd(ANY, "CONFIG", "GET", n)));
  } catch (e) {
    if (e instanceof RedisPatternsError) {
      return [[512, 64], "default_because_denied"];
    }
    throw e;
  }
  const vals: number[] = [];
  for (const reply of got) {
    if (reply instanceof Error) {
      return [[512, 64], "default_because_denied"];
    }
    vals.push(...pairs(reply).map(([, v]) => int(v)));
  }
  if (vals.length !== 2) {
    return [[512, 64], "default_because_unreported"];
  }
  return [[vals[0], vals[1]], "server"];
}

/** P(X > limit) for X ~ Binomial(n, p), exactly as src/sharded_hash/plan.rs sums it. */
export function binomialTail(n: number, p: number, limit: number): number {
  if (limit >= n || p <= 0) {
    return 0;
  }
  if (p >= 1) {
    return 1;
  }
  const k0 = limit + 1;
  let lnC = 0;
  for (let i = 0; i < k0; i++) {
    lnC += Math.log((n - i) / (i + 1));
  }
  let term = Math.exp(lnC + k0 * Math.log(p) + (n - k0) * Math.log1p(-p));
  const odds = p / (1 - p);
  let total = 0;
  let k = k0;
  for (;;) {
    total += term;
    if (k >= n) {
      break;
    }
    const ratio = ((n - k) / (k + 1)) * odds;
    term *= ratio;
    k += 1;
    if (ratio < 1 && (term === 0 || term < total * 1e-17)) {
      break;
    }
  }
  return Math.min(total, 1);
}

/**
 * The smallest shard count for which shards * P(Bin(expected, 1/shards) >
 * entries) <= 1e-9 (src/sharded_hash/plan.rs: the same search, so every
 * client plans the same count).
 */
export function planShards(expected: number, entries: number, target = 1e-9): number {
  const n = Math.max(expected, 1);
  const bound = (s: number) => s * binomialTail(n, 1 / s, entries);
  let lo = Math.max(Math.ceil(n / entries), 1);
  if (bound(lo) > target) {
    let hi = lo * 2;
    while (bound(hi) > target) {
      if (hi >= 2 ** 32 - 1) {
        throw bad("expected", `${expected} entries cannot be kept under ${entries} per shard`);
      }
      lo = hi;
      hi = Math.min(hi * 2, 2 ** 32 - 1);
    }
    while (hi - lo > 1) {
      const mid = lo + Math.floor((hi - lo) / 2);
      if (bound(mid) <= target) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    lo = hi;
  }
  return lo;
}
