//! Fixed-width records packed into sharded strings (`lua/packed/`).
//!
//! For dense integer ids (user ids), the PHP recipe stores a W-byte record
//! per id at byte offset `id × W` of a STRING, with `SETRANGE`/`GETRANGE` —
//! W bytes per id and no per-entry overhead at all. Done naively on one key,
//! an id near 2^32 makes Redis allocate a multi-GB string (and up to 512 MB
//! is accepted); so records are sharded over keys `base:<shard>` with
//! `shard = id / ids_per_shard`, `offset = (id % ids_per_shard) × W`, and a
//! configured maximum id is enforced before anything is sent
//! ([`ErrorKind::IdOutOfRange`]).
//!
//! Memory: Redis grows a string that `SETRANGE` extends greedily (doubling
//! below 1 MB), which would waste up to half the memory. With
//! [`Layout::Dense`] (the default) every write script first grows a shorter
//! shard to its full length in one exactly sized `SET`, so later writes never
//! reallocate; the default shard length is just under 64 KiB, a jemalloc size
//! class, so a dense shard costs its payload plus a few dozen bytes.
//! [`Layout::Sparse`] grows shards only as far as written (for sparse ids).
//!
//! Big shards and the server's limits: Redis checks `maxmemory` only before
//! a script starts, so every write script checks itself, before its first
//! write, that growing a shard by more than 64 KiB fits under `maxmemory`
//! (from `INFO memory`; the rule of [`ServerMemory::read`](crate::core::ServerMemory::read)), and
//! refuses with [`ErrorKind::NotEnoughMemory`] otherwise; and that the
//! shard's length is within the server's `proto-max-bulk-len` (a lower limit
//! would make a later `SETRANGE` of the same call fail after a write), with
//! [`ErrorKind::InvalidArgument`] from the script otherwise. Nothing is
//! written either way.
//!
//! [`PackedRecords::add_once`] adds once per request, as the sharded
//! hash's `incr_once` does: its result is kept under a request key in the
//! shard's slot, so a resend answers it without adding again. With
//! [`record_layout(true)`](PackedRecordsBuilder::record_layout) (as the
//! command line does) the store claims its width and shard length in
//! `<base>:meta` before its first write; [`PackedRecords::open`] reads
//! them back.
//!
//! Records never written read as all-zero bytes (the codec decides what that
//! means). [`PackedRecords::scan`] reads whole shards and decodes them
//! client-side, e.g. to count records per field value
//! ([`PackedRecords::count_by`]).
//!
//! Shard keys carry no common hash tag, so on Redis Cluster they spread over
//! the nodes; every script touches one shard key. Calls that touch several
//! shards ([`PackedRecords::get_many`], [`PackedRecords::set_many`]) are one
//! [`Batch`]: one pipeline on one server, one pipeline per node on a cluster
//! (one round trip either way, not one per shard). [`PackedRecords::scan`]
//! sends one such batch per [`PackedLayout::SCAN_BATCH_BYTES`] of shards, so that it never
//! holds more than that of the data at once.
//!
//! Every operation is an [`Op`]: run it with `.run(&mut con)` on a
//! [`Connection`](crate::Connection) or `.run_async(&con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection).
//!
//! ```no_run
//! use redis_patterns::prelude::*;
//! use redis_patterns::packed::{IntField, Le, PackedRecords};
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! // A 4-byte login counter per user id up to 10 million.
//! let logins = PackedRecords::new("logins", Le::<u32>::new(), 10_000_000)?;
//! let counter = IntField { offset: 0, size: 4, signed: false };
//! let n = logins.add(123_456, counter, 1).run(&mut con)?;
//! assert_eq!(logins.get(123_456).run(&mut con)?, n as u32);
//! logins.set_many(&[(1, 7), (2, 9)]).run(&mut con)?;
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let logins = PackedRecords::new("logins", Le::<u32>::new(), 10_000_000)?;
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let some: Vec<u32> = logins.get_many(&[1, 2, 123_456]).run_async(&con).await?;
//! // Users per login count, reading whole shards.
//! let per_count = logins.count_by(|n| (*n != 0).then_some(*n)).run_async(&con).await?;
//! # Ok(())
//! # }
//! ```

