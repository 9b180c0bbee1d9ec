//! A rolling sharded store: the newest records of one logical key, split into
//! shards of `shard_size` fields, at most a fixed number of shards, each shard
//! expiring `ttl` after its last write (`lua/rolling/`).
//!
//! The seed (a Java class storing merchant transactions) kept a routing set of
//! shard names and, for every add, ran `SMEMBERS`, sorted the names on the
//! client, `HLEN`ed the newest shard and then sent `SADD`, `EXPIRE`, `HSET`
//! and `EXPIRE` as separate round trips: an add cost O(shards), two writers
//! could both open shard N+1 or overfill a shard, eviction raced with writers,
//! and the name comparator overflowed (`(int)(longX - longY)`). Here an add is
//! **one script call whose cost does not depend on the number of shards**.
//!
//! # Layout
//!
//! For the logical key `k` and the default prefix `redis:rolling:`:
//!
//! * `redis:rolling:{k}` — the index (meta) hash: `head` (ring slot being
//!   filled), `gen` (generation of the head shard: 0 for the first shard, +1
//!   per rotation), `shards` and `shard_size` (the layout, checked by every
//!   script). Its TTL is `ttl + index_margin` (60 s by default, like the seed's
//!   `EXPIRE_ADD`), reset on every add, so it outlives every shard.
//! * `redis:rolling:{k}:<i>` for `i` in `0..shards` — shard hashes, field →
//!   the record as JSON (like the seed's `JSON.toJSONString(value)`).
//! * `redis:rolling:{k}:<i>:order` — the shard's fields in insertion order
//!   (a hash bigger than `hash-max-listpack-entries` forgets its order;
//!   [`RollingStore::recent`] needs it).
//!
//! The ring has `shards = ceil(limit / shard_size) + 1` slots, fixed by the
//! configuration. Slots fill in ring order; when the head shard is full the
//! add moves the head to the next slot, which holds the oldest shard, deletes
//! that shard and writes there. So the store always keeps at least the newest
//! `limit` records it was given (until they expire) and never more than
//! `shards * shard_size` fields — `limit + shard_size` when `limit` is a
//! multiple of `shard_size`. Every key of `k` carries the hash tag `{k}`: one
//! logical key lives in one Redis Cluster slot, different keys spread.
//!
//! # Why an add is O(1) in the number of shards
//!
//! Lua never builds key names, so the script can only touch keys the client
//! passes. Passing the whole ring on every add would make each call
//! O(shards) (the server parses and converts every key into the `KEYS`
//! table: with 1,001 shards that is 2,003 keys per add). But an add touches at
//! most two ring slots: the head, and the slot after it when the head is
//! full. The client does not know the head — it lives on the server — so it
//! **guesses** it from a small cache of the head each earlier reply reported,
//! and passes the meta key plus the (hash, order) keys of the guessed head and
//! the slot after it: 5 keys, whatever the ring size. The script reads the
//! real head from the meta hash; if it is not among the slots passed (another
//! writer rotated twice meanwhile, or the cache had no entry), it writes
//! nothing and answers the real head, and the client sends the call again
//! from that head with a wider window (4, then 16 slots: other writers may be
//! rotating right now). A miss costs one extra round trip of a script that
//! only read one hash; the write itself is always one atomic script call.
//! After three misses in a row (only seen with tiny shards under heavy
//! contention) the client passes the whole ring once, which cannot miss. The cache is a fixed array of 1,024 entries
//! indexed by a hash of the logical key (a collision only costs a miss), shared
//! by clones of the store. `benches/rolling.rs` measures the result: flat
//! adds/s from 10 to 1,000 shards.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::ConnectionLike;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, ErrorKind, Result};
use crate::keys;
use crate::script::ScriptCall;
use crate::scripts;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "redis:rolling:";

/// The default time the index outlives the shards (the seed's `EXPIRE_ADD`).
pub const DEFAULT_INDEX_MARGIN: Duration = Duration::from_secs(60);

/// The largest ring: reads pass every slot's keys, so the ring must stay a
/// sensible number of keys.
pub const MAX_SHARDS: u64 = 65_536;

/// The longest TTL the scripts accept, in milliseconds (the `ttl_ms` range
/// of `lua/rolling/add.lua`'s header).
pub const MAX_TTL_MS: u64 = scripts::rolling::ADD_TTL_MS_MAX as u64;

