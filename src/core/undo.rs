//! Cancellation safety of the async driver: the undo ops of a run
//! ([`Op::undo_on_cancel`]) kept while it goes on, and run in a spawned
//! tokio task when the run's future is dropped at an await before the op
//! finished.

use super::conn_async::AsyncConnection;
use super::op::{Op, Request};

/// The undo ops of one run of the async driver, armed until the run
/// finishes ([`Undo::disarm`]); dropped armed, it spawns a task that runs
/// them (joined, so that their commands share round trips) on a clone of
/// the connection, errors ignored (what they give back is bounded by its
/// lease anyway). Without a tokio runtime they are not run.
#[derive(Default)]
pub(crate) struct Undo {
    ops: Vec<Op<()>>,
    /// The connection to run them on, cloned when the first one appears.
    con: Option<AsyncConnection>,
}

impl Undo {
    /// Where a run's steps put the undo ops they reveal.
    pub(crate) fn sink(&mut self) -> &mut Vec<Op<()>> {
        &mut self.ops
    }

    /// Keeps a handle on `con` once there is something to undo (a clone
    /// shares the connections: no new connection is opened).
    pub(crate) fn arm(&mut self, con: &AsyncConnection) {
        if !self.ops.is_empty() && self.con.is_none() {
            self.con = Some(con.clone());
        }
    }

    /// The run finished (with a value or an error): nothing to undo.
    pub(crate) fn disarm(&mut self) {
        self.ops.clear();
        self.con = None;
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        let (Some(con), false) = (self.con.take(), self.ops.is_empty()) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let ops = std::mem::take(&mut self.ops);
        runtime.spawn(async move {
            let _ = Op::join(ops).run_async(&con).await;
        });
    }
}
