//! Members and shards: which shard a member goes to, which members are
//! accepted, and how many shards keep every shard an `intset`.

use serde::Serialize;

use crate::core::config::limits;
use crate::core::{LimitsSource, Op};
use crate::error::{Error, Result};

use super::{DEFAULT_MAX_INTSET_ENTRIES, MAX_SHARDS};

/// The shard of `member` among `shards`: `crc32(decimal string) % shards`.
pub(crate) fn shard_of(member: i64, shards: u32) -> u32 {
    crc32fast::hash(member.to_string().as_bytes()) % shards.max(1)
}

/// The server's `set-max-intset-entries`, or the default 512, with where it
/// came from.
pub(crate) fn read_max_intset_entries() -> Op<(u64, LimitsSource)> {
    const NAMES: &[&str] = &["set-max-intset-entries"];
    limits(
        NAMES,
        |c| c.get(NAMES[0]).and_then(|v| v.parse().ok()),
        DEFAULT_MAX_INTSET_ENTRIES,
    )
}

fn check_expected(expected_daily_uniques: u64) -> Result<()> {
    if expected_daily_uniques == 0 {
        return Err(Error::invalid(
            "expected daily uniques",
            "must be at least 1",
        ));
    }
    Ok(())
}

/// What [`ShardPlan::planned_shards`] chose, and from what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ShardPlan {
    /// The shard count ([`ShardPlan::plan_shards`]).
    pub shards: u32,
    /// The `set-max-intset-entries` planned against.
    pub max_intset_entries: u64,
    /// Where that came from: the server, or the default 512 because the
    /// server refused `CONFIG GET` (or did not report it).
    pub limits_source: LimitsSource,
}

impl ShardPlan {
    /// The shard count for `expected_daily_uniques` members with
    /// `max_intset_entries` (the server's `set-max-intset-entries`; see
    /// [`ShardPlan::planned_shards`] to read it from the server).
    ///
    /// With a uniform shard function a shard's size is about Poisson with mean
    /// `m = expected / shards`; the plan keeps `m + 4·√m <= max_intset_entries`
    /// (for 512: a mean of about 429 members, 2,330 shards for a million). The
    /// fullest of a few thousand shards then usually stays an intset; on an
    /// unlucky day one shard may pass the limit and become a hashtable (~30 KB,
    /// about 0.03 bytes per member at a million), which costs less than the
    /// per-key overhead of the extra shards a wider margin would need.
    pub fn plan_shards(expected_daily_uniques: u64, max_intset_entries: u64) -> Result<u32> {
        check_expected(expected_daily_uniques)?;
        if max_intset_entries < 64 {
            return Err(Error::invalid(
                "max intset entries",
                format!("{max_intset_entries} is too small to plan shards (at least 64)"),
            ));
        }
        let limit = max_intset_entries as f64;
        // m + 4 sqrt(m) = limit  =>  sqrt(m) = (-4 + sqrt(16 + 4 limit)) / 2
        let root = (-4.0 + (16.0 + 4.0 * limit).sqrt()) / 2.0;
        let mean = (root * root).floor().max(1.0);
        let shards = (expected_daily_uniques as f64 / mean).ceil() as u64;
        if shards > MAX_SHARDS as u64 {
            return Err(Error::invalid(
                "expected daily uniques",
                format!("{expected_daily_uniques} needs more than {MAX_SHARDS} shards"),
            ));
        }
        Ok(shards.max(1) as u32)
    }

    /// The server's `set-max-intset-entries` (`CONFIG GET`; one node of a
    /// cluster), or the default 512 when the server refuses `CONFIG` (e.g.
    /// renamed away on managed servers) or does not report the parameter. Connection errors are returned.
    pub fn max_intset_entries() -> Op<u64> {
        read_max_intset_entries().map(|(max, _)| max)
    }

    /// [`ShardPlan::plan_shards`] with the server's `set-max-intset-entries`, reporting
    /// whether it had to assume the default. Zero expected uniques is refused
    /// before anything is sent.
    pub fn planned_shards(expected_daily_uniques: u64) -> Op<ShardPlan> {
        if let Err(e) = check_expected(expected_daily_uniques) {
            return Op::fail(e);
        }
        read_max_intset_entries().try_map(move |(max, source)| {
            Ok(ShardPlan {
                shards: Self::plan_shards(expected_daily_uniques, max)?,
                max_intset_entries: max,
                limits_source: source,
            })
        })
    }
}
