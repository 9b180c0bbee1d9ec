//! The planner of sized filters: [`BloomParams`] (m and k from n and p) and
//! the block layout for the server's allocator ([`super::alloc`]): blocks
//! that fill jemalloc's size classes exactly, or as few blocks as the string
//! limit allows, each a whole number of pages, under the C library's malloc.

use serde::Serialize;

use crate::core::Allocator;
use crate::core::alloc::{
    MIN_CLASS, class_below, libc_exact_request, payload_within, reserved, size_class,
    string_request,
};
use crate::error::{Error, Result};

/// The largest k the scripts accept (p >= ~1e-19; the `k` range of
/// `lua/bloom/create.lua`'s header).
pub(crate) const MAX_K: u32 = crate::scripts::bloom::CREATE_K_MAX as u32;
/// The value of [`BloomParams::MAX_BLOCK_BYTES`].
pub(crate) const MAX_BLOCK_BYTES: u64 = 1 << 29;
/// The value of [`BloomParams::DEFAULT_MAX_BITS`].
pub(crate) const DEFAULT_MAX_BITS: u64 = 1 << 36;
/// The value of [`BloomParams::DEFAULT_MAX_MEMORY`].
pub(crate) const DEFAULT_MAX_MEMORY: u64 = 4 << 30;

impl BloomParams {
    /// A Redis string holds at most 2^32 bits: the largest block in bytes.
    pub const MAX_BLOCK_BYTES: u64 = MAX_BLOCK_BYTES;

    /// Default bound on a filter's theoretical size m: 2^36 bits (8 GiB).
    pub const DEFAULT_MAX_BITS: u64 = DEFAULT_MAX_BITS;

    /// Default ceiling on the memory of one filter's blocks: 4 GiB (raise it
    /// with [`BloomBuilder::max_memory`](super::BloomBuilder::max_memory)).
    pub const DEFAULT_MAX_MEMORY: u64 = DEFAULT_MAX_MEMORY;
}
/// What a key costs beyond its string (object, key name, table entry), as
/// [`BloomParams::memory`] counts it.
pub(crate) const KEY_OVERHEAD: u64 = 256;

/// The parameters of a sized filter, as stored in its config hash.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BloomParams {
    /// Expected items.
    pub n: u64,
    /// Target false-positive rate.
    pub p: f64,
    /// Theoretical bits, `ceil(-n ln p / (ln 2)^2)`.
    pub m: u64,
    /// Bits per item, `round(m/n ln 2)`, at least 1.
    pub k: u32,
    /// Usable bits of each block (each block has one more, sentinel, bit).
    pub block_bits: Vec<u64>,
}

impl BloomParams {
    /// m, k and the block layout for `n` expected items at false-positive
    /// rate `p`, refusing a filter whose m exceeds `max_bits` and splitting
    /// it into blocks of at most `max_block_bytes` (64 to
    /// [`BloomParams::MAX_BLOCK_BYTES`]), planned for jemalloc (Redis's default build):
    /// see [`BloomParams::for_allocator`].
    pub fn new(n: u64, p: f64, max_bits: u64, max_block_bytes: u64) -> Result<Self> {
        Self::for_allocator(n, p, max_bits, max_block_bytes, &Allocator::Jemalloc)
    }

