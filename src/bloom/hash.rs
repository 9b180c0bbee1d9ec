//! The hash functions behind the Bloom filters: [`BloomHash`].

/// The hash functions behind the Bloom filters (`crate::bloom`): PHP's
/// `JSHash`, MurmurHash3, double hashing and the block selector.
///
/// * [`js_hash`](Self::js_hash): the PHP recipe's `BloomFilter::JSHash`, bit for bit as PHP 8
///   on a 64-bit machine computes it, so Rust can read and extend bitmaps that
///   PHP applications wrote (`bloom_user_email`, …).
/// * [`murmur3_32`](Self::murmur3_32), [`sized_hashes`](Self::sized_hashes) and [`select_block`](Self::select_block): the two
///   independent 32-bit hashes and the block selector of the sized filters,
///   chosen so that any client can reproduce them: Python
///   `mmh3.hash(item, seed, signed=False)`, PHP 8.1+
///   `hexdec(hash('murmur3a', $item, false, ['seed' => $seed]))`.
///
/// # The sized filters' offsets (hash scheme `murmur3-dh`, version 1)
///
/// For an item (its raw bytes; UTF-8 for text) in a filter whose blocks have
/// `B_0, B_1, .., B_(n-1)` usable bits (the config's `block_bits` field, in
/// order; blocks may differ in size) with `k` hash functions:
///
/// ```text
/// h1    = murmur3_x86_32(item, seed = 0)
/// h2    = murmur3_x86_32(item, seed = 0x9e3779b9)
/// hb    = murmur3_x86_32(item, seed = 0x85ebca6b)
/// M     = B_0 + B_1 + .. + B_(n-1)                 (total usable bits)
/// S_j   = B_0 + .. + B_(j-1)                       (S_0 = 0: bits before block j)
/// x     = floor(hb * M / 2^32)                     (exact: 0 <= x < M)
/// block = the j with S_j <= x < S_(j+1)            (0 when n = 1)
/// g_i   = (h1 + i * h2) mod B_block    for i = 0 .. k-1
/// ```
///
/// So every block gets items in proportion to its size. It is NOT
/// `hb mod n`. `hb * M` needs more than 64 bits for large filters: use a
/// 128-bit product, or (PHP's 63-bit integers, M < 2^47)
/// `x = ((hb >> 16) * M + (((hb & 0xFFFF) * M) >> 16)) >> 16`, which is exact.
/// `h1 + i * h2` is computed exactly (it is below 2^39 for k < 128), not
/// modulo 2^32. The item's bits are `g_0 .. g_(k-1)` of block `block`
/// (`SETBIT`/`GETBIT` offsets in that block's string). `tests/hash.rs` holds
/// vectors for all of this, generated independently by
/// `tests/data/sized_vectors.php`.
#[derive(Debug, Clone, Copy)]
pub struct BloomHash;

impl BloomHash {
    /// The PHP recipe's `BloomFilter::JSHash($string, $limitMemory)`, bit for bit as PHP 8
    /// (64-bit) returns it.
    ///
    /// PHP runs `$hash ^= (($hash << 5) + ord($c) + ($hash >> 2))` on its 64-bit
    /// signed integers: the shifts wrap, but an addition that overflows turns
    /// into a float (losing the low bits), which `^=` converts back to an integer
    /// modulo 2^64. Long inputs hit that on most bytes, so a plain wrapping port
    /// gives different values. The result is `($hash % 0xFFFFFFFF) & 0xFFFFFFFF`,
    /// and with `limit_memory` values above 2e9, 3e9 and 4e9 are divided by 3, 4
    /// and 5 (truncated), so offsets stay below 2e9 bits (a 250 MB bitmap) — at
    /// the price of mapping up to five hash values onto one offset (see
    /// `crate::bloom` for what that does to the false-positive rate).
    ///
    /// ```
    /// use redis_patterns::bloom::BloomHash;
    /// assert_eq!(BloomHash::js_hash(b"hello@example.com", true), 701432834);
    /// assert_eq!(BloomHash::js_hash(b"", true), 1315423911);
    /// ```
    pub fn js_hash(input: &[u8], limit_memory: bool) -> u32 {
        let mut hash: i64 = 1_315_423_911;
        for &byte in input {
            let term = php_add(php_add(PhpNum::Int(hash << 5), byte as i64), hash >> 2);
            hash ^= term.to_int();
        }
        // `%` truncates toward zero like C (and Rust), then `&` keeps the low 32
        // bits of the two's complement value.
        let mut num = ((hash % 0xFFFF_FFFF) & 0xFFFF_FFFF) as u64;
        if limit_memory {
            // `intval($hashNum / d)`: the quotient is exact enough that
            // truncating it equals integer division for every u32.
            if num > 4_000_000_000 {
                num /= 5;
            } else if num > 3_000_000_000 {
                num /= 4;
            } else if num > 2_000_000_000 {
                num /= 3;
            }
        }
        num as u32
    }

