//! Bulk load: [`Load`] adds the items of any iterator to a filter in
//! batches, resumable from a position, reporting [`LoadProgress`].

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::core::{Op, setters};
use crate::error::Error;

/// Where a bulk load stands: `done` positions of the input are settled
/// (loaded or skipped, counting from position 0, the skipped `start` ones
/// included; never more than the input has); `added` of the loaded items
/// were new; of `unknown` more it is not known (their call was sent again
/// after its reply was lost and found them present: see
/// [`Bloom::add`](super::Bloom::add)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct LoadProgress {
    /// Input positions done (skipped ones included).
    pub done: u64,
    /// Items that were new to the filter.
    pub added: u64,
    /// Items whose newness is not known (their call was sent again).
    pub unknown: u64,
}

/// One position of a bulk load's input: an item's bytes, or `None` for a
/// position with nothing to load (say, a line the reader skipped), which
/// still counts in [`LoadProgress::done`] so that positions stay those of
/// the input.
pub trait LoadItem {
    /// The bytes to add, or `None` to skip this position.
    fn item(&self) -> Option<&[u8]>;
}

impl LoadItem for [u8] {
    fn item(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl LoadItem for str {
    fn item(&self) -> Option<&[u8]> {
        Some(self.as_bytes())
    }
}

impl LoadItem for Vec<u8> {
    fn item(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl LoadItem for String {
    fn item(&self) -> Option<&[u8]> {
        Some(self.as_bytes())
    }
}

impl LoadItem for Box<[u8]> {
    fn item(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl LoadItem for Box<str> {
    fn item(&self) -> Option<&[u8]> {
        Some(self.as_bytes())
    }
}

impl<const N: usize> LoadItem for [u8; N] {
    fn item(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl LoadItem for Cow<'_, str> {
    fn item(&self) -> Option<&[u8]> {
        Some(self.as_bytes())
    }
}

impl LoadItem for Cow<'_, [u8]> {
    fn item(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl<T: LoadItem + ?Sized> LoadItem for &T {
    fn item(&self) -> Option<&[u8]> {
        (**self).item()
    }
}

impl<T: LoadItem> LoadItem for Option<T> {
    fn item(&self) -> Option<&[u8]> {
        self.as_ref().and_then(T::item)
    }
}

/// The filter a load adds to (a sized [`Bloom`](super::Bloom) or a
/// [`JsHashBloom`](super::JsHashBloom)): one batch's add.
pub(crate) trait Filter: std::fmt::Debug + Send + Sync {
    fn multi_add(&self, items: &[&[u8]]) -> Op<Vec<Option<bool>>>;
}

/// What the ops of a load report back.
#[derive(Debug, Default)]
struct Shared {
    progress: LoadProgress,
    /// Batches that finished.
    batches: u64,
    /// An op was handed out and has not finished (yet, or ever).
    pending: bool,
}

/// A bulk load of an iterator into a filter
/// ([`Bloom::load`](super::Bloom::load),
/// [`JsHashBloom::load`](super::JsHashBloom::load)), in batches of [`batch`](Load::batch) items
/// (default 1000), skipping the first [`start`](Load::start) positions —
/// pass the `done` of an interrupted load to resume it.
///
/// A load is an iterator of ops, one per batch (each one multi-add: one
/// batch of calls, one pipeline per node), whose result is the progress
/// after it. Run each op before taking the next; the load ends at the end
/// of the input, or after an op that failed or was not run, and
/// [`progress`](Load::progress) then says where to resume:
///
/// ```no_run
/// use redis_patterns::prelude::*;
/// use redis_patterns::bloom::Bloom;
///
/// # fn main() -> redis_patterns::Result<()> {
/// let mut con = Connection::open("redis://127.0.0.1/")?;
/// let bf = Bloom::create("emails", 1_000_000, 0.01).run(&mut con)?;
/// let emails = vec!["a@example.com", "b@example.com"];
/// let mut load = bf.load(&emails).batch(5000);
/// for op in load.by_ref() {
///     let p = op.run(&mut con)?;
///     eprintln!("{} done, {} new", p.done, p.added);
/// }
/// assert_eq!(load.progress().done, 2);
/// # Ok(())
/// # }
/// ```
///
/// [`Load::into_op`] makes the whole load one op (for an input that is
/// `Send + 'static`), for either driver.
pub struct Load<I> {
    filter: Arc<dyn Filter>,
    items: I,
    batch: usize,
    start: u64,
    started: bool,
    /// The input ended, or the load stopped.
    ended: bool,
    shared: Arc<Mutex<Shared>>,
}

impl<I> std::fmt::Debug for Load<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Load")
            .field("filter", &self.filter)
            .field("batch", &self.batch)
            .field("start", &self.start)
            .field("progress", &self.progress())
            .finish_non_exhaustive()
    }
}

impl<I> Load<I> {
    pub(crate) fn new(filter: impl Filter + 'static, items: I) -> Self {
        Self {
            filter: Arc::new(filter),
            items,
            batch: 1000,
            start: 0,
            started: false,
            ended: false,
            shared: Arc::default(),
        }
    }

    setters! {
        /// Items per batch (default 1000; 0 is refused by the first op).
        batch(items: usize) => batch;

        /// Skips the first `position` positions of the input (default 0).
        start(position: u64) => start;
    }

    /// The progress of the batches that finished.
    pub fn progress(&self) -> LoadProgress {
        self.shared().progress
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        lock(&self.shared)
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl<I> Load<I>
where
    I: Iterator,
    I::Item: LoadItem,
{
    /// The whole load as one op: runs the batches one after the other,
    /// calling `on_progress` after each, and returns the final progress
    /// (the first failing batch fails it; what `on_progress` got last is
    /// where to resume).
    pub fn into_op(
        self,
        mut on_progress: impl FnMut(LoadProgress) + Send + 'static,
    ) -> Op<LoadProgress>
    where
        I: Send + 'static,
    {
        let reported = 0u64;
        Op::repeat((self, reported), move |(load, reported)| {
            let (batches, progress) = {
                let s = load.shared();
                (s.batches, s.progress)
            };
            if batches > *reported {
                *reported = batches;
                on_progress(progress);
            }
            match load.next() {
                Some(op) => op.map(|_| ControlFlow::Continue(())),
                None => Op::ready(ControlFlow::Break(load.progress())),
            }
        })
    }
}

impl<I> Iterator for Load<I>
where
    I: Iterator,
    I::Item: LoadItem,
{
    type Item = Op<LoadProgress>;

    /// The op of the next batch, or `None` at the end of the input (or
    /// after a batch that failed or was not run).
    fn next(&mut self) -> Option<Op<LoadProgress>> {
        if self.ended {
            return None;
        }
        if self.shared().pending {
            self.ended = true;
            return None;
        }
        if self.batch == 0 {
            self.ended = true;
            return Some(Op::fail(Error::invalid("batch size", "must be at least 1")));
        }
        if !self.started {
            self.started = true;
            let mut skipped = 0;
            while skipped < self.start && self.items.next().is_some() {
                skipped += 1;
            }
            self.shared().progress.done = skipped;
            if skipped < self.start {
                self.ended = true;
                return None;
            }
        }
        // Up to `batch` items, and every skipped position among them.
        let mut positions = 0u64;
        let mut buf: Vec<I::Item> = Vec::with_capacity(self.batch);
        while buf.len() < self.batch {
            let Some(entry) = self.items.next() else {
                self.ended = true;
                break;
            };
            positions += 1;
            if entry.item().is_some() {
                buf.push(entry);
            }
        }
        if positions == 0 {
            return None;
        }
        let items: Vec<&[u8]> = buf.iter().filter_map(LoadItem::item).collect();
        let op = self.filter.multi_add(&items);
        self.shared().pending = true;
        let shared = Arc::clone(&self.shared);
        Some(op.map(move |flags| {
            let mut s = lock(&shared);
            s.pending = false;
            s.batches += 1;
            s.progress.done += positions;
            s.progress.added += flags.iter().filter(|&&b| b == Some(true)).count() as u64;
            s.progress.unknown += flags.iter().filter(|b| b.is_none()).count() as u64;
            s.progress
        }))
    }
}
