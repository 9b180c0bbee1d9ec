//! The add: one record written by one `rolling.add` call that passes only
//! the guessed head and the slot after it; a step machine that retries with
//! wider windows when another writer moved the head, then with the whole
//! ring, and reports what it did ([`Added`]).

use std::sync::Arc;

use serde::Serialize;

use super::head::HeadCache;
use super::ring::Ring;
use crate::core::{Batch, Env, Machine, Replies, Step};
use crate::error::{Error, ErrorKind, Result};
use crate::scripts;

/// Ring slots passed per attempt, from the guessed head on: first the head
/// and the slot after it; after a miss (other writers are rotating the ring
/// right now) a wider window, since the head may move on again before the
/// retry arrives; then the whole ring, which cannot miss.
pub(crate) const WINDOWS: [u32; 3] = [2, 4, 16];
const WINDOW_ATTEMPTS: u32 = WINDOWS.len() as u32;

/// What one [`RollingStore::add`](super::RollingStore::add) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Added {
    /// The ring slot the record was written to (0 to `shards - 1`).
    pub slot: u32,
    /// The generation of that shard: 0 for the store's first shard, +1 each
    /// time the head moved on. Records of older generations are older.
    pub generation: u64,
    /// The field already existed in the head shard and its value was replaced
    /// (it moves to the newest position; the shard does not grow). `None`
    /// when that is not known: the call was sent again after its reply was
    /// lost (a broken connection, a failover) and found the record in the
    /// head shard — written by the first attempt, or before it.
    pub replaced: Option<bool>,
    /// Records deleted with the oldest shard when this add moved the head
    /// on; `None` when not known (as for `replaced`: the first attempt may
    /// have moved the head on and evicted them).
    pub evicted: Option<u64>,
    /// Calls that found the head elsewhere than guessed and wrote nothing
    /// before the one that wrote (0 in the common case).
    pub misses: u32,
}

/// The add of one record as a step machine: each step sends one
/// `rolling.add` call; a miss moves the guess to the head the script
/// reported and widens the window.
pub(crate) struct Add {
    store: AddConfig,
    ring: Ring,
    key: String,
    field: String,
    json: Vec<u8>,
    /// Calls that missed so far.
    attempt: u32,
    guess: u32,
}

/// The reply of `rolling.add`: `{status, head, gen, evicted}`.
enum Reply {
    Written(Added),
    Miss { head: u32 },
}

/// What an add needs of its store: the shard size, the TTLs, and the head
/// cache the store's clones share.
pub(crate) struct AddConfig {
    pub(crate) shard_size: u64,
    pub(crate) ttl_ms: u64,
    pub(crate) index_ttl_ms: u64,
    pub(crate) heads: Arc<HeadCache>,
}

impl Add {
    pub(crate) fn new(store: AddConfig, ring: Ring, key: &str, field: &str, json: Vec<u8>) -> Self {
        Self {
            store,
            ring,
            key: key.to_string(),
            field: field.to_string(),
            json,
            attempt: 0,
            guess: 0,
        }
    }

    /// The call of this attempt, from the current guess.
    fn call(&self) -> Batch {
        let shards = self.ring.shards;
        let (first, count) = match WINDOWS.get(self.attempt as usize) {
            Some(&w) if w < shards => (self.guess, w),
            _ => (0, shards),
        };
        let s = &self.store;
        let mut batch = Batch::with_capacity(1);
        batch.script(scripts::rolling::add(
            &self.ring.meta,
            &self.ring.window(first, count),
            first as i64,
            shards as i64,
            s.shard_size as i64,
            &self.field,
            &self.json,
            s.ttl_ms as i64,
            s.index_ttl_ms as i64,
        ));
        batch
    }

    /// Decodes the reply (perhaps a resend's) and remembers the head it
    /// reports.
    fn settle(&self, replies: &mut Replies) -> Result<Reply> {
        let resent = replies.resent();
        let reply: Vec<i64> = replies.take()?;
        let &[status, head, generation, evicted] = reply.as_slice() else {
            return Err(Error::short_reply());
        };
        let head = head as u32;
        self.store.heads.store(&self.key, head);
        Ok(match status {
            0 => Reply::Miss { head },
            // A resend that wrote a new record knows what it did; one that
            // found the record cannot tell the first attempt's work from
            // an earlier writer's.
            _ => Reply::Written(Added {
                slot: head,
                generation: generation as u64,
                replaced: (status == 1 || !resent).then_some(status == 2),
                evicted: (status == 1 || !resent).then_some(evicted as u64),
                misses: self.attempt,
            }),
        })
    }
}

impl Machine for Add {
    type Output = Added;

    fn step(&mut self, _: &Env, replies: Option<Replies>) -> Result<Step<Added>> {
        match replies {
            // Guess when the op starts, not when it was built.
            None => self.guess = self.store.heads.guess(&self.key),
            Some(mut replies) => match self.settle(&mut replies)? {
                Reply::Written(added) => return Ok(Step::Done(added)),
                Reply::Miss { head } => {
                    self.guess = head;
                    self.attempt += 1;
                    if self.attempt > WINDOW_ATTEMPTS {
                        return Err(ErrorKind::Script {
                            script: "rolling.add",
                            code: "MISS".into(),
                            detail: "the head was not found even with the whole ring passed".into(),
                        }
                        .into());
                    }
                }
            },
        }
        Ok(Step::Send(self.call()))
    }
}
