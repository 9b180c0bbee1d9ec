// The expiring map's operations on the portable path (src/expiring_map, lua/expiring_map): each value
// carries its expiry in its first 6 bytes; the scripts read the server's clock and never return an
// expired entry.

import { key } from "../contract";
import { Io, bytes, int } from "../driver";
import { InvalidArgument, LayoutMismatch, LayoutMissing, ListpackValueTooLong } from "../errors";
import { crc32 } from "../hashing";
import type { EntriesPage, Health, MapEntry, PutReport, SweepReport } from "../records";
import * as scripts from "../scripts";
import { Layouts, describe } from "./layout";
import { ShardedHash } from "./sharded_hash";

/** The bytes the portable path adds before each value: its expiry. */
export const EXPIRY_BYTES = 6;
/** The longest time to live or max-idle time, in milliseconds (the scripts' bound). */
export const MAX_TTL_MS = 999_999_999_999_999;
/** The version of the layout fields written in the meta key. */
const LAYOUT_VERSION = 1;
/** What a client of the portable path can open (a native layout is the Rust crate's). */
const PORTABLE_LAYOUT = "an expiring_map layout of version 1 on the portable path (this client has no native path)";

type Pair = [Buffer, Buffer];

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

/** A duration as the scripts take it (0 for none), refused outside 1 ..= MAX_TTL_MS. */
function millis(name: string, ms: number | null): number {
  if (ms === null) {
    return 0;
  }
  if (ms < 1 || ms > MAX_TTL_MS) {
    throw bad(name, `must be from 1 ms to ${MAX_TTL_MS} ms`);
  }
  return ms;
}

export class ExpiringMap {
  private readonly idle: number;
  readonly metaKey: string;
  private claimed = false;

  constructor(
    readonly base: string,
    readonly shards: number,
    readonly cap: number,
    maxIdleMs: number | null,
    private readonly entries_: number,
    private readonly value: number,
    private readonly recordsLayout: boolean,
  ) {
    if (!base) {
      throw bad("base", "must not be empty");
    }
    if (shards === 0) {
      throw bad("shard count", "must be at least 1");
    }
    if (shards > 2 ** 32 - 1) {
      throw bad("shard count", "must be at most 4294967295");
    }
    if (value <= EXPIRY_BYTES) {
      throw bad("limits", `a value limit of ${value} leaves no room for the expiry`);
    }
    this.idle = millis("max_idle", maxIdleMs);
    this.metaKey = key("expiring_map", "meta", { base });
  }

  layoutFields(): Map<string, string> {
    return new Map([
      ["pattern", "expiring_map"],
      ["version", String(LAYOUT_VERSION)],
      ["scheme", "crc32"],
      ["separator", ":"],
      ["shards", String(this.shards)],
      ["path", "portable"],
    ]);
  }

  async claimLayout(io: Io): Promise<void> {
    await Layouts.claim(io, this.metaKey, this.layoutFields());
    this.claimed = true;
  }

  static async open(io: Io, base: string): Promise<ExpiringMap> {
    if (!base) {
      throw bad("base", "must not be empty");
    }
    const meta = key("expiring_map", "meta", { base });
    const stored = await Layouts.read(io, meta);
    if (stored === null) {
      throw new LayoutMissing(meta);
    }
    const want: Record<string, string> = { pattern: "expiring_map", version: "1", scheme: "crc32", separator: ":", path: "portable" };
    const shards = stored.shards ?? "";
    if (Object.entries(want).some(([k, v]) => stored[k] !== v) || !/^[0-9]+$/.test(shards) || Number(shards) === 0) {
      throw new LayoutMismatch(meta, describe(new Map(Object.entries(stored))), PORTABLE_LAYOUT);
    }
    return new ExpiringMap(base, Number(shards), 0, null, 512, 64, true);
  }

  private keyOfShard(shard: number): string {
    return key("expiring_map", "shard", { base: this.base, shard });
  }

  shardKey(field: Buffer): string {
    return this.keyOfShard(crc32(field) % this.shards);
  }

  private checkPair(field: Buffer, value: Buffer): void {
    if (field.length > this.value) {
      throw new ListpackValueTooLong("field", field.length, this.value);
    }
    if (value.length + EXPIRY_BYTES > this.value) {
      throw new ListpackValueTooLong("value with its expiry", value.length + EXPIRY_BYTES, this.value);
    }
  }

  /** Positions by shard, shards in order. */
  private byShard(fields: readonly Buffer[]): [string, number[]][] {
    const by = new Map<number, number[]>();
    fields.forEach((f, i) => {
      const s = crc32(f) % this.shards;
      by.set(s, [...(by.get(s) ?? []), i]);
    });
    return [...by.keys()].sort((a, b) => a - b).map((s) => [this.keyOfShard(s), by.get(s) as number[]]);
  }

