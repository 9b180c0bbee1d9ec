//! Operations written once: a request (commands to send and a pure decoder,
//! or a small step machine for operations of several steps) that the one
//! sync driver ([`Connection`](super::Connection)) and the one async driver
//! ([`AsyncConnection`](super::AsyncConnection)) both run.
//!
//! Every pattern method returns an [`Op`]; nothing in a pattern touches a
//! connection. [`Request::run`](super::Request::run) and
//! [`Request::run_async`](super::Request::run_async) hand the op to a
//! driver, which sends each [`Batch`] the op asks for (one pipeline on one
//! server, one pipeline per node of a cluster, `NOSCRIPT` and redirects
//! handled underneath), sleeps when it asks to, and feeds the replies back
//! until the op is done; an op can also wait for a message on a shard
//! channel ([`Op::wait`], [`Step::Wait`]), which is how a lock's waiter is
//! woken by the release. Ops combine: [`Op::map`], [`Op::and_then`],
//! [`Op::or_else`], [`Op::repeat`], and [`Op::join`], which runs several ops
//! side by side so that their commands share round trips.

use std::ops::ControlFlow;
use std::time::Duration;

use redis::{FromRedisValue, Value};

use super::batch::Batch;
use super::call_mode::CallMode;
use super::caps::Caps;
use crate::error::{Error, Result};
use crate::script::{IntoCall, ScriptCall, ScriptInfo};

/// What the driver tells an operation about the server it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Env {
    pub(crate) cluster: bool,
    pub(crate) call_mode: CallMode,
    /// What the server can do: `None` until the driver detected it (or it
    /// was set), which happens before a connection's first operation.
    pub(crate) caps: Option<Caps>,
}

impl Env {
    /// Whether the connection talks to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.cluster
    }

    /// How the connection sends script calls.
    pub fn call_mode(&self) -> CallMode {
        self.call_mode
    }

    /// What the server can do ([`Caps`], detected once per connection);
    /// [`Caps::default`] (no newer command) for an op stepped outside a
    /// driver.
    pub fn caps(&self) -> Caps {
        self.caps.unwrap_or_default()
    }
}

/// The replies to one [`Step::Send`], in the order the batch was built.
///
/// A command's error reply stays in its place; decoding it gives the
/// command's typed [`Error`] (a script's domain code becomes its kind).
#[derive(Debug, Default)]
pub struct Replies {
    values: std::vec::IntoIter<Value>,
    scripts: std::vec::IntoIter<Option<&'static ScriptInfo>>,
    resent: std::vec::IntoIter<bool>,
}

impl Replies {
    pub(crate) fn new(values: Vec<Value>, scripts: Vec<Option<&'static ScriptInfo>>) -> Self {
        debug_assert_eq!(values.len(), scripts.len());
        let n = values.len();
        Self {
            values: values.into_iter(),
            scripts: scripts.into_iter(),
            resent: vec![false; n].into_iter(),
        }
    }

    /// The same replies, with whether each answers a resend (see
    /// [`Replies::resent`]).
    pub(crate) fn with_resent(mut self, resent: Vec<bool>) -> Self {
        debug_assert_eq!(resent.len(), self.values.len());
        self.resent = resent.into_iter();
        self
    }

    /// Whether the next reply answers a write that was sent again because
    /// the reply to an earlier attempt was lost (the connection broke, or
    /// its node was a primary a failover replaced): only idempotent calls
    /// are, and the data is as one run leaves it, but the reply describes
    /// the second run, which may have found the first one's effect (a
    /// visit that is no longer new, a lock that is no longer held).
    pub fn resent(&self) -> bool {
        self.resent.as_slice().first().copied().unwrap_or(false)
    }

    /// Per remaining reply, in order: [`Replies::resent`] (for a decoder
    /// that takes them all at once with [`Replies::all`] or
    /// [`Replies::each`]).
    pub fn resent_each(&self) -> Vec<bool> {
        let n = self.values.len();
        let mut flags = self.resent.as_slice().to_vec();
        flags.resize(n, false);
        flags
    }

