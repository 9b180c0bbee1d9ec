//! A batch of commands sent together: [`Batch`], built by the patterns (plain
//! commands on one key, script calls whose keys share a slot), each reply
//! at its command's position. How one is sent — reloads, redirects,
//! retries — is the [`exchange`](super::exchange)'s.

use redis::Cmd;

use super::resend;
use crate::error::Error;
use crate::keys::cluster_slot;
use crate::script::{IntoCall, ScriptInfo};

/// One command of a batch.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) cmd: Cmd,
    /// The hash slot of its keys; `None` for a command without keys.
    pub(crate) slot: Option<u16>,
    /// The script it calls, when it is a script call.
    pub(crate) script: Option<&'static ScriptInfo>,
    /// May be sent again when its outcome is unknown.
    pub(crate) resend_safe: bool,
    /// May change data (a durability wait follows it).
    pub(crate) writes: bool,
    /// A command without keys for the node that serves `slot` (`SCAN` of
    /// one node): sent there, never routed by its arguments.
    pub(crate) at_slot_node: bool,
    /// Running it again changes nothing (`WAIT`): when a command before it
    /// in its ordering domain did not run, it is sent again after that one
    /// instead of stopping the batch.
    pub(crate) repeatable: bool,
}

impl Entry {
    fn plain(cmd: Cmd, slot: Option<u16>) -> Self {
        let traits = resend::traits(&cmd);
        Self {
            cmd,
            slot,
            script: None,
            resend_safe: traits.resend_safe,
            writes: traits.writes,
            at_slot_node: false,
            repeatable: false,
        }
    }
}

/// Commands to send together; each reply comes back at its command's
/// position. Built by the patterns; run as part of an [`Op`](super::Op) or on
/// its own with [`Request::run`](super::Request::run).
#[derive(Debug, Default)]
pub struct Batch {
    pub(crate) entries: Vec<Entry>,
    /// The first refused script call: returned before anything is sent.
    pub(crate) refused: Option<Error>,
    /// No retry after a backoff starts later than this (an op's own
    /// deadline, such as a blocking acquire's timeout).
    pub(crate) deadline: Option<std::time::Instant>,
}

impl Clone for Batch {
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
            refused: self.refused.as_ref().map(Error::duplicate),
            deadline: self.deadline,
        }
    }
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty batch with room for `n` commands.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            entries: Vec::with_capacity(n),
            refused: None,
            deadline: None,
        }
    }

    /// Adds a command that touches `key` (and only keys of its slot). A
    /// command without keys added this way goes to the node that serves
    /// `key`'s slot, in the same pipeline as the batch's other commands of
    /// that node (e.g. a `WAIT` after writes). Whether it may be sent again
    /// after a lost connection is read from the command (reads and
    /// idempotent writes such as `SET`, `HSET`, `DEL` may; `INCR` may not).
    pub fn add(&mut self, key: impl AsRef<[u8]>, cmd: Cmd) -> &mut Self {
        self.entries
            .push(Entry::plain(cmd, Some(cluster_slot(key.as_ref()))));
        self
    }

    /// Adds a command without keys for the node that serves `slot` on a
    /// cluster (on one server: the server), e.g. `SCAN` of that node.
    pub(crate) fn add_for_slot_node(&mut self, slot: u16, cmd: Cmd) -> &mut Self {
        let mut entry = Entry::plain(cmd, Some(slot));
        entry.at_slot_node = true;
        self.entries.push(entry);
        self
    }

    /// Adds a command without keys that changes nothing when it runs again,
    /// such as `WAIT` after a write, for the node that serves `key`'s slot:
    /// when a script call before it must be sent again (`NOSCRIPT`), it is
    /// sent again after it, so that it still follows it.
    pub(crate) fn add_repeatable(&mut self, key: impl AsRef<[u8]>, cmd: Cmd) -> &mut Self {
        self.add_for_slot_node(cluster_slot(key.as_ref()), cmd);
        if let Some(e) = self.entries.last_mut() {
            e.repeatable = true;
        }
        self
    }

    /// Adds a command that touches no key (on a cluster sent through the
    /// cluster client, which picks its node or nodes: `SCRIPT LOAD` goes to
    /// every primary).
    pub fn add_keyless(&mut self, cmd: Cmd) -> &mut Self {
        self.entries.push(Entry::plain(cmd, None));
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
        let resend_safe = call.is_idempotent();
        self.entries.push(Entry {
            cmd: call.into_cmd(),
            slot,
            script: Some(script),
            resend_safe,
            writes: !script.read_only,
            at_slot_node: false,
            repeatable: false,
        });
        self
    }

    /// Moves every command of `other` to the end of this batch (the earlier
    /// of their deadlines holds for both).
    pub fn append(&mut self, mut other: Batch) -> &mut Self {
        self.entries.append(&mut other.entries);
        self.deadline = match (self.deadline, other.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(e) = other.refused {
            self.refused.get_or_insert(e);
        }
        self
    }

    /// Retries after a backoff start no later than `deadline` (an earlier
    /// deadline already set stays); redirects and script reloads still go.
    pub(crate) fn until(&mut self, deadline: std::time::Instant) -> &mut Self {
        self.deadline = Some(self.deadline.map_or(deadline, |d| d.min(deadline)));
        self
    }

    /// The refusal recorded by [`Batch::script`], if any.
    pub(crate) fn take_refused(&mut self) -> Option<Error> {
        self.refused.take()
    }

    /// How many commands it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no command.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
