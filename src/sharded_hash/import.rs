//! The streaming import of a sharded hash ([`ShardedHash::import`]): items
//! from any iterator, set-if-absent, in bounded batches — one operation that
//! both drivers run, each batch one [`Batch`].

use serde::Serialize;

use super::ShardedHash;
use crate::core::{Batch, Env, Machine, Op, Replies, Step};
use crate::error::{Error, ErrorKind, Result};

/// Why an item was not imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum RejectReason {
    /// The field is not a valid field of this hash (e.g. not an id in range).
    BadField(String),
    /// Strict hash: the field or value is longer than
    /// `hash-max-listpack-value`; holds the length.
    ValueTooLong(usize),
    /// Strict hash: the shard would exceed `hash-max-listpack-entries`.
    ShardFull,
}

/// One rejected item, at its position (1-based for [`ShardedHash::import`];
/// the caller's for [`ShardedHash::import_numbered`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rejection {
    /// The item's position.
    pub position: u64,
    /// Why it was rejected.
    pub reason: RejectReason,
}

/// The counts of an import.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Items read from the iterator.
    pub items: u64,
    /// Fields written because they were absent.
    pub inserted: u64,
    /// Fields left alone because they were already present.
    pub present: u64,
    /// Fields whose write was sent again after its reply was lost (a
    /// broken connection, a failover) and found them present: inserted by
    /// the first attempt or present before, it is not known which (counted
    /// neither as inserted nor as present; they hold a value either way).
    pub unknown: u64,
    /// Items not imported.
    pub rejected: u64,
    /// The first 100 rejections (in the order they were found).
    pub rejections: Vec<Rejection>,
}

/// The value of [`ImportReport::MAX_REJECTIONS`].
pub(crate) const MAX_REJECTIONS: usize = 100;

impl ImportReport {
    /// The most rejections an [`ImportReport`] lists (the others are counted).
    pub const MAX_REJECTIONS: usize = MAX_REJECTIONS;
}

impl ImportReport {
    fn reject(&mut self, position: u64, reason: RejectReason) {
        self.rejected += 1;
        if self.rejections.len() < MAX_REJECTIONS {
            self.rejections.push(Rejection { position, reason });
        }
    }
}

/// How an import batches its items. A batch is one pipeline (per node): on
/// an [`AsyncConnection`](crate::AsyncConnection) from
/// `AsyncConnection::open`, whose replies time out after 500 ms, keep
/// batches small enough for the server to answer in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportOptions {
    /// Items per batch.
    pub batch: usize,
    /// Bytes of fields and values per batch.
    pub batch_bytes: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            batch: 50_000,
            batch_bytes: 8 << 20,
        }
    }
}

impl ImportOptions {
    /// Checks the options as [`ShardedHash::import`] does before it reads or
    /// sends anything.
    pub fn validate(&self) -> Result<()> {
        if self.batch == 0 || self.batch_bytes == 0 {
            return Err(Error::invalid("batch", "must be at least 1"));
        }
        Ok(())
    }
}

impl ShardedHash {
    /// Imports `(field, value)` items with set-if-absent, in batches of
    /// `options.batch` items (or `options.batch_bytes` bytes), each one
    /// [`Batch`] (strict: one `put` script per shard touched; otherwise one
    /// `HSETNX` per item). Holds one batch in memory at a time, however long
    /// the iterator. Items that fail validation are counted as rejected at
    /// their 1-based position, not fatal; a strict shard that would
    /// overflow rejects its part of the batch. Any other error stops the
    /// import; the batches sent before it stay written.
    pub fn import<I, F, V>(&self, items: I, options: ImportOptions) -> Op<ImportReport>
    where
        I: IntoIterator<Item = (F, V)>,
        I::IntoIter: Send + 'static,
        F: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let numbered = (1u64..)
            .zip(items)
            .map(|(position, (field, value))| (position, field, value));
        self.import_numbered(numbered, options)
    }

    /// [`ShardedHash::import`] of `(position, field, value)` items: the
    /// caller numbers them (e.g. by line of a file, when it skips lines of
    /// its own), and rejections name those positions.
    pub fn import_numbered<I, F, V>(&self, items: I, options: ImportOptions) -> Op<ImportReport>
    where
        I: IntoIterator<Item = (u64, F, V)>,
        I::IntoIter: Send + 'static,
        F: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        if let Err(e) = options.validate() {
            return Op::fail(e);
        }
        self.claimed(Op::from_machine(Import {
            hash: self.clone(),
            items: items.into_iter(),
            options,
            report: ImportReport::default(),
            in_flight: Vec::new(),
            exhausted: false,
        }))
    }

    /// Validates one item: its shard, or why it is rejected.
    fn stage(&self, field: &[u8], value: &[u8]) -> std::result::Result<u64, RejectReason> {
        let shard = self
            .shard_of(field)
            .map_err(|e| RejectReason::BadField(e.to_string()))?;
        match self.check_pair(field, value).map_err(Error::into_kind) {
            Err(ErrorKind::ListpackValueTooLong { len, .. }) => {
                Err(RejectReason::ValueTooLong(len))
            }
            _ => Ok(shard),
        }
    }
}

