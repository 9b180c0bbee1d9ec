//! The native path's calls: the server's per-field TTL (`HPEXPIRE`,
//! `HPTTL`, `HPERSIST`; the `expiring_map.put_native` script's `HSETEX` is
//! sent by the put both paths share, in `ops`), which also removes expired
//! fields.

use crate::core::resend::changed;
use crate::core::{Batch, Op};
use crate::error::{Error, Result};

/// One shard's read: `HMGET`, and with a max-idle time `HPEXPIRE … GT`
/// (an expiry later than that, or none, is kept).
pub(super) fn get(batch: &mut Batch, key: &str, fields: &[&[u8]], idle_ms: u64) {
    let mut hmget = redis::cmd("HMGET");
    hmget.arg(key).arg(fields);
    batch.add(key, hmget);
    if idle_ms > 0 {
        let mut touch = redis::cmd("HPEXPIRE");
        touch
            .arg(key)
            .arg(idle_ms)
            .arg("GT")
            .arg("FIELDS")
            .arg(fields.len())
            .arg(fields);
        batch.add(key, touch);
    }
}

/// `HDEL` of one field.
pub(super) fn remove(key: &str, field: &[u8]) -> Op<Option<bool>> {
    let mut cmd = redis::cmd("HDEL");
    cmd.arg(key).arg(field);
    Op::<i64>::cmd_resent(key, cmd).map(|(n, resent)| changed(n == 1, resent))
}

fn first(v: Vec<i64>) -> Result<i64> {
    v.first().copied().ok_or_else(Error::short_reply)
}

/// `HPTTL` of one field.
pub(super) fn ttl(key: &str, field: &[u8]) -> Op<i64> {
    let mut cmd = redis::cmd("HPTTL");
    cmd.arg(key).arg("FIELDS").arg(1).arg(field);
    Op::<Vec<i64>>::cmd(key, cmd).try_map(first)
}

/// `HPEXPIRE` of one field, or `HPERSIST` for `ttl` 0: 1, -1 or -2.
pub(super) fn expire(key: &str, field: &[u8], ttl: i64) -> Op<i64> {
    let mut cmd = redis::cmd(if ttl == 0 { "HPERSIST" } else { "HPEXPIRE" });
    cmd.arg(key);
    if ttl > 0 {
        cmd.arg(ttl);
    }
    cmd.arg("FIELDS").arg(1).arg(field);
    Op::<Vec<i64>>::cmd(key, cmd).try_map(first)
}

/// One shard's sweep: the server removes expired fields itself (in its own
/// time: until then `HLEN` counts them), so it only counts the live ones,
/// the fields `HKEYS` lists.
pub(super) fn sweep(batch: &mut Batch, key: &str) {
    let mut cmd = redis::cmd("HKEYS");
    cmd.arg(key);
    batch.add(key, cmd);
}

/// The live entries of `HGETALL` replies of `keys` with their expiries:
/// one `HPEXPIRETIME` per shard that had fields (a field gone since, -2,
/// is left out).
pub(super) fn with_expiries(
    keys: Vec<String>,
    values: Vec<redis::Value>,
    next: Option<u64>,
) -> Op<super::EntriesPage> {
    let shards = match values.into_iter().map(pairs).collect::<Result<Vec<_>>>() {
        Ok(s) => s,
        Err(e) => return Op::fail(e),
    };
    let mut batch = Batch::new();
    for (key, pairs) in keys.iter().zip(&shards) {
        if !pairs.is_empty() {
            let mut cmd = redis::cmd("HPEXPIRETIME");
            cmd.arg(key).arg("FIELDS").arg(pairs.len());
            for (f, _) in pairs {
                cmd.arg(f);
            }
            batch.add(key, cmd);
        }
    }
    Op::send(batch, move |mut replies| {
        let mut entries = Vec::new();
        for pairs in shards.into_iter().filter(|p| !p.is_empty()) {
            let at: Vec<i64> = replies.take()?;
            for ((field, value), at) in pairs.into_iter().zip(at) {
                if at != -2 {
                    entries.push(super::Entry {
                        field,
                        value,
                        expires_at_ms: (at > 0).then_some(at as u64),
                    });
                }
            }
        }
        Ok(super::EntriesPage { entries, next })
    })
}

/// An `HGETALL` reply as (field, value) pairs.
fn pairs(v: redis::Value) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let flat: Vec<Vec<u8>> = crate::core::op::decode(None, v)?;
    let mut out = Vec::with_capacity(flat.len() / 2);
    let mut it = flat.into_iter();
    while let (Some(f), Some(v)) = (it.next(), it.next()) {
        out.push((f, v));
    }
    Ok(out)
}
