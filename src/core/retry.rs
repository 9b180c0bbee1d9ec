//! When a connection sends a command again, and how long it waits first:
//! the [`RetryPolicy`] every connection carries, and the one place that
//! reads a reply or an error as "did not run" or "outcome unknown".
//!
//! Every connection of the crate (`Connection`, `AsyncConnection` on one
//! server or a cluster, a wrapped `ConnectionManager`, a
//! `MultiplexedConnection` wrapped with its client) recovers by itself: a
//! broken connection is opened again on its next use, and a call is sent
//! again within the connection's policy (default: 20 attempts, 50 ms
//! doubling to 2 s, within 20 s; `con.set_retry_policy(..)`).
//!
//! The exchange of a batch (see [`Batch`](crate::Batch)) resends
//!
//! * every command whose reply proves that it did not run — `NOSCRIPT`
//!   (after loading the script), `MOVED` / `ASK` (to the node named),
//!   `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`, `READONLY` (on a cluster, where
//!   the slot map read again names the new primary; one server that answers
//!   it is a replica, and the reply is returned), `LOADING`, `BUSY`,
//!   `NOREPLICAS`, `UNBLOCKED` — idempotent or not;
//! * a write that ran on a primary that a failover demoted (its `WAIT`
//!   answered `UNBLOCKED` or was refused as a replica's: the write may be
//!   discarded) only when it is idempotent, as below;
//! * every command that was not sent, because connecting failed;
//! * a command whose request was written when the connection then failed
//!   (its outcome is unknown) only when it is idempotent: a script whose
//!   header says so ([`ScriptCall::is_idempotent`](crate::ScriptCall::is_idempotent)),
//!   or a plain command that is safe to send twice (reads, `SET`, `HSET`,
//!   `SETBIT`, `DEL` …; `INCR`, `RPUSH`, `SET NX` … are not). Any other
//!   command whose outcome is unknown fails the batch with
//!   [`ErrorKind::OutcomeUnknown`](crate::ErrorKind::OutcomeUnknown),
//!   naming it; it is never sent again silently.
//!
//! `visits.add`, `bloom.add`, `login_log.record`, `rolling.add`,
//! `sharded_hash.put` and most other scripts are idempotent; `lock.acquire`
//! and `packed.swap` are not, and `sharded_hash.incr` / `packed.add` become
//! so with a request id ([`RequestId`](crate::core::RequestId):
//! `ShardedHash::incr_once`, `PackedRecords::add_once` keep the result
//! under a request key in the shard's slot, so a resend — by the
//! connection, or by the caller after a crash — answers the first result
//! without adding again). A batch keeps its order: a command is sent again
//! only when no later command of its ordering domain (the whole batch on
//! one server, its slot on a cluster) ran. A resend finds the first
//! attempt's work done, so an answer that says what the call changed is
//! then *not known* (`None`, `null` in the other languages) instead of a
//! `false` that may be wrong: `release` (lock, semaphore, read-write
//! lock), `add` / `multi_add` of the Bloom filters, `Visit.new`,
//! `BatchVisits.new`, `sign_in`, `record`, `reset`, the sharded hash's
//! `set`, `set_if_absent`, `delete`, `set_many` counts, `Added.replaced` /
//! `evicted` and `clear` of the rolling store (the import and reindex
//! reports count such fields as `unknown`); a resend that did the work
//! itself still says so.
//!
//! Between rounds it waits an exponential, jittered backoff (a redirect and
//! a script reload go at once), reconnecting and re-reading a cluster's slot
//! map as needed, until the command has a reply, the policy's attempts are
//! used up, or its deadline would pass: then a command the server kept
//! refusing gets that refusal as its reply (a typed
//! [`ServerErrorKind`](crate::ServerErrorKind)), and one that could not be
//! sent fails the batch with the last connection error.
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::core::RetryPolicy;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! // Wait up to a minute for a failover (e.g. cluster-node-timeout 30 s).
//! let patient = RetryPolicy::builder()
//!     .attempts(40)
//!     .deadline(Duration::from_secs(60))
//!     .build()?;
//! con.set_retry_policy(patient);
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! let mut con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! con.set_retry_policy(RetryPolicy::none()); // fail at the first error
//! # Ok(())
//! # }
//! ```

use std::time::{Duration, Instant};

use redis::Value;

use crate::core::setters;
use crate::error::{Error, Result};

/// How often and how long a connection retries a command (see the module
/// docs). Built with [`RetryPolicy::builder`]; [`RetryPolicy::default`] is
/// 20 attempts, 50 ms to 2 s between them, within 20 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    attempts: u32,
    base_delay: Duration,
    max_delay: Duration,
    deadline: Duration,
}

/// Builds a [`RetryPolicy`]: setters never fail, [`RetryPolicyBuilder::build`]
/// checks.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicyBuilder {
    policy: RetryPolicy,
}