    /// Moves past the next reply's resend flag (with its value).
    fn advance(&mut self) -> Option<&'static ScriptInfo> {
        self.resent.next();
        self.scripts.next().flatten()
    }

    /// Replies not taken yet.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether every reply was taken.
    pub fn is_empty(&self) -> bool {
        self.values.len() == 0
    }

    /// The next reply, raw: an error reply is `Ok(Value::ServerError)`.
    pub fn take_value(&mut self) -> Result<Value> {
        self.advance();
        self.values.next().ok_or_else(Error::short_reply)
    }

    /// The next reply decoded as `T`; an error reply becomes its [`Error`].
    pub fn take<T: FromRedisValue>(&mut self) -> Result<T> {
        let script = self.advance();
        let value = self.values.next().ok_or_else(Error::short_reply)?;
        decode(script, value)
    }

    /// Every remaining reply decoded as `T`, each with its own error.
    pub fn each<T: FromRedisValue>(self) -> Vec<Result<T>> {
        self.values
            .zip(self.scripts)
            .map(|(v, s)| decode(s, v))
            .collect()
    }

    /// Every remaining reply decoded as `T`; the first error reply (in
    /// order) becomes the error.
    pub fn all<T: FromRedisValue>(self) -> Result<Vec<T>> {
        self.values
            .zip(self.scripts)
            .map(|(v, s)| decode(s, v))
            .collect()
    }

    /// Every remaining reply, raw (error replies as `Value::ServerError`).
    pub fn into_values(self) -> Vec<Value> {
        self.values.collect()
    }

    /// Splits off the first `n` replies.
    pub(crate) fn split_first(&mut self, n: usize) -> Replies {
        let values: Vec<Value> = self.values.by_ref().take(n).collect();
        let scripts: Vec<_> = self.scripts.by_ref().take(n).collect();
        let resent: Vec<bool> = self.resent.by_ref().take(n).collect();
        Replies::new(values, scripts).with_resent(resent)
    }
}

/// Decodes one reply of a call of `script` (or of a plain command).
pub(crate) fn decode<T: FromRedisValue>(
    script: Option<&'static ScriptInfo>,
    value: Value,
) -> Result<T> {
    if let Value::ServerError(e) = value {
        return Err(Error::from_redis(script, e.into()));
    }
    T::from_redis_value(value).map_err(|e| Error::from(redis::RedisError::from(e)))
}

/// What an operation asks its driver for next.
#[derive(Debug)]
pub enum Step<T> {
    /// Send these commands; their [`Replies`] come back to the next step.
    Send(Batch),
    /// Wait this long, then continue (with no replies).
    Sleep(Duration),
    /// Wait for a message on the shard channel `channel` (Redis >= 7:
    /// `SSUBSCRIBE` on the node that serves the channel's hash slot, which
    /// is computed like a key's, so a channel named after a key shares its
    /// slot and a script on that key can `SPUBLISH` to it), or until
    /// `timeout` has passed. The replies hold one integer: 1 when a message
    /// woke it, 0 at the timeout.
    ///
    /// The driver subscribes on the op's first wait on a channel and stays
    /// subscribed until the op finishes, so a message published after that
    /// first wait returned (e.g. a zero-timeout wait that only subscribes)
    /// wakes the next wait at once: subscribe, re-check, then wait, and no
    /// wake-up falls between the check and the wait. Wake-ups can be lost
    /// (the subscription connection dropped, a failover, a driver that
    /// cannot subscribe and only sleeps `timeout`) and waits can end early:
    /// an op re-checks what it waits for after every wait, and bounds every
    /// wait by how long the thing it waits for can last.
    Wait {
        /// The shard channel to subscribe to.
        channel: Vec<u8>,
        /// The waiter's name (a lock waiter's token), when messages name
        /// the waiter they wake: then only a message equal to it or to
        /// [`Step::BROADCAST`] wakes this wait (the others are for other
        /// waiters); `None`: every message on the channel wakes it.
        to: Option<Vec<u8>>,
        /// The longest wait.
        timeout: Duration,
    },
    /// Finished with this value.
    Done(T),
}

