//! Fixed-width records packed into sharded strings (`lua/packed/`).
//!
//! The seed's §4 idea: for dense integer ids (user ids), store a W-byte record
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
//! Records never written read as all-zero bytes (the codec decides what that
//! means). [`PackedRecords::scan`] reads whole shards and decodes them
//! client-side, e.g. to count records per field value
//! ([`PackedRecords::count_by`]).
//!
//! Shard keys carry no common hash tag, so on Redis Cluster they spread over
//! the nodes; every script touches one shard key. Calls that touch several
//! shards ([`PackedRecords::get_many`], [`PackedRecords::set_many`],
//! [`PackedRecords::scan`]) are one pipeline on one server
//! ([`Topology::Standalone`], the default); on a cluster pass
//! [`Topology::Cluster`] ([`PackedRecords::topology`], or
//! [`Topology::detect`]) and they go as one pipeline per hash slot (about one
//! round trip per shard touched), or one command at a time on redis-rs's
//! sync `ClusterConnection`, which cannot pipeline.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::marker::PhantomData;

use redis::{ConnectionLike, FromRedisValue, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::fanout::Batch;
pub use crate::fanout::Topology;
use crate::script::ScriptPipeline;
use crate::scripts;

/// The longest string Redis accepts (512 MiB; the `reserve` range of
/// `lua/packed/put.lua`'s header).
pub const MAX_SHARD_BYTES: u64 = scripts::packed::PUT_RESERVE_MAX as u64;

/// The default shard length target: 65,530 bytes, so that the shard's
/// allocation (5-byte header + NUL) is exactly one 64 KiB jemalloc class.
pub const DEFAULT_SHARD_BYTES: u64 = 65_530;

/// Encodes and decodes one fixed-width record.
pub trait Codec {
    /// The Rust type of one record.
    type Value;
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
    topology: Topology,
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

impl<C: Codec> PackedRecords<C> {
    /// Records of `codec` for ids `0..=max_id` under `base`, with the
    /// default shard length (just under 64 KiB) and [`Layout::Dense`].
    pub fn new(base: &str, codec: C, max_id: u64) -> Result<Self> {
        if base.is_empty() {
            return Err(Error::invalid("base", "must not be empty"));
        }
        let width = codec.width() as u64;
        if width == 0 {
            return Err(Error::invalid("width", "must be at least 1 byte"));
        }
        if width > MAX_SHARD_BYTES {
            return Err(Error::invalid(
                "width",
                format!("must be at most {MAX_SHARD_BYTES} bytes"),
            ));
        }
        Ok(Self {
            base: base.to_string(),
            codec,
            width,
            ids_per_shard: (DEFAULT_SHARD_BYTES / width).max(1),
            max_id,
            layout: Layout::Dense,
            topology: Topology::Standalone,
        })
    }

    /// Sets the number of ids per shard (shard length = ids × W, at most 512 MiB).
    pub fn with_ids_per_shard(mut self, ids_per_shard: u64) -> Result<Self> {
        if ids_per_shard == 0 {
            return Err(Error::invalid("ids per shard", "must be at least 1"));
        }
        if ids_per_shard.saturating_mul(self.width) > MAX_SHARD_BYTES {
            return Err(Error::invalid(
                "ids per shard",
                format!(
                    "{ids_per_shard} records of {} bytes exceed the {MAX_SHARD_BYTES}-byte string limit",
                    self.width
                ),
            ));
        }
        self.ids_per_shard = ids_per_shard;
        Ok(self)
    }

    /// Sets how shards grow.
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// Sets how calls that touch several shards are sent: on Redis Cluster
    /// pass [`Topology::Cluster`] (or [`Topology::detect`]'s answer) so they
    /// go as one pipeline per hash slot. Default [`Topology::Standalone`]:
    /// one pipeline.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = topology;
        self
    }

    pub fn base(&self) -> &str {
        &self.base
    }
    pub fn codec(&self) -> &C {
        &self.codec
    }
    /// The record width W.
    pub fn width(&self) -> usize {
        self.width as usize
    }
    pub fn ids_per_shard(&self) -> u64 {
        self.ids_per_shard
    }
    pub fn max_id(&self) -> u64 {
        self.max_id
    }
    /// The number of shard keys ids `0..=max_id` use.
    pub fn shard_count(&self) -> u64 {
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
            return Err(Error::from(ErrorKind::IdOutOfRange {
                id,
                max: self.max_id,
            }));
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

    /// The record of `id` (all-zero bytes decoded when never written).
    pub fn get(&self, con: &mut dyn ConnectionLike, id: u64) -> Result<C::Value> {
        let (key, off) = self.locate(id)?;
        let bytes: Vec<u8> = redis::cmd("GETRANGE")
            .arg(&key)
            .arg(off)
            .arg(off + self.width - 1)
            .query(con)?;
        Ok(self.decode_padded(bytes))
    }

    /// The records of many ids, in the order asked: one `GETRANGE` each, all
    /// in one round trip on one server (per slot on a cluster, see
    /// [`PackedRecords::topology`]).
    pub fn get_many(&self, con: &mut dyn ConnectionLike, ids: &[u64]) -> Result<Vec<C::Value>> {
        let mut batch = Batch::new();
        for &id in ids {
            let (key, off) = self.locate(id)?;
            let mut cmd = redis::cmd("GETRANGE");
            cmd.arg(&key).arg(off).arg(off + self.width - 1);
            batch.add(&key, cmd);
        }
        let replies: Vec<Vec<u8>> = batch.query(con, self.topology)?;
        Ok(replies.into_iter().map(|b| self.decode_padded(b)).collect())
    }

    /// Writes the record of `id` (one script call: reserve, `SETRANGE`).
    pub fn set(&self, con: &mut dyn ConnectionLike, id: u64, value: &C::Value) -> Result<()> {
        let (key, off) = self.locate(id)?;
        let bytes = self.encode(value)?;
        let off = off.to_string();
        scripts::packed::put(&key, self.reserve(), &[off.as_bytes(), &bytes])?.invoke(con)?;
        Ok(())
    }

    /// Writes many records: one script call per shard touched (atomic per
    /// shard), all in one round trip on one server (per slot on a cluster).
    /// Everything is validated and encoded before anything is sent.
    pub fn set_many(&self, con: &mut dyn ConnectionLike, items: &[(u64, C::Value)]) -> Result<()> {
        let mut by_shard: BTreeMap<u64, Vec<Vec<u8>>> = BTreeMap::new();
        for (id, value) in items {
            let (_, off) = self.locate(*id)?;
            let bytes = self.encode(value)?;
            let list = by_shard.entry(id / self.ids_per_shard).or_default();
            list.push(off.to_string().into_bytes());
            list.push(bytes);
        }
        if by_shard.is_empty() {
            return Ok(());
        }
        let mut pipe = ScriptPipeline::new();
        pipe.topology(self.topology);
        for (shard, list) in &by_shard {
            pipe.push(scripts::packed::put(
                &self.key_of_shard(*shard),
                self.reserve(),
                list,
            )?);
        }
        let _: Vec<i64> = pipe.query(con)?;
        Ok(())
    }

    /// Read-modify-write of one record in one script: adds `delta` to an
    /// integer field inside the record of `id` and returns the new value;
    /// [`ErrorKind::Overflow`] (record unchanged) when it would leave the field's
    /// range.
    pub fn add(
        &self,
        con: &mut dyn ConnectionLike,
        id: u64,
        field: IntField,
        delta: i64,
    ) -> Result<i64> {
        if !(1..=6).contains(&field.size) {
            return Err(Error::invalid("field size", "must be 1 to 6 bytes"));
        }
        if field.offset as u64 + field.size as u64 > self.width {
            return Err(Error::invalid(
                "field",
                format!(
                    "bytes {}..{} lie outside the {}-byte record",
                    field.offset,
                    field.offset + field.size,
                    self.width
                ),
            ));
        }
        if delta.unsigned_abs() > 1 << 53 {
            return Err(Error::invalid("delta", "must be within +-2^53"));
        }
        let (key, off) = self.locate(id)?;
        scripts::packed::add(
            &key,
            self.reserve(),
            (off + field.offset as u64) as i64,
            field.size as i64,
            field.signed,
            delta,
        )?
        .invoke(con)
    }

    /// Compare-and-set of one record in one script: writes `new` only if the
    /// record still equals `expected`. `Ok(Ok(()))` when written,
    /// `Ok(Err(current))` when it held something else.
    pub fn compare_and_set(
        &self,
        con: &mut dyn ConnectionLike,
        id: u64,
        expected: &C::Value,
        new: &C::Value,
    ) -> Result<std::result::Result<(), C::Value>> {
        let (key, off) = self.locate(id)?;
        let (exp, new) = (self.encode(expected)?, self.encode(new)?);
        let reply =
            scripts::packed::swap(&key, self.reserve(), off as i64, &exp, &new)?.invoke(con)?;
        let (done, current): (i64, Vec<u8>) =
            FromRedisValue::from_redis_value(reply).map_err(redis::RedisError::from)?;
        if done == 1 {
            Ok(Ok(()))
        } else {
            Ok(Err(self.decode_padded(current)))
        }
    }

    /// Reads every shard of ids `0..=max_id` whole (`GET`, pipelined 16 at a
    /// time on one server; per slot on a cluster) and calls `f(id, record)`
    /// for every record stored: ids beyond a shard's length and missing
    /// shards are skipped; stored but never written records decode from zero
    /// bytes.
    pub fn scan(
        &self,
        con: &mut dyn ConnectionLike,
        mut f: impl FnMut(u64, C::Value),
    ) -> Result<()> {
        let shards = self.shard_count();
        let w = self.width as usize;
        let mut start = 0;
        while start < shards {
            let end = (start + 16).min(shards);
            let mut batch = Batch::new();
            for s in start..end {
                let key = self.key_of_shard(s);
                let mut cmd = redis::cmd("GET");
                cmd.arg(&key);
                batch.add(&key, cmd);
            }
            let replies: Vec<Value> = batch.query(con, self.topology)?;
            for (s, reply) in (start..end).zip(replies) {
                let Some(bytes) =
                    Option::<Vec<u8>>::from_redis_value(reply).map_err(redis::RedisError::from)?
                else {
                    continue;
                };
                let first = s * self.ids_per_shard;
                for (i, rec) in bytes.chunks_exact(w).enumerate() {
                    let id = first + i as u64;
                    if id > self.max_id {
                        break;
                    }
                    f(id, self.codec.decode(rec));
                }
            }
            start = end;
        }
        Ok(())
    }

    /// Counts stored records per `key(record)`, skipping records for which
    /// it returns `None` (e.g. all-zero, never written ones).
    pub fn count_by<K: Hash + Eq>(
        &self,
        con: &mut dyn ConnectionLike,
        mut key: impl FnMut(&C::Value) -> Option<K>,
    ) -> Result<HashMap<K, u64>> {
        let mut counts = HashMap::new();
        self.scan(con, |_, v| {
            if let Some(k) = key(&v) {
                *counts.entry(k).or_insert(0) += 1;
            }
        })?;
        Ok(counts)
    }
}