    /// MurmurHash3 x86 32-bit (Austin Appleby's `MurmurHash3_x86_32`) of `data`
    /// with `seed`.
    ///
    /// ```
    /// use redis_patterns::bloom::BloomHash;
    /// assert_eq!(BloomHash::murmur3_32(b"", 0), 0);
    /// assert_eq!(BloomHash::murmur3_32(b"hello", 0), 0x248bfa47);
    /// ```
    pub fn murmur3_32(data: &[u8], seed: u32) -> u32 {
        const C1: u32 = 0xcc9e_2d51;
        const C2: u32 = 0x1b87_3593;
        let mut h = seed;
        let mut chunks = data.chunks_exact(4);
        for chunk in &mut chunks {
            let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
            h ^= k;
            h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
        }
        let tail = chunks.remainder();
        if !tail.is_empty() {
            let mut k = 0u32;
            for (i, &b) in tail.iter().enumerate() {
                k |= (b as u32) << (8 * i);
            }
            k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
            h ^= k;
        }
        h ^= data.len() as u32;
        h ^= h >> 16;
        h = h.wrapping_mul(0x85eb_ca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2_ae35);
        h ^= h >> 16;
        h
    }

    /// Seed of `h1` in the sized filters' scheme.
    pub const SEED_H1: u32 = 0;
    /// Seed of `h2` in the sized filters' scheme.
    pub const SEED_H2: u32 = 0x9e37_79b9;
    /// Seed of the block selector in the sized filters' scheme.
    pub const SEED_BLOCK: u32 = 0x85eb_ca6b;

    /// The hashes of one item under the sized filters' scheme (see the module
    /// docs): `(h1, h2, block_hash)`; the block is
    /// [`BloomHash::select_block`]`(block_hash, ..)`, not `block_hash % blocks`.
    pub fn sized_hashes(item: &[u8]) -> (u32, u32, u32) {
        (
            Self::murmur3_32(item, Self::SEED_H1),
            Self::murmur3_32(item, Self::SEED_H2),
            Self::murmur3_32(item, Self::SEED_BLOCK),
        )
    }

    /// The block of an item whose block hash is `hb` (see the module docs):
    /// the `j` with `starts[j] <= floor(hb * total / 2^32) < starts[j + 1]`,
    /// where `starts[j]` is the number of usable bits before block `j`
    /// (`starts[0] = 0`, ascending) and `total` the sum of all blocks' bits.
    ///
    /// ```
    /// use redis_patterns::bloom::BloomHash;
    /// // Blocks of 100 and 300 bits: x = floor(hb * 400 / 2^32).
    /// assert_eq!(BloomHash::select_block(0, &[0, 100], 400), 0);
    /// assert_eq!(BloomHash::select_block(1 << 30, &[0, 100], 400), 1); // x = 100
    /// assert_eq!(BloomHash::select_block((1 << 30) - 1, &[0, 100], 400), 0); // x = 99
    /// assert_eq!(BloomHash::select_block(u32::MAX, &[0, 100], 400), 1);
    /// ```
    ///
    /// # Panics
    ///
    /// When `starts` is empty or does not begin with 0.
    pub fn select_block(hb: u32, starts: &[u64], total: u64) -> usize {
        assert_eq!(starts.first(), Some(&0), "block starts must begin with 0");
        let x = ((hb as u128 * total as u128) >> 32) as u64;
        starts.partition_point(|&s| s <= x) - 1
    }