impl<T> Step<T> {
    /// A step that is not `Done`, for an op with another output type (what
    /// combinators forward); `Done` gives its value back.
    pub(crate) fn forward<U>(self) -> std::result::Result<Step<U>, T> {
        match self {
            Step::Send(b) => Ok(Step::Send(b)),
            Step::Sleep(d) => Ok(Step::Sleep(d)),
            Step::Wait {
                channel,
                to,
                timeout,
            } => Ok(Step::Wait {
                channel,
                to,
                timeout,
            }),
            Step::Done(v) => Err(v),
        }
    }
}

/// The value of [`Step::BROADCAST`].
pub(crate) const BROADCAST: &[u8] = b"released";

impl<T> Step<T> {
    /// The message that wakes every waiter of a channel, also those that wait
    /// for a message naming them ([`Step::Wait`]'s `to`): what a release
    /// publishes when no waiter is queued.
    pub const BROADCAST: &'static [u8] = BROADCAST;
}

/// Whether `message` wakes a wait for messages to `to` ([`Step::Wait`]).
pub(crate) fn wakes(to: Option<&[u8]>, message: Option<&[u8]>) -> bool {
    match (to, message) {
        (Some(to), Some(m)) => m == to || m == BROADCAST,
        _ => true,
    }
}

/// The replies to a [`Step::Wait`]: whether a message woke it.
pub(crate) fn wait_replies(woken: bool) -> Replies {
    Replies::new(vec![Value::Int(i64::from(woken))], vec![None])
}

/// A step machine: the general form of an operation. Most operations are
/// built with [`Op`]'s constructors and combinators instead.
pub trait Machine: Send + 'static {
    /// What the op answers.
    type Output: Send + 'static;

    /// The first call gets `None`; each later call gets the replies to the
    /// batch the previous step asked to send (empty after a sleep).
    fn step(&mut self, env: &Env, replies: Option<Replies>) -> Result<Step<Self::Output>>;

    /// Moves the undo ops ([`Op::undo_on_cancel`]) of the ops this machine
    /// runs inside it into `into`: a machine that holds ops of its own
    /// forwards them ([`Op::take_undo`] on each), so that a driver whose run
    /// is dropped before it finished runs them. The default has none.
    fn take_undo(&mut self, into: &mut Vec<Op<()>>) {
        let _ = into;
    }
}

/// One operation of a pattern, ready to run on any connection of the crate:
/// [`run`](super::Request::run) (sync) or [`run_async`](super::Request::run_async).
///
/// Building an op sends nothing; an op whose input was refused carries the
/// error and returns it from `run` before anything is sent.
#[must_use = "an Op does nothing until it is run"]
pub struct Op<T> {
    machine: Box<dyn Machine<Output = T>>,
    /// What to run when the op is dropped unfinished (its driver's future
    /// dropped at an await): see [`Op::undo_on_cancel`].
    undo: Option<Box<Op<()>>>,
}

impl<T> std::fmt::Debug for Op<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Op")
    }
}

