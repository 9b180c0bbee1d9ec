//! [`RateLimiter`]: a [`Limit`] applied to subjects (a user, an API key, an
//! IP address ...), one key per subject, one script call per decision.

use crate::core::{Op, setters};
use crate::error::{Error, Result};
use crate::keys::{self, Prefix};
use crate::scripts;

use super::DEFAULT_PREFIX;
use super::decision::Decision;
use super::limit::{Limit, Params};

/// A [`Limit`] and the prefix of its keys. Cheap to clone; holds no
/// connection. Every subject has one key, `<prefix>{<subject>}` (GCRA),
/// `<prefix>{<subject>}:counter` (sliding counter) or
/// `<prefix>{<subject>}:log` (sliding log), so one subject is one cluster
/// slot and subjects spread over a cluster's nodes.
///
/// One limit per key: two limits on the same subjects (per second and per
/// day, say) need two prefixes.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    prefix: Prefix,
    limit: Limit,
    params: Params,
}

/// Builds a [`RateLimiter`]: setters never fail, [`RateLimiterBuilder::build`]
/// checks.
#[derive(Debug, Clone)]
pub struct RateLimiterBuilder {
    prefix: Prefix,
    limit: Limit,
}

impl RateLimiterBuilder {
    setters! {
        /// The key prefix (default [`RateLimiter::DEFAULT_PREFIX`]).
        prefix(prefix: Prefix) => prefix;
    }

    /// Checks the limit against the ranges of its script's header.
    pub fn build(self) -> Result<RateLimiter> {
        Ok(RateLimiter {
            params: self.limit.check()?,
            prefix: self.prefix,
            limit: self.limit,
        })
    }
}

impl RateLimiter {
    /// A builder for a limiter of `limit`.
    pub fn builder(limit: Limit) -> RateLimiterBuilder {
        RateLimiterBuilder {
            prefix: Prefix::new(DEFAULT_PREFIX).expect("the default prefix is valid"),
            limit,
        }
    }

    /// A limiter of `limit` with keys under [`RateLimiter::DEFAULT_PREFIX`].
    pub fn new(limit: Limit) -> Result<Self> {
        Self::builder(limit).build()
    }

    /// What this limiter allows.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// The prefix of its keys.
    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    /// The key of `subject` (not empty, no `{` or `}`).
    pub fn key(&self, subject: &str) -> Result<String> {
        keys::check_name("subject", subject)?;
        let key = self.prefix.tagged(subject);
        Ok(match self.params {
            Params::Gcra { .. } => key,
            Params::Counter { .. } => key + ":counter",
            Params::Log { .. } => key + ":log",
        })
    }

    /// Takes `quantity` units for `subject` if its limit allows it now, in
    /// one script call; otherwise takes nothing and says when to retry. A
    /// quantity of 0 peeks ([`RateLimiter::peek`]). A quantity above
    /// [`Limit::max_quantity`] can never be allowed and is refused before
    /// anything is sent.
    pub fn throttle(&self, subject: &str, quantity: u64) -> Op<Decision> {
        match self.call(subject, quantity) {
            Ok(op) => op,
            Err(e) => Op::fail(e),
        }
    }

    /// Where `subject` stands, taking nothing (GCRA and the counter write
    /// nothing; the log trims its expired entries).
    pub fn peek(&self, subject: &str) -> Op<Decision> {
        self.throttle(subject, 0)
    }

    /// Forgets `subject` (deletes its key); `Some(true)` when it had one,
    /// `None` when that is not known: the `DEL` was sent again after its
    /// reply was lost and found no key (the first attempt may have deleted
    /// it). Either way the subject has no key now.
    pub fn reset(&self, subject: &str) -> Op<Option<bool>> {
        match self.key(subject) {
            Ok(key) => {
                let mut del = redis::cmd("DEL");
                del.arg(&key);
                Op::<i64>::cmd_resent(key, del)
                    .map(|(n, resent)| crate::core::resend::changed(n > 0, resent))
            }
            Err(e) => Op::fail(e),
        }
    }

    fn call(&self, subject: &str, quantity: u64) -> Result<Op<Decision>> {
        let key = self.key(subject)?;
        let max = self.limit.max_quantity();
        if quantity > max {
            return Err(Error::invalid(
                "quantity",
                format!("must be at most {max}, the most one call may take"),
            ));
        }
        let q = quantity as i64;
        let call = match self.params {
            Params::Gcra {
                max_burst,
                count,
                period_ms,
            } => scripts::rate_limit::throttle(&key, max_burst, count, period_ms, q, &[]),
            Params::Counter { limit, window_ms } => {
                scripts::rate_limit::window_counter(&key, limit, window_ms, q, &[])
            }
            Params::Log { limit, window_ms } => {
                scripts::rate_limit::window_log(&key, limit, window_ms, q, &[])
            }
        };
        Ok(Op::script(call).try_map(Decision::from_reply))
    }
}
