//! The exchange protocol every driver runs to send a [`Batch`]: script
//! reloads, redirects, retries, replies in order. Pure: the drivers do its
//! I/O ([`drive`](super::drive)), and its unit tests script the outcomes.
//!
//! A [`Batch`] holds single-slot commands (plain commands on one key, or
//! script calls whose keys share a slot). Each round, the [`Exchange`]
//! below asks the connection where each pending command goes (the one
//! server, a cluster node by the connection's slot map, or the cluster
//! router for commands without a key), sends one pipeline per target, and
//! reads every reply as done, not run, or lost, until every command has a
//! reply:
//!
//! * A command answered `NOSCRIPT` did not run: its script is loaded with
//!   `SCRIPT LOAD` in front of it in the next round, which goes at once.
//!   Reloads are repeated up to [`MAX_ROUNDS`] rounds in which no command
//!   got its reply (a server whose cache is flushed again and again).
//! * A command answered `MOVED` goes again once the slot map is read anew;
//!   `ASK` sends it to the node named, after `ASKING`.
//! * A command answered `LOADING`, `BUSY`, `TRYAGAIN`, `CLUSTERDOWN`,
//!   `MASTERDOWN`, `READONLY`, `NOREPLICAS` or `UNBLOCKED` did not run
//!   either: it goes again after a backoff
//!   ([`RetryPolicy`](super::RetryPolicy)).
//! * A `WAIT` that a node could not serve as a primary (`UNBLOCKED ...
//!   (master -> replica?)`, or `ERR WAIT cannot be used with replica
//!   instances`: a failover demoted it, on a cluster or one server) is a
//!   redirect: the slot map is read again, and the commands of its
//!   pipeline that ran there, whose effect
//!   the demoted node may discard, go again when they are idempotent (their
//!   replies then say so: [`Replies::resent`]); otherwise the batch fails
//!   with [`ErrorKind::OutcomeUnknown`].
//! * A pipeline whose connection failed: the commands it could not send (a
//!   refused connection) go again after a backoff and a reconnect; those
//!   whose outcome is unknown too when each is idempotent, otherwise the
//!   batch fails with [`ErrorKind::OutcomeUnknown`] (see
//!   [`retry`](super::retry)).
//!
//! On a connection in [`CallMode::Functions`](super::CallMode::Functions)
//! the script calls go out as `FCALL`, "Function not found" plays the part
//! of `NOSCRIPT` and one `FUNCTION LOAD REPLACE` of the library that of the
//! `SCRIPT LOAD`s, on the node that answered it.
//!
//! A command is sent again only when no later command of the same ordering
//! domain (the whole batch on one server, the command's slot on a cluster)
//! ran in between, so that commands run in order (reads commute: when
//! neither writes, the later one may have run); otherwise the batch stops
//! with [`ErrorKind::PipelineInterrupted`]. (A part the cluster router
//! sends command by command, on a wrapped cluster connection, stops at the
//! first command that did not run and sends the rest in the next round, so
//! there nothing runs ahead of it.) Nothing that is not idempotent
//! ever runs twice. A command added as repeatable (`WAIT`, which only waits
//! for the writes before it to reach replicas) is sent again after the
//! commands before it that go again. With a [`Durability`] every pipeline
//! holding a write ends with its `WAIT`, and its count is the verdict on
//! the writes of the pipeline that ran (a call answered `NOSCRIPT` is
//! loaded and sent again first, with a `WAIT` of its own): the batch fails
//! with [`ErrorKind::NotDurable`] only when writes ran and too few replicas
//! confirmed them; an idempotent write whose `WAIT` reply was lost with the
//! connection goes again.

use redis::Value;

use super::batch::{Batch, Entry};
use super::call_mode::CallMode;
use super::durability::{Durability, Verdicts};
use super::op::Replies;
use super::retry::{NotRun, Retries, demoted, may_have_reached, not_run};
use super::settings::Settings;
use crate::error::{Error, ErrorKind, Result};
use crate::script::ScriptInfo;

/// The value of [`Batch::MAX_ROUNDS`](crate::core::Batch::MAX_ROUNDS).
pub(crate) const MAX_ROUNDS: usize = 8;

impl crate::core::Batch {
    /// The most rounds of script reloads in which no command got its reply that
    /// one exchange makes before giving up on a server whose script cache keeps
    /// being flushed.
    pub const MAX_ROUNDS: usize = MAX_ROUNDS;
}

