// The client-side functions of the manifest, bit for bit as the Rust crate
// computes them: crc32 shard ids, the cluster's crc16 slots, MurmurHash3
// x86 32-bit, the sized Bloom filters' offsets and block selection, their
// parameters and size-class block planning, and PHP's JSHash (with its
// overflow to float and limitMemory folding). Every constant comes from the
// generated contract.

import { CONSTANTS, DEFAULTS } from "./contract";
import { InvalidArgument } from "./errors";

const B = CONSTANTS.bloom as Record<string, any>;

function utf8(data: string | Buffer): Buffer {
  return typeof data === "string" ? Buffer.from(data, "utf8") : data;
}

const CRC32 = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) {
      c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    }
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32/ISO-HDLC of bytes (or of a string's UTF-8). */
export function crc32(data: string | Buffer): number {
  let c = 0xffffffff;
  for (const b of utf8(data)) {
    c = CRC32[(c ^ b) & 0xff] ^ (c >>> 8);
  }
  return (c ^ 0xffffffff) >>> 0;
}

/** CRC-16/XMODEM, as Redis Cluster picks a key's slot. */
export function crc16(data: Buffer): number {
  let c = 0;
  for (const b of data) {
    c ^= b << 8;
    for (let k = 0; k < 8; k++) {
      c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    }
  }
  return c;
}

function rotl(x: number, r: number): number {
  return ((x << r) | (x >>> (32 - r))) >>> 0;
}

/** MurmurHash3_x86_32 of `data` with initial hash state `init`. */
export function murmur3_32(data: string | Buffer, init = 0): number {
  const d = utf8(data);
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = init >>> 0;
  const end = d.length - (d.length % 4);
  for (let i = 0; i < end; i += 4) {
    let k = d.readUInt32LE(i);
    k = Math.imul(rotl(Math.imul(k, c1) >>> 0, 15), c2) >>> 0;
    h = (h ^ k) >>> 0;
    h = (Math.imul(rotl(h, 13), 5) + 0xe6546b64) >>> 0;
  }
  let k = 0;
  for (let i = d.length - 1; i >= end; i--) {
    k = ((k << 8) | d[i]) >>> 0;
  }
  if (d.length > end) {
    k = Math.imul(rotl(Math.imul(k, c1) >>> 0, 15), c2) >>> 0;
    h = (h ^ k) >>> 0;
  }
  h = (h ^ d.length) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h = (h ^ (h >>> 13)) >>> 0;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  return h;
}

/** The block j with S_j <= floor(hb * M / 2^32) < S_(j+1). */
export function selectBlock(hb: number, blockBits: readonly number[]): number {
  const total = BigInt(blockBits.reduce((a, b) => a + b, 0));
  const x = Number((BigInt(hb) * total) >> 32n);
  let start = 0;
  for (let j = 0; j < blockBits.length; j++) {
    if (x < start + blockBits[j]) {
      return j;
    }
    start += blockBits[j];
  }
  throw new Error("block point beyond the last block");
}

/** [block, [g_0 .. g_(k-1)]] of an item. */
export function sizedOffsets(item: string | Buffer, blockBits: readonly number[], k: number): [number, number[]] {
  const h1 = murmur3_32(item, B.h1_init);
  const h2 = murmur3_32(item, B.h2_init);
  const hb = murmur3_32(item, B.hb_init);
  const block = selectBlock(hb, blockBits);
  const bits = BigInt(blockBits[block]);
  const out: number[] = [];
  for (let i = 0; i < k; i++) {
    out.push(Number((BigInt(h1) + BigInt(i) * BigInt(h2)) % bits));
  }
  return [block, out];
}

// PHP's JSHash: PHP integers are 64-bit; `+` overflows to a float.

const I64 = 1n << 64n;
const MIN = -(1n << 63n);
const MAX = (1n << 63n) - 1n;

function wrap(v: bigint): bigint {
  const u = ((v % I64) + I64) % I64;
  return u >= 1n << 63n ? u - I64 : u;
}

type PhpNumber = bigint | number;

function phpAdd(a: PhpNumber, b: bigint): PhpNumber {
  if (typeof a === "number") {
    return a + Number(b);
  }
  const s = a + b;
  return s >= MIN && s <= MAX ? s : Number(a) + Number(b);
}

function phpInt(v: PhpNumber): bigint {
  if (typeof v === "bigint") {
    return v;
  }
  if (!Number.isFinite(v)) {
    return 0n;
  }
  if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) {
    return BigInt(Math.trunc(v));
  }
  let d = v % 18446744073709551616.0;
  if (d < 0) {
    d += 18446744073709551616.0;
  }
  return wrap(BigInt(Math.trunc(d)));
}

