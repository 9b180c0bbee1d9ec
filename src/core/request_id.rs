//! [`RequestId`]: the caller's name for one call of a script that is not
//! idempotent by itself (an increment), so that a resend of the call is
//! recognised and does not apply twice.
//!
//! The script remembers the call's result under a request key in the same
//! hash slot as the data it changes, for the id's time to live; a second
//! call with the same id finds it and returns that result without changing
//! anything. With a request id such a call is idempotent, so the
//! connections resend it after a lost connection like any other idempotent
//! call (see [`RetryPolicy`](crate::core::RetryPolicy)); without one its
//! outcome stays unknown ([`ErrorKind::OutcomeUnknown`](crate::ErrorKind::OutcomeUnknown)).
//!
//! ```no_run
//! use redis_patterns::prelude::*;
//! use redis_patterns::core::RequestId;
//! use redis_patterns::sharded_hash::ShardedHash;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let stock = ShardedHash::new("stock", 64)?;
//! // One id per logical operation, e.g. from the order that triggers it.
//! let request = RequestId::new("order-1042-line-3")?;
//! let left = stock.incr_once("sku-17", -1, &request).run(&mut con)?;
//! // The same request again (a retry after a crash): answered, not applied.
//! assert_eq!(stock.incr_once("sku-17", -1, &request).run(&mut con)?, left);
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let stock = ShardedHash::new("stock", 64)?;
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let left = stock.incr_once("sku-17", 5, &RequestId::random()).run_async(&con).await?;
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use crate::error::{Error, Result};
use crate::keys;

/// The caller's name for one call (see the module docs). Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestId {
    id: String,
    ttl_ms: i64,
}

/// The longest request id, in bytes.
pub(crate) const MAX_REQUEST_ID_BYTES: usize = 200;

/// The longest time to live, in milliseconds: the top of the
/// `request_ttl_ms` range every script that takes a request declares in
/// its header (`tests/core.rs` checks that they agree).
const MAX_TTL_MS: i64 = 999_999_999_999_999;

impl RequestId {
    /// How long a request is remembered by default: one hour. Long enough
    /// to cover the connection's own resends (its retry deadline is
    /// seconds) and a caller that retries after its process restarted; a
    /// remembered request costs one small key (~100 bytes) until then.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);

    /// A request named `id` (not empty, at most 200 bytes),
    /// remembered for [`RequestId::DEFAULT_TTL`].
    pub fn new(id: &str) -> Result<Self> {
        Self::with_ttl(id, Self::DEFAULT_TTL)
    }

    /// A request named `id`, remembered for `ttl` (1 ms to about 31,700
    /// years, whole milliseconds).
    pub fn with_ttl(id: &str, ttl: Duration) -> Result<Self> {
        if id.is_empty() {
            return Err(Error::invalid("request id", "must not be empty"));
        }
        if id.len() > MAX_REQUEST_ID_BYTES {
            return Err(Error::invalid(
                "request id",
                format!("must be at most {MAX_REQUEST_ID_BYTES} bytes"),
            ));
        }
        let max = MAX_TTL_MS;
        let ms = ttl.as_millis();
        if ms == 0 || ms > max as u128 {
            return Err(Error::invalid(
                "request ttl",
                format!("must be from 1 ms to {max} ms"),
            ));
        }
        Ok(Self {
            id: id.to_string(),
            ttl_ms: ms as i64,
        })
    }

    /// A fresh unguessable request id (32 hex digits), remembered for
    /// [`RequestId::DEFAULT_TTL`]: makes one call safe to resend.
    pub fn random() -> Self {
        let mut r = [0u8; 16];
        getrandom::fill(&mut r).expect("the operating system's random source is unavailable");
        Self {
            id: r.iter().map(|b| format!("{b:02x}")).collect(),
            ttl_ms: Self::DEFAULT_TTL.as_millis() as i64,
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.id
    }

    /// How long the request is remembered.
    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms as u64)
    }

    /// The request key of this id for a call on `key`: in `key`'s slot
    /// (refused for a key without a hash tag that contains `}`).
    pub fn key_for(&self, key: &str) -> Result<String> {
        keys::in_slot_of(key, &format!("req:{}", self.id))
    }

    pub(crate) fn ttl_ms(&self) -> i64 {
        self.ttl_ms
    }
}

/// The `(request key, request_ttl_ms)` script arguments of a call on `key`
/// with or without a request: without one, a key in the same slot that the
/// script leaves untouched, and 0.
pub(crate) fn request_args(key: &str, request: Option<&RequestId>) -> Result<(String, i64)> {
    Ok(match request {
        Some(r) => (r.key_for(key)?, r.ttl_ms()),
        None => (keys::in_slot_of(key, "req")?, 0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::cluster_slot;

    #[test]
    fn request_keys_share_the_slot_of_their_key() {
        let r = RequestId::new("a").unwrap();
        assert_eq!(r.key_for("base:3").unwrap(), "{base:3}:req:a");
        assert_eq!(r.key_for("x:{t}:0").unwrap(), "x:{t}:0:req:a");
        for key in ["base:3", "x:{t}:0", "a{b", "a{b}{"] {
            let slot = cluster_slot(key.as_bytes());
            let with = r.key_for(key).unwrap();
            assert_eq!(cluster_slot(with.as_bytes()), slot, "{key}");
            let (none, ttl) = request_args(key, None).unwrap();
            assert_eq!((cluster_slot(none.as_bytes()), ttl), (slot, 0), "{key}");
        }
        assert!(
            r.key_for("a}b").is_err() && r.key_for("{}").is_err() && r.key_for("{}{x}").is_err()
        );
        assert!(RequestId::new("").is_err());
        assert!(RequestId::new(&"x".repeat(201)).is_err());
        assert!(RequestId::with_ttl("a", Duration::ZERO).is_err());
        assert_ne!(RequestId::random(), RequestId::random());
        assert_eq!(RequestId::random().ttl(), RequestId::DEFAULT_TTL);
    }
}
