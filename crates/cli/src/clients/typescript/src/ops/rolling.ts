// The rolling store (src/rolling, lua/rolling): the add's retry when another
// writer moved the head (the rolling retry protocol of the manifest).

import { name as checkName } from "../checks";
import { CONSTANTS, key } from "../contract";
import { Io, int, text } from "../driver";
import { InvalidArgument, UnexpectedReply } from "../errors";
import type { Added } from "../records";
import * as scripts from "../scripts";

const MAX_SHARDS = 65_536;
/** The longest TTL the scripts accept (ttl plus the index margin), from the contract. */
const MAX_TTL_MS = CONSTANTS.rolling.max_ttl_ms as number;

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

export class RollingStore {
  readonly shards: number;
  readonly capacity: number;
  private readonly heads = new Map<string, number>();

  constructor(
    private readonly limit: number,
    private readonly shardSize: number,
    private readonly ttlMs: number,
    private readonly prefix: string,
    private readonly marginMs: number,
  ) {
    if (shardSize < 1) {
      throw bad("shard_size", "must be at least 1");
    }
    if (limit < shardSize) {
      throw bad("limit", `must be at least shard_size (${shardSize}), got ${limit}`);
    }
    this.shards = Math.ceil(limit / shardSize) + 1;
    if (this.shards > MAX_SHARDS) {
      throw bad("limit", `limit / shard_size gives ${this.shards} shards, at most ${MAX_SHARDS} are allowed`);
    }
    if (ttlMs + marginMs > MAX_TTL_MS) {
      throw bad("ttl", `ttl plus the index margin must be at most ${MAX_TTL_MS} ms`);
    }
    this.capacity = this.shards * shardSize;
  }

  metaKey(k: string): string {
    return key("rolling", "meta", { prefix: this.prefix, key: checkName("key", k) });
  }

  private window(k: string, first: number, count: number): string[] {
    const out: string[] = [];
    for (let i = 0; i < count; i++) {
      const s = (first + i) % this.shards;
      out.push(key("rolling", "slot_hash", { prefix: this.prefix, key: k, slot: s }));
      out.push(key("rolling", "slot_order", { prefix: this.prefix, key: k, slot: s }));
    }
    return out;
  }

  private hashes(k: string): string[] {
    const out: string[] = [];
    for (let s = 0; s < this.shards; s++) {
      out.push(key("rolling", "slot_hash", { prefix: this.prefix, key: k, slot: s }));
    }
    return out;
  }

  async add(io: Io, k: string, field: string, value: unknown): Promise<Added> {
    const meta = this.metaKey(k);
    const encoded = Buffer.from(JSON.stringify(value), "utf8");
    let guess = this.heads.get(k) ?? 0;
    const windows = CONSTANTS.rolling.windows as number[];
    for (let attempt = 0; attempt <= windows.length; attempt++) {
      const [first, count] =
        attempt < windows.length && windows[attempt] < this.shards ? [guess, windows[attempt]] : [0, this.shards];
      const reply = (await io.one(
        scripts.Rolling.add(
          meta,
          this.window(k, first, count),
          first,
          this.shards,
          this.shardSize,
          field,
          encoded,
          this.ttlMs,
          this.ttlMs + this.marginMs,
        ),
      )) as unknown[];
      const [status, head, gen, evicted] = reply.map(int);
      this.heads.set(k, head);
      if (status !== 0) {
        return { slot: head, generation: gen, replaced: status === 2, evicted, misses: attempt };
      }
      guess = head;
      if (count === this.shards) {
        break;
      }
    }
    throw new UnexpectedReply("rolling.add found no head even with the whole ring passed");
  }

  async get(io: Io, k: string, field: string): Promise<unknown> {
    const v = await io.one(scripts.Rolling.get(this.metaKey(k), this.hashes(k), field));
    return v === null ? null : JSON.parse(text(v));
  }

  async recent(io: Io, k: string, n: number): Promise<[string, unknown][]> {
    const flat = (await io.one(
      scripts.Rolling.recent(this.metaKey(k), this.window(k, 0, this.shards), Math.min(n, this.capacity)),
    )) as unknown[];
    const out: [string, unknown][] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      out.push([text(flat[i]), JSON.parse(text(flat[i + 1]))]);
    }
    return out;
  }

  async len(io: Io, k: string): Promise<number> {
    return int(await io.one(scripts.Rolling.len(this.metaKey(k), this.hashes(k))));
  }

  async clear(io: Io, k: string): Promise<number> {
    return int(await io.one(scripts.Rolling.clear(this.metaKey(k), this.window(k, 0, this.shards))));
  }
}