impl<T: Send + 'static> Op<T> {
    /// An op of any [`Machine`].
    pub fn from_machine(machine: impl Machine<Output = T>) -> Self {
        Self {
            machine: Box::new(machine),
            undo: None,
        }
    }

    /// Advances the op by one step: what drivers and combinators (and a
    /// [`Machine`] that runs ops inside it) call.
    pub fn step(&mut self, env: &Env, replies: Option<Replies>) -> Result<Step<T>> {
        self.machine.step(env, replies)
    }

    /// The same op, with `undo` to run should it be dropped unfinished:
    /// what makes an op that takes something (a lock, a permit, a lease)
    /// safe to cancel. The token it takes with is chosen before anything is
    /// sent, and `undo` gives back whatever that token may hold (a release
    /// by a token that holds nothing changes nothing, so "may" is enough).
    ///
    /// The async driver runs the undo ops of an op whose future was dropped
    /// at an await before the op finished (`tokio::time::timeout`,
    /// `select!`, an aborted task) in a tokio task it spawns on a clone of
    /// the connection (without a runtime left, they are not run: the leases
    /// bound what they would have given back). An op that finished, with a
    /// value or an error, runs none of them; nor does one dropped before it
    /// was first polled (it sent nothing). The sync driver cannot be
    /// interrupted at a send, and never runs them. Combinators keep the
    /// undo ops of the ops they run ([`Machine::take_undo`]).
    pub fn undo_on_cancel(mut self, undo: Op<()>) -> Self {
        self.undo = Some(Box::new(match self.undo.take() {
            None => undo,
            Some(first) => Op::join(vec![*first, undo]).map(|_| ()),
        }));
        self
    }

    /// Moves this op's undo ops (its own, then those of the ops it runs
    /// inside it) into `into`: what drivers call after each step, and a
    /// [`Machine`] that holds ops forwards from [`Machine::take_undo`].
    pub fn take_undo(&mut self, into: &mut Vec<Op<()>>) {
        if let Some(undo) = self.undo.take() {
            into.push(*undo);
        }
        self.machine.take_undo(into);
    }

    /// An op that sends nothing and returns `value`.
    pub fn ready(value: T) -> Self {
        Self::from_result(Ok(value))
    }

    /// An op that sends nothing and fails with `error` (refused input).
    pub fn fail(error: Error) -> Self {
        Self::from_result(Err(error))
    }

    /// An op that sends nothing and returns `result`.
    pub fn from_result(result: Result<T>) -> Self {
        Self::from_machine(Once(Some(result)))
    }

    /// Sends `batch` (one round trip per node) and decodes its replies.
    pub fn send(batch: Batch, decode: impl FnOnce(Replies) -> Result<T> + Send + 'static) -> Self {
        Self::from_machine(SendThen {
            batch: Some(batch),
            decode: Some(decode),
        })
    }

    /// An op built when it starts, from what the driver knows of the server
    /// (e.g. a different plan on a cluster).
    pub fn with_env(build: impl FnOnce(&Env) -> Op<T> + Send + 'static) -> Self {
        Self::from_machine(WithEnv::Build(Some(Box::new(build))))
    }

    /// Transforms the result.
    pub fn map<U: Send + 'static>(self, f: impl FnOnce(T) -> U + Send + 'static) -> Op<U> {
        self.try_map(move |v| Ok(f(v)))
    }

    /// Transforms the result with a step that may fail.
    pub fn try_map<U: Send + 'static>(
        self,
        f: impl FnOnce(T) -> Result<U> + Send + 'static,
    ) -> Op<U> {
        self.and_then(move |v| Op::from_result(f(v)))
    }

    /// Runs `next`'s op after this one.
    pub fn and_then<U: Send + 'static>(
        self,
        next: impl FnOnce(T) -> Op<U> + Send + 'static,
    ) -> Op<U> {
        Op::from_machine(AndThen::First(self, Some(Box::new(next))))
    }

    /// On error, runs `recover`'s op instead.
    pub fn or_else(self, recover: impl FnOnce(Error) -> Op<T> + Send + 'static) -> Op<T> {
        Op::from_machine(OrElse::First(self, Some(Box::new(recover))))
    }

    /// Repeats: `body` builds one round's op from the state; the loop ends
    /// when a round breaks with a value. (A loop, not recursion: memory does
    /// not grow with the number of rounds.)
    pub fn repeat<S: Send + 'static>(
        state: S,
        body: impl FnMut(&mut S) -> Op<ControlFlow<T>> + Send + 'static,
    ) -> Self {
        Self::from_machine(Repeat {
            state,
            body,
            current: None,
        })
    }

    /// Runs the ops side by side: in each round the commands of every op that
    /// is waiting to send go out together, so `n` ops of one step cost one
    /// round trip (per node). Results in order; the first error (in order)
    /// fails the whole op after every op has finished.
    pub fn join(ops: Vec<Op<T>>) -> Op<Vec<T>> {
        Op::from_machine(Join {
            ops: ops
                .into_iter()
                .map(|op| Slot {
                    op: Some(op),
                    want: None,
                    result: None,
                })
                .collect(),
            asked: Asked::Nothing,
        })
    }
}

