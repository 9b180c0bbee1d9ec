//! How a blocking acquire waits: [`WaitMode`], and the one waiting loop
//! that the lock, the semaphore and the read-write lock share.
//!
//! Notified (the default): after a refused attempt the loop subscribes to
//! the resource's wake-up channel (a zero-timeout [`Op::wait`]), tries once
//! more (a release between the first attempt and the subscription is not
//! missed), then waits until a release's message or until the holder's
//! remaining lease, as the refusal reported it, has run out — whichever
//! comes first — and tries again. A lost message therefore costs at most
//! the holder's remaining lease; no attempt is made in between.
//!
//! Woken one at a time (the lock, the semaphore and the read-write lock):
//! a refused attempt gives the waiter a place in the resource's queue (in
//! its slot), and a release publishes the token of the next live waiter
//! (the rwlock: a writer, or the readers at the head of the queue), so only
//! that waiter tries again ([`Waiting::to`]: the wait ignores messages for
//! others); the others keep waiting, at most until the holder's lease has
//! run out or their place needs renewing (half of it: each attempt renews
//! it; the place lasts a third of the lease by default, see `place`). A resource whose last acquire had to wait, or whose other acquire
//! in this process waits now, subscribes before its first attempt
//! ([`Waiting::contended`]), so that a waiter's refused
//! attempt needs no second one after subscribing: on a busy lock an
//! acquisition costs two attempts, the refused one and the one its wake-up
//! makes. An acquire that times out gives its place up ([`Waiting::leave`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::core::{Env, Machine, Op, Replies, Step};
use crate::error::{ErrorKind, Result};

/// How a blocking acquire waits for the holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum WaitMode {
    /// Woken by the release (default): subscribe to the resource's shard
    /// channel, try again, then wait for a release's message, at most until
    /// the holder's remaining lease has run out. Needs Redis >= 7 (sharded
    /// pub/sub); on a connection that cannot subscribe (wrapped without its
    /// client) it waits out the holder's lease.
    Notified,
    /// Try again after a pause drawn uniformly from half to one and a half
    /// times `interval`, without subscribing (how every acquire waited
    /// before notified waiting; for comparison, or a server without
    /// sharded pub/sub).
    Polling {
        /// The mean pause between attempts (jittered).
        interval: Duration,
    },
}

/// The outcome of one attempt. Crate-private (`pub` only as what
/// [`Resource::attempts`](super::Resource::attempts) returns, in a
/// crate-private module).
pub enum Attempt<T> {
    Got(T),
    /// Refused; the holder's remaining lease when it is known.
    Busy(Option<Duration>),
}

impl<T> Attempt<T> {
    /// The busy outcome of a script's `-<remaining ms>` (0: unknown).
    pub(crate) fn busy(reply: i64) -> Self {
        Attempt::Busy((reply < 0).then(|| Duration::from_millis(reply.unsigned_abs())))
    }

    /// The outcome of a single attempt: what it got, or the error `busy`
    /// makes of the holder's remaining lease in ms (when known).
    pub(crate) fn or_busy(self, busy: impl FnOnce(Option<u64>) -> ErrorKind) -> Result<T> {
        match self {
            Attempt::Got(v) => Ok(v),
            Attempt::Busy(left) => Err(busy(left.map(|d| d.as_millis() as u64)).into()),
        }
    }
}

/// How contended a resource is, as the acquires of its clones in this
/// process see it: a next acquire subscribes before its first attempt
/// when the last one had to wait or another one waits now.
#[derive(Debug, Default)]
pub(crate) struct Contention {
    /// Whether the last acquire had to wait.
    last: AtomicBool,
    /// Acquires refused and not finished yet.
    waiting: AtomicUsize,
}

impl Contention {
    /// Whether a next acquire had better subscribe first.
    fn busy(&self) -> bool {
        self.last.load(Ordering::Relaxed) || self.waiting.load(Ordering::Relaxed) > 0
    }
}

/// What a waiting loop waits for.
pub(crate) struct Waiting {
    /// The resource's key, for [`ErrorKind::LockTimeout`].
    pub(crate) key: String,
    /// Its wake-up channel.
    pub(crate) channel: String,
    pub(crate) mode: WaitMode,
    pub(crate) timeout: Duration,
    /// The longest single wait (a writer renews its intent, a queued
    /// waiter its place, in between).
    pub(crate) max_wait: Option<Duration>,
    /// The waiter's token, when the release's message names the waiter it
    /// wakes (a queue): messages for other waiters do not end a wait.
    pub(crate) to: Option<String>,
    /// How contended the resource is (shared by the resource's clones):
    /// when busy, the next acquire subscribes first.
    pub(crate) contended: Option<Arc<Contention>>,
    /// Gives the waiter's place in the queue up, when it times out.
    pub(crate) leave: Option<Op<()>>,
}

