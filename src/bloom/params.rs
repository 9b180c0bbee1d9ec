//! The planner of sized filters: [`BloomParams`] (m and k from n and p) and
//! the block layout that fills jemalloc's size classes exactly.

use serde::Serialize;

use crate::error::{Error, Result};

/// The largest k the scripts accept (p >= ~1e-19; the `k` range of
/// `lua/bloom/create.lua`'s header).
pub const MAX_K: u32 = crate::scripts::bloom::CREATE_K_MAX as u32;
/// A Redis string holds at most 2^32 bits: the largest block in bytes.
pub const MAX_BLOCK_BYTES: u64 = 1 << 29;
/// Default bound on a filter's theoretical size m: 2^36 bits (8 GiB).
pub const DEFAULT_MAX_BITS: u64 = 1 << 36;

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
    /// [`MAX_BLOCK_BYTES`]).
    pub fn new(n: u64, p: f64, max_bits: u64, max_block_bytes: u64) -> Result<Self> {
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
            block_bits: plan_blocks(m, max_block_bytes),
        })
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

/// The smallest jemalloc size class.
pub(crate) const MIN_CLASS: u64 = 8;
/// log2 of jemalloc's quantum (16 bytes): the smallest class spacing above it.
pub(crate) const LG_QUANTUM: u64 = 4;
/// log2 of jemalloc's classes per doubling (4).
pub(crate) const LG_CLASSES_PER_DOUBLING: u64 = 2;
/// The header sizes of Redis' SDS strings (sdshdr8, 16, 32, 64), by the
/// length ranges they hold: below 2^8, 2^16, 2^32, and beyond.
pub(crate) const SDS_HEADERS: [u64; 4] = [3, 5, 9, 17];
/// The planner's tolerated waste: total bytes / this (1 %), ...
pub(crate) const WASTE_DIVISOR: u64 = 100;
/// ... but at least this many bytes.
pub(crate) const MIN_WASTE: u64 = 64;
/// Blocks beyond the minimum the planner may use.
pub(crate) const EXTRA_BLOCKS: u64 = 8;

/// jemalloc's size class of an allocation of `size` bytes (4 classes per
/// doubling, 16-byte quantum).
fn size_class(size: u64) -> u64 {
    if size <= MIN_CLASS {
        return MIN_CLASS;
    }
    let lg = 63 - (size - 1).leading_zeros() as u64;
    let step = 1u64 << lg.saturating_sub(LG_CLASSES_PER_DOUBLING).max(LG_QUANTUM);
    size.div_ceil(step) * step
}

/// The class just below `class` (0 for none).
fn class_below(class: u64) -> u64 {
    if class <= MIN_CLASS {
        return 0;
    }
    if class <= 2 * MIN_CLASS {
        return MIN_CLASS;
    }
    let lg = 63 - (class - 1).leading_zeros() as u64;
    class - (1u64 << lg.saturating_sub(LG_CLASSES_PER_DOUBLING).max(LG_QUANTUM))
}

/// Bytes an SDS string of `len` bytes allocates beyond `len` (header + NUL).
fn sds_overhead(len: u64) -> u64 {
    1 + match len {
        0..256 => SDS_HEADERS[0],
        256..65536 => SDS_HEADERS[1],
        65536..4294967296 => SDS_HEADERS[2],
        _ => SDS_HEADERS[3],
    }
}

/// The longest string that still fits allocation class `class`.
fn payload_of_class(class: u64) -> u64 {
    SDS_HEADERS
        .iter()
        .map(|h| class.saturating_sub(1 + h))
        .find(|&p| p + sds_overhead(p) <= class)
        .unwrap_or(0)
}

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
        let class = size_class(need_bytes + sds_overhead(need_bytes));
        let fill = payload_of_class(class).clamp(need_bytes, max_block_bytes.max(need_bytes));
        let waste = class - need_bytes - sds_overhead(need_bytes);
        if need_bytes <= max_block_bytes && (waste <= tolerance || blocks.len() + 1 >= max_blocks) {
            blocks.push(fill.min(max_block_bytes) * 8 - 1);
            return blocks;
        }
        // The largest class whose string fits in what is still needed.
        let cap = need_bytes.min(max_block_bytes);
        let mut c = size_class(cap + sds_overhead(cap));
        while payload_of_class(c) > cap {
            c = class_below(c);
        }
        let bytes = payload_of_class(c).max(MIN_CLASS);
        blocks.push(bytes * 8 - 1);
        need = need.saturating_sub(bytes * 8 - 1);
        if need == 0 {
            return blocks;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_match_jemalloc() {
        assert_eq!(size_class(149_777), 163_840);
        assert_eq!(size_class(1_797_209), 1_835_008);
        assert_eq!(size_class(1 << 20), 1 << 20);
        assert_eq!(class_below(1 << 20), 917_504);
        assert_eq!(class_below(1_310_720), 1 << 20);
        assert_eq!(size_class(100), 112);
    }

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

    #[test]
    fn layouts_fill_size_classes() {
        for (n, p) in [
            (1_000_000u64, 0.01),
            (1_000_000, 0.001),
            (100, 0.01),
            (1, 0.5),
            (123_456, 0.05),
            (50_000_000, 0.0001),
        ] {
            let params = BloomParams::new(n, p, DEFAULT_MAX_BITS, MAX_BLOCK_BYTES).unwrap();
            let total = params.total_bits();
            assert!(total >= params.m);
            let alloc: u64 = params
                .block_bits
                .iter()
                .map(|b| {
                    let bytes = (b + 1) / 8;
                    size_class(bytes + sds_overhead(bytes))
                })
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
    fn big_filters_split_at_the_block_limit() {
        let p = BloomParams::new(3_000_000_000, 0.01, 1 << 36, MAX_BLOCK_BYTES).unwrap();
        assert!(p.block_bits.iter().all(|&b| b < 1 << 32));
        assert!(p.block_bits.len() >= 4);
        assert!(p.total_bits() >= p.m);
    }
}
