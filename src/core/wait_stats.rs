//! What the waits of a connection's operations met ([`WaitStats`]): whether
//! the lock, semaphore and read-write lock waits are woken by messages, or
//! sleep out their timeouts because they cannot subscribe.

use serde::Serialize;

/// Counts of the [`Step::Wait`](super::Step::Wait)s a connection ran since
/// it was opened (read with `Connection::wait_stats` or
/// `AsyncConnection::wait_stats`).
///
/// A wait subscribes (`SSUBSCRIBE`) to its channel and is woken by the
/// message a release publishes. When it cannot subscribe, it sleeps out its
/// timeout instead: the operation still finishes (every wait is bounded by
/// what it waits for, e.g. the holder's lease), but a hand-off then takes
/// up to that timeout instead of a round trip. The usual cause is an ACL
/// that lets the user run the scripts but not subscribe to their channels
/// (add the pattern's channel rule, e.g. `&<prefix>*`, and
/// `+ssubscribe +sunsubscribe`): `unsubscribed` counts those waits and
/// `last_refusal` holds the server's words.
///
/// ```no_run
/// # fn demo(con: &redis_patterns::Connection) {
/// let stats = con.wait_stats();
/// if stats.unsubscribed > 0 {
///     eprintln!(
///         "lock waits poll: {}",
///         stats.last_refusal.as_deref().unwrap_or("no subscription connection")
///     );
/// }
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WaitStats {
    /// Waits that ended before their timeout: a message on their channel
    /// woke them (or their subscription ended, and the operation re-checked
    /// at once).
    pub woken: u64,
    /// Subscribed waits that ran out their timeout.
    pub timed_out: u64,
    /// Waits that could not subscribe and slept out their timeout: the
    /// server refused `SSUBSCRIBE`, the subscription connection could not be
    /// opened, or the connection has no node address to open one (a wrapped
    /// redis-rs connection).
    pub unsubscribed: u64,
    /// The last refusal of `SSUBSCRIBE`, as the server worded it (e.g.
    /// `NOPERM ...`).
    pub last_refusal: Option<String>,
}

impl WaitStats {
    /// Files the end of one wait: `woken` before its timeout or not.
    pub(crate) fn ended(&mut self, woken: bool) {
        if woken {
            self.woken += 1;
        } else {
            self.timed_out += 1;
        }
    }

    /// Files a wait that could not subscribe; `refusal` is the server's
    /// reply when it refused.
    pub(crate) fn unsubscribed(&mut self, refusal: Option<String>) {
        self.unsubscribed += 1;
        if refusal.is_some() {
            self.last_refusal = refusal;
        }
    }
}

/// A server's error reply as text, its code then its details (`NOPERM
/// ...`); `None` for an error that is no reply (the connection failed).
pub(crate) fn refusal_text(e: &redis::RedisError) -> Option<String> {
    let code = e.code()?;
    Some(match e.detail() {
        Some(d) => format!("{code} {d}"),
        None => code.to_string(),
    })
}
