/** CRC-32/ISO-HDLC of bytes (or of a string's UTF-8). */
export declare function crc32(data: string | Buffer): number;
/** CRC-16/XMODEM, as Redis Cluster picks a key's slot. */
export declare function crc16(data: Buffer): number;
/** MurmurHash3_x86_32 of `data` with initial hash state `init`. */
export declare function murmur3_32(data: string | Buffer, init?: number): number;
/** The block j with S_j <= floor(hb * M / 2^32) < S_(j+1). */
export declare function selectBlock(hb: number, blockBits: readonly number[]): number;
/** [block, [g_0 .. g_(k-1)]] of an item. */
export declare function sizedOffsets(item: string | Buffer, blockBits: readonly number[], k: number): [number, number[]];
/** The PHP recipe's BloomFilter::JSHash(item, limitMemory), as PHP 8 computes it. */
export declare function jshash(item: string | Buffer, limitMemory?: boolean): number;
/** The usable bits of each block of a filter of m bits (fills size classes). */
export declare function planBlocks(m: number, maxBlockBytes: number): number[];
/** [m, k, blockBits] of a sized filter for n items at false-positive rate p. */
export declare function bloomParams(n: number, p: number): [number, number, number[]];
/** The config's p field: the shortest round-trip decimal, as Rust's {:?} writes it. */
export declare function formatP(p: number): string;
