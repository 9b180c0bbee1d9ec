//! A batch of commands sent together, and the exchange protocol every driver
//! runs to send one: `NOSCRIPT` reloads, redirects, replies in order.
//!
//! A [`Batch`] holds single-slot commands (plain commands on one key, or
//! script calls whose keys share a slot). The connection splits it into one
//! group per target (the one server, or each cluster node by its slot map),
//! and the [`Exchange`] below turns each group into pipelines, round after
//! round, until every command has a reply:
//!
//! * A command answered `NOSCRIPT` did not run. When every later command of
//!   the same ordering domain (the whole batch on one server, the command's
//!   slot on a cluster) did not run either, the missing scripts are loaded
//!   and exactly those commands are sent again, prefixed by the
//!   `SCRIPT LOAD`s — so each command runs once and in order. On a
//!   connection in [`CallMode::Functions`](super::CallMode::Functions) the
//!   script calls go out as `FCALL`, "Function not found" plays the part of
//!   `NOSCRIPT` and one `FUNCTION LOAD REPLACE` of the library that of the
//!   `SCRIPT LOAD`s, on the node that answered it. If a later
//!   command of the same domain did run, re-sending would reorder them, and
//!   the batch stops with [`ErrorKind::PipelineInterrupted`]; nothing runs
//!   twice. Reloads are repeated up to [`MAX_ROUNDS`] rounds (a server whose
//!   cache is flushed again and again).
//! * A command answered `MOVED`/`ASK`/`TRYAGAIN`/`CLUSTERDOWN` did not run
//!   either: it is sent again on its own through the cluster router, which
//!   follows redirects (on a cluster all commands of a moved slot get the
//!   redirect, so their order is kept).

use redis::{Cmd, Value};

use super::call_mode::CallMode;
use super::op::{IntoCall, Replies};
use crate::error::{Error, ErrorKind, Result};
use crate::keys::cluster_slot;
use crate::script::ScriptInfo;

/// The most rounds one exchange makes before giving up on a server whose
/// script cache keeps being flushed.
pub const MAX_ROUNDS: usize = 8;

/// One command of a batch.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) cmd: Cmd,
    /// The hash slot of its keys; `None` for a command without keys.
    pub(crate) slot: Option<u16>,
    /// The script it calls, when it is a script call.
    pub(crate) script: Option<&'static ScriptInfo>,
    /// A command without keys for the node that serves `slot` (`SCAN` of
    /// one node): sent there, never routed by its arguments.
    pub(crate) at_slot_node: bool,
}

/// Commands to send together; each reply comes back at its command's
/// position. Built by the patterns; run as part of an [`Op`](super::Op) or on
/// its own with [`Request::run`](super::Request::run).
#[derive(Debug, Default)]
pub struct Batch {
    pub(crate) entries: Vec<Entry>,
    /// The first refused script call: returned before anything is sent.
    pub(crate) refused: Option<Error>,
}

impl Clone for Batch {
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
            refused: self.refused.as_ref().map(Error::duplicate),
        }
    }
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        Self {
            entries: Vec::with_capacity(n),
            refused: None,
        }
    }

    /// Adds a command that touches `key` (and only keys of its slot).
    pub fn add(&mut self, key: impl AsRef<[u8]>, cmd: Cmd) -> &mut Self {
        self.entries.push(Entry {
            cmd,
            slot: Some(cluster_slot(key.as_ref())),
            script: None,
            at_slot_node: false,
        });
        self
    }

    /// Adds a command without keys for the node that serves `slot` on a
    /// cluster (on one server: the server), e.g. `SCAN` of that node.
    pub(crate) fn add_for_slot_node(&mut self, slot: u16, cmd: Cmd) -> &mut Self {
        self.entries.push(Entry {
            cmd,
            slot: Some(slot),
            script: None,
            at_slot_node: true,
        });
        self
    }

    /// Adds a command that touches no key (sent to any node of a cluster).
    pub fn add_keyless(&mut self, cmd: Cmd) -> &mut Self {
        self.entries.push(Entry {
            cmd,
            slot: None,
            script: None,
            at_slot_node: false,
        });
        self
    }

    /// Adds a script call. A call whose arguments a generated wrapper
    /// refused makes the whole batch fail with that error before anything
    /// is sent.
    pub fn script<R: redis::FromRedisValue>(&mut self, call: impl IntoCall<R>) -> &mut Self {
        let call = match call.into_call() {
            Ok(call) => call,
            Err(e) => {
                self.refused.get_or_insert(e);
                return self;
            }
        };
        let slot = call.first_key().map(cluster_slot);
        let script = call.script();
        self.entries.push(Entry {
            cmd: call.into_cmd(),
            slot,
            script: Some(script),
            at_slot_node: false,
        });
        self
    }

    /// Moves every command of `other` to the end of this batch.
    pub fn append(&mut self, mut other: Batch) -> &mut Self {
        self.entries.append(&mut other.entries);
        if let Some(e) = other.refused {
            self.refused.get_or_insert(e);
        }
        self
    }

    /// The refusal recorded by [`Batch::script`], if any.
    pub(crate) fn take_refused(&mut self) -> Option<Error> {
        self.refused.take()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The hash slot of each command (`None`: no key).
    pub(crate) fn slots(&self) -> Vec<Option<u16>> {
        self.entries.iter().map(|e| e.slot).collect()
    }
}

