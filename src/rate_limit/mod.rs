//! Rate limiting in one round trip (`lua/rate_limit/`): GCRA with
//! redis-cell's `CL.THROTTLE` reply, and "at most N in any window" as a
//! sliding window counter or an exact sliding log — no module needed, so it
//! runs on managed Redis too.
//!
//! The PHP lock recipe our users come from uses its lock as a throttle:
//! `Lock::add("<uid>:-withdraw")` answers "you are going too fast, please
//! rest" when a user repeats an action within the lease. That is a rate
//! limit, and [`allow_once_per`] is its one-liner; [`throttle`] is
//! `CL.THROTTLE key max_burst count_per_period period quantity` for Redis
//! servers that cannot load redis-cell. Each decision is one script call on
//! one key, which reads the server's clock (`TIME`), so clients' clocks do
//! not matter.
//!
//! Every operation is an [`Op`]: run it with `.run(&mut con)` on a
//! [`Connection`](crate::Connection) or `.run_async(&con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection), on one server or a Redis
//! Cluster.
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::rate_limit::{self, Limit, RateLimiter};
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! // The PHP recipe's throttle: one withdrawal per user every 2 seconds.
//! let d = rate_limit::allow_once_per("42:withdraw", Duration::from_secs(2)).run(&mut con)?;
//! if d.limited {
//!     let wait = d.retry_after().unwrap_or_default();
//!     println!("you are going too fast, please rest {} ms", wait.as_millis());
//! }
//! // CL.THROTTLE user123 15 30 60 1: 30 per minute, bursts of 16.
//! let d = rate_limit::throttle("user123", 15, 30, Duration::from_secs(60), 1).run(&mut con)?;
//! println!("limited {} remaining {} reset in {} ms", d.limited, d.remaining, d.reset_after_ms);
//! // At most 5 login attempts in any 15 minutes, exactly.
//! let logins = RateLimiter::new(Limit::sliding_log(5, Duration::from_secs(900)))?;
//! let d = logins.throttle("alice@example.com", 1).run(&mut con)?;
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let api = RateLimiter::new(Limit::gcra(99, 100, Duration::from_secs(1)))?;
//! let d = api.throttle("key:7f3a", 1).run_async(&con).await?;
//! let left = api.peek("key:7f3a").run_async(&con).await?.remaining;
//! # Ok(())
//! # }
//! ```
//!
//! # The reply
//!
//! Every limiter answers a [`Decision`]: redis-cell's five fields in its
//! order — limited, limit, remaining, retry-after (-1 when allowed),
//! reset-after — with the times in milliseconds, rounded up, where
//! redis-cell gives whole seconds. The script replies are those five
//! integers, so `redis-cli EVALSHA` reads like `CL.THROTTLE`. A quantity of
//! 0 peeks without taking anything.
//!
//! # Which limiter
//!
//! | | [`Limit::Gcra`] | [`Limit::SlidingCounter`] | [`Limit::SlidingLog`] |
//! |---|---|---|---|
//! | model | a steady rate, plus a burst of `max_burst + 1` at once | about `limit` per `window` | exactly `limit` per `window` |
//! | memory per subject (`MEMORY USAGE`) | one string: 72 bytes | one small hash: 104 bytes | one sorted-set entry per unit in the window: 392 bytes at 10, 3,656 at 100 (listpack, up to `zset-max-listpack-entries`, 128 by default), about 118,000 at 1,000 (skiplist) |
//! | exactness | exact (to the microsecond) | at most `limit` in every fixed window; at most `2 * limit - 1` in a span of `window` | exact: never more than `limit` in any span of `window` |
//! | bursts | `max_burst + 1` at once, then one unit per emission interval | up to `limit` at once, at any point of a fixed window | up to `limit` at once, then none until the oldest leaves |
//! | commands per call | `TIME`, `GET`, `SET` | `TIME`, `HMGET`, `HSET`, `PEXPIREAT` | `TIME`, `ZCARD`, `ZRANGE`, a trim, one `ZADD` per 256 units, `PEXPIREAT` (O(log N)) |
//!
//! * **GCRA** is the default: constant memory, an exact retry-after, and a
//!   limit that refills smoothly (no cliff at a window's edge). In any span
//!   of time `t` it allows at most `max_burst + 1 + t / emission interval`
//!   units.
//! * **The sliding counter** answers "at most N per window" in constant
//!   memory when a small error is acceptable (API quotas per minute). It
//!   weighs the previous fixed window's count by the share of it that the
//!   sliding window still covers, as if those units had been spread evenly.
//!   Its worst case: a whole window's `limit` arrives at the very end of
//!   one fixed window, and nearly `limit` more near the end of the next,
//!   when the weight of the first has almost gone: `2 * limit - 1` in one
//!   span of `window` (the count in any span ending `e` into a fixed window
//!   is at most `limit + previous * e / window`, with `e < window`). Under
//!   traffic spread evenly it is close to exact, and it may also refuse
//!   early when the previous window's units came early in it.
//! * **The sliding log** is exact but costs memory in proportion to the
//!   limit: choose it for small limits where exactness matters (login
//!   attempts, one-time codes, password resets). The log never holds more
//!   than `limit` entries; each call trims the expired ones.
//!
//! # Keys, cluster, expiry
//!
//! One key per subject ([`RateLimiter::key`]): `<prefix>{<subject>}`,
//! `...:counter` or `...:log`, with the default prefix [`RateLimiter::DEFAULT_PREFIX`] (`rate:`).
//! One subject is one cluster slot; subjects spread over the nodes. Every
//! key expires when its subject is fully reset (GCRA: at its theoretical
//! arrival time; the counter: when both fixed windows have passed; the log:
//! when its newest entry leaves the window), so idle subjects cost nothing.
//!
//! # Other languages
//!
//! The scripts take redis-cell's arguments: `throttle` takes `max_burst`,
//! `count_per_period`, `period_ms` and `quantity`
//! (`EVALSHA <sha> 1 <key> 15 30 60000 1`); the windows take `limit`,
//! `window_ms` and `quantity`. Their headers give every range
//! (`redis-patterns export` writes them into `manifest.json`); the throttle
//! also refuses a rate above one unit per microsecond and a burst window
//! (`(max_burst + 1)` emission intervals) above 10^15 microseconds. An
//! optional last argument `now_us` replaces the server's clock, for tests
//! and replays; production leaves it out.