/// A node's address: host and port.
pub(crate) type Addr = (String, u16);

/// Where one pipeline of a round goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    /// The one server.
    Server,
    /// A cluster node, by address.
    Node(Addr),
    /// The cluster router: each command on its own, routed by the client
    /// library (commands without a key, and connections that cannot reach
    /// nodes themselves).
    Router,
}

/// What one position of a round's pipeline holds.
#[derive(Debug, Clone, Copy)]
enum Item {
    Load(&'static ScriptInfo),
    Asking,
    Cmd(usize),
    Wait,
}

/// One pipeline of a round: where it goes and what it holds.
pub(crate) struct Part {
    pub(crate) target: Target,
    pub(crate) pipe: redis::Pipeline,
    items: Vec<Item>,
    /// Per command of `pipe`: the slot whose node it must reach when the
    /// router sends it (a keyless command for one node), else `None`.
    pub(crate) routes: Vec<Option<u16>>,
}

impl Part {
    /// The number of replies to expect.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }
}

/// What came back for one part.
pub(crate) enum Outcome {
    /// A reply per command (error replies in place, as `Value::ServerError`).
    Replies(Vec<Value>),
    /// A part sent command by command stopped after a command that did not
    /// run ([`did_not_run`]): the replies up to and including that one; the
    /// commands behind it were not sent (so none of them ran ahead of it),
    /// and go in the next round, after it.
    Stopped(Vec<Value>),
    /// The connection failed: the replies read before it did, the error,
    /// and whether the request may have reached the server (`false` when
    /// connecting failed, so nothing of it was sent).
    Failed {
        replies: Vec<Value>,
        error: Error,
        reached: bool,
    },
    /// Nothing was sent: the connection is lost and cannot be opened again
    /// (wrapped without its client). The batch fails with this error at
    /// once instead of retrying until its deadline.
    Gone(Error),
}

/// What the connection should refresh before the next round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Refresh {
    /// The slot map (a redirect, a lost node, a failover).
    pub(crate) slots: bool,
    /// The cluster router (it failed, or its view of the slots is stale).
    pub(crate) router: bool,
}

/// What the driver does next for an exchange.
pub(crate) enum Next {
    /// Refresh what is asked, then ask [`Exchange::round`] for the parts.
    Send(Refresh),
    /// Wait this long first.
    Sleep(std::time::Duration),
    /// Every command has its reply: [`Exchange::finish`].
    Done,
}

/// How one command goes out next.
#[derive(Debug, Clone, Default)]
struct Prep {
    /// Load its script first (it answered `NOSCRIPT`).
    load: bool,
    /// Send it to this node after `ASKING` (it answered `ASK`).
    ask: Option<Addr>,
    /// The reply that refused it last, filed when retries run out.
    refused: Option<Value>,
}

/// What the parts of one round found, across parts: what goes again and
/// how, and what is in doubt.
#[derive(Default)]
struct Round {
    /// Commands to send again.
    resend: Vec<usize>,
    /// Commands that may have run and may not be sent again.
    unknown: Vec<usize>,
    /// What made their outcome unknown.
    cause: Option<String>,
    /// How the commands to resend go: after a backoff, at once as a
    /// redirect (an attempt), at once as a script reload.
    later: bool,
    redirect: bool,
    reload: bool,
    /// Whether a command got its reply in this round.
    progressed: bool,
}

impl Round {
    /// Command `i` (`entry`) was sent and its reply is lost or in doubt:
    /// it goes again when it did not reach the server or is idempotent
    /// (then `resent` records that its reply will be a resend's, for a
    /// write); otherwise its outcome is unknown.
    fn lost(&mut self, i: usize, reached: bool, entry: &Entry, resent: &mut [bool]) {
        if reached && !entry.resend_safe {
            self.unknown.push(i);
            return;
        }
        resent[i] |= reached && entry.writes;
        self.resend.push(i);
    }
}

/// What the replies of one part showed so far.
#[derive(Default)]
struct Filing {
    /// Ordering domains in which a command of this part did not run (and
    /// whether it writes): a later command of the same domain must not
    /// have run, unless neither writes (reads commute, so sending the one
    /// that did not run later changes no reply).
    held: Vec<(Option<u16>, bool)>,
    /// The commands that ran, in order.
    ran: Vec<usize>,
    /// The reply to the part's durability `WAIT`.
    wait: Option<Value>,
}

