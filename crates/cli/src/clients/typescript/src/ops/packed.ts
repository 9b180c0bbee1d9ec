// Packed records (src/packed.rs, lua/packed).

import { Request, cmd } from "../call";
import { key } from "../contract";
import { Io, bytes, int } from "../driver";
import { IdOutOfRange, InvalidArgument, LayoutMismatch, LayoutMissing } from "../errors";
import type { PackedLayout } from "../records";
import * as scripts from "../scripts";
import { LayoutClaim, Layouts } from "./layout";
import { noRequestKey, requestKey } from "./sharded_hash";

const MAX_SHARD_BYTES = 512 * 1024 * 1024;
const DEFAULT_SHARD_BYTES = 65_530;
const SCAN_BATCH_BYTES = 16 << 20;

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

export class PackedRecords {
  readonly idsPerShard: number;
  readonly shards: number;
  readonly metaKey: string;
  private readonly dense: boolean;
  private readonly layout: LayoutClaim;

  constructor(
    readonly base: string,
    readonly width: number,
    private readonly maxId: number,
    idsPerShard: number,
    layout: "dense" | "sparse",
    recordsLayout: boolean,
  ) {
    if (!base) {
      throw bad("base", "must not be empty");
    }
    if (width === 0) {
      throw bad("width", "must be at least 1 byte");
    }
    if (width > MAX_SHARD_BYTES) {
      throw bad("width", `must be at most ${MAX_SHARD_BYTES} bytes`);
    }
    const ids = idsPerShard || Math.max(Math.floor(DEFAULT_SHARD_BYTES / width), 1);
    if (ids * width > MAX_SHARD_BYTES) {
      throw bad("ids per shard", `${ids} records of ${width} bytes exceed the ${MAX_SHARD_BYTES}-byte string limit`);
    }
    this.idsPerShard = ids;
    this.dense = layout === "dense";
    this.shards = Math.floor(maxId / ids) + 1;
    this.metaKey = key("packed", "meta", { base });
    this.layout = new LayoutClaim(this.metaKey, () => this.fields(), recordsLayout);
  }

  private fields(): Map<string, string> {
    return new Map([
      ["pattern", "packed"],
      ["version", "1"],
      ["width", String(this.width)],
      ["ids_per_shard", String(this.idsPerShard)],
    ]);
  }

  keyOfShard(shard: number): string {
    return key("packed", "shard", { base: this.base, shard });
  }

  locate(id: number): [string, number] {
    if (id > this.maxId) {
      throw new IdOutOfRange(id, this.maxId);
    }
    return [this.keyOfShard(Math.floor(id / this.idsPerShard)), (id % this.idsPerShard) * this.width];
  }

  private reserve(): number {
    return this.dense ? this.idsPerShard * this.width : 0;
  }

  private padded(b: unknown): Buffer {
    const out = Buffer.alloc(this.width);
    (bytes(b) ?? Buffer.alloc(0)).copy(out, 0, 0, this.width);
    return out;
  }

  private record(v: Buffer): Buffer {
    if (v.length !== this.width) {
      throw bad("record", `is ${v.length} bytes, the width is ${this.width}`);
    }
    return v;
  }

  claimLayout(io: Io): Promise<void> {
    return this.layout.claim(io);
  }

  async get(io: Io, id: number): Promise<Buffer> {
    const [k, off] = this.locate(id);
    return this.padded(await io.one(cmd("GETRANGE", k, off, off + this.width - 1)));
  }

  async getMany(io: Io, ids: readonly number[]): Promise<Buffer[]> {
    const located = ids.map((i) => this.locate(i));
    if (located.length === 0) {
      return [];
    }
    const got = await io.all(located.map(([k, off]) => cmd("GETRANGE", k, off, off + this.width - 1)));
    return got.map((b) => this.padded(b));
  }

  set(io: Io, id: number, value: Buffer): Promise<void> {
    return this.setMany(io, [[id, value]]);
  }

  async setMany(io: Io, items: readonly [number, Buffer][]): Promise<void> {
    const byShard = new Map<number, Buffer[]>();
    for (const [id, value] of items) {
      const [, off] = this.locate(id);
      const shard = Math.floor(id / this.idsPerShard);
      const entry = [Buffer.from(String(off)), this.record(value)];
      const g = byShard.get(shard);
      if (g === undefined) {
        byShard.set(shard, entry);
      } else {
        g.push(...entry);
      }
    }
    await this.layout.beforeWrite(io);
    const batch: Request[] = [...byShard.keys()]
      .sort((a, b) => a - b)
      .map((s) => scripts.Packed.put(this.keyOfShard(s), this.reserve(), byShard.get(s) as Buffer[]));
    if (batch.length > 0) {
      await io.all(batch);
    }
  }