mod layout;

pub use layout::PackedLayout;

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::marker::PhantomData;
use std::ops::Range;

use redis::{FromRedisValue, Value};

use crate::core::request_id::request_args;
use crate::core::{Batch, Env, Machine, Op, Replies, RequestId, Step, setters};
use crate::error::{Error, ErrorKind, Result};
use crate::scripts;

mod contract;
pub(crate) use contract::contract;

/// The longest string Redis accepts (512 MiB; the `reserve` range of
/// `lua/packed/put.lua`'s header).
pub(crate) const MAX_SHARD_BYTES: u64 = scripts::packed::PUT_RESERVE_MAX as u64;

/// The default shard length target: 65,530 bytes, so that the shard's
/// allocation (5-byte header + NUL) is exactly one 64 KiB jemalloc class.
pub(crate) const DEFAULT_SHARD_BYTES: u64 = 65_530;

/// The value of [`PackedLayout::SCAN_BATCH_BYTES`].
pub(crate) const SCAN_BATCH_BYTES: u64 = 16 << 20;

impl PackedLayout {
    /// The most shard bytes one batch of [`PackedRecords::scan`] reads (16 MiB:
    /// 256 default shards); a shard longer than this is read alone.
    pub const SCAN_BATCH_BYTES: u64 = SCAN_BATCH_BYTES;
}

/// Encodes and decodes one fixed-width record. Codecs are cheap to clone:
/// operations carry one to decode their replies.
pub trait Codec: Clone + Send + 'static {
    /// The Rust type of one record.
    type Value: Send + 'static;
    /// The record width W in bytes (must be at least 1).
    fn width(&self) -> usize;
    /// Writes `value` into `out` (exactly `width()` bytes).
    fn encode(&self, value: &Self::Value, out: &mut [u8]) -> Result<()>;
    /// Reads a record from exactly `width()` bytes.
    fn decode(&self, bytes: &[u8]) -> Self::Value;
}

/// Records of exactly `N` bytes as `[u8; N]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByteArray<const N: usize>;

impl<const N: usize> Codec for ByteArray<N> {
    type Value = [u8; N];
    fn width(&self) -> usize {
        N
    }
    fn encode(&self, value: &[u8; N], out: &mut [u8]) -> Result<()> {
        out.copy_from_slice(value);
        Ok(())
    }
    fn decode(&self, bytes: &[u8]) -> [u8; N] {
        let mut v = [0u8; N];
        v.copy_from_slice(bytes);
        v
    }
}

/// Records of a width chosen at run time, as `Vec<u8>` of exactly that length.
#[derive(Debug, Clone, Copy)]
pub struct Bytes(pub usize);

impl Codec for Bytes {
    type Value = Vec<u8>;
    fn width(&self) -> usize {
        self.0
    }
    fn encode(&self, value: &Vec<u8>, out: &mut [u8]) -> Result<()> {
        if value.len() != self.0 {
            return Err(Error::invalid(
                "record",
                format!("is {} bytes, the width is {}", value.len(), self.0),
            ));
        }
        out.copy_from_slice(value);
        Ok(())
    }
    fn decode(&self, bytes: &[u8]) -> Vec<u8> {
        bytes.to_vec()
    }
}

/// A little-endian integer record (`Le::<u32>::new()` is 4 bytes per id).
#[derive(Debug, Clone, Copy)]
pub struct Le<T>(PhantomData<fn() -> T>);