/// One exchange of a batch: see the module docs.
pub(crate) struct Exchange {
    entries: Vec<Entry>,
    out: Vec<Option<Value>>,
    prep: Vec<Prep>,
    /// Commands still to send, in batch order.
    pending: Vec<usize>,
    /// Ordering domains: the whole batch on one server, the slot on a cluster.
    cluster: bool,
    /// The connection reaches nodes itself ([`Settings`]'s `per_node`).
    per_node: bool,
    retries: Retries,
    durability: Durability,
    /// How script calls go out, and what loads a missing one.
    mode: CallMode,
    reloads: usize,
    sleep: Option<std::time::Duration>,
    refresh: Refresh,
    /// Why the last retry was needed, returned when retries run out.
    last: Option<Error>,
    /// Per command: its reply will be that of a resend after an earlier
    /// attempt may have run (a write whose reply was lost).
    resent: Vec<bool>,
    /// The durability `WAIT`s' verdicts on the writes that ran.
    verdicts: Verdicts<Target>,
}

impl Exchange {
    /// Starts the exchange of `batch` on a driver set as `settings`; a
    /// batch with a refused script call fails here, before anything is
    /// sent. Its script calls go out as the call mode says (in functions
    /// mode each call becomes its `FCALL`).
    pub(crate) fn start(mut batch: Batch, settings: &Settings) -> Result<Self> {
        if let Some(e) = batch.take_refused() {
            return Err(e);
        }
        let Settings {
            env,
            policy,
            durability,
            per_node,
        } = *settings;
        let mode = env.call_mode;
        let n = batch.entries.len();
        let mut entries = batch.entries;
        if mode != CallMode::Evalsha {
            for e in &mut entries {
                if let Some(script) = e.script {
                    e.cmd = mode.command(script, &e.cmd);
                }
            }
        }
        Ok(Self {
            entries,
            out: vec![None; n],
            prep: vec![Prep::default(); n],
            pending: (0..n).collect(),
            cluster: env.cluster,
            per_node,
            retries: Retries::new(policy, batch.deadline),
            durability,
            mode,
            reloads: 0,
            sleep: None,
            refresh: Refresh::default(),
            last: None,
            resent: vec![false; n],
            verdicts: Verdicts::default(),
        })
    }

    /// Whether every command has its reply (what [`Exchange::next`] then
    /// says, without taking a pending sleep or refresh).
    pub(crate) fn is_done(&self) -> bool {
        self.pending.is_empty()
    }

    /// What to do next.
    pub(crate) fn next(&mut self) -> Next {
        if self.is_done() {
            return Next::Done;
        }
        if let Some(d) = self.sleep.take().filter(|d| !d.is_zero()) {
            return Next::Sleep(d);
        }
        Next::Send(std::mem::take(&mut self.refresh))
    }

    /// What the connection should refresh (taken: asked once).
    pub(crate) fn take_refresh(&mut self) -> Refresh {
        std::mem::take(&mut self.refresh)
    }

    /// The slot of each pending command, in order (`None`: no key), for the
    /// connection to pick targets.
    pub(crate) fn pending_slots(&self) -> Vec<Option<u16>> {
        self.pending.iter().map(|&i| self.entries[i].slot).collect()
    }

    /// The pipelines of the next round: `targets[k]` is where the `k`-th
    /// pending command goes. A command that answered `ASK` goes to the node
    /// it named instead, after `ASKING` — also one the router sent (a plain
    /// command of `Connection::query`), unless the connection reaches no
    /// node itself (a wrapped `ClusterConnection` follows redirects by its
    /// own settings).
    pub(crate) fn round(&mut self, targets: Vec<Target>) -> Vec<Part> {
        debug_assert_eq!(targets.len(), self.pending.len());
        let mut groups: Vec<(Target, bool, Vec<usize>)> = Vec::new();
        for (&i, target) in self.pending.iter().zip(targets) {
            let (target, asking) = match (&self.prep[i].ask, target) {
                (Some(_), Target::Router) if !self.per_node => (Target::Router, false),
                (Some(addr), _) => (Target::Node(addr.clone()), true),
                (None, t) => (t, false),
            };
            match groups
                .iter_mut()
                .find(|(t, a, _)| *t == target && *a == asking)
            {
                Some(g) => g.2.push(i),
                None => groups.push((target, asking, vec![i])),
            }
        }
        groups
            .into_iter()
            .map(|(target, asking, cmds)| self.part(target, asking, cmds))
            .collect()
    }