/** The PHP recipe's BloomFilter::JSHash(item, limitMemory), as PHP 8 computes it. */
export function jshash(item: string | Buffer, limitMemory = true): number {
  let h = BigInt(B.jshash_init);
  for (const c of utf8(item)) {
    const t = phpAdd(phpAdd(wrap(h << 5n), BigInt(c)), h >> 2n);
    h ^= phpInt(t);
  }
  const abs = h < 0n ? -h : h;
  const q = abs / 0xffffffffn;
  let num = (h - (h >= 0n ? q : -q) * 0xffffffffn) & 0xffffffffn;
  if (limitMemory) {
    for (const [above, by] of B.jshash_folds as [number, number][]) {
      if (num > BigInt(above)) {
        num /= BigInt(by);
        break;
      }
    }
  }
  return Number(num);
}

// Sized filters: parameters and block planning.

function bitLength(n: number): number {
  return n <= 0 ? 0 : n.toString(2).length;
}

function ceilDiv(a: number, b: number): number {
  return Math.floor((a + b - 1) / b);
}

function sizeClass(size: number): number {
  if (size <= B.min_class) {
    return B.min_class;
  }
  const lg = bitLength(size - 1) - 1;
  const step = 2 ** Math.max(lg - B.lg_classes_per_doubling, B.lg_quantum);
  return ceilDiv(size, step) * step;
}

function classBelow(c: number): number {
  if (c <= B.min_class) {
    return 0;
  }
  if (c <= 2 * B.min_class) {
    return B.min_class;
  }
  const lg = bitLength(c - 1) - 1;
  return c - 2 ** Math.max(lg - B.lg_classes_per_doubling, B.lg_quantum);
}

function sdsOverhead(n: number): number {
  const h = B.sds_headers as number[];
  return 1 + (n < 2 ** 8 ? h[0] : n < 2 ** 16 ? h[1] : n < 2 ** 32 ? h[2] : h[3]);
}

function payloadOfClass(c: number): number {
  for (const h of B.sds_headers as number[]) {
    const p = Math.max(0, c - 1 - h);
    if (p + sdsOverhead(p) <= c) {
      return p;
    }
  }
  return 0;
}

/** The usable bits of each block of a filter of m bits (fills size classes). */
export function planBlocks(m: number, maxBlockBytes: number): number[] {
  const total = ceilDiv(m + 1, 8);
  const tolerance = Math.max(Math.floor(total / B.waste_divisor), B.min_waste);
  const maxBlocks = ceilDiv(total, maxBlockBytes) + B.extra_blocks;
  const blocks: number[] = [];
  let need = m;
  for (;;) {
    const needBytes = ceilDiv(need + 1, 8);
    let c = sizeClass(needBytes + sdsOverhead(needBytes));
    const fill = Math.min(Math.max(payloadOfClass(c), needBytes), Math.max(maxBlockBytes, needBytes));
    const waste = c - needBytes - sdsOverhead(needBytes);
    if (needBytes <= maxBlockBytes && (waste <= tolerance || blocks.length + 1 >= maxBlocks)) {
      blocks.push(Math.min(fill, maxBlockBytes) * 8 - 1);
      return blocks;
    }
    const cap = Math.min(needBytes, maxBlockBytes);
    c = sizeClass(cap + sdsOverhead(cap));
    while (payloadOfClass(c) > cap) {
      c = classBelow(c);
    }
    const size = Math.max(payloadOfClass(c), B.min_class);
    blocks.push(size * 8 - 1);
    need = Math.max(0, need - (size * 8 - 1));
    if (need === 0) {
      return blocks;
    }
  }
}

function roundHalfAway(x: number): number {
  const r = Math.floor(x);
  return x - r >= 0.5 ? r + 1 : r;
}

/** [m, k, blockBits] of a sized filter for n items at false-positive rate p. */
export function bloomParams(n: number, p: number): [number, number, number[]] {
  const maxBits = (DEFAULTS.bloom as Record<string, any>).max_bits as number;
  const maxBlockBytes = B.max_block_bytes as number;
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new InvalidArgument("expected items", "must be at least 1", null);
  }
  if (!(typeof p === "number" && p > 0 && p < 1)) {
    throw new InvalidArgument("false-positive rate", `${p} is not strictly between 0 and 1`, null);
  }
  const ln2 = B.ln2 as number;
  const mf = Math.ceil((-n * Math.log(p)) / (ln2 * ln2));
  if (mf > maxBits) {
    throw new InvalidArgument("filter size", `m = ${mf} bits exceeds the configured bound of ${maxBits} bits`, null);
  }
  const m = Math.max(1, mf);
  const k = Math.max(1, roundHalfAway((m / n) * ln2));
  if (k > B.max_k) {
    throw new InvalidArgument("false-positive rate", `${p} needs k = ${k} > ${B.max_k} hash functions`, null);
  }
  return [m, k, planBlocks(m, maxBlockBytes)];
}

/** The config's p field: the shortest round-trip decimal, as Rust's {:?} writes it. */
export function formatP(p: number): string {
  const [mant, e] = p.toExponential().split("e");
  const exp = Number(e);
  if (exp < -4 || exp >= 16) {
    return `${mant}e${exp}`;
  }
  const s = String(p);
  return s.includes(".") || s.includes("e") ? s : `${s}.0`;
}