impl Default for RetryPolicy {
    /// 20 attempts, backoff from 50 ms doubling to at most 2 s (each wait
    /// drawn from half to all of it), all within 20 s: enough for a
    /// restart, a replica's promotion with Redis's default
    /// `cluster-node-timeout` of 15 s, or a dataset loading for a few
    /// seconds; a dead server makes a call fail after about 20 s.
    fn default() -> Self {
        Self {
            attempts: 20,
            base_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(2),
            deadline: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// A builder starting from [`RetryPolicy::default`].
    pub fn builder() -> RetryPolicyBuilder {
        RetryPolicyBuilder {
            policy: Self::default(),
        }
    }

    /// One attempt: nothing is sent again (a script missing from the
    /// server's cache is still loaded and its call sent once more).
    pub fn none() -> Self {
        Self {
            attempts: 1,
            ..Self::default()
        }
    }

    /// How many times a command is sent at most (1: no retry).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The wait before the first retry; it doubles with each retry.
    pub fn base_delay(&self) -> Duration {
        self.base_delay
    }

    /// The longest wait between two attempts.
    pub fn max_delay(&self) -> Duration {
        self.max_delay
    }

    /// No retry starts when it would begin later than this after the first
    /// attempt.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The wait before retry number `retry` (1 for the first), drawn
    /// uniformly from half to all of `min(max_delay, base_delay · 2^(retry-1))`.
    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(1u32 << retry.saturating_sub(1).min(20));
        let full = exp.min(self.max_delay);
        let mut r = [0u8; 4];
        getrandom::fill(&mut r).expect("the operating system's random source is unavailable");
        let unit = u32::from_le_bytes(r) as f64 / (u32::MAX as f64 + 1.0);
        full.mul_f64(0.5 + unit / 2.0)
    }
}

impl RetryPolicyBuilder {
    setters! {
        /// How many times a command is sent at most (default 20; 1 disables
        /// retries).
        attempts(attempts: u32) => policy.attempts;

        /// The wait before the first retry (default 50 ms).
        base_delay(delay: Duration) => policy.base_delay;

        /// The longest wait between attempts (default 2 s).
        max_delay(delay: Duration) => policy.max_delay;

        /// No retry starts later than this after the first attempt (default 20 s).
        deadline(deadline: Duration) => policy.deadline;
    }

    /// Checks the settings: at least one attempt, a base delay of at least
    /// 1 ms and at most the maximum delay, a deadline of at least the base
    /// delay (when it may retry).
    pub fn build(self) -> Result<RetryPolicy> {
        let p = self.policy;
        if p.attempts == 0 {
            return Err(Error::invalid("attempts", "must be at least 1"));
        }
        if p.base_delay < Duration::from_millis(1) {
            return Err(Error::invalid("base delay", "must be at least 1 ms"));
        }
        if p.max_delay < p.base_delay {
            return Err(Error::invalid(
                "max delay",
                "must be at least the base delay",
            ));
        }
        if p.attempts > 1 && p.deadline < p.base_delay {
            return Err(Error::invalid(
                "deadline",
                "must be at least the base delay",
            ));
        }
        Ok(p)
    }
}

/// The retries of one exchange: how many were made, since when.
#[derive(Debug)]
pub(crate) struct Retries {
    policy: RetryPolicy,
    started: Instant,
    made: u32,
    /// The op's own deadline for retries after a backoff.
    until: Option<Instant>,
}

impl Retries {
    /// The retries of an exchange starting now, under `policy` and the
    /// op's own deadline `until`.
    pub(crate) fn new(policy: RetryPolicy, until: Option<Instant>) -> Self {
        Self {
            policy,
            started: Instant::now(),
            made: 0,
            until,
        }
    }

    /// Counts one more retry: `Some(wait)` when the policy allows it (zero
    /// wait when `now`), `None` when its attempts or deadline are used up.
    pub(crate) fn next(&mut self, now: bool) -> Option<Duration> {
        if self.made + 1 >= self.policy.attempts {
            return None;
        }
        self.made += 1;
        let wait = if now {
            Duration::ZERO
        } else {
            self.policy.backoff(self.made)
        };
        // A redirect goes at once, whatever the op's deadline: one round trip.
        let in_time = now || self.until.is_none_or(|u| Instant::now() + wait <= u);
        (self.started.elapsed() + wait <= self.policy.deadline && in_time).then_some(wait)
    }
}

/// How a reply proves that its command did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotRun {
    /// `NOSCRIPT`: load the script, send again at once.
    NoScript,
    /// `MOVED`: the slot lives elsewhere; re-read the slot map, send again.
    Moved,
    /// `ASK <slot> <host:port>`: send again to that node, after `ASKING`.
    Ask(String, u16),
    /// The server cannot take it now (`LOADING`, `BUSY`, `TRYAGAIN`,
    /// `CLUSTERDOWN`, `MASTERDOWN`, `READONLY`, `NOREPLICAS`, a demotion:
    /// [`demoted`]): wait, then send again; `stale` when the topology may
    /// have changed.
    Later { stale: bool },
}