    fn part(&self, target: Target, asking: bool, cmds: Vec<usize>) -> Part {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        let mut items = Vec::with_capacity(cmds.len() + 1);
        let mut routes = Vec::with_capacity(cmds.len() + 1);
        for &i in &cmds {
            if let (true, Some(s)) = (self.prep[i].load, self.entries[i].script)
                && !items.iter().any(|it| match it {
                    // One library load covers every script.
                    Item::Load(l) => self.mode.loads_everything() || std::ptr::eq(*l, s),
                    _ => false,
                })
            {
                pipe.add_command(self.mode.load_cmd(s));
                items.push(Item::Load(s));
                routes.push(None);
            }
        }
        for &i in &cmds {
            if asking {
                pipe.add_command(redis::cmd("ASKING"));
                items.push(Item::Asking);
                routes.push(None);
            }
            pipe.add_command(self.entries[i].cmd.clone());
            items.push(Item::Cmd(i));
            let e = &self.entries[i];
            routes.push(e.slot.filter(|_| e.at_slot_node));
        }
        let writes = cmds.iter().any(|&i| self.entries[i].writes);
        if let (true, false, Some(wait)) =
            (writes, target == Target::Router, self.durability.wait_cmd())
        {
            pipe.add_command(wait);
            items.push(Item::Wait);
            routes.push(None);
        }
        Part {
            target,
            pipe,
            items,
            routes,
        }
    }

    /// Whether command `i`, answered `reply`, did not run: a script call
    /// the server lacks the code of (in the connection's call mode), or a
    /// reply that proves it ([`not_run`]).
    fn not_run(&self, i: usize, reply: &Value) -> Option<NotRun> {
        if self.entries[i].script.is_some() && self.mode.not_loaded(reply) {
            return Some(NotRun::NoScript);
        }
        match self.classify(reply) {
            // Only a script call (in its own mode) is loaded and resent.
            Some(NotRun::NoScript) => None,
            other => other,
        }
    }

    /// [`not_run`], on this connection: `READONLY` and a demotion
    /// ([`demoted`]) prove a failover only on a cluster (the slot map, read
    /// again, names the new primary); one server that answers them is a
    /// replica, and waiting changes nothing.
    fn classify(&self, reply: &Value) -> Option<NotRun> {
        match not_run(reply) {
            Some(NotRun::Later { .. })
                if !self.cluster
                    && (demoted(reply)
                        || matches!(reply, Value::ServerError(e) if e.code() == "READONLY")) =>
            {
                None
            }
            other => other,
        }
    }

    /// The ordering domain of command `i`.
    fn domain(&self, i: usize) -> Option<u16> {
        if self.cluster {
            self.entries[i].slot
        } else {
            Some(0)
        }
    }

    fn interrupted(&self) -> Error {
        ErrorKind::PipelineInterrupted {
            ran_in_order: self.out.iter().take_while(|v| v.is_some()).count(),
            total: self.out.len(),
        }
        .into()
    }

    /// The targets could not even be found (no node answered for the slot
    /// map): nothing was sent; retry after a backoff.
    pub(crate) fn unreachable(&mut self, error: Error) -> Result<()> {
        self.refresh.slots = true;
        self.refresh.router = true;
        self.last = Some(error);
        self.schedule(true, false, false, false)
    }

    /// Files what came back for each part of the round and decides what is
    /// sent next.
    pub(crate) fn settle(&mut self, parts: Vec<Part>, outcomes: Vec<Outcome>) -> Result<()> {
        let mut round = Round::default();
        for (part, outcome) in parts.into_iter().zip(outcomes) {
            self.settle_part(part, outcome, &mut round)?;
        }
        if !round.unknown.is_empty() {
            return Err(self.outcome_unknown(round.unknown, round.cause.unwrap_or_default()));
        }
        round.resend.sort_unstable();
        round.resend.dedup();
        self.pending = round.resend;
        if self.pending.is_empty() {
            return Ok(());
        }
        self.schedule(round.later, round.redirect, round.reload, round.progressed)
    }

