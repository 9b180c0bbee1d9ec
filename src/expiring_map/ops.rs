//! The expiring map's reads and writes of entries, each path's commands
//! built by `portable` and `native`.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use redis::FromRedisValue;

use super::{ExpiringMap, Path, PutReport, Ttl, millis, native, portable, ttl_ms};
use crate::ScriptCall;
use crate::core::{Batch, Op};
use crate::error::{Error, Result};
use crate::scripts::expiring_map as script;
use crate::sharded_hash::{group_by_shard, place_shard_values};

/// A shard's put script of either path (`expiring_map.put`, `expiring_map.put_native`).
type PutScript<'a> = fn(&str, bool, i64, i64, i64, &[&'a [u8]]) -> Result<ScriptCall<i64>>;

impl ExpiringMap {
    /// `op` on this map's path: the native path first checks that the
    /// connection's server has per-field TTLs (a typed error, nothing sent).
    pub(super) fn on_path<T: Send + 'static>(
        &self,
        op: impl FnOnce() -> Op<T> + Send + 'static,
    ) -> Op<T> {
        if self.path == Path::Portable {
            return op();
        }
        Op::with_env(move |env| {
            let caps = env.caps();
            if caps.hash_field_ttl && caps.hash_getex {
                op()
            } else {
                Op::fail(Error::invalid("path", super::contract::NATIVE_REFUSAL))
            }
        })
    }

    /// Validates every pair and the time to live (nothing is sent when one
    /// fails) and writes them: one write per shard touched, one batch.
    fn write(
        &self,
        pairs: &[(&[u8], &[u8])],
        ttl: Option<Duration>,
        only_absent: bool,
    ) -> Op<PutReport> {
        let ttl = match ttl_ms(ttl) {
            Ok(t) => t,
            Err(e) => return Op::fail(e),
        };
        for &(f, v) in pairs {
            if let Err(e) = self.check_pair(f, v) {
                return Op::fail(e);
            }
        }
        if pairs.is_empty() {
            return Op::fail(Error::invalid("pairs", "must not be empty"));
        }
        let by_shard = group_by_shard(pairs.iter().map(|(f, _)| self.shard_of(f)));
        let mut batch = Batch::with_capacity(by_shard.len());
        let mut most = Vec::with_capacity(by_shard.len());
        for (shard, idx) in &by_shard {
            let key = self.key_of_shard(*shard);
            let distinct: HashSet<&[u8]> = idx.iter().map(|&i| pairs[i].0).collect();
            most.push(distinct.len() as u64);
            let items: Vec<&[u8]> = idx.iter().flat_map(|&i| [pairs[i].0, pairs[i].1]).collect();
            // The two paths' puts take the same arguments and both answer
            // new + evicted * 2^32.
            let put: PutScript<'_> = match self.path {
                Path::Portable => script::put,
                Path::Native => script::put_native,
            };
            let cap = self.cap.min(super::MAX_TTL_MS) as i64;
            batch.script(put(&key, only_absent, ttl, self.max_entries(), cap, &items));
        }
        let send = Op::send(batch, move |replies| portable::put_report(replies, &most));
        let map = self.clone();
        self.on_path(move || map.claimed(send))
    }

    fn write_pairs<F: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        pairs: &[(F, V)],
        ttl: Option<Duration>,
        only_absent: bool,
    ) -> Op<PutReport> {
        let pairs: Vec<(&[u8], &[u8])> = pairs
            .iter()
            .map(|(f, v)| (f.as_ref(), v.as_ref()))
            .collect();
        self.write(&pairs, ttl, only_absent)
    }

    /// One entry's write: whether the field had no live entry before
    /// (`None`: not known).
    fn write_one(
        &self,
        field: &[u8],
        value: &[u8],
        ttl: Option<Duration>,
        only_absent: bool,
    ) -> Op<Option<bool>> {
        self.write(&[(field, value)], ttl, only_absent)
            .map(|r| r.new.map(|n| n == 1))
    }

    /// Sets an entry that expires after `ttl` (`None`: never). Returns
    /// whether the field had no live entry before (`None`: not known, the
    /// write was sent again after its reply was lost).
    pub fn put(
        &self,
        field: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        ttl: Option<Duration>,
    ) -> Op<Option<bool>> {
        self.write_one(field.as_ref(), value.as_ref(), ttl, false)
    }

    /// Sets an entry only where the field has no live entry (an expired one
    /// counts as absent); returns whether it was set (`None`: not known).
    pub fn put_if_absent(
        &self,
        field: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        ttl: Option<Duration>,
    ) -> Op<Option<bool>> {
        self.write_one(field.as_ref(), value.as_ref(), ttl, true)
    }

    /// Sets many entries with one time to live: one write per shard
    /// touched, one batch; each shard's part is atomic (a shard that would
    /// pass its entry limit even without its expired entries refuses its
    /// part, [`ErrorKind::ShardFull`](crate::ErrorKind::ShardFull)).
    pub fn put_many<F: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        pairs: &[(F, V)],
        ttl: Option<Duration>,
    ) -> Op<PutReport> {
        self.write_pairs(pairs, ttl, false)
    }

    /// [`ExpiringMap::put_many`] keeping the fields that have a live entry.
    pub fn put_if_absent_many<F: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        pairs: &[(F, V)],
        ttl: Option<Duration>,
    ) -> Op<PutReport> {
        self.write_pairs(pairs, ttl, true)
    }

    /// The live value of a field (`None`: absent or expired); with a
    /// max-idle time, the read pushes the entry's expiry forward.
    pub fn get<V: FromRedisValue + Send + 'static>(
        &self,
        field: impl AsRef<[u8]>,
    ) -> Op<Option<V>> {
        self.get_many::<V, _>(&[field.as_ref()])
            .try_map(|mut v| v.pop().ok_or_else(Error::short_reply))
    }

    /// The live values of many fields in the order asked (`None` for absent
    /// or expired ones): one call per shard touched, one batch. With a
    /// max-idle time on the portable path, a shard that has an entry due for
    /// a push (its expiry sooner than the max-idle time less a sixteenth of
    /// it) is read again, in a second round trip, by `expiring_map.get`,
    /// which pushes it and whose values count.
    pub fn get_many<V, F>(&self, fields: &[F]) -> Op<Vec<Option<V>>>
    where
        V: FromRedisValue + Send + 'static,
        F: AsRef<[u8]>,
    {
        if fields.is_empty() {
            return Op::ready(Vec::new());
        }
        let by_shard = group_by_shard(fields.iter().map(|f| self.shard_of(f.as_ref())));
        let mut batch = Batch::with_capacity(2 * by_shard.len());
        // A portable read writes nothing unless an entry is due for a push:
        // HMGET and TIME need no script.
        let portable = self.path == Path::Portable;
        let idle = self.max_idle_ms;
        for (shard, idx) in &by_shard {
            let key = self.key_of_shard(*shard);
            let part: Vec<&[u8]> = idx.iter().map(|&i| fields[i].as_ref()).collect();
            match self.path {
                Path::Portable => portable::read(&mut batch, &key, &part),
                Path::Native => native::get(&mut batch, &key, &part, idle),
            }
        }
        let n = fields.len();
        let touch = self.path == Path::Native && idle > 0;
        if !(portable && idle > 0) {
            return self.on_path(move || {
                Op::send(batch, move |mut replies| {
                    let (out, _) = reads(&mut replies, &by_shard, n, portable, touch, 0)?;
                    Ok(out)
                })
            });
        }
        // The fields again, for the shards read a second time.
        let asked: Vec<Vec<u8>> = fields.iter().map(|f| f.as_ref().to_vec()).collect();
        let map = self.clone();
        let first = Op::send(batch, move |mut replies| {
            let (out, due) = reads(&mut replies, &by_shard, n, true, false, idle)?;
            Ok((out, due, by_shard))
        });
        first.and_then(move |(mut out, due, by_shard)| {
            if due.is_empty() {
                return Op::ready(out);
            }
            let mut batch = Batch::with_capacity(due.len());
            for shard in &due {
                let part: Vec<&[u8]> = by_shard[shard]
                    .iter()
                    .map(|&i| asked[i].as_slice())
                    .collect();
                portable::get(&mut batch, &map.key_of_shard(*shard), &part, idle as i64);
            }
            Op::send(batch, move |mut replies| {
                for shard in &due {
                    let idx = &by_shard[shard];
                    place_shard_values(&mut out, idx, replies.take()?)?;
                }
                Ok(out)
            })
        })
    }

    /// Removes an entry; returns whether a live one was there (`None`: not
    /// known, the removal was sent again after its reply was lost).
    pub fn remove(&self, field: impl AsRef<[u8]>) -> Op<Option<bool>> {
        let field = field.as_ref();
        let key = self.shard_key(field);
        let op = match self.path {
            Path::Portable => portable::remove(&key, field),
            Path::Native => native::remove(&key, field),
        };
        self.on_path(move || op)
    }

    /// The time to live of an entry.
    pub fn ttl_of(&self, field: impl AsRef<[u8]>) -> Op<Ttl> {
        let field = field.as_ref();
        let key = self.shard_key(field);
        let op = match self.path {
            Path::Portable => portable::ttl(&key, field),
            Path::Native => native::ttl(&key, field),
        };
        self.on_path(move || {
            op.map(|ms| match ms {
                -2 => Ttl::Missing,
                -1 => Ttl::Persistent,
                ms => Ttl::Expires(Duration::from_millis(ms.max(0) as u64)),
            })
        })
    }

    /// Removes an entry's expiry: `None` when there is no live entry,
    /// `Some(true)` when it had one, `Some(false)` when it had none.
    pub fn persist(&self, field: impl AsRef<[u8]>) -> Op<Option<bool>> {
        self.expiry_call(field.as_ref(), 0).map(|r| match r {
            1 => Some(true),
            -1 => Some(false),
            _ => None,
        })
    }

    /// Gives a live entry a new time to live; returns whether there was one.
    pub fn expire(&self, field: impl AsRef<[u8]>, ttl: Duration) -> Op<bool> {
        match millis("ttl", ttl) {
            Ok(ms) => self.expiry_call(field.as_ref(), ms).map(|r| r == 1),
            Err(e) => Op::fail(e),
        }
    }

    /// `expire.lua`, or `HPEXPIRE` / `HPERSIST`: 1 set, -1 none to remove,
    /// -2 no live entry.
    fn expiry_call(&self, field: &[u8], ttl: i64) -> Op<i64> {
        let key = self.shard_key(field);
        let op = match self.path {
            Path::Portable => portable::expire(&key, field, ttl),
            Path::Native => native::expire(&key, field, ttl),
        };
        self.on_path(move || op)
    }
}

/// The values of a [`ExpiringMap::get_many`]'s first batch, in the order
/// asked (`n` fields, grouped `by_shard`): per shard the portable read's
/// `HMGET` and `TIME` (see [`portable::live`]), or the native `HMGET` and,
/// with `touch`, its `HPEXPIRE` reply; and the shards with a live entry due
/// for a max-idle push (portable, `idle_ms` not 0).
fn reads<V: FromRedisValue>(
    replies: &mut crate::core::Replies,
    by_shard: &BTreeMap<u64, Vec<usize>>,
    n: usize,
    portable: bool,
    touch: bool,
    idle_ms: u64,
) -> Result<(Vec<Option<V>>, Vec<u64>)> {
    let mut out: Vec<Option<V>> = (0..n).map(|_| None).collect();
    let mut due = Vec::new();
    for (&shard, idx) in by_shard {
        let values: Vec<Option<V>> = if portable {
            let stored = replies.take()?;
            let (values, pushed) = portable::live(stored, replies.take()?, idle_ms)?;
            if pushed {
                due.push(shard);
            }
            values
        } else {
            replies.take()?
        };
        if touch {
            replies.take::<redis::Value>()?;
        }
        place_shard_values(&mut out, idx, values)?;
    }
    Ok((out, due))
}