/// Runs `attempt` until it gets the resource or `timeout` has passed
/// ([`ErrorKind::LockTimeout`]); a zero timeout makes exactly one attempt.
pub(crate) fn until_acquired<T: Send + 'static>(
    waiting: Waiting,
    attempt: impl FnMut() -> Op<Attempt<T>> + Send + 'static,
) -> Op<T> {
    Op::from_machine(Acquiring {
        waiting,
        attempt,
        started: None,
        subscribed: false,
        refused: false,
        counted: false,
        current: None,
        leaving: None,
    })
}

struct Acquiring<T, F> {
    waiting: Waiting,
    attempt: F,
    /// When the first attempt was made.
    started: Option<Instant>,
    /// Whether the loop subscribed to the channel already.
    subscribed: bool,
    /// Whether an attempt was refused.
    refused: bool,
    /// Whether the loop counts among the resource's waiting acquires.
    counted: bool,
    /// The attempt in flight; `None` during a pause.
    current: Option<Op<Attempt<T>>>,
    /// The timeout, while the place in the queue is given up.
    leaving: Option<(Op<()>, crate::Error)>,
}

impl<T, F> Acquiring<T, F> {
    /// The pause after a refusal (the holder's remaining lease `hint`), or
    /// the timeout error.
    fn pause(&mut self, env: &Env, started: Instant, hint: Option<Duration>) -> Result<Step<T>> {
        let w = &mut self.waiting;
        let waited = started.elapsed();
        if waited >= w.timeout {
            let timeout = ErrorKind::LockTimeout {
                key: w.key.clone(),
                waited_ms: waited.as_millis() as u64,
            }
            .into();
            return match w.leave.take() {
                Some(leave) => {
                    self.leaving = Some((leave, timeout));
                    self.give_up(env, None)
                }
                None => Err(timeout),
            };
        }
        let left = w.timeout - waited;
        let max = w.max_wait.unwrap_or(left).min(left);
        Ok(match w.mode {
            WaitMode::Polling { interval } => Step::Sleep(jittered(interval).min(max)),
            WaitMode::Notified if !self.subscribed => {
                self.subscribed = true;
                w.subscribe()
            }
            WaitMode::Notified => {
                // Past the holder's lease by a millisecond, so that the key
                // has expired when the next attempt reads it.
                let wait = hint.map_or(max, |h| h + Duration::from_millis(1));
                Step::Wait {
                    channel: w.channel.clone().into_bytes(),
                    to: w.to.clone().map(String::into_bytes),
                    timeout: wait.min(max),
                }
            }
        })
    }
}

impl<T, F> Acquiring<T, F> {
    /// A step of giving the place up after the timeout: the timeout error
    /// once it is done (whether or not it succeeded: the place ends by
    /// itself otherwise).
    fn give_up(&mut self, env: &Env, replies: Option<Replies>) -> Result<Step<T>> {
        let (leave, _) = self.leaving.as_mut().expect("giving up");
        match leave.step(env, replies) {
            Ok(Step::Done(())) | Err(_) => Err(self.leaving.take().expect("giving up").1),
            Ok(step) => Ok(step.forward().unwrap_or_else(|()| unreachable!("not done"))),
        }
    }

    /// When the acquire's timeout passes.
    fn deadline(&self) -> Instant {
        self.started.expect("the first attempt was made") + self.waiting.timeout
    }
}

