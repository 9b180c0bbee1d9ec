//! [`Limit`]: what a rate limiter allows — a GCRA rate with a burst, or "at
//! most N in any window" counted by a sliding window counter or an exact
//! sliding log — and its checks against the scripts' headers.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::scripts::rate_limit as s;

/// What a [`RateLimiter`](super::RateLimiter) allows. Building one checks
/// nothing; [`RateLimiter::builder`](super::RateLimiter::builder)'s `build`
/// checks every value against the ranges the scripts' headers declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// GCRA (`lua/rate_limit/throttle.lua`), as redis-cell's `CL.THROTTLE`:
    /// a steady rate of `count_per_period` units per `period`, and up to
    /// `max_burst + 1` units at once. The emission interval is `period /
    /// count_per_period`, rounded up to a whole microsecond.
    Gcra {
        /// Units allowed at once beyond the steady rate (a burst of `max_burst + 1`).
        max_burst: u64,
        /// Units per period, the steady rate.
        count_per_period: u64,
        /// The period.
        period: Duration,
    },
    /// At most about `limit` units in any `window`, counted by a sliding
    /// window counter (`lua/rate_limit/window_counter.lua`): at most `limit`
    /// in each fixed window, at most `2 * limit - 1` in any span of
    /// `window`.
    SlidingCounter {
        /// At most about this many units per window.
        limit: u64,
        /// The window.
        window: Duration,
    },
    /// At most `limit` units in any `window`, exactly, with one sorted-set
    /// entry per unit (`lua/rate_limit/window_log.lua`).
    SlidingLog {
        /// At most this many units per window, exactly.
        limit: u64,
        /// The window.
        window: Duration,
    },
}

/// The checked form of a [`Limit`], as the scripts take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Params {
    Gcra {
        max_burst: i64,
        count: i64,
        period_ms: i64,
    },
    Counter {
        limit: i64,
        window_ms: i64,
    },
    Log {
        limit: i64,
        window_ms: i64,
    },
}

/// The longest burst window `(max_burst + 1) * emission interval` the
/// throttle script accepts, in microseconds (a check of its body: the
/// header cannot express a product of arguments).
pub(crate) const MAX_TOLERANCE_US: u128 = 1_000_000_000_000_000;

/// `v` as an `i64` from `min` to `max` (the header's range).
fn within(name: &'static str, v: u64, min: i64, max: i64) -> Result<i64> {
    match i64::try_from(v) {
        Ok(x) if (min..=max).contains(&x) => Ok(x),
        _ => Err(Error::invalid(name, format!("must be from {min} to {max}"))),
    }
}

/// `d` in whole milliseconds from 1 to `max`.
fn whole_ms(name: &'static str, d: Duration, max: i64) -> Result<i64> {
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(Error::invalid(
            name,
            "must be a whole number of milliseconds",
        ));
    }
    match i64::try_from(d.as_millis()) {
        Ok(0) => Err(Error::invalid(name, "must be at least 1 ms")),
        Ok(ms) if ms <= max => Ok(ms),
        _ => Err(Error::invalid(name, format!("must be at most {max} ms"))),
    }
}

/// `period / count` rounded up to a whole microsecond, as the script
/// computes it.
fn interval_us(period_ms: i64, count: i64) -> u128 {
    (period_ms as u128 * 1000).div_ceil(count as u128)
}

impl Limit {
    /// A GCRA limit: `count_per_period` units per `period`, `max_burst + 1`
    /// at once (redis-cell's `CL.THROTTLE key max_burst count period`).
    pub fn gcra(max_burst: u64, count_per_period: u64, period: Duration) -> Self {
        Self::Gcra {
            max_burst,
            count_per_period,
            period,
        }
    }

    /// Once per `interval` and no burst: the debounce ("you are going too
    /// fast") of [`allow_once_per`](super::allow_once_per).
    pub fn once_per(interval: Duration) -> Self {
        Self::gcra(0, 1, interval)
    }

    /// About `limit` units in any `window`, by a sliding window counter.
    pub fn sliding_counter(limit: u64, window: Duration) -> Self {
        Self::SlidingCounter { limit, window }
    }

    /// Exactly at most `limit` units in any `window`, by a sliding log.
    pub fn sliding_log(limit: u64, window: Duration) -> Self {
        Self::SlidingLog { limit, window }
    }

    /// The most units one call may take: `max_burst + 1` for GCRA, `limit`
    /// for the windows (the `limit` field of every [`Decision`](super::Decision)).
    pub fn max_quantity(&self) -> u64 {
        match *self {
            Self::Gcra { max_burst, .. } => max_burst.saturating_add(1),
            Self::SlidingCounter { limit, .. } | Self::SlidingLog { limit, .. } => limit,
        }
    }

