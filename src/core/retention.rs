//! [`Retention`]: how long the keys of a time-bucketed pattern (a day of
//! visits, a day of sign-ins, a month of logins) live after their period.

use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result};

/// How long a period's keys live after the period ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Retention {
    /// The keys never expire.
    Forever,
    /// The keys expire this long after their period ends (zero: at its end).
    After(Duration),
}

impl Retention {
    /// Keys expire `n` days after their period ends.
    pub fn days(n: u32) -> Self {
        Self::After(Duration::from_secs(u64::from(n) * 86_400))
    }

    /// The `EXPIREAT` (unix seconds) of a key whose period ends at
    /// `period_end` (unix seconds), or `None` when it never expires.
    /// Refuses an instant at or before the epoch: scripts read 0 as "no
    /// TTL", and Redis deletes a key whose `EXPIREAT` is in the past.
    pub fn expire_at(&self, period_end: i64) -> Result<Option<i64>> {
        let Self::After(keep) = self else {
            return Ok(None);
        };
        let keep = i64::try_from(keep.as_secs())
            .map_err(|_| Error::invalid("retention", "is too long"))?;
        match period_end.checked_add(keep) {
            Some(at) if at > 0 => Ok(Some(at)),
            Some(_) => Err(Error::invalid(
                "retention",
                format!("a period ending at unix time {period_end} would expire before 1970"),
            )),
            None => Err(Error::invalid("retention", "is too long")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_instants() {
        assert_eq!(Retention::Forever.expire_at(100).unwrap(), None);
        assert_eq!(Retention::days(1).expire_at(100).unwrap(), Some(86_500));
        assert_eq!(
            Retention::After(Duration::ZERO).expire_at(100).unwrap(),
            Some(100)
        );
        assert!(Retention::After(Duration::ZERO).expire_at(0).is_err());
        assert!(Retention::After(Duration::MAX).expire_at(1).is_err());
    }
}
