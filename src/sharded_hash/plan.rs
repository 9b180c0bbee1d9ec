//! The shard-count planner ([`Plan::new`]): the smallest shard count for which
//! the *fullest* shard stays under the entry limit with overwhelming
//! probability (exact binomial tail, union bound over the shards).

use serde::Serialize;

use super::{ListpackLimits, Sharding};
use crate::core::LimitsSource;
use crate::error::{Error, Result};

/// The value of [`Plan::DEFAULT_OVERFLOW_TARGET`].
pub(crate) const DEFAULT_OVERFLOW_TARGET: f64 = 1e-9;

impl Plan {
    /// The default bound on the probability that any shard overflows.
    pub const DEFAULT_OVERFLOW_TARGET: f64 = DEFAULT_OVERFLOW_TARGET;
}

/// A shard count for an expected number of entries ([`Plan::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Plan {
    /// The chosen number of shards.
    pub shards: u32,
    /// The number of entries planned for.
    pub expected: u64,
    /// The limits planned against.
    pub limits: ListpackLimits,
    /// Where they came from: [`LimitsSource::Given`] from [`Plan::new`];
    /// from [`ShardedHash::planned`](super::ShardedHash::planned), the
    /// server's, or the defaults when it refused `CONFIG GET`.
    pub limits_source: LimitsSource,
    /// Mean entries per shard (`expected / shards`).
    pub mean_per_shard: f64,
    /// Upper bound (union bound over shards of the exact binomial tail) on
    /// the probability that some shard gets more than `limits.entries` fields.
    pub overflow_bound: f64,
}

impl Plan {
    /// Chooses the smallest shard count for which the probability that *any*
    /// shard of a crc32-sharded hash holding `expected` entries gets more than
    /// `limits.entries` fields is at most `target`: `shards × P(Bin(expected,
    /// 1/shards) > entries) <= target`.
    pub fn new(expected: u64, limits: ListpackLimits, target: f64) -> Result<Plan> {
        if limits.entries == 0 {
            return Err(Error::invalid(
                "hash-max-listpack-entries",
                "is 0: every hash is a hash table, sharding cannot keep listpacks",
            ));
        }
        if !(target > 0.0 && target < 1.0) {
            return Err(Error::invalid(
                "target",
                "must be a probability between 0 and 1",
            ));
        }
        let expected_n = expected.max(1);
        let bound = |s: u64| s as f64 * binomial_tail(expected_n, 1.0 / s as f64, limits.entries);
        let mut lo = expected_n.div_ceil(limits.entries).max(1);
        if bound(lo) > target {
            // Find an upper end that meets the target, then bisect.
            let mut hi = lo.saturating_mul(2);
            while bound(hi) > target {
                if hi >= u32::MAX as u64 {
                    return Err(Error::invalid(
                        "expected",
                        format!(
                            "{expected} entries cannot be kept under {} per shard with at most {} shards",
                            limits.entries,
                            u32::MAX
                        ),
                    ));
                }
                lo = hi;
                hi = hi.saturating_mul(2).min(u32::MAX as u64);
            }
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if bound(mid) <= target {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            lo = hi;
        }
        Ok(Plan {
            shards: lo as u32,
            expected,
            limits,
            limits_source: LimitsSource::Given,
            mean_per_shard: expected as f64 / lo as f64,
            overflow_bound: bound(lo),
        })
    }

    /// The sharding the plan chose: `crc32(field) % shards`.
    pub fn sharding(&self) -> Sharding {
        Sharding::Crc32 {
            shards: self.shards,
        }
    }
}

/// `P(X > limit)` for `X ~ Binomial(n, p)`, summed exactly from the
/// probability mass function (in log space for the first term).
pub(crate) fn binomial_tail(n: u64, p: f64, limit: u64) -> f64 {
    if limit >= n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    let k0 = limit + 1;
    let nf = n as f64;
    // ln C(n, k0) + k0 ln p + (n - k0) ln(1 - p)
    let mut ln_c = 0.0;
    for i in 0..k0 {
        ln_c += ((nf - i as f64) / (i as f64 + 1.0)).ln();
    }
    let ln_q = (-p).ln_1p();
    let mut term = (ln_c + k0 as f64 * p.ln() + (nf - k0 as f64) * ln_q).exp();
    let odds = p / (1.0 - p);
    let mut sum = 0.0;
    let mut k = k0;
    loop {
        sum += term;
        if k >= n {
            break;
        }
        let ratio = (nf - k as f64) / (k as f64 + 1.0) * odds;
        term *= ratio;
        k += 1;
        // Past the mode the terms shrink geometrically.
        if ratio < 1.0 && (term == 0.0 || term < sum * 1e-17) {
            break;
        }
    }
    sum.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_matches_small_exact_values() {
        // Bin(10, 0.5): P(X > 7) = (45 + 10 + 1) / 1024
        let t = binomial_tail(10, 0.5, 7);
        assert!((t - 56.0 / 1024.0).abs() < 1e-12, "{t}");
        assert_eq!(binomial_tail(10, 0.5, 10), 0.0);
    }

    #[test]
    fn plan_is_not_the_mean() {
        let p = Plan::new(1_000_000, ListpackLimits::DEFAULT, 1e-9).unwrap();
        assert!(p.shards as u64 > 1_000_000 / 512 + 1);
        assert!(p.overflow_bound <= 1e-9);
        // One shard fewer would not meet the target.
        let s = p.shards as u64 - 1;
        assert!(s as f64 * binomial_tail(1_000_000, 1.0 / s as f64, 512) > 1e-9);
        assert!(
            Plan::new(
                10,
                ListpackLimits {
                    entries: 0,
                    value: 64
                },
                1e-9
            )
            .is_err()
        );
        assert_eq!(p.sharding(), Sharding::Crc32 { shards: p.shards });
    }
}
