//! splitmix64: the one small deterministic generator of the tests' and
//! benches' data (the same seed, the same numbers, so that a failure or a
//! figure reproduces).
//! A test includes it as `#[path = "support/splitmix.rs"] mod splitmix;`, a
//! bench as `#[path = "../tests/support/splitmix.rs"] mod splitmix;`.
#![allow(dead_code)]

/// The generator, seeded with its state.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: i64) -> i64 {
        (self.next() % n as u64) as i64
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.below(2) == 1
    }

    /// Uniform in `[0, 1)`, from the next number's top 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}
