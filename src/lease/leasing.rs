//! What every leased resource (lock, semaphore, read-write lock) sets,
//! checks and does alike: its builder's key prefix, lease and wait mode;
//! the resolved key, wake-up channel and lease in ms, with their
//! accessors; a token's checks, one attempt with a caller's token and the
//! waiting acquire around its attempts, and the replies of a release or
//! extend.

use std::sync::Arc;
use std::time::Duration;

use super::wait::{self, Contention, WaitMode, Waiting};
use super::{Resource, check_token};
use crate::core::Op;
use crate::core::resend::changed;
use crate::error::{Error, ErrorKind, Result};
use crate::keys::{self, Prefix};
use crate::script::ScriptCall;

/// A lease as the scripts take it, in milliseconds, or the refusal.
pub(crate) fn lease_ms(what: &'static str, lease: Duration, max: i64) -> Result<i64> {
    let ms = lease.as_millis();
    if ms == 0 {
        return Err(Error::invalid(what, "must be at least 1 ms"));
    }
    if ms > max as u128 {
        return Err(Error::invalid(what, format!("must be at most {max} ms")));
    }
    Ok(ms as i64)
}

/// The default place in the queue: a third of the lease (at least 1 ms),
/// so that a waiter that disappeared is skipped three times sooner than a
/// holder that did, while a live waiter renews its place every sixth of
/// the lease at most.
pub(crate) fn default_place_ms(lease_ms: i64) -> i64 {
    (lease_ms / 3).max(1)
}

/// A refused wait mode.
pub(crate) fn check_wait(mode: WaitMode) -> Result<()> {
    match mode {
        WaitMode::Polling { interval } if interval.is_zero() => {
            Err(Error::invalid("poll interval", "must be greater than zero"))
        }
        _ => Ok(()),
    }
}

/// The settings every leased resource's builder holds.
#[derive(Debug, Clone)]
pub(crate) struct Leasing {
    pub(crate) name: String,
    pub(crate) prefix: Prefix,
    pub(crate) lease: Duration,
    pub(crate) wait: WaitMode,
    /// Whether the resource goes to its waiters in arrival order.
    pub(crate) fair: bool,
    /// How long a waiter keeps its place unless renewed (`None`: a third
    /// of the lease).
    pub(crate) place: Option<Duration>,
}

/// The settings, checked: the resource's key (`<prefix>{<name>}`), its
/// wake-up channel (`<key>:wake`, same hash tag), its waiter queue
/// (`<key>:queue`, `<key>:places`) and the lease in ms. Crate-private
/// (`pub` only as what [`Resource::leased`] returns, in a crate-private
/// module).
#[derive(Debug, Clone)]
pub struct Leased {
    pub(crate) key: String,
    pub(crate) channel: String,
    pub(crate) queue: String,
    pub(crate) places: String,
    pub(crate) lease_ms: i64,
    pub(crate) wait: WaitMode,
    pub(crate) fair: bool,
    /// How long a waiter keeps its place in the queue unless renewed.
    pub(crate) place_ms: i64,
    /// How contended it is, as the acquires of its clones see it.
    contended: Arc<Contention>,
}

impl Leasing {
    /// `name` under `default_prefix`, a 30 s lease, notified waiting.
    pub(crate) fn new(name: &str, default_prefix: &str) -> Self {
        Self {
            name: name.to_string(),
            prefix: Prefix::new(default_prefix).expect("the default prefix is valid"),
            lease: Duration::from_secs(30),
            wait: WaitMode::Notified,
            fair: false,
            place: None,
        }
    }