impl Op<()> {
    /// Waits `d` (a blocking sleep on the sync driver, a timer on the async
    /// one).
    pub fn sleep(d: Duration) -> Self {
        Self::from_machine(SleepOnce(Some(d)))
    }
}

impl Op<bool> {
    /// Waits for a message on the shard channel `channel` or until `timeout`
    /// ([`Step::Wait`]): `true` when a message woke it. A zero timeout only
    /// subscribes (the op's later waits on the channel then see every
    /// message published since).
    ///
    /// Cancel-safe: dropped at any await (`tokio::time::timeout`,
    /// `select!`, an aborted task), it leaves no subscription behind: its
    /// waiter leaves the channel, and the channel's last waiter on the
    /// connection unsubscribes it (see
    /// [the cancellation guide](crate::guide::cancellation)).
    pub fn wait(channel: impl Into<Vec<u8>>, timeout: Duration) -> Self {
        Self::from_machine(WaitOnce(Some((channel.into(), None, timeout))))
    }

    /// [`Op::wait`] for a message naming `to` (or [`Step::BROADCAST`]): messages
    /// for other waiters of the channel do not wake it. Cancel-safe as
    /// [`Op::wait`].
    pub fn wait_for(
        channel: impl Into<Vec<u8>>,
        to: impl Into<Vec<u8>>,
        timeout: Duration,
    ) -> Self {
        Self::from_machine(WaitOnce(Some((channel.into(), Some(to.into()), timeout))))
    }
}

impl<R: FromRedisValue + Send + 'static> Op<R> {
    /// One script call, decoded as its header's reply type.
    pub fn call(call: ScriptCall<R>) -> Self {
        let mut batch = Batch::new();
        batch.script(call);
        Self::send(batch, |mut r| r.take())
    }

    /// One script call from a generated wrapper (whose argument check may
    /// have failed).
    pub fn script(call: impl IntoCall<R>) -> Self {
        match call.into_call() {
            Ok(call) => Self::call(call),
            Err(e) => Self::fail(e),
        }
    }

    /// One script call from a generated wrapper, decoded, with whether its
    /// reply is that of a resend after an earlier attempt's reply was lost
    /// ([`Replies::resent`]): for a call whose reply depends on whether it
    /// ran before (a visit that is new, an item that was absent).
    pub fn script_resent(call: impl IntoCall<R>) -> Op<(R, bool)> {
        let mut batch = Batch::new();
        batch.script(call);
        Op::send(batch, |mut r| {
            let resent = r.resent();
            Ok((r.take()?, resent))
        })
    }

    /// One plain command on `key`'s slot.
    pub fn cmd(key: impl AsRef<[u8]>, cmd: redis::Cmd) -> Self {
        let mut batch = Batch::new();
        batch.add(key, cmd);
        Self::send(batch, |mut r| r.take())
    }

    /// One plain command on `key`'s slot, decoded, with whether its reply
    /// is a resend's ([`Replies::resent`]; e.g. `DEL`, whose count a resend
    /// finds 0).
    pub fn cmd_resent(key: impl AsRef<[u8]>, cmd: redis::Cmd) -> Op<(R, bool)> {
        let mut batch = Batch::new();
        batch.add(key, cmd);
        Op::send(batch, |mut r| {
            let resent = r.resent();
            Ok((r.take()?, resent))
        })
    }
}

struct Once<T>(Option<Result<T>>);

impl<T: Send + 'static> Machine for Once<T> {
    type Output = T;
    fn step(&mut self, _: &Env, _: Option<Replies>) -> Result<Step<T>> {
        self.0
            .take()
            .expect("an op is not stepped after it finished")
            .map(Step::Done)
    }
}

struct SleepOnce(Option<Duration>);

impl Machine for SleepOnce {
    type Output = ();
    fn step(&mut self, _: &Env, _: Option<Replies>) -> Result<Step<()>> {
        Ok(match self.0.take() {
            Some(d) => Step::Sleep(d),
            None => Step::Done(()),
        })
    }
}

struct WaitOnce(Option<(Vec<u8>, Option<Vec<u8>>, Duration)>);