    /// [`BloomParams::new`] with the blocks planned for `allocator`:
    /// jemalloc gets blocks that fill its size classes, largest first
    /// (usually 2 or 3), so that its rounding wastes nothing; the C
    /// library's malloc (and any other) gets as few blocks as
    /// `max_block_bytes` allows, each a whole number of pages. m and k do
    /// not depend on the allocator, and every plan holds at least m bits.
    pub fn for_allocator(
        n: u64,
        p: f64,
        max_bits: u64,
        max_block_bytes: u64,
        allocator: &Allocator,
    ) -> Result<Self> {
        if n == 0 {
            return Err(Error::invalid("expected items", "must be at least 1"));
        }
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::invalid(
                "false-positive rate",
                format!("{p} is not strictly between 0 and 1"),
            ));
        }
        if !(64..=MAX_BLOCK_BYTES).contains(&max_block_bytes) {
            return Err(Error::invalid(
                "max block bytes",
                format!("must be from 64 to {MAX_BLOCK_BYTES}"),
            ));
        }
        let ln2 = std::f64::consts::LN_2;
        let m = (-(n as f64) * p.ln() / (ln2 * ln2)).ceil();
        if !m.is_finite() || m > max_bits as f64 {
            return Err(Error::invalid(
                "filter size",
                format!("m = {m} bits exceeds the configured bound of {max_bits} bits"),
            ));
        }
        let m = (m as u64).max(1);
        let k = ((m as f64 / n as f64) * ln2).round().max(1.0);
        if k > MAX_K as f64 {
            return Err(Error::invalid(
                "false-positive rate",
                format!("{p} needs k = {k} > {MAX_K} hash functions"),
            ));
        }
        Ok(Self {
            n,
            p,
            m,
            k: k as u32,
            block_bits: match allocator {
                Allocator::Jemalloc => plan_blocks(m, max_block_bytes),
                Allocator::Libc | Allocator::Other(_) => plan_pages(m, max_block_bytes),
            },
        })
    }

    /// The bytes of each block (its usable bits and the sentinel).
    pub fn block_bytes(&self) -> impl Iterator<Item = u64> + '_ {
        self.block_bits.iter().map(|b| (b + 1) / 8)
    }

    /// What the blocks take on a server with `allocator` (as `used_memory`
    /// counts it): each block string as the allocator rounds it, plus
    /// 256 bytes (a key's overhead) per block and for the config.
    pub fn memory(&self, allocator: &Allocator) -> u64 {
        self.block_bytes()
            .map(|b| reserved(allocator, string_request(b)) + KEY_OVERHEAD)
            .sum::<u64>()
            + KEY_OVERHEAD
    }

    /// Total usable bits (at least m).
    pub fn total_bits(&self) -> u64 {
        self.block_bits.iter().sum()
    }

    /// The config's `block_bits` field: the sizes, comma-separated.
    pub(crate) fn block_bits_field(&self) -> String {
        let v: Vec<String> = self.block_bits.iter().map(u64::to_string).collect();
        v.join(",")
    }

    /// The config's `p` field: the shortest text that parses back to `p`.
    pub(crate) fn p_field(&self) -> String {
        format!("{:?}", self.p)
    }
}

/// The planner's tolerated waste: total bytes / this (1 %), ...
pub(crate) const WASTE_DIVISOR: u64 = 100;
/// ... but at least this many bytes.
pub(crate) const MIN_WASTE: u64 = 64;
/// Blocks beyond the minimum the planner may use.
pub(crate) const EXTRA_BLOCKS: u64 = 8;

/// Block sizes in usable bits for a filter of at least `m` bits: strings that
/// fill jemalloc size classes exactly, largest first, until the remainder
/// rounds up with little waste (see the module docs of [`crate::bloom`]).
fn plan_blocks(m: u64, max_block_bytes: u64) -> Vec<u64> {
    let total_bytes = (m + 1).div_ceil(8);
    let tolerance = (total_bytes / WASTE_DIVISOR).max(MIN_WASTE);
    let max_blocks = (total_bytes.div_ceil(max_block_bytes) + EXTRA_BLOCKS) as usize;
    let mut blocks = Vec::new();
    let mut need = m; // usable bits still to place
    loop {
        let need_bytes = (need + 1).div_ceil(8); // + sentinel
        let class = size_class(string_request(need_bytes));
        let fill = payload_within(class).clamp(need_bytes, max_block_bytes.max(need_bytes));
        let waste = class - string_request(need_bytes);
        if need_bytes <= max_block_bytes && (waste <= tolerance || blocks.len() + 1 >= max_blocks) {
            blocks.push(fill.min(max_block_bytes) * 8 - 1);
            return blocks;
        }
        // The largest class whose string fits in what is still needed.
        let cap = need_bytes.min(max_block_bytes);
        let mut c = size_class(string_request(cap));
        while payload_within(c) > cap {
            c = class_below(c);
        }
        let bytes = payload_within(c).max(MIN_CLASS);
        blocks.push(bytes * 8 - 1);
        need = need.saturating_sub(bytes * 8 - 1);
        if need == 0 {
            return blocks;
        }
    }
}