    /// Files what came back for one part: each reply, what was not sent
    /// (a stopped part) or lost (a failed connection), and the verdict of
    /// its durability `WAIT` on the commands that ran.
    fn settle_part(&mut self, part: Part, outcome: Outcome, round: &mut Round) -> Result<()> {
        let router = part.target == Target::Router;
        let (replies, stopped, failure) = match outcome {
            Outcome::Replies(v) if v.len() != part.items.len() => {
                return Err(Error::short_reply());
            }
            Outcome::Replies(v) => (v, false, None),
            Outcome::Stopped(v) => (v, true, None),
            Outcome::Failed {
                replies,
                error,
                reached,
            } => (replies, false, Some((error, reached))),
            Outcome::Gone(error) => return Err(error),
        };
        let received = replies.len();
        let mut filing = Filing::default();
        for (item, reply) in part.items.iter().zip(replies) {
            match *item {
                Item::Asking => {}
                Item::Wait => filing.wait = Some(reply),
                Item::Load(s) => self.file_load(s, reply, router, round)?,
                Item::Cmd(i) => self.file_cmd(i, reply, router, &mut filing, round)?,
            }
        }
        let unsent = part.items[received..]
            .iter()
            .filter_map(|item| match *item {
                Item::Cmd(i) => Some(i),
                _ => None,
            });
        if stopped {
            // What was not sent goes in the next round (after what is
            // resent above, by their order), at once, as a reload round
            // would (the reply that stopped the part may ask for nothing
            // else).
            for i in unsent {
                round.resend.push(i);
                round.reload = true;
            }
        } else if let Some((error, reached)) = failure {
            // Everything after the replies read is lost.
            for i in unsent.collect::<Vec<_>>() {
                self.prep[i].refused = None;
                round.lost(i, reached, &self.entries[i], &mut self.resent);
            }
            self.verdicts.reconnected(&part.target);
            round.later = true;
            self.refresh.slots = true;
            self.refresh.router |= router;
            round.cause = Some(format!("the connection was lost ({error})"));
            self.last = Some(error);
        }
        if part.items.iter().any(|it| matches!(it, Item::Wait)) {
            self.judge_wait(&part.target, filing, round)?;
        }
        Ok(())
    }

    /// Files the reply to a script load.
    fn file_load(
        &mut self,
        s: &'static ScriptInfo,
        reply: Value,
        router: bool,
        round: &mut Round,
    ) -> Result<()> {
        // A load the server could not take now: the calls behind it answer
        // the same (or "not loaded") and go again after a backoff.
        match self.classify(&reply) {
            Some(NotRun::Later { stale }) => {
                round.later = true;
                self.refresh.slots |= stale;
                self.refresh.router |= stale && router;
                Ok(())
            }
            _ => self.mode.check_loaded(s, reply),
        }
    }

    /// Files the reply to command `i`: its result, or how it goes again
    /// when the reply proves it did not run. A command that follows one of
    /// its ordering domain that did not run must not have run either
    /// (unless neither writes: reads commute), or the batch stops.
    fn file_cmd(
        &mut self,
        i: usize,
        reply: Value,
        router: bool,
        filing: &mut Filing,
        round: &mut Round,
    ) -> Result<()> {
        let domain = self.domain(i);
        let writes = self.entries[i].writes;
        // A WAIT (repeatable) that a demoted primary answered, even on one
        // server: the writes before it may be discarded there (below), and
        // it goes again with them.
        let kind = self.not_run(i, &reply).or_else(|| {
            (self.entries[i].repeatable && demoted(&reply)).then_some(NotRun::Later { stale: true })
        });
        let Some(kind) = kind else {
            if self.entries[i].repeatable && filing.held.iter().any(|&(d, _)| d == domain) {
                // It ran before a command it must follow: again, after it.
                round.resend.push(i);
                return Ok(());
            }
            self.out[i] = Some(reply);
            round.progressed = true;
            if filing
                .held
                .iter()
                .any(|&(d, w)| d == domain && (w || writes))
            {
                return Err(self.interrupted());
            }
            filing.ran.push(i);
            return Ok(());
        };
        if self.entries[i].repeatable && demoted(&reply) {
            // A WAIT after writes that ran on a primary a failover
            // replaced: they may be discarded there.
            let before: Vec<usize> = filing
                .ran
                .iter()
                .copied()
                .filter(|&r| self.domain(r) == domain)
                .collect();
            self.uncertain(&before, &reply, round);
            filing.ran.retain(|r| !before.contains(r));
        }
        filing.held.push((domain, writes));
        let prep = &mut self.prep[i];
        match kind {
            NotRun::NoScript => {
                prep.load = true;
                round.reload = true;
            }
            NotRun::Moved => {
                prep.ask = None;
                self.refresh.slots = true;
                self.refresh.router |= router;
                round.redirect = true;
            }
            NotRun::Ask(host, port) => {
                prep.ask = Some((host, port));
                round.redirect = true;
            }
            NotRun::Later { stale } => {
                round.later = true;
                self.refresh.slots |= stale;
                self.refresh.router |= stale && router;
            }
        }
        self.prep[i].refused = Some(reply.clone());
        if let Value::ServerError(e) = &reply {
            self.last = Some(Error::from_redis(self.entries[i].script, e.clone().into()));
        }
        round.resend.push(i);
        Ok(())
    }