impl Machine for WaitOnce {
    type Output = bool;
    fn step(&mut self, _: &Env, replies: Option<Replies>) -> Result<Step<bool>> {
        Ok(match self.0.take() {
            Some((channel, to, timeout)) => Step::Wait {
                channel,
                to,
                timeout,
            },
            None => {
                let woken: i64 = replies.map_or(Ok(0), |mut r| r.take())?;
                Step::Done(woken == 1)
            }
        })
    }
}

struct SendThen<F> {
    batch: Option<Batch>,
    decode: Option<F>,
}

impl<T, F> Machine for SendThen<F>
where
    T: Send + 'static,
    F: FnOnce(Replies) -> Result<T> + Send + 'static,
{
    type Output = T;
    fn step(&mut self, _: &Env, replies: Option<Replies>) -> Result<Step<T>> {
        match (self.batch.take(), replies) {
            // Nothing to send: decode an empty reply set right away.
            (Some(mut batch), None) if batch.is_empty() => {
                if let Some(e) = batch.take_refused() {
                    return Err(e);
                }
                let decode = self.decode.take().expect("decoded once");
                decode(Replies::default()).map(Step::Done)
            }
            (Some(batch), None) => Ok(Step::Send(batch)),
            (None, Some(replies)) => {
                let decode = self.decode.take().expect("decoded once");
                decode(replies).map(Step::Done)
            }
            _ => unreachable!("a send op gets replies exactly once"),
        }
    }
}

type BuildFn<T> = Box<dyn FnOnce(&Env) -> Op<T> + Send>;

enum WithEnv<T> {
    Build(Option<BuildFn<T>>),
    Run(Op<T>),
}

impl<T: Send + 'static> Machine for WithEnv<T> {
    type Output = T;
    fn step(&mut self, env: &Env, replies: Option<Replies>) -> Result<Step<T>> {
        if let WithEnv::Build(build) = self {
            let build = build.take().expect("built once");
            *self = WithEnv::Run(build(env));
        }
        match self {
            WithEnv::Run(op) => op.step(env, replies),
            WithEnv::Build(_) => unreachable!(),
        }
    }

    fn take_undo(&mut self, into: &mut Vec<Op<()>>) {
        if let WithEnv::Run(op) = self {
            op.take_undo(into);
        }
    }
}

type NextFn<T, U> = Box<dyn FnOnce(T) -> Op<U> + Send>;

enum AndThen<T, U> {
    First(Op<T>, Option<NextFn<T, U>>),
    Second(Op<U>),
}

impl<T: Send + 'static, U: Send + 'static> Machine for AndThen<T, U> {
    type Output = U;
    fn step(&mut self, env: &Env, mut replies: Option<Replies>) -> Result<Step<U>> {
        loop {
            match self {
                AndThen::First(op, next) => match op.step(env, replies.take())?.forward() {
                    Err(v) => {
                        let next = next.take().expect("chained once");
                        *self = AndThen::Second(next(v));
                    }
                    Ok(step) => return Ok(step),
                },
                AndThen::Second(op) => return op.step(env, replies.take()),
            }
        }
    }

    fn take_undo(&mut self, into: &mut Vec<Op<()>>) {
        match self {
            AndThen::First(op, _) => op.take_undo(into),
            AndThen::Second(op) => op.take_undo(into),
        }
    }
}

type RecoverFn<T> = Box<dyn FnOnce(Error) -> Op<T> + Send>;

enum OrElse<T> {
    First(Op<T>, Option<RecoverFn<T>>),
    Second(Op<T>),
}

impl<T: Send + 'static> Machine for OrElse<T> {
    type Output = T;
    fn step(&mut self, env: &Env, replies: Option<Replies>) -> Result<Step<T>> {
        match self {
            OrElse::First(op, recover) => match op.step(env, replies) {
                Err(e) => {
                    let recover = recover.take().expect("recovered once");
                    *self = OrElse::Second(recover(e));
                    self.step(env, None)
                }
                other => other,
            },
            OrElse::Second(op) => op.step(env, replies),
        }
    }

    fn take_undo(&mut self, into: &mut Vec<Op<()>>) {
        match self {
            OrElse::First(op, _) | OrElse::Second(op) => op.take_undo(into),
        }
    }
}

