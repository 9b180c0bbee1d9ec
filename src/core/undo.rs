//! Cancellation safety of the async driver: the undo ops of a run
//! ([`Op::undo_on_cancel`]) kept while it goes on, and run in a spawned
//! tokio task when the run's future is dropped at an await before the op
//! finished.

use super::op::Op;

/// What runs the undo ops of a run dropped unfinished: the driver's (in a
/// spawned task, on a clone of its connection).
pub(crate) type Runner = Box<dyn FnOnce(Op<()>) + Send>;

/// The undo ops of one run of the async driver, armed until the run
/// finishes ([`Undo::disarm`]); dropped armed, it spawns a task that runs
/// them (joined, so that their commands share round trips) with its
/// [`Runner`]: on a clone of the connection, errors ignored (what they give back is bounded by its
/// lease anyway). Without a tokio runtime they are not run.
#[derive(Default)]
pub(crate) struct Undo {
    ops: Vec<Op<()>>,
    /// What runs them, made when the first one appears.
    runner: Option<Runner>,
}

impl Undo {
    /// Where a run's steps put the undo ops they reveal.
    pub(crate) fn sink(&mut self) -> &mut Vec<Op<()>> {
        &mut self.ops
    }

    /// Makes the runner once there is something to undo (it keeps a clone
    /// of the connection, which shares its connections: no new one is
    /// opened).
    pub(crate) fn arm(&mut self, runner: impl FnOnce() -> Runner) {
        if !self.ops.is_empty() && self.runner.is_none() {
            self.runner = Some(runner());
        }
    }

    /// The run finished (with a value or an error): nothing to undo.
    pub(crate) fn disarm(&mut self) {
        self.ops.clear();
        self.runner = None;
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        let (Some(runner), false) = (self.runner.take(), self.ops.is_empty()) else {
            return;
        };
        runner(Op::join(std::mem::take(&mut self.ops)).map(|_| ()));
    }
}
