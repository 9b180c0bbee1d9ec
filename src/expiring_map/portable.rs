//! The portable path's calls: the scripts of `lua/expiring_map/`, which keep
//! each entry's expiry in its value (the put, which both paths share, is
//! sent in `ops`).

use redis::{FromRedisValue, Value};

use super::{EXPIRY_BYTES, PutReport};
use crate::core::op::decode;
use crate::core::resend::{changed, changed_count};
use crate::core::{Batch, Op, Replies};
use crate::error::{Error, Result};
use crate::scripts::expiring_map as script;

/// The report of the shards' puts; `most[i]`: the distinct fields of
/// shard `i`'s part. Each put answers one integer, `new + evicted * 2^32`
/// (see [`put_parts`]).
pub(super) fn put_report(replies: Replies, most: &[u64]) -> Result<PutReport> {
    let resent = replies.resent_each();
    let mut report = PutReport {
        new: Some(0),
        evicted: 0,
    };
    for ((r, &max), resent) in replies.all::<i64>()?.into_iter().zip(most).zip(resent) {
        let (new, evicted) = put_parts(r);
        let new = changed_count(new, max, resent);
        report.new = report.new.zip(new).map(|(a, b)| a + b);
        report.evicted += evicted;
    }
    Ok(report)
}

/// The two counts of a put's reply `new + evicted * 2^32`: (new, evicted).
pub(super) fn put_parts(reply: i64) -> (u64, u64) {
    let r = reply.max(0) as u64;
    (r & 0xffff_ffff, r >> 32)
}

/// One shard's `expiring_map.get`.
pub(super) fn get(batch: &mut Batch, key: &str, fields: &[&[u8]], idle_ms: i64) {
    batch.script(script::get(key, idle_ms, fields));
}

/// One shard's read that writes nothing, and so needs no script: `HMGET`,
/// then `TIME` on the same node, in the same batch. The clock is read after
/// the values, so an entry judged live by it was live when it was read (see
/// [`live`]). With a max-idle time it comes first too: only a shard with an
/// entry [`due`] for a push is read again by `expiring_map.get`.
pub(super) fn read(batch: &mut Batch, key: &str, fields: &[&[u8]]) {
    let mut hmget = redis::cmd("HMGET");
    hmget.arg(key).arg(fields);
    batch.add(key, hmget).add(key, redis::cmd("TIME"));
}

/// Whether a read at `now` (unix ms) with the max-idle time `idle_ms` (not
/// 0) pushes the expiry `at` of a live entry: when it is sooner than
/// `idle_ms - idle_ms / 16` from now (0, no expiry, never). The rule of
/// `expiring_map.get`, which decides again inside the script.
pub(super) fn due(at: u64, now: u64, idle_ms: u64) -> bool {
    at != 0 && at < now + idle_ms - idle_ms / 16
}

/// The live values of one shard's [`read`]: a stored value whose expiry
/// is 0 or later than the server's `TIME` (`[seconds, microseconds]`), its
/// first 6 bytes removed; a stored value shorter than 6 bytes reads as
/// expired, as in the scripts. With `idle_ms` (not 0), also whether one of
/// the live entries is [`due`] for a push.
pub(super) fn live<V: FromRedisValue>(
    stored: Vec<Option<Vec<u8>>>,
    time: Vec<u64>,
    idle_ms: u64,
) -> Result<(Vec<Option<V>>, bool)> {
    let (Some(&secs), Some(&micros)) = (time.first(), time.get(1)) else {
        return Err(Error::short_reply());
    };
    let now = secs * 1000 + micros / 1000;
    let mut pushed = false;
    let values = stored
        .into_iter()
        .map(|s| match s {
            Some(mut b) if b.len() >= EXPIRY_BYTES => {
                let at = b[..EXPIRY_BYTES]
                    .iter()
                    .fold(0u64, |a, &x| a * 256 + u64::from(x));
                if at == 0 || at > now {
                    pushed |= idle_ms > 0 && due(at, now, idle_ms);
                    b.drain(..EXPIRY_BYTES);
                    decode(None, Value::BulkString(b)).map(Some)
                } else {
                    Ok(None)
                }
            }
            _ => Ok(None),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((values, pushed))
}

/// `expiring_map.remove` of one field.
pub(super) fn remove(key: &str, field: &[u8]) -> Op<Option<bool>> {
    Op::script_resent(script::remove(key, &[field])).map(|(n, resent)| changed(n == 1, resent))
}

/// `expiring_map.ttl` of one field.
pub(super) fn ttl(key: &str, field: &[u8]) -> Op<i64> {
    Op::script(script::ttl(key, field))
}

/// `expiring_map.expire` of one field.
pub(super) fn expire(key: &str, field: &[u8], ttl: i64) -> Op<i64> {
    Op::script(script::expire(key, field, ttl))
}

/// One shard's `expiring_map.sweep`: `{removed, live}`.
pub(super) fn sweep(batch: &mut Batch, key: &str) {
    batch.script(script::sweep(key));
}

/// One shard's `expiring_map.entries`: field, value, expiry, ...
pub(super) fn entries(batch: &mut Batch, key: &str) {
    batch.script(script::entries(key));
}

/// The entries of one `expiring_map.entries` reply.
pub(super) fn decode_entries(v: Value) -> Result<Vec<super::Entry>> {
    let flat: Vec<Value> = crate::core::op::decode(None, v)?;
    let mut out = Vec::with_capacity(flat.len() / 3);
    let mut it = flat.into_iter();
    while let (Some(f), Some(v), Some(at)) = (it.next(), it.next(), it.next()) {
        let at: i64 = crate::core::op::decode(None, at)?;
        out.push(super::Entry {
            field: crate::core::op::decode(None, f)?,
            value: crate::core::op::decode(None, v)?,
            expires_at_ms: (at > 0).then_some(at as u64),
        });
    }
    Ok(out)
}