struct Repeat<S, F, T> {
    state: S,
    body: F,
    current: Option<Op<ControlFlow<T>>>,
}

impl<S, F, T> Machine for Repeat<S, F, T>
where
    S: Send + 'static,
    T: Send + 'static,
    F: FnMut(&mut S) -> Op<ControlFlow<T>> + Send + 'static,
{
    type Output = T;
    fn step(&mut self, env: &Env, mut replies: Option<Replies>) -> Result<Step<T>> {
        loop {
            let op = self
                .current
                .get_or_insert_with(|| (self.body)(&mut self.state));
            match op.step(env, replies.take())?.forward() {
                Err(ControlFlow::Break(v)) => return Ok(Step::Done(v)),
                Err(ControlFlow::Continue(())) => self.current = None,
                Ok(step) => return Ok(step),
            }
        }
    }

    fn take_undo(&mut self, into: &mut Vec<Op<()>>) {
        if let Some(op) = &mut self.current {
            op.take_undo(into);
        }
    }
}

/// What one op of a [`Join`] waits for.
enum Want {
    Replies(usize),
    Sleep(Duration),
    Wait(Vec<u8>, Option<Vec<u8>>, Duration),
}

struct Slot<T> {
    op: Option<Op<T>>,
    want: Option<Want>,
    result: Option<Result<T>>,
}

/// What a [`Join`] last asked its driver for, so that it knows whose the
/// replies are.
enum Asked {
    Nothing,
    Send,
    Sleep,
    /// The wait of this op (the other waiting ops end their waits early).
    Wait(usize),
}

struct Join<T> {
    ops: Vec<Slot<T>>,
    asked: Asked,
}

impl<T: Send + 'static> Join<T> {
    /// Hands each waiting op its share of the replies: after a send the
    /// ops that sent, after a sleep every sleeping and waiting op, after a
    /// wait every waiting op (the one whose wait it was gets its reply,
    /// the others end their waits early: ops re-check after a wait).
    fn hand_out(&mut self, asked: &Asked, mut replies: Option<Replies>) -> Vec<Option<Replies>> {
        let mut inputs: Vec<Option<Replies>> = Vec::with_capacity(self.ops.len());
        for (i, slot) in self.ops.iter_mut().enumerate() {
            let input = match (asked, &slot.want) {
                (Asked::Send, Some(Want::Replies(n))) => {
                    let n = *n;
                    replies.as_mut().map(|r| r.split_first(n))
                }
                (Asked::Sleep, Some(Want::Sleep(_))) => Some(Replies::default()),
                (Asked::Sleep, Some(Want::Wait(..))) => Some(wait_replies(false)),
                (Asked::Wait(w), Some(Want::Wait(..))) if *w == i => replies.take(),
                (Asked::Wait(_), Some(Want::Wait(..))) => Some(wait_replies(false)),
                _ => None,
            };
            if input.is_some() {
                slot.want = None;
            }
            inputs.push(input);
        }
        inputs
    }

    /// Steps every op that is not waiting; what they send, in one batch.
    fn advance(&mut self, env: &Env, inputs: Vec<Option<Replies>>) -> Batch {
        let mut batch = Batch::new();
        for (slot, input) in self.ops.iter_mut().zip(inputs) {
            let Some(op) = slot.op.as_mut() else { continue };
            if slot.want.is_some() {
                continue;
            }
            match op.step(env, input) {
                Ok(Step::Done(v)) => {
                    slot.result = Some(Ok(v));
                    slot.op = None;
                }
                Err(e) => {
                    slot.result = Some(Err(e));
                    slot.op = None;
                }
                Ok(Step::Send(mut b)) => {
                    if let Some(e) = b.take_refused() {
                        // Refused input fails this op alone, before sending.
                        slot.result = Some(Err(e));
                        slot.op = None;
                        continue;
                    }
                    slot.want = Some(Want::Replies(b.len()));
                    batch.append(b);
                }
                Ok(Step::Sleep(d)) => slot.want = Some(Want::Sleep(d)),
                Ok(Step::Wait {
                    channel,
                    to,
                    timeout,
                }) => {
                    slot.want = Some(Want::Wait(channel, to, timeout));
                }
            }
        }
        batch
    }

    /// Sleeps first (each sleeper sleeps at least as long as it asked;
    /// waiters end their waits with them), then one wait: the first
    /// waiter's channel, for the shortest of the waiters' timeouts.
    fn sleep_or_wait(&mut self) -> Option<Step<Vec<T>>> {
        let sleep = self
            .ops
            .iter()
            .filter_map(|s| match s.want {
                Some(Want::Sleep(d)) => Some(d),
                _ => None,
            })
            .max();
        if let Some(d) = sleep {
            self.asked = Asked::Sleep;
            return Some(Step::Sleep(d));
        }
        type Waiting<'a> = (usize, &'a [u8], Option<&'a [u8]>, Duration);
        let waits: Vec<Waiting<'_>> = self
            .ops
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match &s.want {
                Some(Want::Wait(c, to, t)) => Some((i, c.as_slice(), to.as_deref(), *t)),
                _ => None,
            })
            .collect();
        let &(first, channel, to, _) = waits.first()?;
        let timeout = waits.iter().map(|w| w.3).min().expect("one wait");
        let channel = channel.to_vec();
        let to = to.map(<[u8]>::to_vec);
        self.asked = Asked::Wait(first);
        Some(Step::Wait {
            channel,
            to,
            timeout,
        })
    }
}