    /// The `k` bit offsets `g_i = (h1 + i*h2) mod block_bits` (exact integer
    /// arithmetic) of an item with hashes `h1`, `h2`, written into `out`.
    pub fn double_hash_offsets(h1: u32, h2: u32, k: u32, block_bits: u64, out: &mut Vec<u64>) {
        out.extend(double_hash(h1, h2, k, block_bits));
    }
}

/// A PHP number: an integer until an addition overflows, then a float.
#[derive(Debug, Clone, Copy)]
enum PhpNum {
    Int(i64),
    Float(f64),
}

/// PHP's `+` with an integer right operand: integer addition, or a float
/// sum when it overflows (both operands converted to double first).
fn php_add(a: PhpNum, b: i64) -> PhpNum {
    match a {
        PhpNum::Int(a) => match a.checked_add(b) {
            Some(sum) => PhpNum::Int(sum),
            None => PhpNum::Float(a as f64 + b as f64),
        },
        PhpNum::Float(a) => PhpNum::Float(a + b as f64),
    }
}

impl PhpNum {
    /// PHP 8's float-to-int conversion for bitwise operators
    /// (`zend_dval_to_lval` on 64-bit): in range it truncates; out of range it
    /// reduces modulo 2^64 (`fmod`, made non-negative, then cast through u64).
    fn to_int(self) -> i64 {
        match self {
            PhpNum::Int(v) => v,
            PhpNum::Float(d) => {
                const TWO_63: f64 = 9_223_372_036_854_775_808.0;
                const TWO_64: f64 = 18_446_744_073_709_551_616.0;
                if !d.is_finite() {
                    0
                } else if (-TWO_63..TWO_63).contains(&d) {
                    d as i64
                } else {
                    let mut dmod = d % TWO_64; // C fmod
                    if dmod < 0.0 {
                        dmod += TWO_64;
                    }
                    // The sum of three 64-bit integers is a multiple of 2^11
                    // once it leaves the i64 range, so dmod < 2^64 here.
                    (dmod as u64) as i64
                }
            }
        }
    }
}

/// The same `k` offsets as [`BloomHash::double_hash_offsets`], as an iterator (so a
/// caller can write them straight into its own buffer, in any integer type).
pub(crate) fn double_hash(h1: u32, h2: u32, k: u32, block_bits: u64) -> impl Iterator<Item = u64> {
    let (h1, h2) = (h1 as u64, h2 as u64);
    (0..k as u64).map(move |i| (h1 + i * h2) % block_bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_values() {
        assert_eq!(BloomHash::js_hash(b"", true), 1315423911);
        assert_eq!(BloomHash::js_hash(b"a", true), 978430663);
        assert_eq!(BloomHash::js_hash(b"abc", true), 984010710);
        assert_eq!(BloomHash::js_hash(b"hello@example.com", true), 701432834);
        assert_eq!(BloomHash::js_hash(b"13800138000", true), 847338860);
    }

    #[test]
    fn php_float_to_int_is_modular() {
        // Values checked with `php -r 'var_dump(0 ^ 3.0e19);'` etc.
        assert_eq!(PhpNum::Float(3.0e19).to_int(), -6893488147419103232);
        assert_eq!(PhpNum::Float(-1.5e19).to_int(), 3446744073709551616);
        assert_eq!(PhpNum::Float(18446744073709551616.0).to_int(), 0);
        assert_eq!(
            PhpNum::Float(9223372036854775808.0).to_int(),
            i64::MIN,
            "2^63 wraps to PHP_INT_MIN"
        );
    }
}