mod contract;
mod decision;
mod limit;
mod limiter;

use std::time::Duration;

pub use decision::Decision;
pub use limit::Limit;
pub use limiter::{RateLimiter, RateLimiterBuilder};

pub(crate) use contract::contract;

use crate::core::Op;

/// The value of [`RateLimiter::DEFAULT_PREFIX`].
pub(crate) const DEFAULT_PREFIX: &str = "rate:";

impl RateLimiter {
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = DEFAULT_PREFIX;
}

/// `CL.THROTTLE subject max_burst count_per_period period quantity`: one
/// GCRA decision for `subject` (key `rate:{<subject>}`). Bad parameters
/// fail the op before anything is sent. For repeated use, build a
/// [`RateLimiter`] once.
pub fn throttle(
    subject: &str,
    max_burst: u64,
    count_per_period: u64,
    period: Duration,
    quantity: u64,
) -> Op<Decision> {
    one_call(
        Limit::gcra(max_burst, count_per_period, period),
        subject,
        quantity,
    )
}

/// Allows one action of `subject` per `interval` (key `rate:{<subject>}`):
/// the first is allowed, the next ones within `interval` of it are limited
/// (with how long to rest in `retry_after_ms`). The PHP recipe's
/// `Lock::add("<uid>:-withdraw")` throttle, without a lock.
pub fn allow_once_per(subject: &str, interval: Duration) -> Op<Decision> {
    one_call(Limit::once_per(interval), subject, 1)
}

fn one_call(limit: Limit, subject: &str, quantity: u64) -> Op<Decision> {
    match RateLimiter::new(limit) {
        Ok(limiter) => limiter.throttle(subject, quantity),
        Err(e) => Op::fail(e),
    }
}
