// Bloom filters on plain bitmaps (src/bloom, lua/bloom): sized filters and
// the PHP JSHash bitmap.

import { Request, cmd } from "../call";
import { CONSTANTS, key, render } from "../contract";
import { Io, int, pairs } from "../driver";
import { BloomConfigMismatch, BloomMissing, InvalidArgument, NotEnoughMemory, Server } from "../errors";
import { bloomParams, formatP, jshash, sizedOffsets } from "../hashing";
import type { BloomInfo, BloomParams, LoadProgress } from "../records";
import * as scripts from "../scripts";

const C = CONSTANTS.bloom as Record<string, any>;
const KEY_OVERHEAD = 256;

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

function item(v: Buffer): Buffer {
  if (v.length > 512 * 1024 * 1024) {
    throw bad("item", "must be at most 512 MiB");
  }
  return v;
}

/** A bulk load (Rust: Load::into_op): batches of `batch` items, one multiAdd each, after `start` skipped positions. */
async function load(
  multiAdd: (items: Buffer[]) => Promise<(boolean | null)[]>,
  items: readonly (Buffer | null)[],
  batch: number,
  start: number,
): Promise<LoadProgress> {
  if (batch === 0) {
    throw bad("batch size", "must be at least 1");
  }
  let done = Math.min(start, items.length);
  let added = 0;
  let unknown = 0;
  while (done < items.length) {
    const buf: Buffer[] = [];
    let at = done;
    for (; at < items.length && buf.length < batch; at++) {
      const v = items[at];
      if (v !== null) {
        buf.push(v);
      }
    }
    const flags = buf.length > 0 ? await multiAdd(buf) : [];
    done = at;
    added += flags.filter((f) => f === true).length;
    unknown += flags.filter((f) => f === null).length;
  }
  return { done, added, unknown };
}

/**
 * The config hash of the filter `name`; when `k` holds another type (WRONGTYPE) and
 * `name` ends in `:<j>`, it is block j of the spread filter before it: refused naming both.
 */
async function config(io: Io, name: string, k: string): Promise<Map<string, string>> {
  let raw: unknown;
  try {
    raw = await io.one(cmd("HGETALL", k));
  } catch (e) {
    const at = name.lastIndexOf(":");
    const base = at < 0 ? "" : name.slice(0, at);
    const j = at < 0 ? "" : name.slice(at + 1);
    if (e instanceof Server && e.code === "WRONGTYPE" && base !== "" && /^[0-9]+$/.test(j)) {
      throw new BloomConfigMismatch(render(C.config_holds_block, { key: k, name, j, base }));
    }
    throw e;
  }
  return new Map(pairs(raw).map(([a, b]) => [a, b.toString("utf8")]));
}

export class Bloom {
  readonly configKey: string;
  readonly blockKeys: string[];

  constructor(
    readonly name: string,
    private readonly prefix: string,
    readonly params: BloomParams,
    private readonly spread: boolean,
    private readonly pText: string,
  ) {
    this.configKey = key("bloom", "config", { prefix, name });
    const role = spread ? "block_spread" : "block";
    this.blockKeys = params.blockBits.map((_, j) => key("bloom", role, { prefix, name, j }));
  }

  private createCall(): Request {
    const p = this.params;
    return scripts.Bloom.create(
      this.configKey,
      this.spread ? [] : this.blockKeys,
      p.m,
      p.k,
      p.n,
      this.pText,
      p.blockBits.join(","),
      C.scheme,
      C.scheme_version,
      this.spread,
    );
  }

  private async initBlocks(io: Io, create: boolean): Promise<unknown[]> {
    const replies = await io.batch(this.blockKeys.map((k, j) => scripts.Bloom.initBlock(k, this.params.blockBits[j], create)));
    return replies.map((r, j) => this.blockTaken(j, r));
  }

  /** Block j of a spread filter holding another type (WRONGTYPE) is the config of the filter `<name>:<j>`: refused naming both. */
  private blockTaken(j: number, reply: unknown): unknown {
    if (!this.spread || !(reply instanceof Server) || reply.code !== "WRONGTYPE") {
      return reply;
    }
    return new BloomConfigMismatch(render(C.block_is_config, { key: this.blockKeys[j], j, name: this.name }));
  }