/// Ring slots passed per attempt, from the guessed head on: first the head
/// and the slot after it; after a miss (other writers are rotating the ring
/// right now) a wider window, since the head may move on again before the
/// retry arrives; then the whole ring, which cannot miss.
const WINDOWS: [u32; 3] = [2, 4, 16];
const WINDOW_ATTEMPTS: u32 = WINDOWS.len() as u32;

/// What one [`RollingStore::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    /// The ring slot the record was written to (0 to `shards - 1`).
    pub slot: u32,
    /// The generation of that shard: 0 for the store's first shard, +1 each
    /// time the head moved on. Records of older generations are older.
    pub generation: u64,
    /// The field already existed in the head shard and its value was replaced
    /// (it moves to the newest position; the shard does not grow).
    pub replaced: bool,
    /// Records deleted with the oldest shard when this add moved the head on.
    pub evicted: u64,
    /// Calls that found the head elsewhere than guessed and wrote nothing
    /// before the one that wrote (0 in the common case).
    pub misses: u32,
}

/// A fixed-size cache of the ring head per logical key: `(tag << 32) | head`,
/// 0 = empty. Lossy by design; a wrong guess only costs one extra call.
#[derive(Debug)]
struct HeadCache {
    slots: Box<[AtomicU64]>,
}

const HEAD_CACHE_SLOTS: usize = 1024;