    /// GCRA's emission interval (`period / count_per_period`, rounded up to
    /// a whole microsecond); `None` for the windows or a limit that does
    /// not check.
    pub fn emission_interval(&self) -> Option<Duration> {
        match self.check().ok()? {
            Params::Gcra {
                count, period_ms, ..
            } => Some(Duration::from_micros(interval_us(period_ms, count) as u64)),
            _ => None,
        }
    }

    /// Checks every value against the script's header (and the throttle
    /// body's two products).
    pub(crate) fn check(&self) -> Result<Params> {
        Ok(match *self {
            Self::Gcra {
                max_burst,
                count_per_period,
                period,
            } => {
                let max_burst = within(
                    "max_burst",
                    max_burst,
                    s::THROTTLE_MAX_BURST_MIN,
                    s::THROTTLE_MAX_BURST_MAX,
                )?;
                let count = within(
                    "count_per_period",
                    count_per_period,
                    s::THROTTLE_COUNT_PER_PERIOD_MIN,
                    s::THROTTLE_COUNT_PER_PERIOD_MAX,
                )?;
                let period_ms = whole_ms("period", period, s::THROTTLE_PERIOD_MS_MAX)?;
                if count > period_ms * 1000 {
                    return Err(Error::invalid(
                        "count_per_period",
                        format!(
                            "must be at most one per microsecond of the period ({})",
                            period_ms * 1000
                        ),
                    ));
                }
                if interval_us(period_ms, count) * (max_burst as u128 + 1) > MAX_TOLERANCE_US {
                    return Err(Error::invalid(
                        "max_burst",
                        "(max_burst + 1) emission intervals must not exceed 10^15 microseconds",
                    ));
                }
                Params::Gcra {
                    max_burst,
                    count,
                    period_ms,
                }
            }
            Self::SlidingCounter { limit, window } => Params::Counter {
                limit: within(
                    "limit",
                    limit,
                    s::WINDOW_COUNTER_LIMIT_MIN,
                    s::WINDOW_COUNTER_LIMIT_MAX,
                )?,
                window_ms: whole_ms("window", window, s::WINDOW_COUNTER_WINDOW_MS_MAX)?,
            },
            Self::SlidingLog { limit, window } => Params::Log {
                limit: within(
                    "limit",
                    limit,
                    s::WINDOW_LOG_LIMIT_MIN,
                    s::WINDOW_LOG_LIMIT_MAX,
                )?,
                window_ms: whole_ms("window", window, s::WINDOW_LOG_WINDOW_MS_MAX)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(limit: Limit) -> (String, String) {
        match limit.check().map_err(Error::into_kind) {
            Err(crate::ErrorKind::InvalidArgument {
                script: None,
                name,
                reason,
            }) => (name, reason),
            other => panic!("{limit:?} accepted or refused oddly: {other:?}"),
        }
    }

    #[test]
    fn bad_limits_are_refused_with_the_headers_ranges() {
        let sec = Duration::from_secs(1);
        assert_eq!(refused(Limit::gcra(1, 1, Duration::ZERO)).0, "period");
        assert_eq!(refused(Limit::gcra(1, 0, sec)).0, "count_per_period");
        assert_eq!(
            refused(Limit::gcra(1, 1, Duration::from_micros(1500))).1,
            "must be a whole number of milliseconds"
        );
        assert_eq!(
            refused(Limit::gcra(1, 1_000_001, sec)).0,
            "count_per_period"
        );
        assert_eq!(refused(Limit::gcra(1_000_000_000, 1, sec)).0, "max_burst");
        // 1001 s per unit, a million units of burst: beyond 10^15 us.
        assert_eq!(
            refused(Limit::gcra(999_999, 1, Duration::from_secs(1001))).0,
            "max_burst"
        );
        assert_eq!(refused(Limit::sliding_counter(0, sec)).0, "limit");
        assert_eq!(
            refused(Limit::sliding_counter(1, Duration::from_secs(31 * 86_400))).0,
            "window"
        );
        assert_eq!(refused(Limit::sliding_log(100_001, sec)).0, "limit");
        assert_eq!(
            Limit::gcra(4, 3, sec).emission_interval(),
            Some(Duration::from_micros(333_334))
        );
        assert_eq!(Limit::once_per(sec).max_quantity(), 1);
        assert_eq!(Limit::sliding_log(7, sec).emission_interval(), None);
    }
}