  static async create(
    io: Io,
    name: string,
    expected: number,
    fpRate: number,
    prefix: string,
    spreadBlocks: boolean,
    maxMemory: number,
  ): Promise<Bloom> {
    const [m, k, blocks] = bloomParams(expected, fpRate);
    const bf = new Bloom(name, prefix, { n: expected, p: fpRate, m, k, blockBits: blocks }, spreadBlocks, formatP(fpRate));
    const needed = blocks.reduce((n, b) => n + Math.ceil((b + 1) / 8) + KEY_OVERHEAD, 0) + KEY_OVERHEAD;
    const cfg = await config(io, name, bf.configKey);
    if (cfg.size > 0) {
      const stored = Bloom.fromConfig(name, prefix, cfg);
      const want = bf.params;
      const have = stored.params;
      const checks: [string, string, string][] = [
        ["n", String(have.n), String(want.n)],
        ["p", stored.pText, bf.pText],
        ["m/k", `(${have.m}, ${have.k})`, `(${want.m}, ${want.k})`],
        ["spread", stored.spread ? "1" : "0", spreadBlocks ? "1" : "0"],
      ];
      for (const [field, a, b] of checks) {
        if (a !== b) {
          throw new BloomConfigMismatch(`${field} stored ${a} requested ${b}`);
        }
      }
      await io.one(stored.createCall());
      if (stored.spread) {
        const failed = (await stored.initBlocks(io, false)).find((r) => r instanceof Error);
        if (failed !== undefined) {
          throw failed;
        }
      }
      return stored;
    }
    if (needed > maxMemory) {
      throw new NotEnoughMemory(`bloom filter ${name}`, needed, maxMemory, "ceiling", null);
    }
    if (!spreadBlocks) {
      await io.one(bf.createCall());
      return bf;
    }
    const replies = await bf.initBlocks(io, true);
    const failed = replies.find((r) => r instanceof Error);
    if (failed !== undefined) {
      const created = bf.blockKeys.filter((_, j) => replies[j] === 1);
      if (created.length > 0) {
        await io.all(created.map((bk) => cmd("DEL", bk)));
      }
      throw failed;
    }
    await io.one(bf.createCall());
    return bf;
  }

  private static fromConfig(name: string, prefix: string, cfg: Map<string, string>): Bloom {
    const configKey = key("bloom", "config", { prefix, name });
    if (cfg.get("scheme") !== C.scheme || cfg.get("version") !== String(C.scheme_version)) {
      throw new BloomConfigMismatch(
        `scheme stored ${cfg.get("scheme")} v${cfg.get("version")} requested ${C.scheme} v${C.scheme_version}`,
      );
    }
    const num = (f: string) => {
      const v = cfg.get(f);
      const n = v === undefined || v === "" ? NaN : Number(v);
      if (!Number.isFinite(n)) {
        throw new BloomConfigMismatch(`${configKey} is not understood`);
      }
      return n;
    };
    const blocks = (cfg.get("block_bits") ?? "").split(",").map((b) => {
      const n = b === "" ? NaN : Number(b);
      if (!Number.isSafeInteger(n)) {
        throw new BloomConfigMismatch(`${configKey} is not understood`);
      }
      return n;
    });
    const params = { n: num("n"), p: num("p"), m: num("m"), k: num("k"), blockBits: blocks };
    if (!cfg.has("spread")) {
      throw new BloomConfigMismatch(`${configKey} is not understood`);
    }
    return new Bloom(name, prefix, params, cfg.get("spread") === "1", cfg.get("p") as string);
  }

  static async open(io: Io, name: string, prefix: string): Promise<Bloom> {
    const configKey = key("bloom", "config", { prefix, name });
    const cfg = await config(io, name, configKey);
    if (cfg.size === 0) {
      throw new BloomMissing(`no config hash ${configKey}`);
    }
    const bf = Bloom.fromConfig(name, prefix, cfg);
    const sentinels = await io.all(bf.blockKeys.map((k, j) => cmd("GETBIT", k, bf.params.blockBits[j])));
    bf.blockKeys.forEach((k, j) => {
      if (int(sentinels[j]) !== 1) {
        throw new BloomMissing(`block ${k} is missing or lost its sentinel bit`);
      }
    });
    return bf;
  }

  locate(v: Buffer): [number, number[]] {
    return sizedOffsets(v, this.params.blockBits, this.params.k);
  }

  private async items(io: Io, items: readonly Buffer[], add: boolean): Promise<boolean[]> {
    const perCall = Math.max(1, Math.floor(C.chunk_offsets / this.params.k));
    const groups = new Map<number, [number, number[]][]>();
    items.forEach((it, i) => {
      const [block, offsets] = this.locate(item(it));
      const g = groups.get(block);
      if (g === undefined) {
        groups.set(block, [[i, offsets]]);
      } else {
        g.push([i, offsets]);
      }
    });
    const calls: Request[] = [];
    const owners: number[][] = [];
    for (const block of [...groups.keys()].sort((a, b) => a - b)) {
      const g = groups.get(block) as [number, number[]][];
      for (let at = 0; at < g.length; at += perCall) {
        const part = g.slice(at, at + perCall);
        const offsets = part.flatMap(([, offs]) => offs);
        const fn = add ? scripts.Bloom.add : scripts.Bloom.exists;
        calls.push(fn(this.blockKeys[block], this.params.blockBits[block], this.params.k, offsets));
        owners.push(part.map(([i]) => i));
      }
    }
    const out = items.map(() => false);
    if (calls.length === 0) {
      return out;
    }
    const replies = await io.all(calls);
    owners.forEach((owner, j) => {
      owner.forEach((i, n) => {
        out[i] = int((replies[j] as unknown[])[n]) === 1;
      });
    });
    return out;
  }

