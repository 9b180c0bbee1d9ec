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
//! [`ErrorKind::NotDurable`](crate::ErrorKind::NotDurable) — the writes ran
//! on the primary but may not survive its loss (idempotent calls can simply
//! be made again). The verdict is on the writes that ran: a call that did
//! not run (`NOSCRIPT` on a fresh primary, a redirect) is loaded or
//! redirected and sent again, with its own `WAIT`, before the batch is
//! judged; a `WAIT` refused by a node that a failover demoted (`UNBLOCKED`,
//! "WAIT cannot be used with replica instances") sends the idempotent
//! writes again to the new primary, and fails the others with
//! [`ErrorKind::OutcomeUnknown`](crate::ErrorKind::OutcomeUnknown).
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
    Replicas {
        /// How many replicas.
        replicas: u32,
        /// How long `WAIT` waits for them.
        timeout: Duration,
    },
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

    /// Reads the reply of that `WAIT`: `None` when enough replicas
    /// acknowledged, the [`ErrorKind::NotDurable`] error when fewer did, or
    /// the error of a reply that is no count.
    pub(crate) fn verdict(&self, reply: Value) -> Result<Option<Error>> {
        let Self::Replicas { replicas, .. } = *self else {
            return Ok(None);
        };
        match reply {
            Value::Int(n) if n >= i64::from(replicas) => Ok(None),
            Value::Int(n) => Ok(Some(self.short_of(n.max(0) as u32))),
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

    /// The error of writes that `acknowledged` replicas acknowledged.
    fn short_of(&self, acknowledged: u32) -> Error {
        let (wanted, timeout_ms) = match *self {
            Self::Primary => (0, 0),
            Self::Replicas { replicas, timeout } => (replicas, timeout.as_millis() as u64),
        };
        ErrorKind::NotDurable {
            acknowledged,
            wanted,
            timeout_ms,
        }
        .into()
    }
}

/// The verdicts of one exchange's durability `WAIT`s on the writes that
/// ran, per connection (`K`: where a pipeline went). A `WAIT` counts the
/// replicas that have every write its connection sent before it, so a
/// short count is overruled by a later sufficient one on the same
/// connection — unless the connection was opened anew in between, or the
/// count of a write was never read (its `WAIT`'s reply was lost).
#[derive(Debug)]
pub(crate) struct Verdicts<K> {
    short: Vec<Short<K>>,
}

#[derive(Debug)]
struct Short<K> {
    at: K,
    error: Error,
    /// No later `WAIT` can overrule it.
    settled: bool,
}

impl<K> Default for Verdicts<K> {
    fn default() -> Self {
        Self { short: Vec::new() }
    }
}

impl<K: PartialEq + Clone> Verdicts<K> {
    /// A `WAIT`'s verdict on the writes sent to `at` so far (`short`: the
    /// error when too few replicas acknowledged).
    pub(crate) fn judge(&mut self, at: &K, short: Option<Error>) {
        let open = self.short.iter_mut().find(|s| s.at == *at && !s.settled);
        match (short, open) {
            (None, _) => self.short.retain(|s| s.settled || s.at != *at),
            (Some(error), Some(s)) => s.error = error,
            (Some(error), None) => self.short.push(Short {
                at: at.clone(),
                error,
                settled: false,
            }),
        }
    }

    /// A write that is not idempotent ran at `at`, and the reply of its
    /// `WAIT` was lost: how many replicas have it is not known.
    pub(crate) fn unknown(&mut self, at: &K, durability: &Durability) {
        self.short.push(Short {
            at: at.clone(),
            error: durability.short_of(0),
            settled: true,
        });
    }

    /// The connection to `at` broke: a `WAIT` on the next one cannot
    /// confirm what was sent on this one.
    pub(crate) fn reconnected(&mut self, at: &K) {
        for s in self.short.iter_mut().filter(|s| s.at == *at) {
            s.settled = true;
        }
    }

    /// `Ok` when every write that ran was confirmed; otherwise the first
    /// short verdict.
    pub(crate) fn outcome(self) -> Result<()> {
        match self.short.into_iter().next() {
            Some(s) => Err(s.error),
            None => Ok(()),
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
        assert!(d.verdict(Value::Int(2)).unwrap().is_none());
        let e = d.verdict(Value::Int(1)).unwrap().unwrap();
        assert!(matches!(
            e.kind(),
            ErrorKind::NotDurable {
                acknowledged: 1,
                wanted: 2,
                ..
            }
        ));
        assert!(Durability::Primary.wait_cmd().is_none());
        assert!(d.verdict(Value::Nil).is_err());
    }

    #[test]
    fn a_later_wait_on_the_same_connection_overrules_a_short_one() {
        let d = Durability::replicas(1, Duration::from_millis(5)).unwrap();
        let short = || d.verdict(Value::Int(0)).unwrap();
        let mut v = Verdicts::default();
        v.judge(&"a", short());
        v.judge(&"b", None);
        v.judge(&"a", None);
        assert!(v.outcome().is_ok(), "a's later WAIT confirmed its writes");

        let mut v = Verdicts::default();
        v.judge(&"a", short());
        v.reconnected(&"a");
        v.judge(&"a", None);
        assert!(v.outcome().is_err(), "not on another connection");

        let mut v = Verdicts::default();
        v.unknown(&"a", &d);
        v.judge(&"a", None);
        let e = v.outcome().unwrap_err();
        assert!(matches!(
            e.kind(),
            ErrorKind::NotDurable {
                acknowledged: 0,
                wanted: 1,
                ..
            }
        ));
    }
}