  private async write(io: Io, items: readonly Pair[], ttlMs: number | null, onlyAbsent: boolean): Promise<PutReport> {
    const ttl = millis("ttl", ttlMs);
    items.forEach(([f, v]) => this.checkPair(f, v));
    if (items.length === 0) {
      throw bad("pairs", "must not be empty");
    }
    if (this.recordsLayout && !this.claimed) {
      await this.claimLayout(io);
    }
    const limit = Math.min(this.entries_, MAX_TTL_MS);
    const cap = Math.min(this.cap, MAX_TTL_MS);
    const batch = this.byShard(items.map(([f]) => f)).map(([k, idx]) =>
      scripts.ExpiringMap.put(k, onlyAbsent, ttl, limit, cap, idx.flatMap((i) => items[i])),
    );
    let added = 0;
    let evicted = 0;
    for (const r of await io.all(batch)) {
      added += Math.max(int((r as unknown[])[0]), 0);
      evicted += Math.max(int((r as unknown[])[1]), 0);
    }
    return { new: added, evicted };
  }

  async put(io: Io, field: Buffer, value: Buffer, ttlMs: number | null): Promise<boolean> {
    return (await this.write(io, [[field, value]], ttlMs, false)).new === 1;
  }

  async putIfAbsent(io: Io, field: Buffer, value: Buffer, ttlMs: number | null): Promise<boolean> {
    return (await this.write(io, [[field, value]], ttlMs, true)).new === 1;
  }

  putMany(io: Io, items: readonly Pair[], ttlMs: number | null): Promise<PutReport> {
    return this.write(io, items, ttlMs, false);
  }

  putIfAbsentMany(io: Io, items: readonly Pair[], ttlMs: number | null): Promise<PutReport> {
    return this.write(io, items, ttlMs, true);
  }

  async get(io: Io, field: Buffer): Promise<Buffer | null> {
    return (await this.getMany(io, [field]))[0];
  }

  async getMany(io: Io, fields: readonly Buffer[]): Promise<(Buffer | null)[]> {
    const out: (Buffer | null)[] = fields.map(() => null);
    const by = this.byShard(fields);
    if (by.length === 0) {
      return out;
    }
    const replies = await io.all(
      by.map(([k, idx]) => scripts.ExpiringMap.get(k, this.idle, idx.map((i) => fields[i]))),
    );
    by.forEach(([, idx], j) => {
      idx.forEach((i, n) => {
        out[i] = bytes((replies[j] as unknown[])[n]);
      });
    });
    return out;
  }

  async remove(io: Io, field: Buffer): Promise<boolean> {
    return int(await io.one(scripts.ExpiringMap.remove(this.shardKey(field), [field]))) === 1;
  }

  async ttlOf(io: Io, field: Buffer): Promise<number> {
    return int(await io.one(scripts.ExpiringMap.ttl(this.shardKey(field), field)));
  }

  async persist(io: Io, field: Buffer): Promise<boolean | null> {
    const got = int(await io.one(scripts.ExpiringMap.expire(this.shardKey(field), field, 0)));
    return got === 1 ? true : got === -1 ? false : null;
  }

  async expire(io: Io, field: Buffer, ttlMs: number): Promise<boolean> {
    const ttl = millis("ttl", ttlMs);
    return int(await io.one(scripts.ExpiringMap.expire(this.shardKey(field), field, ttl))) === 1;
  }

  private asHash(): ShardedHash {
    return new ShardedHash(this.base, this.shards, 0, 0, ":", false, this.entries_, this.value, false);
  }

  len(io: Io): Promise<number> {
    return this.asHash().len(io);
  }

  inspect(io: Io, sample: number): Promise<Health> {
    return this.asHash().inspect(io, sample);
  }

  /** The keys of the shards from `from`, and the next start. */
  private range(from: number, count: number): [string[], number | null] {
    if (count === 0) {
      throw bad("count", "must be at least 1");
    }
    if (from >= this.shards) {
      throw bad("from", `must be a shard below ${this.shards}`);
    }
    const end = Math.min(from + count, this.shards);
    const keys: string[] = [];
    for (let s = from; s < end; s++) {
      keys.push(this.keyOfShard(s));
    }
    return [keys, end < this.shards ? end : null];
  }

  async sweep(io: Io, fromShard: number, count: number): Promise<SweepReport> {
    const [keys, next] = this.range(fromShard, count);
    let removed = 0;
    let live = 0;
    for (const r of await io.all(keys.map((k) => scripts.ExpiringMap.sweep(k)))) {
      removed += int((r as unknown[])[0]);
      live += int((r as unknown[])[1]);
    }
    return { shards: keys.length, removed, live, next };
  }

  async entries(io: Io, fromShard: number, count: number): Promise<EntriesPage> {
    const [keys, next] = this.range(fromShard, count);
    const entries: MapEntry[] = [];
    for (const r of await io.all(keys.map((k) => scripts.ExpiringMap.entries(k)))) {
      const flat = r as unknown[];
      for (let i = 0; i + 2 < flat.length; i += 3) {
        const at = int(flat[i + 2]);
        entries.push({ field: bytes(flat[i]) as Buffer, value: bytes(flat[i + 1]) as Buffer, expiresAtMs: at > 0 ? at : null });
      }
    }
    return { entries, next };
  }
}
