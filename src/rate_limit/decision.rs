//! [`Decision`]: what a rate-limited call answers — redis-cell's five
//! `CL.THROTTLE` fields, with the times in milliseconds.

use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result};

/// The answer to one call of a limiter: the five fields of redis-cell's
/// `CL.THROTTLE` reply, in its order, with the times in milliseconds
/// (rounded up, so that a caller who waits that long is not refused for
/// being early) where redis-cell gives whole seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Decision {
    /// The units were refused (and nothing was taken).
    pub limited: bool,
    /// The most units one call may take: `max_burst + 1` for GCRA, the
    /// window's `limit` for the sliding windows.
    pub limit: u64,
    /// How many units a call right after this one could take.
    pub remaining: u64,
    /// When refused: how long until the same quantity would be allowed
    /// (`CL.THROTTLE` answers -1 when allowed).
    pub retry_after_ms: Option<u64>,
    /// How long until the subject is fully reset (its key expires then).
    pub reset_after_ms: u64,
}

impl Decision {
    /// The units were taken (or, for a peek, the subject is not over its
    /// limit).
    pub fn allowed(&self) -> bool {
        !self.limited
    }

    /// When refused, how long to wait before asking again.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after_ms.map(Duration::from_millis)
    }

    /// How long until the subject is fully reset.
    pub fn reset_after(&self) -> Duration {
        Duration::from_millis(self.reset_after_ms)
    }

    /// The script's reply `{limited, limit, remaining, retry_after_ms,
    /// reset_after_ms}`.
    pub(crate) fn from_reply(reply: Vec<i64>) -> Result<Self> {
        let bad = || Error::unexpected(format!("a rate limit reply of {} values", reply.len()));
        let &[limited, limit, remaining, retry, reset] = reply.as_slice() else {
            return Err(bad());
        };
        let count = |v: i64| u64::try_from(v).map_err(|_| bad());
        Ok(Self {
            limited: match limited {
                0 => false,
                1 => true,
                _ => return Err(bad()),
            },
            limit: count(limit)?,
            remaining: count(remaining)?,
            retry_after_ms: match retry {
                -1 => None,
                ms => Some(count(ms)?),
            },
            reset_after_ms: count(reset)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_decode_as_cl_throttle_reads() {
        let d = Decision::from_reply(vec![0, 16, 15, -1, 2000]).unwrap();
        assert!(d.allowed());
        assert_eq!((d.limit, d.remaining, d.retry_after()), (16, 15, None));
        assert_eq!(d.reset_after(), Duration::from_secs(2));
        let d = Decision::from_reply(vec![1, 1, 0, 250, 300]).unwrap();
        assert_eq!(d.retry_after(), Some(Duration::from_millis(250)));
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"limited":true,"limit":1,"remaining":0,"retry_after_ms":250,"reset_after_ms":300}"#
        );
        for bad in [
            vec![0, 1, 0, -1],
            vec![2, 1, 0, -1, 0],
            vec![0, 1, -3, -1, 0],
        ] {
            assert!(Decision::from_reply(bad).is_err());
        }
    }
}