    /// The durability `WAIT` of a part, on the commands of it that ran: it
    /// counts only when one of them writes. Enough replicas confirm the
    /// writes of the node's connection so far; fewer are the batch's
    /// verdict unless a later `WAIT` on the same connection confirms them
    /// ([`Verdicts`]). A `WAIT` the node could not serve as a primary (it
    /// was demoted), or whose reply was lost with the connection, leaves
    /// the writes in doubt: what is idempotent goes again (with its own
    /// `WAIT`); the rest fails the batch with
    /// [`ErrorKind::OutcomeUnknown`] (demoted: it may be discarded) or
    /// [`ErrorKind::NotDurable`] (it ran; whether a replica has it is not
    /// known).
    fn judge_wait(&mut self, target: &Target, filing: Filing, round: &mut Round) -> Result<()> {
        if let Some(reply) = filing.wait.as_ref().filter(|r| demoted(r)) {
            self.refresh.slots = true;
            self.refresh.router |= *target == Target::Router;
            round.later = true;
            let wrote = filing.ran.iter().any(|&i| self.entries[i].writes);
            if wrote {
                self.uncertain(&filing.ran, reply, round);
            }
            return Ok(());
        }
        if !filing.ran.iter().any(|&i| self.entries[i].writes) {
            return Ok(());
        }
        let Some(reply) = filing.wait else {
            // Lost with the connection.
            for &i in &filing.ran {
                if self.entries[i].resend_safe {
                    self.out[i] = None;
                    self.resent[i] = true;
                    round.resend.push(i);
                } else if self.entries[i].writes {
                    self.verdicts.unknown(target, &self.durability);
                }
            }
            return Ok(());
        };
        let short = self.durability.verdict(reply)?;
        self.verdicts.judge(target, short);
        Ok(())
    }

    /// Commands that ran on a node that turned out to have been demoted
    /// (`reply` says so): idempotent ones go again, the others fail the
    /// batch with an unknown outcome.
    fn uncertain(&mut self, ran: &[usize], reply: &Value, round: &mut Round) {
        for &i in ran {
            self.out[i] = None;
            round.lost(i, true, &self.entries[i], &mut self.resent);
        }
        round.later = true;
        self.refresh.slots = true;
        if let Value::ServerError(e) = reply {
            let error = Error::from_redis(None, e.clone().into());
            round.cause = Some(format!(
                "its node turned out to be a replaced primary, whose writes may be discarded ({error})"
            ));
            self.last = Some(error);
        }
    }

    /// Decides how the pending commands go again: after a backoff (`later`),
    /// at once as a redirect (counted as an attempt), or at once as a script
    /// reload (counted against [`MAX_ROUNDS`] unless the round `progressed`:
    /// gave a command its reply, so the pending ones are fewer; a part the
    /// router sends command by command stops at each script it finds
    /// missing, and a batch of many such scripts takes a round each).
    fn schedule(
        &mut self,
        later: bool,
        redirect: bool,
        reload: bool,
        progressed: bool,
    ) -> Result<()> {
        if !later && !redirect {
            debug_assert!(reload);
            if !progressed {
                self.reloads += 1;
            }
            if self.reloads > MAX_ROUNDS {
                return Err(self.interrupted());
            }
            return Ok(());
        }
        match self.retries.next(!later) {
            Some(wait) => {
                self.sleep = Some(wait);
                Ok(())
            }
            None => self.give_up(),
        }
    }

    /// Retries are used up: a command the server kept refusing gets that
    /// refusal as its reply; when one was never answered, the batch fails
    /// with the last error.
    fn give_up(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        if pending.iter().all(|&i| self.prep[i].refused.is_some()) {
            for i in pending {
                self.out[i] = self.prep[i].refused.take();
            }
            return Ok(());
        }
        Err(self
            .last
            .take()
            .unwrap_or_else(|| Error::unexpected("retries used up")))
    }