impl<T: Send + 'static> Machine for Join<T> {
    type Output = Vec<T>;
    fn step(&mut self, env: &Env, replies: Option<Replies>) -> Result<Step<Vec<T>>> {
        let asked = std::mem::replace(&mut self.asked, Asked::Nothing);
        let inputs = self.hand_out(&asked, replies);
        let batch = self.advance(env, inputs);
        if !batch.is_empty() {
            self.asked = Asked::Send;
            return Ok(Step::Send(batch));
        }
        if let Some(step) = self.sleep_or_wait() {
            return Ok(step);
        }
        if self.ops.iter().any(|s| s.op.is_some()) {
            // Ops that asked to send an empty batch: give them their (empty)
            // replies in the next round.
            self.asked = Asked::Send;
            return Ok(Step::Send(Batch::new()));
        }
        let mut out = Vec::with_capacity(self.ops.len());
        for slot in &mut self.ops {
            out.push(slot.result.take().expect("every op finished")?);
        }
        Ok(Step::Done(out))
    }

    fn take_undo(&mut self, into: &mut Vec<Op<()>>) {
        for op in self.ops.iter_mut().filter_map(|s| s.op.as_mut()) {
            op.take_undo(into);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An op that sends one command, with an undo that sends `name`.
    fn taking(name: &str) -> Op<()> {
        let undo = Op::<()>::cmd("k", redis::cmd(name));
        Op::<()>::cmd("k", redis::cmd("SET")).undo_on_cancel(undo)
    }

    fn undo_names(op: &mut Op<()>) -> usize {
        let mut undo = Vec::new();
        op.take_undo(&mut undo);
        undo.len()
    }

    #[test]
    fn combinators_keep_the_undo_of_the_ops_they_run() {
        let env = Env::default();
        // Built inside a step: found once that step revealed it.
        let mut op = Op::ready(()).and_then(|_| taking("DEL"));
        assert_eq!(undo_names(&mut op), 0, "not built yet");
        assert!(matches!(op.step(&env, None), Ok(Step::Send(_))));
        assert_eq!(undo_names(&mut op), 1);
        assert_eq!(undo_names(&mut op), 0, "taken once");
        // Every op of a join, through map and or_else.
        let mut op = Op::join(vec![taking("A"), taking("B").map(|_| ())])
            .map(|_| ())
            .or_else(|_| Op::ready(()));
        assert_eq!(undo_names(&mut op), 2);
        // Two undos of one op run together.
        let mut op = taking("A").undo_on_cancel(Op::ready(()));
        assert_eq!(undo_names(&mut op), 1);
    }
}
