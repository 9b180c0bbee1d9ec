//! [`LockStatus`]: what an operator asks of a lock (`redis-patterns lock
//! status`): whether it is held, the holder's remaining lease and the
//! fencing counter. Never the holder's token: whoever knows it can release
//! the lock.

use std::time::Duration;

use serde::Serialize;

use super::Lock;
use crate::core::{Batch, Op};

/// A lock as it stands (one round trip: `PTTL` of the lock, `GET` of its
/// counter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockStatus {
    /// The lock's key.
    pub key: String,
    /// Whether someone holds it.
    pub held: bool,
    /// The holder's remaining lease in ms (`None` when it is free, or held
    /// without a TTL).
    pub remaining_lease_ms: Option<u64>,
    /// The fencing counter: the last token handed out (the holder's while
    /// it is held); 0 before the first acquire.
    pub fence: u64,
}

impl LockStatus {
    /// The remaining lease.
    pub fn remaining_lease(&self) -> Option<Duration> {
        self.remaining_lease_ms.map(Duration::from_millis)
    }
}

impl Lock {
    /// The lock as it stands: held or not, the holder's remaining lease and
    /// the fencing counter.
    pub fn status(&self) -> Op<LockStatus> {
        let mut batch = Batch::new();
        let mut pttl = redis::cmd("PTTL");
        pttl.arg(self.key());
        let mut get = redis::cmd("GET");
        get.arg(self.fence_key());
        batch.add(self.key(), pttl).add(self.fence_key(), get);
        let key = self.key().to_string();
        Op::send(batch, move |mut r| {
            let pttl: i64 = r.take()?;
            let fence: Option<String> = r.take()?;
            Ok(LockStatus {
                key,
                held: pttl != -2,
                remaining_lease_ms: (pttl >= 0).then_some(pttl as u64),
                fence: fence.and_then(|f| f.parse().ok()).unwrap_or(0),
            })
        })
    }
}
