// The expiring map's operations (src/expiring_map, lua/expiring_map) on its two paths: portable (each
// value carries its expiry in its first 6 bytes; the scripts read the server's clock and never return
// an expired entry) and native (the server's per-field TTL: HPEXPIRE, HPTTL, HPERSIST, and HSETEX in
// the write's script).

import { Request, cmd } from "../call";
import { CONSTANTS, key } from "../contract";
import { Io, bytes, int } from "../driver";
import { InvalidArgument, LayoutMismatch, ListpackValueTooLong } from "../errors";
import { crc32 } from "../hashing";
import type { EntriesPage, Health, MapEntry, PutReport, SweepReport } from "../records";
import * as scripts from "../scripts";
import { LayoutClaim, Layouts, describe } from "./layout";
import { ShardedHash } from "./sharded_hash";

/** The bytes the portable path adds before each value: its expiry. */
export const EXPIRY_BYTES = 6;
/** The longest time to live or max-idle time, in milliseconds (the scripts' bound). */
export const MAX_TTL_MS = 999_999_999_999_999;
/** The version of the layout fields written in the meta key. */
const LAYOUT_VERSION = 1;
/** What this client can open. */
const READABLE_LAYOUT = "an expiring_map layout of version 1 on the portable or the native path";
const PATHS = ["portable", "native"];
const C = CONSTANTS.expiring_map as { native_probe: string[]; native_refusal: string };

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
  private readonly layout: LayoutClaim;
  private readonly native: boolean;
  /** Whether the server was found to have the native path's commands (asked once). */
  private probed = false;

  constructor(
    readonly base: string,
    readonly shards: number,
    readonly cap: number,
    maxIdleMs: number | null,
    private readonly entries_: number,
    private readonly value: number,
    recordsLayout: boolean,
    readonly path: string = "portable",
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
    if (!PATHS.includes(path)) {
      throw bad("path", "must be portable or native");
    }
    this.native = path === "native";
    if (value <= EXPIRY_BYTES && !this.native) {
      throw bad("limits", `a value limit of ${value} leaves no room for the expiry`);
    }
    this.idle = millis("max_idle", maxIdleMs);
    this.metaKey = key("expiring_map", "meta", { base });
    this.layout = new LayoutClaim(this.metaKey, () => this.layoutFields(), recordsLayout);
  }

  layoutFields(): Map<string, string> {
    return new Map([
      ["pattern", "expiring_map"],
      ["version", String(LAYOUT_VERSION)],
      ["scheme", "crc32"],
      ["separator", ":"],
      ["shards", String(this.shards)],
      ["path", this.path],
    ]);
  }

  claimLayout(io: Io): Promise<void> {
    return this.layout.claim(io);
  }

  static async open(io: Io, base: string): Promise<ExpiringMap> {
    const [meta, stored] = await Layouts.existing(io, "expiring_map", base);
    const want: Record<string, string> = { pattern: "expiring_map", version: "1", scheme: "crc32", separator: ":" };
    const shards = stored.shards ?? "";
    const path = stored.path ?? "";
    if (
      Object.entries(want).some(([k, v]) => stored[k] !== v) ||
      !/^[0-9]+$/.test(shards) ||
      Number(shards) === 0 ||
      !PATHS.includes(path)
    ) {
      throw new LayoutMismatch(meta, describe(new Map(Object.entries(stored))), READABLE_LAYOUT);
    }
    return new ExpiringMap(base, Number(shards), 0, null, 512, 64, true, path);
  }

  /**
   * On the native path, the first call asks whether the server has per-field TTLs (native_probe:
   * read-only commands, one batch); without them InvalidArgument (path), nothing else sent.
   */
  private async onPath(io: Io): Promise<void> {
    if (!this.native || this.probed) {
      return;
    }
    const shard = this.keyOfShard(0);
    const replies = await io.batch(C.native_probe.map((c) => cmd(c, shard, "FIELDS", 1, "probe")));
    if (replies.some((r) => r instanceof Error && /unknown command/i.test(r.message))) {
      throw bad("path", C.native_refusal);
    }
    this.probed = true;
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
    const [extra, what] = this.native ? [0, "value"] : [EXPIRY_BYTES, "value with its expiry"];
    if (value.length + extra > this.value) {
      throw new ListpackValueTooLong(what, value.length + extra, this.value);
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
    await this.onPath(io);
    await this.layout.beforeWrite(io);
    const limit = Math.min(this.entries_, MAX_TTL_MS);
    const cap = Math.min(this.cap, MAX_TTL_MS);
    // Both scripts take the same arguments and answer new + evicted * 2^32 (exact below 2^53).
    const put = this.native ? scripts.ExpiringMap.putNative : scripts.ExpiringMap.put;
    const batch = this.byShard(items.map(([f]) => f)).map(([k, idx]) =>
      put(k, onlyAbsent, ttl, limit, cap, idx.flatMap((i) => items[i])),
    );
    let added = 0;
    let evicted = 0;
    for (const reply of await io.all(batch)) {
      const r = Math.max(int(reply), 0);
      added += r % 2 ** 32;
      evicted += Math.floor(r / 2 ** 32);
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
    await this.onPath(io);
    const batch: Request[] = [];
    for (const [k, idx] of by) {
      const part = idx.map((i) => fields[i]);
      if (!this.native) {
        batch.push(scripts.ExpiringMap.get(k, this.idle, part));
        continue;
      }
      // HMGET never returns an expired field; max-idle: HPEXPIRE ... GT keeps a later expiry or none.
      batch.push(cmd("HMGET", k, ...part));
      if (this.idle > 0) {
        batch.push(cmd("HPEXPIRE", k, this.idle, "GT", "FIELDS", part.length, ...part));
      }
    }
    const step = this.native && this.idle > 0 ? 2 : 1;
    const replies = await io.all(batch);
    by.forEach(([, idx], j) => {
      idx.forEach((i, n) => {
        out[i] = bytes((replies[j * step] as unknown[])[n]);
      });
    });
    return out;
  }

  async remove(io: Io, field: Buffer): Promise<boolean> {
    await this.onPath(io);
    const k = this.shardKey(field);
    return int(await io.one(this.native ? cmd("HDEL", k, field) : scripts.ExpiringMap.remove(k, [field]))) === 1;
  }

  async ttlOf(io: Io, field: Buffer): Promise<number> {
    await this.onPath(io);
    const k = this.shardKey(field);
    if (this.native) {
      return int((await io.one(cmd("HPTTL", k, "FIELDS", 1, field)))[0]);
    }
    return int(await io.one(scripts.ExpiringMap.ttl(k, field)));
  }

  /** expire.lua, or HPEXPIRE / HPERSIST (ttl 0): 1 set, -1 none to remove, -2 no live entry. */
  private async expiryCall(io: Io, field: Buffer, ttl: number): Promise<number> {
    await this.onPath(io);
    const k = this.shardKey(field);
    if (!this.native) {
      return int(await io.one(scripts.ExpiringMap.expire(k, field, ttl)));
    }
    const c = ttl > 0 ? cmd("HPEXPIRE", k, ttl, "FIELDS", 1, field) : cmd("HPERSIST", k, "FIELDS", 1, field);
    return int((await io.one(c))[0]);
  }

  async persist(io: Io, field: Buffer): Promise<boolean | null> {
    const got = await this.expiryCall(io, field, 0);
    return got === 1 ? true : got === -1 ? false : null;
  }

  async expire(io: Io, field: Buffer, ttlMs: number): Promise<boolean> {
    return (await this.expiryCall(io, field, millis("ttl", ttlMs))) === 1;
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
    await this.onPath(io);
    let removed = 0;
    let live = 0;
    if (this.native) {
      // The server removes expired fields itself: count the live ones.
      for (const r of await io.all(keys.map((k) => cmd("HKEYS", k)))) {
        live += (r as unknown[]).length;
      }
      return { shards: keys.length, removed, live, next };
    }
    for (const r of await io.all(keys.map((k) => scripts.ExpiringMap.sweep(k)))) {
      removed += int((r as unknown[])[0]);
      live += int((r as unknown[])[1]);
    }
    return { shards: keys.length, removed, live, next };
  }

  async entries(io: Io, fromShard: number, count: number): Promise<EntriesPage> {
    const [keys, next] = this.range(fromShard, count);
    await this.onPath(io);
    if (this.native) {
      return this.nativeEntries(io, keys, next);
    }
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

  /** HGETALL of each shard, then HPEXPIRETIME of the fields read (one gone since, -2, is left out). */
  private async nativeEntries(io: Io, keys: string[], next: number | null): Promise<EntriesPage> {
    const read = await io.all(keys.map((k) => cmd("HGETALL", k)));
    const asked: [string, Pair[]][] = [];
    keys.forEach((k, j) => {
      const got = bufferPairs(read[j]);
      if (got.length > 0) {
        asked.push([k, got]);
      }
    });
    const entries: MapEntry[] = [];
    if (asked.length === 0) {
      return { entries, next };
    }
    const ats = await io.all(asked.map(([k, p]) => cmd("HPEXPIRETIME", k, "FIELDS", p.length, ...p.map(([f]) => f))));
    asked.forEach(([, p], j) => {
      p.forEach(([field, value], n) => {
        const at = int((ats[j] as unknown[])[n]);
        if (at !== -2) {
          entries.push({ field, value, expiresAtMs: at > 0 ? at : null });
        }
      });
    });
    return { entries, next };
  }
}

/** An HGETALL reply (a flat array, or an object when ioredis made one) as (field, value) pairs in order. */
function bufferPairs(v: unknown): Pair[] {
  const flat: unknown[] = Array.isArray(v)
    ? v
    : v !== null && typeof v === "object"
      ? Object.entries(v as Record<string, unknown>).flat()
      : [];
  const out: Pair[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    out.push([bytes(flat[i]) ?? Buffer.from(String(flat[i])), bytes(flat[i + 1]) ?? Buffer.alloc(0)]);
  }
  return out;
}