  private async addTo(
    io: Io,
    id: number,
    offset: number,
    size: number,
    signed: boolean,
    delta: number | bigint,
    request: [string, number] | null,
  ): Promise<number> {
    if (offset + size > this.width) {
      throw bad("field", `bytes ${offset}..${offset + size} lie outside the ${this.width}-byte record`);
    }
    if ((delta < 0 ? -delta : delta) > 2 ** 53) {
      throw bad("delta", "must be within +-2^53");
    }
    const [k, off] = this.locate(id);
    const [rk, ttl] = request === null ? [noRequestKey(k), 0] : [requestKey(k, request[0]), request[1]];
    await this.layout.beforeWrite(io);
    return int(await io.one(scripts.Packed.add(k, rk, this.reserve(), off + offset, size, signed, Number(delta), ttl)));
  }

  add(io: Io, id: number, offset: number, size: number, signed: boolean, delta: number | bigint): Promise<number> {
    return this.addTo(io, id, offset, size, signed, delta, null);
  }

  addOnce(
    io: Io,
    id: number,
    offset: number,
    size: number,
    signed: boolean,
    delta: number | bigint,
    requestId: string,
    requestTtlMs: number,
  ): Promise<number> {
    return this.addTo(io, id, offset, size, signed, delta, [requestId, requestTtlMs]);
  }

  async compareAndSet(io: Io, id: number, expected: Buffer, next: Buffer): Promise<Buffer | null> {
    const [k, off] = this.locate(id);
    const exp = this.record(expected);
    const nw = this.record(next);
    await this.layout.beforeWrite(io);
    const [done, current] = (await io.one(scripts.Packed.swap(k, this.reserve(), off, exp, nw))) as unknown[];
    return int(done) === 1 ? null : this.padded(current);
  }

  async countBy(io: Io, offset: number, size: number, signed: boolean): Promise<[number, number][]> {
    if (offset + size > this.width) {
      throw bad("field", `bytes ${offset}..${offset + size} lie outside the ${this.width}-byte record`);
    }
    const counts = new Map<number, number>();
    for (const [, rec] of await this.scan(io)) {
      if (rec.some((b) => b !== 0)) {
        const v = signed ? rec.readIntLE(offset, size) : rec.readUIntLE(offset, size);
        counts.set(v, (counts.get(v) ?? 0) + 1);
      }
    }
    return [...counts].sort((a, b) => a[0] - b[0]);
  }

  async scan(io: Io): Promise<[number, Buffer][]> {
    const per = Math.max(Math.floor(SCAN_BATCH_BYTES / (this.idsPerShard * this.width)), 1);
    const out: [number, Buffer][] = [];
    for (let first = 0; first < this.shards; first += per) {
      const shards: number[] = [];
      for (let s = first; s < Math.min(first + per, this.shards); s++) {
        shards.push(s);
      }
      const got = await io.all(shards.map((s) => cmd("GET", this.keyOfShard(s))));
      shards.forEach((s, j) => {
        const b = bytes(got[j]);
        if (b === null) {
          return;
        }
        for (let i = 0; i < Math.floor(b.length / this.width); i++) {
          const id = s * this.idsPerShard + i;
          if (id > this.maxId) {
            break;
          }
          out.push([id, Buffer.from(b.subarray(i * this.width, (i + 1) * this.width))]);
        }
      });
    }
    return out;
  }

  static async storedLayout(io: Io, base: string): Promise<PackedLayout | null> {
    const [meta, stored] = await Layouts.stored(io, "packed", base);
    if (stored === null) {
      return null;
    }
    const width = Number(stored.width);
    const idsPerShard = Number(stored.ids_per_shard);
    if (!Number.isSafeInteger(width) || !Number.isSafeInteger(idsPerShard) || !stored.width || !stored.ids_per_shard) {
      throw new LayoutMismatch(meta, JSON.stringify(stored), "a packed layout of version 1");
    }
    return { width, idsPerShard };
  }

  static async open(io: Io, base: string, width: number, maxId: number): Promise<PackedRecords> {
    const meta = base ? key("packed", "meta", { base }) : "";
    const stored = await PackedRecords.storedLayout(io, base);
    if (stored === null) {
      throw new LayoutMissing(meta);
    }
    if (stored.width !== width) {
      throw new LayoutMismatch(
        meta,
        `ids_per_shard=${stored.idsPerShard}, width=${stored.width}, version=1`,
        `ids_per_shard=${stored.idsPerShard}, width=${width}, version=1`,
      );
    }
    return new PackedRecords(base, width, maxId, stored.idsPerShard, "dense", true);
  }
}