impl<T> Le<T> {
    /// The little-endian codec of `T`.
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for Le<T> {
    fn default() -> Self {
        Self::new()
    }
}

macro_rules! le_codec {
    ($($t:ty),*) => {$(
        impl Codec for Le<$t> {
            type Value = $t;
            fn width(&self) -> usize {
                std::mem::size_of::<$t>()
            }
            fn encode(&self, value: &$t, out: &mut [u8]) -> Result<()> {
                out.copy_from_slice(&value.to_le_bytes());
                Ok(())
            }
            fn decode(&self, bytes: &[u8]) -> $t {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(bytes);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}
le_codec!(u8, u16, u32, u64, i8, i16, i32, i64);

/// How shards grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// The first write to a shard grows it to its full length in one exact
    /// allocation (best for dense ids: ~W bytes per id).
    #[default]
    Dense,
    /// Shards grow only as far as written (Redis over-allocates growing
    /// strings; best when few ids of each shard are used).
    Sparse,
}

/// Fixed-width records per integer id `0..=max_id`, packed into sharded
/// strings `base:<shard>`. Cheap to clone; holds no connection.
#[derive(Debug, Clone)]
pub struct PackedRecords<C> {
    base: String,
    codec: C,
    width: u64,
    ids_per_shard: u64,
    max_id: u64,
    layout: Layout,
    /// With a recorded layout: whether it was claimed yet.
    claim: crate::layout::Claim,
}

/// Builds [`PackedRecords`]: setters never fail, [`build`](Self::build)
/// checks.
#[derive(Debug, Clone)]
pub struct PackedRecordsBuilder<C> {
    base: String,
    codec: C,
    max_id: u64,
    ids_per_shard: Option<u64>,
    layout: Layout,
    record_layout: bool,
}

/// An integer field inside a record, for [`PackedRecords::add`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntField {
    /// Byte offset of the field within the record.
    pub offset: usize,
    /// Width in bytes, 1 to 6 (little-endian).
    pub size: usize,
    /// Two's complement (true) or unsigned.
    pub signed: bool,
}

impl IntField {
    /// Checks that the field is 1 to 6 bytes and lies inside a record of
    /// `width` bytes (what [`PackedRecords::add`] refuses otherwise).
    pub fn check(&self, width: u64) -> Result<()> {
        if !(1..=6).contains(&self.size) {
            return Err(Error::invalid("field size", "must be 1 to 6 bytes"));
        }
        if self.offset as u64 + self.size as u64 > width {
            return Err(Error::invalid(
                "field",
                format!(
                    "bytes {}..{} lie outside the {width}-byte record",
                    self.offset,
                    self.offset + self.size
                ),
            ));
        }
        Ok(())
    }

    /// The field's value in `record` (little-endian; two's complement when
    /// signed), e.g. as the key of [`PackedRecords::count_by`]. `None` when
    /// the record is too short to hold it (see [`IntField::check`]).
    pub fn read(&self, record: &[u8]) -> Option<i64> {
        let bytes = record.get(self.offset..self.offset.checked_add(self.size)?)?;
        let mut v: u64 = 0;
        for (i, b) in bytes.iter().enumerate() {
            v |= u64::from(*b) << (8 * i);
        }
        let bits = 8 * bytes.len() as u32;
        if self.signed && (1..64).contains(&bits) && v >> (bits - 1) == 1 {
            v |= u64::MAX << bits;
        }
        Some(v as i64)
    }
}

impl<C: Codec> PackedRecordsBuilder<C> {
    setters! {
        /// The number of ids per shard (shard length = ids × W, at most
        /// 512 MiB). Default: as many as fit in 65530 bytes (at
        /// least one).
        ids_per_shard(ids_per_shard: u64) => ids_per_shard = Some(ids_per_shard);

        /// How shards grow (default [`Layout::Dense`]).
        layout(layout: Layout) => layout;

        /// Record the layout (width, ids per shard) with the data (default:
        /// no): the first write stores it in the meta key `<base>:meta`, or is
        /// refused with [`ErrorKind::LayoutMismatch`] when another one is stored.
        record_layout(record: bool) => record_layout;
    }

    /// Checks the settings.
    pub fn build(self) -> Result<PackedRecords<C>> {
        if self.base.is_empty() {
            return Err(Error::invalid("base", "must not be empty"));
        }
        let width = self.codec.width() as u64;
        if width == 0 {
            return Err(Error::invalid("width", "must be at least 1 byte"));
        }
        if width > MAX_SHARD_BYTES {
            return Err(Error::invalid(
                "width",
                format!("must be at most {MAX_SHARD_BYTES} bytes"),
            ));
        }
        let ids_per_shard = self
            .ids_per_shard
            .unwrap_or((DEFAULT_SHARD_BYTES / width).max(1));
        if ids_per_shard == 0 {
            return Err(Error::invalid("ids per shard", "must be at least 1"));
        }
        if ids_per_shard.saturating_mul(width) > MAX_SHARD_BYTES {
            return Err(Error::invalid(
                "ids per shard",
                format!(
                    "{ids_per_shard} records of {width} bytes exceed the {MAX_SHARD_BYTES}-byte string limit"
                ),
            ));
        }
        Ok(PackedRecords {
            base: self.base,
            codec: self.codec,
            width,
            ids_per_shard,
            max_id: self.max_id,
            layout: self.layout,
            claim: crate::layout::Claim::new(self.record_layout),
        })
    }
}

impl<C: Codec> PackedRecords<C> {
    /// A builder for records of `codec` for ids `0..=max_id` under `base`.
    pub fn builder(base: &str, codec: C, max_id: u64) -> PackedRecordsBuilder<C> {
        PackedRecordsBuilder {
            base: base.to_string(),
            codec,
            max_id,
            ids_per_shard: None,
            layout: Layout::Dense,
            record_layout: false,
        }
    }

    /// Records of `codec` for ids `0..=max_id` under `base`, with the
    /// default shard length (just under 64 KiB) and [`Layout::Dense`].
    pub fn new(base: &str, codec: C, max_id: u64) -> Result<Self> {
        Self::builder(base, codec, max_id).build()
    }

    /// The records' name: shard keys are `<base>:<shard>`.
    pub fn base(&self) -> &str {
        &self.base
    }
    /// The codec of the records.
    pub fn codec(&self) -> &C {
        &self.codec
    }
    /// The record width W.
    pub fn width(&self) -> usize {
        self.width as usize
    }
    /// Consecutive ids per shard string.
    pub fn ids_per_shard(&self) -> u64 {
        self.ids_per_shard
    }
    /// The largest id.
    pub fn max_id(&self) -> u64 {
        self.max_id
    }
    /// Dense (shards written whole before their first record) or sparse.
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// The number of shard keys ids `0..=max_id` use.
    pub fn shards(&self) -> u64 {
        self.max_id / self.ids_per_shard + 1
    }
    /// The full length of one shard in bytes.
    pub fn shard_bytes(&self) -> u64 {
        self.ids_per_shard * self.width
    }

    /// The key of shard `shard`: `base:<shard>`.
    pub fn key_of_shard(&self, shard: u64) -> String {
        format!("{}:{shard}", self.base)
    }

    /// `(shard key, byte offset)` of an id, or [`ErrorKind::IdOutOfRange`].
    pub fn locate(&self, id: u64) -> Result<(String, u64)> {
        if id > self.max_id {
            return Err(ErrorKind::IdOutOfRange {
                id,
                max: self.max_id,
            }
            .into());
        }
        Ok((
            self.key_of_shard(id / self.ids_per_shard),
            (id % self.ids_per_shard) * self.width,
        ))
    }

    fn reserve(&self) -> i64 {
        match self.layout {
            Layout::Dense => self.shard_bytes() as i64,
            Layout::Sparse => 0,
        }
    }

    fn encode(&self, value: &C::Value) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.width as usize];
        self.codec.encode(value, &mut out)?;
        Ok(out)
    }

    fn decode_padded(&self, mut bytes: Vec<u8>) -> C::Value {
        bytes.resize(self.width as usize, 0);
        self.codec.decode(&bytes)
    }

    /// `GETRANGE` of the record of `id`, and its key.
    fn get_cmd(&self, id: u64) -> Result<(String, redis::Cmd)> {
        let (key, off) = self.locate(id)?;
        let mut cmd = redis::cmd("GETRANGE");
        cmd.arg(&key).arg(off).arg(off + self.width - 1);
        Ok((key, cmd))
    }

    /// The record of `id` (all-zero bytes decoded when never written).
    pub fn get(&self, id: u64) -> Op<C::Value> {
        let (key, cmd) = match self.get_cmd(id) {
            Ok(c) => c,
            Err(e) => return Op::fail(e),
        };
        let this = self.clone();
        Op::<Vec<u8>>::cmd(key, cmd).map(move |bytes| this.decode_padded(bytes))
    }

    /// The records of many ids, in the order asked: one `GETRANGE` each, all
    /// in one batch.
    pub fn get_many(&self, ids: &[u64]) -> Op<Vec<C::Value>> {
        let mut batch = Batch::with_capacity(ids.len());
        for &id in ids {
            match self.get_cmd(id) {
                Ok((key, cmd)) => batch.add(key, cmd),
                Err(e) => return Op::fail(e),
            };
        }
        let this = self.clone();
        Op::send(batch, move |replies| {
            Ok(replies
                .all::<Vec<u8>>()?
                .into_iter()
                .map(|b| this.decode_padded(b))
                .collect())
        })
    }

    /// Writes the record of `id` (one script call: reserve, `SETRANGE`).
    pub fn set(&self, id: u64, value: &C::Value) -> Op<()> {
        self.set_many(std::slice::from_ref(&(id, value)))
    }

    /// Writes many records: one script call per shard touched (atomic per
    /// shard), all in one batch. Everything is validated and encoded before
    /// anything is sent.
    pub fn set_many<V: std::borrow::Borrow<C::Value>>(&self, items: &[(u64, V)]) -> Op<()> {
        let mut by_shard: BTreeMap<u64, Vec<Vec<u8>>> = BTreeMap::new();
        for (id, value) in items {
            let encoded = self
                .locate(*id)
                .and_then(|(_, off)| Ok((off, self.encode(value.borrow())?)));
            let (off, bytes) = match encoded {
                Ok(e) => e,
                Err(e) => return Op::fail(e),
            };
            let list = by_shard.entry(id / self.ids_per_shard).or_default();
            list.push(off.to_string().into_bytes());
            list.push(bytes);
        }
        let mut batch = Batch::with_capacity(by_shard.len());
        for (shard, list) in &by_shard {
            batch.script(scripts::packed::put(
                &self.key_of_shard(*shard),
                self.reserve(),
                list,
            ));
        }
        self.claimed(Op::send(batch, |replies| replies.all::<i64>().map(|_| ())))
    }

    /// Read-modify-write of one record in one script: adds `delta` to an
    /// integer field inside the record of `id` and returns the new value;
    /// [`ErrorKind::Overflow`] (record unchanged) when it would leave the
    /// field's range.
    ///
    /// Not idempotent: when the connection is lost after the request was
    /// written, the call fails with [`ErrorKind::OutcomeUnknown`] instead of
    /// being sent again (it may have added `delta` already).
    /// [`PackedRecords::add_once`] can be resent.
    pub fn add(&self, id: u64, field: IntField, delta: i64) -> Op<i64> {
        self.add_script(id, field, delta, None)
    }

    /// [`PackedRecords::add`] at most once per `request`: the script keeps
    /// the result under the request's key (in the shard's slot) for the
    /// request's time to live, and a call with the same request returns it
    /// without adding again, so the connection resends it after a lost
    /// connection. A request names one call.
    pub fn add_once(&self, id: u64, field: IntField, delta: i64, request: &RequestId) -> Op<i64> {
        self.add_script(id, field, delta, Some(request))
    }

    fn add_script(
        &self,
        id: u64,
        field: IntField,
        delta: i64,
        request: Option<&RequestId>,
    ) -> Op<i64> {
        if let Err(e) = field.check(self.width) {
            return Op::fail(e);
        }
        if delta.unsigned_abs() > 1 << 53 {
            return Op::fail(Error::invalid("delta", "must be within +-2^53"));
        }
        let located = self
            .locate(id)
            .and_then(|(key, off)| Ok((request_args(&key, request)?, key, off)));
        let ((request_key, request_ttl), key, off) = match located {
            Ok(l) => l,
            Err(e) => return Op::fail(e),
        };
        self.claimed(Op::script(scripts::packed::add(
            &key,
            &request_key,
            self.reserve(),
            (off + field.offset as u64) as i64,
            field.size as i64,
            field.signed,
            delta,
            request_ttl,
        )))
    }

    /// Compare-and-set of one record in one script: writes `new` only if the
    /// record still equals `expected`. `Ok(())` when written, `Err(current)`
    /// when it held something else.
    pub fn compare_and_set(
        &self,
        id: u64,
        expected: &C::Value,
        new: &C::Value,
    ) -> Op<std::result::Result<(), C::Value>> {
        let prepared = self
            .locate(id)
            .and_then(|(key, off)| Ok((key, off, self.encode(expected)?, self.encode(new)?)));
        let (key, off, exp, new) = match prepared {
            Ok(p) => p,
            Err(e) => return Op::fail(e),
        };
        let this = self.clone();
        let swap = Op::script(scripts::packed::swap(
            &key,
            self.reserve(),
            off as i64,
            &exp,
            &new,
        ));
        self.claimed(swap).try_map(move |reply: Value| {
            let (done, current): (i64, Vec<u8>) = FromRedisValue::from_redis_value(reply)
                .map_err(|e| Error::from(redis::RedisError::from(e)))?;
            Ok(if done == 1 {
                Ok(())
            } else {
                Err(this.decode_padded(current))
            })
        })
    }

    /// Reads every shard of ids `0..=max_id` whole (`GET`; one batch per
    /// [`PackedLayout::SCAN_BATCH_BYTES`] of shards) and folds every stored record into
    /// `state` with `f(&mut state, id, record)`, in id order: ids beyond a
    /// shard's length and missing shards are skipped; stored but never
    /// written records decode from zero bytes. Returns the final state.
    pub fn scan<S, F>(&self, state: S, f: F) -> Op<S>
    where
        S: Send + 'static,
        F: FnMut(&mut S, u64, C::Value) + Send + 'static,
    {
        Op::from_machine(Scan {
            per_batch: (SCAN_BATCH_BYTES / self.shard_bytes()).max(1),
            records: self.clone(),
            next: 0,
            in_flight: 0..0,
            state: Some(state),
            f,
        })
    }

    /// Counts stored records per `key(record)`, skipping records for which
    /// it returns `None` (e.g. all-zero, never written ones).
    pub fn count_by<K, F>(&self, mut key: F) -> Op<HashMap<K, u64>>
    where
        K: Hash + Eq + Send + 'static,
        F: FnMut(&C::Value) -> Option<K> + Send + 'static,
    {
        self.scan(HashMap::new(), move |counts, _, v| {
            if let Some(k) = key(&v) {
                *counts.entry(k).or_insert(0) += 1;
            }
        })
    }
}

/// The scan's step machine: one batch of `GET`s per `per_batch` shards,
/// each folded into the state when its replies come back.
struct Scan<C, S, F> {
    records: PackedRecords<C>,
    per_batch: u64,
    /// The first shard not asked for yet.
    next: u64,
    /// The shards of the batch in flight.
    in_flight: Range<u64>,
    state: Option<S>,
    f: F,
}

impl<C, S, F> Scan<C, S, F>
where
    C: Codec,
    F: FnMut(&mut S, u64, C::Value),
{
    fn fold(&mut self, replies: Replies) -> Result<()> {
        let shards = std::mem::replace(&mut self.in_flight, 0..0);
        let state = self.state.as_mut().expect("folded before the end");
        let records = &self.records;
        let w = records.width as usize;
        for (s, bytes) in shards.zip(replies.all::<Option<Vec<u8>>>()?) {
            let Some(bytes) = bytes else { continue };
            let first = s * records.ids_per_shard;
            for (i, rec) in bytes.chunks_exact(w).enumerate() {
                let id = first + i as u64;
                if id > records.max_id {
                    break;
                }
                (self.f)(state, id, records.codec.decode(rec));
            }
        }
        Ok(())
    }
}

impl<C, S, F> Machine for Scan<C, S, F>
where
    C: Codec,
    S: Send + 'static,
    F: FnMut(&mut S, u64, C::Value) + Send + 'static,
{
    type Output = S;

    fn step(&mut self, _: &Env, replies: Option<Replies>) -> Result<Step<S>> {
        if let Some(replies) = replies {
            self.fold(replies)?;
        }
        let shards = self.records.shards();
        if self.next >= shards {
            return Ok(Step::Done(self.state.take().expect("done once")));
        }
        let end = self.next.saturating_add(self.per_batch).min(shards);
        let mut batch = Batch::with_capacity((end - self.next) as usize);
        for s in self.next..end {
            let key = self.records.key_of_shard(s);
            let mut cmd = redis::cmd("GET");
            cmd.arg(&key);
            batch.add(key, cmd);
        }
        self.in_flight = self.next..end;
        self.next = end;
        Ok(Step::Send(batch))
    }
}