    /// Checks the settings; `what` names the name in a refusal (`lock name`).
    pub(crate) fn check(&self, what: &'static str, max_lease_ms: u64) -> Result<Leased> {
        keys::check_name(what, &self.name)?;
        check_wait(self.wait)?;
        let key = self.prefix.tagged(&self.name);
        let lease = lease_ms("lease", self.lease, max_lease_ms as i64)?;
        let place_ms = match self.place {
            Some(place) => lease_ms("place", place, max_lease_ms as i64)?,
            None => default_place_ms(lease),
        };
        Ok(Leased {
            channel: format!("{key}:wake"),
            queue: format!("{key}:queue"),
            places: format!("{key}:places"),
            key,
            lease_ms: lease,
            wait: self.wait,
            fair: self.fair,
            place_ms,
            contended: Arc::default(),
        })
    }
}

impl Leased {
    /// The lease of every holder.
    pub(crate) fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms as u64)
    }

    /// What a waiting loop for the resource waits for, until `timeout`
    /// (without a longest single wait).
    pub(crate) fn waiting(&self, timeout: Duration) -> Waiting {
        Waiting {
            key: self.key.clone(),
            channel: self.channel.clone(),
            mode: self.wait,
            timeout,
            max_wait: None,
            to: None,
            contended: None,
            leave: None,
        }
    }

    /// How long a waiter keeps its place in the queue unless renewed.
    pub(crate) fn place(&self) -> Duration {
        Duration::from_millis(self.place_ms as u64)
    }
}

/// One attempt of `resource` with the caller's `token` (an empty one is
/// refused, nothing sent): what it got, or the error `busy` makes of the
/// key and the holder's remaining lease in ms (when known). Cancel-safe
/// ([`released_on_cancel`]): dropped unfinished on the async driver, it has
/// the release by `token` run in a spawned task.
pub(crate) fn try_once<R: Resource>(
    resource: &R,
    token: &str,
    busy: impl FnOnce(String, Option<u64>) -> ErrorKind + Send + 'static,
) -> Op<R::Lease> {
    let once = with_token(token, || {
        let key = resource.leased().key.clone();
        let mut attempt = resource.attempts();
        attempt(token, 0).try_map(move |a| a.or_busy(|left| busy(key, left)))
    });
    released_on_cancel(once, resource.release_by(token))
}

/// Attempts of `resource` with the caller's `token` (an empty one is
/// refused, nothing sent) until one gets it or `timeout` has passed
/// ([`wait::until_acquired`]), waiting in the resource's queue: woken by a
/// message naming `token`, renewing the place every half place time, and
/// giving it up with the release by `token` at the timeout. Cancel-safe
/// ([`released_on_cancel`]): dropped unfinished on the async driver, it has
/// the release by `token` run in a spawned task.
pub(crate) fn wait_for<R: Resource>(resource: &R, token: &str, timeout: Duration) -> Op<R::Lease> {
    let leased = resource.leased();
    let wait = with_token(token, || {
        let waiting = Waiting {
            max_wait: Some(Duration::from_millis(leased.place_ms as u64) / 2),
            to: Some(token.to_string()),
            contended: Some(Arc::clone(&leased.contended)),
            leave: Some(resource.release_by(token).map(|_| ())),
            ..leased.waiting(timeout)
        };
        let (token, place_ms) = (token.to_string(), leased.place_ms);
        let mut attempt = resource.attempts();
        wait::until_acquired(waiting, move || attempt(&token, place_ms))
    });
    released_on_cancel(wait, resource.release_by(token))
}

/// `op`, made safe to cancel: dropped unfinished on the async driver, it
/// has `release` (the release by the token it acquires with, chosen before
/// anything was sent) run in a spawned task, errors ignored
/// ([`Op::undo_on_cancel`]).
fn released_on_cancel<T: Send + 'static>(op: Op<T>, release: Op<Option<bool>>) -> Op<T> {
    op.undo_on_cancel(release.map(|_| ()).or_else(|_| Op::ready(())))
}

/// `op()` when the caller's `token` is acceptable (not empty); otherwise an
/// op that fails with the refusal, sending nothing.
pub(crate) fn with_token<T: Send + 'static>(token: &str, op: impl FnOnce() -> Op<T>) -> Op<T> {
    match check_token(token) {
        Ok(()) => op(),
        Err(e) => Op::fail(e),
    }
}