/// How a reply tells that its command did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NotRun {
    /// `NOSCRIPT` (or "Function not found" in functions mode) to a script
    /// call: load it and send the call again.
    NoScript,
    /// `MOVED`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN`: send it through the router.
    Redirect,
}

fn not_run(v: &Value) -> Option<NotRun> {
    let Value::ServerError(e) = v else {
        return None;
    };
    match e.code() {
        "MOVED" | "ASK" | "TRYAGAIN" | "CLUSTERDOWN" => Some(NotRun::Redirect),
        _ => None,
    }
}

/// Where one group of a batch goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// The one server.
    Server,
    /// A cluster node: its index in the connection's slot map, and a slot
    /// it serves (for routers that route by slot).
    Node { node: usize, slot: u16 },
}

/// A batch split by target: each target with the positions of its
/// commands, in order.
pub(crate) type Groups = Vec<(Target, Vec<usize>)>;

/// The state of one group.
#[derive(Debug)]
struct Group {
    target: Target,
    /// Commands still to send, in order.
    pending: Vec<usize>,
    /// Scripts to `SCRIPT LOAD` in front of the next round.
    loads: Vec<&'static ScriptInfo>,
}

/// One exchange of a batch: see the module docs.
#[derive(Debug)]
pub(crate) struct Exchange {
    entries: Vec<Entry>,
    out: Vec<Option<Value>>,
    groups: Vec<Group>,
    /// Commands to send on their own through the cluster router.
    routed: Vec<usize>,
    /// Ordering domains: the whole batch on one server, the slot on a cluster.
    cluster: bool,
    rounds: usize,
    /// How script calls go out, and what loads a missing one.
    mode: CallMode,
}

/// One pipeline of a round: the group it belongs to, where it goes, and the
/// number of replies to expect.
pub(crate) struct Part {
    pub(crate) group: usize,
    pub(crate) target: Target,
    pub(crate) pipe: redis::Pipeline,
}

impl Part {
    pub(crate) fn len(&self) -> usize {
        self.pipe.len()
    }
}

impl Exchange {
    /// Starts the exchange of `batch` split into `groups` (each a target and
    /// the positions of its commands, in order).
    pub(crate) fn new(batch: Batch, groups: Groups, cluster: bool) -> Self {
        let n = batch.entries.len();
        Self {
            entries: batch.entries,
            out: vec![None; n],
            groups: groups
                .into_iter()
                .map(|(target, pending)| Group {
                    target,
                    pending,
                    loads: Vec::new(),
                })
                .collect(),
            routed: Vec::new(),
            cluster,
            rounds: 0,
            mode: CallMode::Evalsha,
        }
    }

    /// Sends the script calls as `mode` says (default `EVALSHA`): in
    /// functions mode each call becomes its `FCALL`.
    pub(crate) fn call_mode(mut self, mode: CallMode) -> Self {
        if mode != self.mode {
            for e in &mut self.entries {
                if let Some(script) = e.script {
                    e.cmd = mode.command(script, &e.cmd);
                }
            }
            self.mode = mode;
        }
        self
    }

    /// The pipelines of the next round, one per group with work; empty when
    /// only routed commands (or nothing) are left.
    pub(crate) fn round(&mut self) -> Result<Vec<Part>> {
        if self.groups.iter().all(|g| g.pending.is_empty()) {
            return Ok(Vec::new());
        }
        self.rounds += 1;
        if self.rounds > MAX_ROUNDS {
            let ran = self.out.iter().take_while(|v| v.is_some()).count();
            return Err(ErrorKind::PipelineInterrupted {
                ran_in_order: ran,
                total: self.out.len(),
            }
            .into());
        }
        let mut parts = Vec::new();
        for (g, group) in self.groups.iter().enumerate() {
            if group.pending.is_empty() {
                continue;
            }
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for s in &group.loads {
                pipe.add_command(self.mode.load_cmd(s));
            }
            for &i in &group.pending {
                pipe.add_command(self.entries[i].cmd.clone());
            }
            parts.push(Part {
                group: g,
                target: group.target.clone(),
                pipe,
            });
        }
        Ok(parts)
    }