/// Whether `reply` proves its command did not run, and how to go on.
pub(crate) fn not_run(reply: &Value) -> Option<NotRun> {
    let Value::ServerError(e) = reply else {
        return None;
    };
    Some(match e.code() {
        "NOSCRIPT" => NotRun::NoScript,
        "MOVED" => NotRun::Moved,
        "ASK" => {
            let addr = e.details()?.split_ascii_whitespace().nth(1)?;
            let (host, port) = addr.rsplit_once(':')?;
            NotRun::Ask(host.to_string(), port.parse().ok()?)
        }
        "LOADING" | "BUSY" | "TRYAGAIN" | "NOREPLICAS" => NotRun::Later { stale: false },
        "CLUSTERDOWN" | "MASTERDOWN" | "READONLY" => NotRun::Later { stale: true },
        _ if demoted(reply) => NotRun::Later { stale: true },
        _ => return None,
    })
}

/// Whether `reply` says that its node stopped being a primary: `UNBLOCKED`
/// (a `WAIT` or another blocked command released when the node turned
/// into a replica: `force unblock ... (master -> replica?)`) or a `WAIT`
/// refused by a replica (`ERR WAIT cannot be used with replica
/// instances`). The command itself did not do its work; writes sent to the
/// node before it may have run there and be discarded when it syncs with
/// its new primary.
pub(crate) fn demoted(reply: &Value) -> bool {
    let Value::ServerError(e) = reply else {
        return false;
    };
    demotion_code(e.code(), e.details().unwrap_or(""))
}

/// [`demoted`] by an error's code and text.
pub(crate) fn demotion_code(code: &str, detail: &str) -> bool {
    code == "UNBLOCKED" || (code == "ERR" && detail.contains("cannot be used with replica"))
}

/// Whether a request that failed with `e` may have reached the server (so
/// its outcome is unknown). Only a refused connection proves it did not: a
/// write that seemed to succeed may still have been read by the server.
pub(crate) fn may_have_reached(e: &redis::RedisError) -> bool {
    !e.is_connection_refusal()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> Value {
        redis::parse_redis_value(format!("-{text}\r\n").as_bytes()).expect("an error reply")
    }

    #[test]
    fn backoff_doubles_within_its_bounds() {
        let p = RetryPolicy::default();
        for retry in 1..30 {
            let full = (p.base_delay * 2u32.pow((retry - 1).min(20))).min(p.max_delay);
            let d = p.backoff(retry);
            assert!(d >= full / 2 && d <= full, "{retry}: {d:?}");
        }
        let mut r = Retries::new(RetryPolicy::builder().attempts(3).build().unwrap(), None);
        assert_eq!(r.next(true), Some(Duration::ZERO));
        assert!(r.next(false).is_some());
        assert_eq!(r.next(false), None, "3 attempts: 2 retries");
        assert_eq!(Retries::new(RetryPolicy::none(), None).next(true), None);
        // The op's own deadline stops backoffs, not redirects.
        let mut r = Retries::new(RetryPolicy::default(), Some(Instant::now()));
        assert_eq!(r.next(true), Some(Duration::ZERO));
        assert_eq!(r.next(false), None);
        assert!(RetryPolicy::builder().attempts(0).build().is_err());
        assert!(
            RetryPolicy::builder()
                .base_delay(Duration::ZERO)
                .build()
                .is_err()
        );
        assert!(
            RetryPolicy::builder()
                .max_delay(Duration::from_millis(10))
                .build()
                .is_err()
        );
        assert!(
            RetryPolicy::builder()
                .deadline(Duration::ZERO)
                .build()
                .is_err()
        );
    }

    #[test]
    fn replies_that_prove_a_command_did_not_run() {
        let later = |stale| Some(NotRun::Later { stale });
        for (reply, kind) in [
            ("NOSCRIPT No matching script.", Some(NotRun::NoScript)),
            ("MOVED 3999 127.0.0.1:6381", Some(NotRun::Moved)),
            (
                "ASK 3999 127.0.0.1:6381",
                Some(NotRun::Ask("127.0.0.1".into(), 6381)),
            ),
            (
                "LOADING Redis is loading the dataset in memory",
                later(false),
            ),
            ("BUSY Redis is busy running a script.", later(false)),
            (
                "TRYAGAIN Multiple keys request during rehashing of slot",
                later(false),
            ),
            (
                "NOREPLICAS Not enough good replicas to write.",
                later(false),
            ),
            ("CLUSTERDOWN The cluster is down", later(true)),
            ("MASTERDOWN Link with MASTER is down", later(true)),
            (
                "READONLY You can't write against a read only replica.",
                later(true),
            ),
            (
                "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
                later(true),
            ),
            (
                "ERR WAIT cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.",
                later(true),
            ),
            (
                "WRONGTYPE Operation against a key holding the wrong kind of value",
                None,
            ),
            ("OOM command not allowed", None),
            ("BUSYKEY Target key name already exists.", None),
            ("ERR unknown command", None),
        ] {
            assert_eq!(not_run(&err(reply)), kind, "{reply}");
        }
        assert_eq!(not_run(&Value::Okay), None);
        let refused =
            redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(!may_have_reached(&refused));
        let reset =
            redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(may_have_reached(&reset));
    }
}
