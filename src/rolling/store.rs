//! The store API: [`RollingStore`] (built with [`RollingStoreBuilder`]) and
//! its operations on one logical key — add, get, recent, len, clear.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::add::{Add, AddConfig, Added};
use super::head::HeadCache;
use super::ring::Ring;
use super::{DEFAULT_INDEX_MARGIN, DEFAULT_PREFIX, MAX_SHARDS, MAX_TTL_MS};
use crate::core::{Op, setters};
use crate::error::{Error, ErrorKind, Result};
use crate::keys::{self, Prefix};
use crate::scripts;

/// A rolling sharded store configuration: limit, shard size, TTLs and key
/// prefix. Holds no connection; one store serves any number of logical keys.
/// Cheap to clone (clones share the head cache).
#[derive(Debug, Clone)]
pub struct RollingStore {
    prefix: Prefix,
    limit: u64,
    pub(super) shard_size: u64,
    shards: u32,
    pub(super) ttl_ms: u64,
    index_margin_ms: u64,
    pub(super) heads: Arc<HeadCache>,
}

/// Builds a [`RollingStore`]: setters never fail,
/// [`RollingStoreBuilder::build`] checks.
#[derive(Debug, Clone)]
pub struct RollingStoreBuilder {
    limit: u64,
    shard_size: u64,
    ttl: Duration,
    prefix: Prefix,
    index_margin: Duration,
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

fn value_error(field: &str, source: serde_json::Error) -> Error {
    ErrorKind::RollingValue {
        field: field.to_string(),
        source,
    }
    .into()
}

fn decode<T: DeserializeOwned>(field: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| value_error(field, e))
}

/// The reply of `rolling.recent`: field, value, field, value …
fn decode_pairs<T: DeserializeOwned>(reply: Vec<Option<Vec<u8>>>) -> Result<Vec<(String, T)>> {
    let mut out = Vec::with_capacity(reply.len() / 2);
    let mut it = reply.into_iter();
    while let (Some(f), Some(v)) = (it.next(), it.next()) {
        let (Some(f), Some(v)) = (f, v) else {
            return Err(Error::short_reply());
        };
        let field = String::from_utf8_lossy(&f).into_owned();
        let value = decode(&field, &v)?;
        out.push((field, value));
    }
    Ok(out)
}

impl RollingStoreBuilder {
    setters! {
        /// The key prefix (default [`RollingStore::DEFAULT_PREFIX`]).
        prefix(prefix: Prefix) => prefix;

        /// How much longer than the shards the index lives (default
        /// 60 s).
        index_margin(margin: Duration) => index_margin;
    }

    /// Checks the settings: `ttl` at least 1 ms, `shard_size` at least 1,
    /// `limit` at least `shard_size`, at most 65536 ring slots, and
    /// `ttl` plus the index margin at most 999999999999999 ms.
    pub fn build(self) -> Result<RollingStore> {
        let (limit, shard_size) = (self.limit, self.shard_size);
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
        let ttl_ms = millis("ttl", self.ttl, 1)?;
        let index_margin_ms = millis("index margin", self.index_margin, 0)?;
        if ttl_ms + index_margin_ms > MAX_TTL_MS {
            return Err(Error::invalid(
                "index margin",
                format!("ttl plus the index margin must be at most {MAX_TTL_MS} ms"),
            ));
        }
        Ok(RollingStore {
            prefix: self.prefix,
            limit,
            shard_size,
            shards: shards as u32,
            ttl_ms,
            index_margin_ms,
            heads: Arc::new(HeadCache::new()),
        })
    }
}

impl RollingStore {
    /// A builder for a store keeping the newest `limit` records per logical
    /// key in shards of `shard_size`, each shard expiring `ttl` after its
    /// last write.
    pub fn builder(limit: u64, shard_size: u64, ttl: Duration) -> RollingStoreBuilder {
        RollingStoreBuilder {
            limit,
            shard_size,
            ttl,
            prefix: Prefix::new(DEFAULT_PREFIX).expect("the default prefix is valid"),
            index_margin: DEFAULT_INDEX_MARGIN,
        }
    }

    /// A store keeping the newest `limit` records per logical key in shards
    /// of `shard_size`, each shard expiring `ttl` after its last write, with
    /// the default prefix `redis:rolling:` and index margin of 60 s.
    pub fn new(limit: u64, shard_size: u64, ttl: Duration) -> Result<Self> {
        Self::builder(limit, shard_size, ttl).build()
    }

    /// The key prefix.
    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    /// The configured limit: the store always keeps at least the newest
    /// `limit` records of a key (until they expire).
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

