//! [`Durability`]: how many replicas must have a batch's writes before a
//! call counts as done.
//!
//! Redis replicates asynchronously: a primary answers a write before any
//! replica has it, so when the primary dies right after, the replica that
//! takes over may not have it — an acknowledged write is lost. With
//! [`Durability::replicas`] set on a connection, every pipeline that holds a
//! write ends with `WAIT <replicas> <timeout>`, sent on the same connection
//! to the same node as the writes (so it covers them), and the call succeeds
//! only when that many replicas acknowledged them; otherwise it fails with
//! [`ErrorKind::NotDurable`](crate::ErrorKind::NotDurable) — the writes are
//! on the primary but may not survive its loss (idempotent calls can simply
//! be made again).
//!
//! `WAIT` is no consensus: when a primary has several replicas and the one
//! promoted is not one that acknowledged, a write can still be lost. With
//! one replica per primary (or `replicas` equal to the replica count) the
//! replica that takes over has every acknowledged write; `tests/failover.rs`
//! shows it on a real cluster. Reads are sent as before.
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::core::Durability;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1:7000/")?; // any cluster node
//! con.set_durability(Durability::replicas(1, Duration::from_millis(500))?)?;
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! let mut con = AsyncConnection::open("redis://127.0.0.1:7000/").await?;
//! con.set_durability(Durability::replicas(1, Duration::from_millis(500))?)?;
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use redis::Value;

use crate::error::{Error, ErrorKind, Result};

/// How many replicas must acknowledge a batch's writes (see the module
/// docs). The default, [`Durability::Primary`], waits for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// A write is done when the primary has it.
    #[default]
    Primary,
    /// A write is done when `replicas` replicas acknowledged it within
    /// `timeout` (`WAIT`). Made with [`Durability::replicas`].
    Replicas { replicas: u32, timeout: Duration },
}

impl Durability {
    /// Waits for `replicas` (at least 1) acknowledgements, at most
    /// `timeout` (1 ms to 1 hour, whole milliseconds: `WAIT` with 0 would
    /// wait forever).
    pub fn replicas(replicas: u32, timeout: Duration) -> Result<Self> {
        if replicas == 0 {
            return Err(Error::invalid("replicas", "must be at least 1"));
        }
        let ms = timeout.as_millis();
        if !(1..=3_600_000).contains(&ms) {
            return Err(Error::invalid("timeout", "must be from 1 ms to 1 hour"));
        }
        Ok(Self::Replicas {
            replicas,
            timeout: Duration::from_millis(ms as u64),
        })
    }

    /// The `WAIT` that ends a pipeline with writes, when one is needed.
    pub(crate) fn wait_cmd(&self) -> Option<redis::Cmd> {
        match *self {
            Self::Primary => None,
            Self::Replicas { replicas, timeout } => {
                let mut cmd = redis::cmd("WAIT");
                cmd.arg(replicas).arg(timeout.as_millis() as u64);
                Some(cmd)
            }
        }
    }

    /// Checks the reply of that `WAIT`.
    pub(crate) fn check(&self, reply: Value) -> Result<()> {
        let Self::Replicas { replicas, timeout } = *self else {
            return Ok(());
        };
        match reply {
            Value::Int(n) if n >= i64::from(replicas) => Ok(()),
            Value::Int(n) => Err(ErrorKind::NotDurable {
                acknowledged: n.max(0) as u32,
                wanted: replicas,
                timeout_ms: timeout.as_millis() as u64,
            }
            .into()),
            Value::ServerError(e) => Err(Error::from_redis(None, e.into())),
            other => Err(Error::unexpected(format!(
                "WAIT answered {}",
                match other {
                    Value::Nil => "nil",
                    _ => "something other than an integer",
                }
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_checked() {
        assert!(Durability::replicas(0, Duration::from_millis(5)).is_err());
        assert!(Durability::replicas(1, Duration::ZERO).is_err());
        let d = Durability::replicas(2, Duration::from_millis(250)).unwrap();
        let wait = d.wait_cmd().unwrap().get_packed_command();
        assert_eq!(
            wait,
            redis::cmd("WAIT").arg(2).arg(250).get_packed_command()
        );
        assert!(d.check(Value::Int(2)).is_ok());
        let e = d.check(Value::Int(1)).unwrap_err();
        assert!(matches!(
            e.kind(),
            ErrorKind::NotDurable {
                acknowledged: 1,
                wanted: 2,
                ..
            }
        ));
        assert!(Durability::Primary.wait_cmd().is_none());
    }
}