  async add(io: Io, v: Buffer): Promise<boolean> {
    return (await this.items(io, [v], true))[0];
  }

  async exists(io: Io, v: Buffer): Promise<boolean> {
    return (await this.items(io, [v], false))[0];
  }

  multiAdd(io: Io, items: readonly Buffer[]): Promise<boolean[]> {
    return this.items(io, items, true);
  }

  multiExists(io: Io, items: readonly Buffer[]): Promise<boolean[]> {
    return this.items(io, items, false);
  }

  async bitsSet(io: Io): Promise<number[]> {
    const batch: Request[] = this.blockKeys.flatMap((k, j) => [cmd("BITCOUNT", k), cmd("GETBIT", k, this.params.blockBits[j])]);
    const got = (await io.all(batch)).map(int);
    this.blockKeys.forEach((k, j) => {
      if (got[2 * j + 1] !== 1) {
        throw new BloomMissing(`block ${k} is missing or lost its sentinel bit`);
      }
    });
    return this.blockKeys.map((_, j) => got[2 * j] - 1);
  }

  private estimate(bitsSet: readonly number[]): number {
    const k = this.params.k;
    let total = 0;
    bitsSet.forEach((x, j) => {
      const bits = this.params.blockBits[j];
      total += -(bits / k) * Math.log(1 - Math.min(x, bits - 1) / bits);
    });
    return Math.floor(total + 0.5);
  }

  async approxCount(io: Io): Promise<number> {
    return this.estimate(await this.bitsSet(io));
  }

  async info(io: Io): Promise<BloomInfo> {
    const bitsSet = await this.bitsSet(io);
    const total = this.params.blockBits.reduce((a, b) => a + b, 0);
    const fp = bitsSet.reduce((acc, x, j) => {
      const b = this.params.blockBits[j];
      return acc + (b / total) * (x / b) ** this.params.k;
    }, 0);
    return {
      name: this.name,
      configKey: this.configKey,
      blockKeys: [...this.blockKeys],
      params: this.params,
      bitsSet,
      approxCount: this.estimate(bitsSet),
      currentFpRate: fp,
    };
  }

  async clear(io: Io): Promise<void> {
    const bits = this.params.blockBits;
    if (this.spread) {
      await io.all(this.blockKeys.map((k, j) => scripts.Bloom.clear([k], [bits[j]])));
    } else {
      await io.one(scripts.Bloom.clear(this.blockKeys, bits));
    }
  }

  load(io: Io, items: readonly (Buffer | null)[], batch: number, start: number): Promise<LoadProgress> {
    return load((b) => this.multiAdd(io, b), items, batch, start);
  }

  async destroy(io: Io): Promise<void> {
    const keys = [this.configKey, ...this.blockKeys];
    if (this.spread) {
      await io.all(keys.map((k) => cmd("DEL", k)));
    } else {
      await io.one(cmd("DEL", keys[0], ...keys.slice(1)));
    }
  }
}

export class JsHashBloom {
  readonly key: string;

  constructor(
    key: string,
    prefix: string,
    private readonly limitMemory: boolean,
  ) {
    if (!key) {
      throw bad("key", "must not be empty");
    }
    this.key = prefix + key;
  }

  offset(v: Buffer): number {
    if (v.length === 0) {
      throw bad("item", "must not be empty in a JSHash filter");
    }
    return jshash(v, this.limitMemory);
  }

  async multiAdd(io: Io, items: readonly Buffer[]): Promise<boolean[]> {
    const offsets = items.map((i) => this.offset(i));
    if (offsets.length === 0) {
      return [];
    }
    return ((await io.one(scripts.Bloom.jshashAdd(this.key, offsets))) as unknown[]).map((f) => int(f) === 1);
  }

  async multiExists(io: Io, items: readonly Buffer[]): Promise<boolean[]> {
    const offsets = items.map((i) => this.offset(i));
    if (offsets.length === 0) {
      return [];
    }
    return ((await io.one(scripts.Bloom.jshashExists(this.key, offsets))) as unknown[]).map((f) => int(f) === 1);
  }

  async add(io: Io, v: Buffer): Promise<boolean> {
    return (await this.multiAdd(io, [v]))[0];
  }

  async exists(io: Io, v: Buffer): Promise<boolean> {
    return (await this.multiExists(io, [v]))[0];
  }

  load(io: Io, items: readonly (Buffer | null)[], batch: number, start: number): Promise<LoadProgress> {
    return load((b) => this.multiAdd(io, b), items, batch, start);
  }
}