    /// How much longer than the shards the index lives.
    pub fn index_margin(&self) -> Duration {
        Duration::from_millis(self.index_margin_ms)
    }

    /// The index TTL: shard TTL plus the index margin.
    pub fn index_ttl(&self) -> Duration {
        Duration::from_millis(self.index_ttl_ms())
    }

    pub(super) fn index_ttl_ms(&self) -> u64 {
        self.ttl_ms + self.index_margin_ms
    }

    fn ring(&self, key: &str) -> Result<Ring> {
        keys::check_name("key", key)?;
        Ok(Ring {
            meta: self.prefix.tagged(key),
            shards: self.shards,
        })
    }

    /// The index (meta) key of logical key `key`.
    pub fn meta_key(&self, key: &str) -> Result<String> {
        Ok(self.ring(key)?.meta)
    }

    /// The shard hash keys of `key`, ring slot 0 first.
    pub fn shard_keys(&self, key: &str) -> Result<Vec<String>> {
        Ok(self.ring(key)?.hashes())
    }

    /// The order-list keys of `key`, ring slot 0 first.
    pub fn order_keys(&self, key: &str) -> Result<Vec<String>> {
        Ok(self.ring(key)?.orders())
    }

    /// Adds (or replaces) record `field` of logical key `key`, stored as the
    /// JSON of `value`, in one atomic script call (see the module docs for the
    /// rare retry when another writer moved the head meanwhile).
    pub fn add<T: Serialize + ?Sized>(&self, key: &str, field: &str, value: &T) -> Op<Added> {
        let add = || -> Result<Add> {
            let ring = self.ring(key)?;
            check_field(field)?;
            let json = serde_json::to_vec(value).map_err(|e| value_error(field, e))?;
            let config = AddConfig {
                shard_size: self.shard_size,
                ttl_ms: self.ttl_ms,
                index_ttl_ms: self.index_ttl_ms(),
                heads: Arc::clone(&self.heads),
            };
            Ok(Add::new(config, ring, key, field, json))
        };
        add().map_or_else(Op::fail, Op::from_machine)
    }

    /// The newest value of record `field` (newest shard first), or `None`.
    /// Reads every shard in the worst case (one read-only script call).
    pub fn get<T: DeserializeOwned + Send + 'static>(
        &self,
        key: &str,
        field: &str,
    ) -> Op<Option<T>> {
        let ring = self
            .ring(key)
            .and_then(|ring| check_field(field).map(|()| ring));
        ring.map_or_else(Op::fail, |ring| {
            let owned = field.to_string();
            Op::script(scripts::rolling::get(&ring.meta, &ring.hashes(), field))
                .try_map(move |reply| reply.map(|b| decode(&owned, &b)).transpose())
        })
    }

    /// The newest `n` records as `(field, value)`, newest first (a field
    /// stored again later appears once, with its newest value). One
    /// read-only script call.
    pub fn recent<T: DeserializeOwned + Send + 'static>(
        &self,
        key: &str,
        n: usize,
    ) -> Op<Vec<(String, T)>> {
        self.ring(key).map_or_else(Op::fail, |ring| {
            let n = (n as u64).min(self.capacity());
            Op::script(scripts::rolling::recent(
                &ring.meta,
                &ring.all_slots(),
                n as i64,
            ))
            .try_map(decode_pairs)
        })
    }

    /// The number of fields stored for `key` across all shards (a field
    /// written again after its shard was left behind counts twice, like in
    /// the Java recipe). One read-only script call, so a consistent
    /// snapshot.
    pub fn len(&self, key: &str) -> Op<u64> {
        self.ring(key).map_or_else(Op::fail, |ring| {
            Op::script(scripts::rolling::len(&ring.meta, &ring.hashes())).map(|n| n as u64)
        })
    }

    /// Deletes the index and every shard of `key` in one script call; returns
    /// how many fields were deleted, `None` when that is not known: the
    /// call was sent again after its reply was lost (a broken connection, a
    /// failover) and found fewer fields than its first attempt may have
    /// deleted. Either way `key` holds nothing now.
    pub fn clear(&self, key: &str) -> Op<Option<u64>> {
        self.ring(key).map_or_else(Op::fail, |ring| {
            Op::script_resent(scripts::rolling::clear(&ring.meta, &ring.all_slots()))
                .map(|(n, resent)| (!resent).then_some(n as u64))
        })
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
        assert!(
            RollingStore::builder(10, 1, Duration::from_secs(1))
                .index_margin(Duration::from_millis(MAX_TTL_MS))
                .build()
                .is_err()
        );
    }
}