impl HeadCache {
    fn new() -> Self {
        Self {
            slots: (0..HEAD_CACHE_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn locate(key: &str) -> (usize, u64) {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let h = h.finish();
        // A non-zero tag, so that an empty entry never matches.
        ((h as usize) % HEAD_CACHE_SLOTS, (h >> 32) | 1)
    }

    fn guess(&self, key: &str) -> u32 {
        let (i, tag) = Self::locate(key);
        let v = self.slots[i].load(Ordering::Relaxed);
        if v >> 32 == tag { v as u32 } else { 0 }
    }

    fn store(&self, key: &str, head: u32) {
        let (i, tag) = Self::locate(key);
        self.slots[i].store((tag << 32) | head as u64, Ordering::Relaxed);
    }
}

/// A rolling sharded store configuration: limit, shard size, TTLs and key
/// prefix. Holds no connection; one store serves any number of logical keys.
/// Cheap to clone (clones share the head cache).
#[derive(Debug, Clone)]
pub struct RollingStore {
    prefix: String,
    limit: u64,
    shard_size: u64,
    shards: u32,
    ttl_ms: u64,
    index_margin_ms: u64,
    heads: Arc<HeadCache>,
}

/// The keys of one logical key.
struct Ring {
    meta: String,
}

impl Ring {
    fn hash(&self, slot: u32) -> String {
        format!("{}:{slot}", self.meta)
    }
    fn order(&self, slot: u32) -> String {
        format!("{}:{slot}:order", self.meta)
    }
}

fn millis(what: &'static str, d: Duration, min: u64) -> Result<u64> {
    let ms = d.as_millis();
    if ms < min as u128 {
        return Err(Error::invalid(what, format!("must be at least {min} ms")));
    }
    if ms > MAX_TTL_MS as u128 {
        return Err(Error::invalid(
            what,
            format!("must be at most {MAX_TTL_MS} ms"),
        ));
    }
    Ok(ms as u64)
}

fn check_field(field: &str) -> Result<()> {
    if field.is_empty() {
        return Err(Error::invalid("field", "must not be empty"));
    }
    Ok(())
}

/// The reply of `rolling.add`.
enum AddReply {
    Written(Added),
    Miss { head: u32 },
}

impl RollingStore {
    /// A store keeping the newest `limit` records per logical key in shards of
    /// `shard_size`, each shard expiring `ttl` after its last write, with the
    /// default prefix `redis:rolling:` and index margin of 60 s.
    ///
    /// Like the seed: `ttl` at least 1 (ms here), `shard_size` at least 1,
    /// `limit` at least `shard_size`; also at most [`MAX_SHARDS`] ring slots.
    pub fn new(limit: u64, shard_size: u64, ttl: Duration) -> Result<Self> {
        Self::with_prefix(DEFAULT_PREFIX, limit, shard_size, ttl)
    }

    /// Like [`RollingStore::new`] with another key prefix.
    pub fn with_prefix(prefix: &str, limit: u64, shard_size: u64, ttl: Duration) -> Result<Self> {
        crate::keys::check_prefix(prefix)?;
        if shard_size < 1 {
            return Err(Error::invalid("shard_size", "must be at least 1"));
        }
        if limit < shard_size {
            return Err(Error::invalid(
                "limit",
                format!("must be at least shard_size ({shard_size}), got {limit}"),
            ));
        }
        let shards = limit.div_ceil(shard_size) + 1;
        if shards > MAX_SHARDS {
            return Err(Error::invalid(
                "limit",
                format!(
                    "limit / shard_size gives {shards} shards, at most {MAX_SHARDS} are allowed"
                ),
            ));
        }
        let ttl_ms = millis("ttl", ttl, 1)?;
        let index_margin_ms = DEFAULT_INDEX_MARGIN.as_millis() as u64;
        if ttl_ms + index_margin_ms > MAX_TTL_MS {
            return Err(Error::invalid(
                "ttl",
                format!("ttl plus the index margin must be at most {MAX_TTL_MS} ms"),
            ));
        }
        Ok(Self {
            prefix: prefix.to_string(),
            limit,
            shard_size,
            shards: shards as u32,
            ttl_ms,
            index_margin_ms,
            heads: Arc::new(HeadCache::new()),
        })
    }

    /// Sets how much longer than the shards the index lives (default 60 s).
    pub fn index_margin(mut self, margin: Duration) -> Result<Self> {
        let ms = millis("index margin", margin, 0)?;
        if self.ttl_ms + ms > MAX_TTL_MS {
            return Err(Error::invalid(
                "index margin",
                format!("ttl plus the index margin must be at most {MAX_TTL_MS} ms"),
            ));
        }
        self.index_margin_ms = ms;
        Ok(self)
    }

    /// The configured limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Records per shard.
    pub fn shard_size(&self) -> u64 {
        self.shard_size
    }

    /// Ring slots: `ceil(limit / shard_size) + 1`.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// The most fields one logical key can hold: `shards * shard_size`.
    pub fn capacity(&self) -> u64 {
        self.shards as u64 * self.shard_size
    }

    /// The shard TTL.
    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms)
    }

    /// The index TTL: shard TTL plus the index margin.
    pub fn index_ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms + self.index_margin_ms)
    }

    fn ring(&self, key: &str) -> Result<Ring> {
        keys::check_name("key", key)?;
        Ok(Ring {
            meta: keys::tagged(&self.prefix, key),
        })
    }

    /// The index (meta) key of logical key `key`.
    pub fn meta_key(&self, key: &str) -> Result<String> {
        Ok(self.ring(key)?.meta)
    }

    /// The shard hash keys of `key`, ring slot 0 first.
    pub fn shard_keys(&self, key: &str) -> Result<Vec<String>> {
        let ring = self.ring(key)?;
        Ok((0..self.shards).map(|s| ring.hash(s)).collect())
    }

    /// The order-list keys of `key`, ring slot 0 first.
    pub fn order_keys(&self, key: &str) -> Result<Vec<String>> {
        let ring = self.ring(key)?;
        Ok((0..self.shards).map(|s| ring.order(s)).collect())
    }

    /// (hash, order) keys of `count` consecutive slots from `first`.
    fn slot_keys(&self, ring: &Ring, first: u32, count: u32) -> Vec<String> {
        let mut out = Vec::with_capacity(2 * count as usize);
        for i in 0..count {
            let slot = (first + i) % self.shards;
            out.push(ring.hash(slot));
            out.push(ring.order(slot));
        }
        out
    }

    /// The `rolling.add` call for attempt `attempt` with head guess `guess`.
    fn add_call(
        &self,
        ring: &Ring,
        attempt: u32,
        guess: u32,
        field: &str,
        json: &[u8],
    ) -> Result<ScriptCall<Vec<i64>>> {
        let (first, count) = match WINDOWS.get(attempt as usize) {
            Some(&w) if w < self.shards => (guess, w),
            _ => (0, self.shards),
        };
        scripts::rolling::add(
            &ring.meta,
            &self.slot_keys(ring, first, count),
            first as i64,
            self.shards as i64,
            self.shard_size as i64,
            field,
            json,
            self.ttl_ms as i64,
            (self.ttl_ms + self.index_margin_ms) as i64,
        )
    }

    fn settle(&self, key: &str, reply: &[i64], misses: u32) -> Result<AddReply> {
        let &[status, head, generation, evicted] = reply else {
            return Err(Error::short_reply());
        };
        let head = head as u32;
        self.heads.store(key, head);
        Ok(match status {
            0 => AddReply::Miss { head },
            _ => AddReply::Written(Added {
                slot: head,
                generation: generation as u64,
                replaced: status == 2,
                evicted: evicted as u64,
                misses,
            }),
        })
    }

    fn encode<T: Serialize + ?Sized>(field: &str, value: &T) -> Result<Vec<u8>> {
        serde_json::to_vec(value).map_err(|source| {
            Error::from(ErrorKind::RollingValue {
                field: field.to_string(),
                source,
            })
        })
    }

    fn decode<T: DeserializeOwned>(field: &str, bytes: &[u8]) -> Result<T> {
        serde_json::from_slice(bytes).map_err(|source| {
            Error::from(ErrorKind::RollingValue {
                field: field.to_string(),
                source,
            })
        })
    }

    fn unreachable_miss() -> Error {
        Error::from(ErrorKind::Script {
            script: "rolling.add",
            code: "MISS".into(),
            detail: "the head was not found even with the whole ring passed".into(),
        })
    }

    /// Adds (or replaces) record `field` of logical key `key`, stored as the
    /// JSON of `value`, in one atomic script call (see the module docs for the
    /// rare retry when another writer moved the head meanwhile).
    pub fn add<T: Serialize + ?Sized>(
        &self,
        con: &mut dyn ConnectionLike,
        key: &str,
        field: &str,
        value: &T,
    ) -> Result<Added> {
        let ring = self.ring(key)?;
        check_field(field)?;
        let json = Self::encode(field, value)?;
        let mut guess = self.heads.guess(key);
        for attempt in 0..=WINDOW_ATTEMPTS {
            let reply = self
                .add_call(&ring, attempt, guess, field, &json)?
                .invoke(con)?;
            match self.settle(key, &reply, attempt)? {
                AddReply::Written(added) => return Ok(added),
                AddReply::Miss { head } => guess = head,
            }
        }
        Err(Self::unreachable_miss())
    }

    /// Async twin of [`RollingStore::add`].
    pub async fn add_async<T: Serialize + ?Sized, C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
        field: &str,
        value: &T,
    ) -> Result<Added> {
        let ring = self.ring(key)?;
        check_field(field)?;
        let json = Self::encode(field, value)?;
        let mut guess = self.heads.guess(key);
        for attempt in 0..=WINDOW_ATTEMPTS {
            let reply = self
                .add_call(&ring, attempt, guess, field, &json)?
                .invoke_async(con)
                .await?;
            match self.settle(key, &reply, attempt)? {
                AddReply::Written(added) => return Ok(added),
                AddReply::Miss { head } => guess = head,
            }
        }
        Err(Self::unreachable_miss())
    }

    fn get_call(&self, key: &str, field: &str) -> Result<ScriptCall<Option<Vec<u8>>>> {
        let ring = self.ring(key)?;
        check_field(field)?;
        let hashes: Vec<String> = (0..self.shards).map(|s| ring.hash(s)).collect();
        scripts::rolling::get(&ring.meta, &hashes, field)
    }

    /// The newest value of record `field` (newest shard first), or `None`.
    /// Reads every shard in the worst case (one read-only script call).
    pub fn get<T: DeserializeOwned>(
        &self,
        con: &mut dyn ConnectionLike,
        key: &str,
        field: &str,
    ) -> Result<Option<T>> {
        let reply = self.get_call(key, field)?.invoke(con)?;
        reply.map(|b| Self::decode(field, &b)).transpose()
    }

    /// Async twin of [`RollingStore::get`].
    pub async fn get_async<T: DeserializeOwned, C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
        field: &str,
    ) -> Result<Option<T>> {
        let reply = self.get_call(key, field)?.invoke_async(con).await?;
        reply.map(|b| Self::decode(field, &b)).transpose()
    }

    fn recent_call(&self, key: &str, n: usize) -> Result<ScriptCall<Vec<Option<Vec<u8>>>>> {
        let ring = self.ring(key)?;
        let n = (n as u64).min(self.capacity());
        scripts::rolling::recent(&ring.meta, &self.slot_keys(&ring, 0, self.shards), n as i64)
    }

    fn decode_pairs<T: DeserializeOwned>(reply: Vec<Option<Vec<u8>>>) -> Result<Vec<(String, T)>> {
        let mut out = Vec::with_capacity(reply.len() / 2);
        let mut it = reply.into_iter();
        while let (Some(f), Some(v)) = (it.next(), it.next()) {
            let (Some(f), Some(v)) = (f, v) else {
                return Err(Error::short_reply());
            };
            let field = String::from_utf8_lossy(&f).into_owned();
            let value = Self::decode(&field, &v)?;
            out.push((field, value));
        }
        Ok(out)
    }

    /// The newest `n` records as `(field, value)`, newest first (a field
    /// stored again later appears once, with its newest value). One
    /// read-only script call.
    pub fn recent<T: DeserializeOwned>(
        &self,
        con: &mut dyn ConnectionLike,
        key: &str,
        n: usize,
    ) -> Result<Vec<(String, T)>> {
        Self::decode_pairs(self.recent_call(key, n)?.invoke(con)?)
    }

    /// Async twin of [`RollingStore::recent`].
    pub async fn recent_async<T: DeserializeOwned, C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
        n: usize,
    ) -> Result<Vec<(String, T)>> {
        Self::decode_pairs(self.recent_call(key, n)?.invoke_async(con).await?)
    }

    fn len_call(&self, key: &str) -> Result<ScriptCall<i64>> {
        let ring = self.ring(key)?;
        let hashes: Vec<String> = (0..self.shards).map(|s| ring.hash(s)).collect();
        scripts::rolling::len(&ring.meta, &hashes)
    }

    /// The number of fields stored for `key` across all shards (a field
    /// written again after its shard was left behind counts twice, like in
    /// the seed). One read-only script call, so a consistent snapshot.
    pub fn len(&self, con: &mut dyn ConnectionLike, key: &str) -> Result<u64> {
        Ok(self.len_call(key)?.invoke(con)? as u64)
    }

    /// Async twin of [`RollingStore::len`].
    pub async fn len_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
    ) -> Result<u64> {
        Ok(self.len_call(key)?.invoke_async(con).await? as u64)
    }

    fn clear_call(&self, key: &str) -> Result<ScriptCall<i64>> {
        let ring = self.ring(key)?;
        scripts::rolling::clear(&ring.meta, &self.slot_keys(&ring, 0, self.shards))
    }

    /// Deletes the index and every shard of `key` in one script call; returns
    /// how many fields were deleted.
    pub fn clear(&self, con: &mut dyn ConnectionLike, key: &str) -> Result<u64> {
        Ok(self.clear_call(key)?.invoke(con)? as u64)
    }

    /// Async twin of [`RollingStore::clear`].
    pub async fn clear_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
    ) -> Result<u64> {
        Ok(self.clear_call(key)?.invoke_async(con).await? as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_size_and_validation() {
        let s = RollingStore::new(10_000, 1_000, Duration::from_secs(3600)).unwrap();
        assert_eq!(s.shards(), 11);
        assert_eq!(s.capacity(), 11_000);
        assert_eq!(
            RollingStore::new(25, 10, Duration::from_secs(1))
                .unwrap()
                .shards(),
            4
        );
        assert!(RollingStore::new(10, 0, Duration::from_secs(1)).is_err());
        assert!(RollingStore::new(9, 10, Duration::from_secs(1)).is_err());
        assert!(RollingStore::new(10, 10, Duration::ZERO).is_err());
        assert!(RollingStore::new(1_000_000, 1, Duration::from_secs(1)).is_err());
        assert!(RollingStore::with_prefix("a{", 10, 1, Duration::from_secs(1)).is_err());
    }

    #[test]
    fn head_cache_guesses_what_it_stored() {
        let c = HeadCache::new();
        assert_eq!(c.guess("a"), 0);
        c.store("a", 7);
        assert_eq!(c.guess("a"), 7);
        c.store("a", 0);
        assert_eq!(c.guess("a"), 0);
    }
}