    fn outcome_unknown(&self, unknown: Vec<usize>, cause: String) -> Error {
        let mut scripts: Vec<&'static str> = Vec::new();
        let mut commands: Vec<String> = Vec::new();
        for i in unknown {
            match self.entries[i].script {
                Some(s) if !scripts.contains(&s.name) => scripts.push(s.name),
                Some(_) => {}
                None => {
                    let name = self.entries[i]
                        .cmd
                        .args_iter()
                        .next()
                        .and_then(|a| match a {
                            redis::Arg::Simple(b) => {
                                Some(String::from_utf8_lossy(b).to_uppercase())
                            }
                            _ => None,
                        })
                        .unwrap_or_default();
                    if !commands.contains(&name) {
                        commands.push(name);
                    }
                }
            }
        }
        ErrorKind::OutcomeUnknown {
            scripts,
            commands,
            cause,
        }
        .into()
    }

    /// Every reply, in the batch's order; [`ErrorKind::NotDurable`] when
    /// too few replicas confirmed writes that ran.
    pub(crate) fn finish(self) -> Result<Replies> {
        self.verdicts.outcome()?;
        let scripts = self.entries.iter().map(|e| e.script).collect();
        let values = self
            .out
            .into_iter()
            .map(|v| v.ok_or_else(Error::short_reply))
            .collect::<Result<Vec<_>>>()?;
        Ok(Replies::new(values, scripts).with_resent(self.resent))
    }
}

/// The reply of one command sent on its own, as a pipeline would file it: an
/// error reply from the server becomes `Value::ServerError`; any other error
/// (the connection, a protocol problem) is returned.
pub(crate) fn reply_in_place(
    reply: redis::RedisResult<Value>,
) -> std::result::Result<Value, redis::RedisError> {
    match reply {
        Ok(v) => Ok(v),
        Err(e) => match redis::ServerError::try_from(e) {
            Ok(server) => Ok(Value::ServerError(server)),
            Err(e) => Err(e),
        },
    }
}

/// Whether `reply` proves that its command did not run (a `NOSCRIPT`, a
/// "Function not found", or a refusal [`not_run`] names): a part sent
/// command by command stops there, so that no command behind it runs
/// before it (see [`Outcome::Stopped`]).
fn did_not_run(reply: &Value) -> bool {
    not_run(reply).is_some() || CallMode::Functions.not_loaded(reply)
}

/// The replies of a part the cluster router sends command by command.
pub(crate) struct Routed {
    replies: Vec<Value>,
    total: usize,
}

impl Routed {
    /// For a part of `total` commands.
    pub(crate) fn new(total: usize) -> Self {
        Self {
            replies: Vec::with_capacity(total),
            total,
        }
    }

    /// Files the reply to the next command; the part's outcome when it ends
    /// here: the last command answered, a command did not run (the rest is
    /// not sent: [`Outcome::Stopped`]), or the connection failed.
    pub(crate) fn file(&mut self, reply: redis::RedisResult<Value>) -> Option<Outcome> {
        match reply_in_place(reply) {
            Ok(v) => {
                let stop = did_not_run(&v);
                self.replies.push(v);
                if self.replies.len() == self.total {
                    Some(Outcome::Replies(std::mem::take(&mut self.replies)))
                } else if stop {
                    Some(Outcome::Stopped(std::mem::take(&mut self.replies)))
                } else {
                    None
                }
            }
            Err(e) => Some(failed(std::mem::take(&mut self.replies), e)),
        }
    }

    /// The outcome of a part with no commands.
    pub(crate) fn empty() -> Outcome {
        Outcome::Replies(Vec::new())
    }
}

/// The outcome of a part whose request failed with `e` after `replies`.
pub(crate) fn failed(replies: Vec<Value>, e: redis::RedisError) -> Outcome {
    Outcome::Failed {
        replies,
        reached: may_have_reached(&e),
        error: Error::from(e),
    }
}

/// The outcome of a part that could not be sent at all (connecting failed).
pub(crate) fn not_sent(e: Error) -> Outcome {
    Outcome::Failed {
        replies: Vec::new(),
        error: e,
        reached: false,
    }
}

#[cfg(test)]
#[path = "exchange_tests.rs"]
mod tests;