/// The lease of an extend in ms (up to `max`), the token checked first.
pub(crate) fn extend_ms(token: &str, lease: Duration, max: u64) -> Result<i64> {
    check_token(token)?;
    lease_ms("lease", lease, max as i64)
}

/// An extend call: `true` when its token held what it names (the scripts
/// answer 1), `false` when not (nothing changed). A resend's answer is as
/// true as the first's: an extend cannot take away what it extends, so a
/// resend after a lost reply answers 0 only when the lease is not held now.
pub(crate) fn held(call: Result<ScriptCall<i64>>) -> Op<bool> {
    Op::script(call).map(|r| r == 1)
}

/// A release call: `Some(true)` when its token held what it names (the
/// scripts answer 1) and this call gave it back, `Some(false)` when it did
/// not (nothing changed), `None` when the call was sent again after its
/// reply was lost and the resend found nothing to give back: the first
/// attempt may have released it ([`changed`]). Either way the token holds
/// nothing now.
pub(crate) fn released(call: Result<ScriptCall<i64>>) -> Op<Option<bool>> {
    Op::script_resent(call).map(|(r, resent)| changed(r == 1, resent))
}

/// The accessors of [`Leased`] on a resource with a `leased` field (and
/// `WaitMode` in scope): `channel`, `lease` (documented with
/// `$lease_doc`), `wait_mode`, `place`, `fair` (documented with
/// `$fair_doc`), `queue_key` and `places_key`.
macro_rules! leased_accessors {
    ($lease_doc:literal, $fair_doc:literal) => {
        /// The shard channel a release publishes on (in the keys' slot).
        pub fn channel(&self) -> &str {
            &self.leased.channel
        }

        #[doc = $lease_doc]
        pub fn lease(&self) -> std::time::Duration {
            self.leased.lease()
        }

        /// How a blocking acquire waits.
        pub fn wait_mode(&self) -> WaitMode {
            self.leased.wait
        }

        /// How long a waiter keeps its place in the queue unless renewed.
        pub fn place(&self) -> std::time::Duration {
            self.leased.place()
        }

        #[doc = $fair_doc]
        pub fn fair(&self) -> bool {
            self.leased.fair
        }

        /// The key of the waiter queue (a sorted set: token -> arrival; a
        /// read-write lock queues its readers and writers in this one).
        pub fn queue_key(&self) -> &str {
            &self.leased.queue
        }

        /// The key of the waiters' places (a sorted set: token -> the end of
        /// its place).
        pub fn places_key(&self) -> &str {
            &self.leased.places
        }
    };
}
pub(crate) use leased_accessors;

/// The setters of [`Leasing`] on a builder with a `leasing` field:
/// `prefix` (default `$pattern::DEFAULT_PREFIX`), `lease` (documented with
/// `$lease_doc`) and `wait_mode`.
macro_rules! leasing_setters {
    ($pattern:ident, $lease_doc:literal) => {
        $crate::core::setters! {
            #[doc = concat!("The key prefix (default [`", stringify!($pattern), "::DEFAULT_PREFIX`]).")]
            prefix(prefix: $crate::keys::Prefix) => leasing.prefix;

            #[doc = $lease_doc]
            lease(lease: std::time::Duration) => leasing.lease;

            /// How a blocking acquire waits (default
            /// [`WaitMode::Notified`](crate::lease::WaitMode::Notified)).
            wait_mode(mode: $crate::lease::WaitMode) => leasing.wait;

            /// How long a waiter keeps its place in the queue unless its
            /// next attempt renews it (default: a third of the lease, at
            /// least 1 ms; 1 ms to the longest lease). A waiter renews it
            /// every half place while it waits; one that disappeared (a
            /// crashed process, a lost network) is skipped once its place
            /// has ended, so the waiters behind it — in fair mode the
            /// free resource itself — wait for it at most that long.
            place(place: std::time::Duration) => leasing.place = Some(place);
        }
    };
}
pub(crate) use leasing_setters;