/// The import's step machine: fill a batch from the iterator, send it,
/// settle its replies into the report, until the iterator is done.
struct Import<I> {
    hash: ShardedHash,
    items: I,
    options: ImportOptions,
    report: ImportReport,
    /// The positions each command of the batch in flight covers.
    in_flight: Vec<Vec<u64>>,
    exhausted: bool,
}

/// A validated item of the batch being filled.
struct Staged {
    position: u64,
    shard: u64,
    field: Vec<u8>,
    value: Vec<u8>,
}

impl<I, F, V> Import<I>
where
    I: Iterator<Item = (u64, F, V)>,
    F: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    /// Reads items until the batch is full or the iterator ends, and builds
    /// their commands (empty when no valid item was left).
    fn fill(&mut self) -> Batch {
        let mut staged: Vec<Staged> = Vec::with_capacity(self.options.batch.min(100_000));
        let mut bytes = 0usize;
        while staged.len() < self.options.batch && bytes < self.options.batch_bytes {
            let Some((position, field, value)) = self.items.next() else {
                self.exhausted = true;
                break;
            };
            self.report.items += 1;
            let (field, value) = (field.as_ref(), value.as_ref());
            match self.hash.stage(field, value) {
                Ok(shard) => {
                    bytes += field.len() + value.len();
                    staged.push(Staged {
                        position,
                        shard,
                        field: field.to_vec(),
                        value: value.to_vec(),
                    });
                }
                Err(reason) => self.report.reject(position, reason),
            }
        }
        let pairs: Vec<(&[u8], &[u8])> = staged
            .iter()
            .map(|s| (s.field.as_slice(), s.value.as_slice()))
            .collect();
        let shards: Vec<u64> = staged.iter().map(|s| s.shard).collect();
        let (batch, covers) = self.hash.writes(&pairs, &shards, true);
        self.in_flight = covers
            .into_iter()
            .map(|idx| idx.into_iter().map(|i| staged[i].position).collect())
            .collect();
        batch
    }

    /// Files the replies of the batch in flight: each command's inserted
    /// count, or its shard's items as rejected when the shard was full.
    fn settle(&mut self, replies: Replies) -> Result<()> {
        let in_flight = std::mem::take(&mut self.in_flight);
        if replies.len() != in_flight.len() {
            return Err(Error::short_reply());
        }
        let resent = replies.resent_each();
        for ((positions, reply), resent) in in_flight.iter().zip(replies.each::<i64>()).zip(resent)
        {
            match reply {
                Ok(inserted) => {
                    let inserted = inserted.max(0) as u64;
                    let rest = (positions.len() as u64).saturating_sub(inserted);
                    self.report.inserted += inserted;
                    if resent {
                        self.report.unknown += rest;
                    } else {
                        self.report.present += rest;
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::ShardFull { .. }) => {
                    for &p in positions {
                        self.report.reject(p, RejectReason::ShardFull);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl<I, F, V> Machine for Import<I>
where
    I: Iterator<Item = (u64, F, V)> + Send + 'static,
    F: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    type Output = ImportReport;

    fn step(&mut self, _: &Env, replies: Option<Replies>) -> Result<Step<ImportReport>> {
        if let Some(replies) = replies {
            self.settle(replies)?;
        }
        if !self.exhausted {
            let batch = self.fill();
            if !batch.is_empty() {
                return Ok(Step::Send(batch));
            }
        }
        Ok(Step::Done(std::mem::take(&mut self.report)))
    }
}
