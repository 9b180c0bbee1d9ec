//! Combining day bitmaps (OR: active on any day, AND: on every day):
//! `BITOP` inside one script when the keys share a slot (or the connection
//! is one server), else every day fetched in one batch and combined
//! client-side.

use crate::core::{Batch, Env, Op, Replies};
use crate::error::Result;
use crate::keys::{self, cluster_slot};
use crate::scripts;

use super::offsets::count_bits;

/// How day bitmaps are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitOp {
    /// Active on at least one day.
    Or,
    /// Active on every day.
    And,
}

impl BitOp {
    /// The `BITOP` operation.
    fn name(self) -> &'static str {
        match self {
            BitOp::Or => "OR",
            BitOp::And => "AND",
        }
    }

    /// `acc` combined with `bitmap` (a missing key is an empty bitmap); the
    /// first bitmap of a fold starts it.
    fn fold(self, acc: Option<Vec<u8>>, bitmap: Vec<u8>) -> Vec<u8> {
        let Some(mut acc) = acc else {
            return bitmap;
        };
        match self {
            BitOp::Or => {
                if acc.len() < bitmap.len() {
                    acc.resize(bitmap.len(), 0);
                }
                for (a, b) in acc.iter_mut().zip(&bitmap) {
                    *a |= b;
                }
            }
            BitOp::And => {
                // Past the shorter bitmap the AND is zero: drop it.
                acc.truncate(bitmap.len());
                for (a, b) in acc.iter_mut().zip(&bitmap) {
                    *a &= b;
                }
            }
        }
        acc
    }
}

/// Day bitmaps that one script call combines when they share the slot of
/// `base` (the temporary key is `<base>:tmp:<random>`), or that are fetched
/// and combined client-side when they do not (on a cluster).
#[derive(Debug, Clone)]
pub(crate) struct DayKeys {
    base: String,
    keys: Vec<String>,
}

impl DayKeys {
    /// `keys` must not be empty.
    pub(crate) fn new(base: String, keys: Vec<String>) -> Self {
        debug_assert!(!keys.is_empty(), "a day range has at least one day");
        Self { base, keys }
    }

    /// The temporary key for a script over these keys, or `None` when they
    /// must be fetched (a cluster, and keys outside the slot of `base`).
    fn script_tmp(&self, env: &Env) -> Option<String> {
        let tmp = keys::tmp_key(&self.base);
        if !env.is_cluster() {
            return Some(tmp);
        }
        let slot = cluster_slot(tmp.as_bytes());
        self.keys
            .iter()
            .all(|k| cluster_slot(k.as_bytes()) == slot)
            .then_some(tmp)
    }

    /// Adds a `GET` of every key to `batch`.
    fn fetch(&self, batch: &mut Batch) {
        for k in &self.keys {
            let mut get = redis::cmd("GET");
            get.arg(k);
            batch.add(k, get);
        }
    }

    /// Adds what reads these keys' combination to `batch`: one
    /// `signin.combine` call, or a `GET` of each key.
    fn read(&self, env: &Env, op: BitOp, batch: &mut Batch) {
        match self.script_tmp(env) {
            Some(tmp) => {
                batch.script(scripts::signin::combine(&tmp, &self.keys, op.name()));
            }
            None => self.fetch(batch),
        }
    }
}

/// Folds every reply (a bitmap, or nil for a missing key or an empty
/// combination) with `op`.
fn fold(op: BitOp, replies: Replies) -> Result<Vec<u8>> {
    let bitmaps: Vec<Option<Vec<u8>>> = replies.all()?;
    Ok(bitmaps
        .into_iter()
        .fold(None, |acc, b| Some(op.fold(acc, b.unwrap_or_default())))
        .unwrap_or_default())
}

/// The `op` of every day of every group, in one batch: one script call per
/// group whose keys share a slot, the `GET`s of the others; the group
/// results are combined client-side.
pub(crate) fn combine(op: BitOp, groups: Vec<DayKeys>) -> Op<Vec<u8>> {
    Op::with_env(move |env| {
        let mut batch = Batch::new();
        for g in &groups {
            g.read(env, op, &mut batch);
        }
        Op::send(batch, move |replies| fold(op, replies))
    })
}

/// The number of users in the `op` of `days`: `signin.count` when one
/// script can combine them (only the count crosses the network), else the
/// days fetched in one batch and counted client-side.
pub(crate) fn count(op: BitOp, days: DayKeys) -> Op<u64> {
    Op::with_env(move |env| match days.script_tmp(env) {
        Some(tmp) => {
            Op::script(scripts::signin::count(&tmp, &days.keys, op.name())).map(|n| n.max(0) as u64)
        }
        None => {
            let mut batch = Batch::new();
            days.fetch(&mut batch);
            Op::send(batch, move |replies| Ok(count_bits(&fold(op, replies)?)))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_like_bitop() {
        let or = [vec![0x80], vec![], vec![0x00, 0x01]]
            .into_iter()
            .fold(None, |acc, b| Some(BitOp::Or.fold(acc, b)));
        assert_eq!(or, Some(vec![0x80, 0x01]));
        let and = [vec![0xc0, 0x01], vec![0x80, 0x01, 0xff]]
            .into_iter()
            .fold(None, |acc, b| Some(BitOp::And.fold(acc, b)));
        assert_eq!(and, Some(vec![0x80, 0x01]));
        assert_eq!(BitOp::And.fold(Some(vec![0xff]), vec![]), Vec::<u8>::new());
    }
}