impl<T, F> Acquiring<T, F> {
    /// No longer among the resource's waiting acquires.
    fn uncount(&mut self) {
        if std::mem::take(&mut self.counted)
            && let Some(c) = &self.waiting.contended
        {
            c.waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl<T, F> Drop for Acquiring<T, F> {
    /// A loop that ended otherwise (timed out, failed, dropped) waits no
    /// more.
    fn drop(&mut self) {
        self.uncount();
    }
}

impl Waiting {
    /// The zero-timeout wait that subscribes to the channel.
    fn subscribe<T>(&self) -> Step<T> {
        Step::Wait {
            channel: self.channel.clone().into_bytes(),
            to: self.to.clone().map(String::into_bytes),
            timeout: Duration::ZERO,
        }
    }
}

impl<T, F> Machine for Acquiring<T, F>
where
    T: Send + 'static,
    F: FnMut() -> Op<Attempt<T>> + Send + 'static,
{
    type Output = T;

    /// The next step of the attempts, or of giving the place up. Every
    /// request of the loop keeps to the acquire's timeout: its retries
    /// after a backoff (a slot migrating, a failover) stop at the deadline,
    /// so that neither an attempt nor the give-up holds the timeout back.
    fn step(&mut self, env: &Env, replies: Option<Replies>) -> Result<Step<T>> {
        let mut step = match self.leaving {
            Some(_) => self.give_up(env, replies),
            None => self.attempt_step(env, replies),
        }?;
        if let Step::Send(b) = &mut step {
            b.until(self.deadline());
        }
        Ok(step)
    }
}

impl<T, F> Acquiring<T, F>
where
    T: Send + 'static,
    F: FnMut() -> Op<Attempt<T>> + Send + 'static,
{
    /// A step of the attempts and the pauses between them.
    fn attempt_step(&mut self, env: &Env, mut replies: Option<Replies>) -> Result<Step<T>> {
        let first = self.started.is_none();
        let started = *self.started.get_or_insert_with(Instant::now);
        let contended = self.waiting.contended.clone();
        if first
            && self.waiting.mode == WaitMode::Notified
            && !self.waiting.timeout.is_zero()
            && contended.as_ref().is_some_and(|c| c.busy())
        {
            // The last acquire had to wait, or another waits now: subscribe
            // before the first attempt, so that a refusal needs no second
            // attempt.
            self.subscribed = true;
            return Ok(self.waiting.subscribe());
        }
        let op = match self.current.as_mut() {
            Some(op) => op,
            None => {
                // The first step, or after a pause: its replies say only
                // whether a message ended the wait; try again either way.
                replies = None;
                self.current.insert((self.attempt)())
            }
        };
        match op.step(env, replies)? {
            Step::Done(Attempt::Got(v)) => {
                if let Some(c) = contended {
                    c.last.store(self.refused, Ordering::Relaxed);
                }
                self.uncount();
                Ok(Step::Done(v))
            }
            Step::Done(Attempt::Busy(hint)) => {
                self.current = None;
                self.refused = true;
                if let Some(c) = contended.filter(|_| !self.counted) {
                    c.waiting.fetch_add(1, Ordering::Relaxed);
                    self.counted = true;
                }
                self.pause(env, started, hint)
            }
            // A request, a sleep or a wait of the attempt, passed on.
            other => match other.forward() {
                Ok(step) => Ok(step),
                Err(_) => unreachable!("both outcomes of Done are matched above"),
            },
        }
    }
}

/// `interval` times a factor drawn uniformly from 0.5 to 1.5.
fn jittered(interval: Duration) -> Duration {
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).expect("the operating system's random source is unavailable");
    let r = u32::from_le_bytes(r);
    interval.mul_f64(0.5 + f64::from(r) / (f64::from(u32::MAX) + 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiting loop whose one attempt is refused at once (zero timeout),
    /// with a place in a queue to give up.
    fn timed_out(timeout: Duration, attempt: Op<Attempt<()>>, leave: Op<()>) -> Op<()> {
        let waiting = Waiting {
            key: "k".into(),
            channel: "c".into(),
            mode: WaitMode::Polling {
                interval: Duration::from_millis(1),
            },
            timeout,
            max_wait: None,
            to: None,
            contended: None,
            leave: Some(leave),
        };
        let mut attempt = Some(attempt);
        until_acquired(waiting, move || attempt.take().expect("one attempt"))
    }

    #[test]
    fn the_attempts_and_giving_the_place_up_keep_to_the_acquires_deadline() {
        let env = Env::default();
        let timeout = Duration::ZERO;
        let before = Instant::now();
        let mut op = timed_out(
            timeout,
            Op::<i64>::cmd("k", redis::cmd("INCR")).map(|_| Attempt::Busy(None)),
            Op::<()>::cmd("k", redis::cmd("DEL")),
        );
        let int = || Replies::new(vec![redis::Value::Int(1)], vec![None]);
        let in_time = |b: &crate::Batch| {
            let deadline = b.deadline.expect("a deadline");
            assert!(deadline >= before + timeout && deadline <= Instant::now() + timeout);
        };
        // The attempt's request.
        let Ok(Step::Send(attempt)) = op.step(&env, None) else {
            panic!("the attempt's request")
        };
        in_time(&attempt);
        // Refused, past the timeout: the place is given up.
        let Ok(Step::Send(leave)) = op.step(&env, Some(int())) else {
            panic!("the give-up's request")
        };
        in_time(&leave);
        // Its reply ends the loop with the timeout.
        let Err(err) = op.step(&env, Some(int())) else {
            panic!("the timeout")
        };
        assert!(matches!(err.kind(), ErrorKind::LockTimeout { .. }), "{err}");
    }
}