    /// Whether command `i`, answered `reply`, did not run: a script call
    /// the server lacks the script of, or a redirect.
    fn not_run(&self, i: usize, reply: &Value) -> Option<NotRun> {
        if self.entries[i].script.is_some() && self.mode.not_loaded(reply) {
            return Some(NotRun::NoScript);
        }
        not_run(reply)
    }

    /// The ordering domain of command `i`.
    fn domain(&self, i: usize) -> Option<u16> {
        if self.cluster {
            self.entries[i].slot
        } else {
            Some(0)
        }
    }

    /// Files the replies of one group's pipeline and decides what it sends
    /// next.
    pub(crate) fn settle(&mut self, group: usize, replies: Vec<Value>) -> Result<()> {
        let g = &mut self.groups[group];
        let loads = std::mem::take(&mut g.loads);
        let pending = std::mem::take(&mut g.pending);
        if replies.len() != loads.len() + pending.len() {
            return Err(Error::short_reply());
        }
        let mut replies = replies.into_iter();
        for script in &loads {
            let reply = replies.next().expect("counted above");
            self.mode.check_loaded(script, reply)?;
        }
        let replies: Vec<Value> = replies.collect();
        let kinds: Vec<Option<NotRun>> = pending
            .iter()
            .zip(&replies)
            .map(|(&i, v)| self.not_run(i, v))
            .collect();
        // A NOSCRIPT command may be re-sent only if no later command of its
        // domain ran.
        for (k, kind) in kinds.iter().enumerate() {
            if *kind != Some(NotRun::NoScript) {
                continue;
            }
            let domain = self.domain(pending[k]);
            let later_ran = (k + 1..pending.len())
                .any(|j| kinds[j].is_none() && self.domain(pending[j]) == domain);
            if later_ran {
                let ran = self.out.iter().take_while(|v| v.is_some()).count();
                return Err(ErrorKind::PipelineInterrupted {
                    ran_in_order: ran.max(k),
                    total: self.out.len(),
                }
                .into());
            }
        }
        let g = &mut self.groups[group];
        for ((i, reply), kind) in pending.into_iter().zip(replies).zip(kinds) {
            match kind {
                None => self.out[i] = Some(reply),
                Some(NotRun::NoScript) => {
                    let script = self.entries[i]
                        .script
                        .expect("only script calls answer NOSCRIPT");
                    let loaded = if self.mode.loads_everything() {
                        !g.loads.is_empty()
                    } else {
                        g.loads.iter().any(|s| std::ptr::eq(*s, script))
                    };
                    if !loaded {
                        g.loads.push(script);
                    }
                    g.pending.push(i);
                }
                Some(NotRun::Redirect) => self.routed.push(i),
            }
        }
        Ok(())
    }

    /// Takes the commands that must be sent on their own through the
    /// router (redirected ones), in order.
    pub(crate) fn take_routed(&mut self) -> Vec<usize> {
        let mut routed = std::mem::take(&mut self.routed);
        routed.sort_unstable();
        routed
    }

    /// Command `i` and the script it calls.
    pub(crate) fn entry(&self, i: usize) -> (&Cmd, Option<&'static ScriptInfo>) {
        (&self.entries[i].cmd, self.entries[i].script)
    }

    /// The slot whose node command `i` must be sent to on its own, when it
    /// is a keyless command for one node ([`Batch::add_for_slot_node`]).
    pub(crate) fn slot_node(&self, i: usize) -> Option<u16> {
        let e = &self.entries[i];
        e.slot.filter(|_| e.at_slot_node)
    }

    /// Files the reply of a command sent on its own.
    pub(crate) fn file(&mut self, i: usize, reply: Value) {
        self.out[i] = Some(reply);
    }

    /// Commands without a key: sent on their own through the router.
    pub(crate) fn route_keyless(&mut self, positions: Vec<usize>) {
        self.routed.extend(positions);
    }

    /// Every reply, in the batch's order.
    pub(crate) fn finish(self) -> Result<Replies> {
        let scripts = self.entries.iter().map(|e| e.script).collect();
        let values = self
            .out
            .into_iter()
            .map(|v| v.ok_or_else(Error::short_reply))
            .collect::<Result<Vec<_>>>()?;
        Ok(Replies::new(values, scripts))
    }
}

/// The reply of one command sent on its own, as a pipeline would file it: an
/// error reply from the server becomes `Value::ServerError`; any other error
/// (the connection, a protocol problem) is returned.
pub(crate) fn reply_in_place(reply: redis::RedisResult<Value>) -> Result<Value> {
    match reply {
        Ok(v) => Ok(v),
        Err(e) => match redis::ServerError::try_from(e) {
            Ok(server) => Ok(Value::ServerError(server)),
            Err(e) => Err(Error::from(e)),
        },
    }
}