/// Block sizes in usable bits for a filter of at least `m` bits under the C
/// library's malloc: as few blocks as `max_block_bytes` allows, of equal
/// length, each asking for an allocation that malloc fills exactly (see
/// [`super::alloc`]).
fn plan_pages(m: u64, max_block_bytes: u64) -> Vec<u64> {
    let mut count = (m + 1).div_ceil(8).div_ceil(max_block_bytes).max(1);
    loop {
        // Each block holds 8 * bytes - 1 usable bits (one is its sentinel).
        let per = (m + count).div_ceil(8).div_ceil(count);
        if per <= max_block_bytes {
            let exact = libc_exact_request(string_request(per));
            let bytes = payload_within(exact).clamp(per, max_block_bytes);
            return vec![bytes * 8 - 1; count as usize];
        }
        count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_follow_the_formulas() {
        let p = BloomParams::new(1_000_000, 0.01, DEFAULT_MAX_BITS, MAX_BLOCK_BYTES).unwrap();
        assert_eq!(p.m, 9_585_059);
        assert_eq!(p.k, 7);
        assert!(p.total_bits() >= p.m);
        let p = BloomParams::new(1_000_000, 0.001, DEFAULT_MAX_BITS, MAX_BLOCK_BYTES).unwrap();
        assert_eq!(p.m, 14_377_588);
        assert_eq!(p.k, 10);
    }

    /// Filters of every size class range, and the two.
    const SIZES: [(u64, f64); 6] = [
        (1_000_000, 0.01),
        (1_000_000, 0.001),
        (100, 0.01),
        (1, 0.5),
        (123_456, 0.05),
        (50_000_000, 0.0001),
    ];

    #[test]
    fn layouts_fill_size_classes() {
        for (n, p) in SIZES {
            let params = BloomParams::new(n, p, DEFAULT_MAX_BITS, MAX_BLOCK_BYTES).unwrap();
            let total = params.total_bits();
            assert!(total >= params.m);
            let alloc: u64 = params
                .block_bits
                .iter()
                .map(|b| size_class(string_request((b + 1) / 8)))
                .sum();
            let ideal = params.m.div_ceil(8);
            if ideal > 64 * 1024 {
                assert!(
                    alloc as f64 <= ideal as f64 * 1.011,
                    "n {n} p {p}: {alloc} vs {ideal} ({:?})",
                    params.block_bits
                );
            }
            assert!(params.block_bits.len() <= 9, "{:?}", params.block_bits);
        }
    }

    #[test]
    fn libc_layouts_are_few_blocks_of_whole_pages() {
        let libc = Allocator::Libc;
        for (n, p) in SIZES {
            let jem = BloomParams::new(n, p, DEFAULT_MAX_BITS, MAX_BLOCK_BYTES).unwrap();
            let params =
                BloomParams::for_allocator(n, p, DEFAULT_MAX_BITS, MAX_BLOCK_BYTES, &libc).unwrap();
            assert_eq!((params.m, params.k), (jem.m, jem.k));
            assert!(params.total_bits() >= params.m);
            assert_eq!(params.block_bits.len(), 1, "{:?}", params.block_bits);
            let ideal = params.m.div_ceil(8);
            let ours = params.memory(&libc);
            // Less than a page (and the key overheads) above m/8.
            assert!(
                ours < ideal + 4096 + 2 * KEY_OVERHEAD + 64,
                "n {n} p {p}: {ours} vs {ideal}"
            );
            if ideal > 64 * 1024 {
                assert!(ours <= jem.memory(&libc), "n {n} p {p}");
            }
        }
        // Split at the limit, equal blocks, each within it.
        let p =
            BloomParams::for_allocator(1_000_000, 0.01, DEFAULT_MAX_BITS, 300_000, &libc).unwrap();
        assert_eq!(p.block_bits.len(), 4);
        assert!(p.block_bytes().all(|b| b <= 300_000));
        assert!(p.total_bits() >= p.m);
        let other = Allocator::Other("tcmalloc".into());
        let q =
            BloomParams::for_allocator(1_000_000, 0.01, DEFAULT_MAX_BITS, 300_000, &other).unwrap();
        assert_eq!(q, p);
    }

    #[test]
    fn big_filters_split_at_the_block_limit() {
        let p = BloomParams::new(3_000_000_000, 0.01, 1 << 36, MAX_BLOCK_BYTES).unwrap();
        assert!(p.block_bits.iter().all(|&b| b < 1 << 32));
        assert!(p.block_bits.len() >= 4);
        assert!(p.total_bits() >= p.m);
        let p = BloomParams::for_allocator(
            3_000_000_000,
            0.01,
            1 << 36,
            MAX_BLOCK_BYTES,
            &Allocator::Libc,
        )
        .unwrap();
        assert_eq!(p.block_bits.len(), 7);
        assert!(p.block_bits.iter().all(|&b| b < 1 << 32));
        assert!(p.total_bits() >= p.m);
    }
}
