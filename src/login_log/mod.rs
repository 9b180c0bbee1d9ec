//! A per-user monthly login log with seven queries, in the key layout of the
//! PHP login-log recipe (`loginLog_<YYYY-MM>_<type>_<uid>`), so that data it
//! wrote reads as is (`lua/login_log/`).
//!
//! The seven queries: (1) [record](LoginLog::record) a login; whether a
//! user logged in (2) [on a day](LoginLog::logged_in_on), (3) [in a
//! month](LoginLog::logged_in_in_month) (and [on how many
//! days](LoginLog::days_in_month)), (4) [within a
//! range](LoginLog::logged_in_between); (5) [the days of a
//! range](LoginLog::login_days) a user logged in; (6) [the active users of a
//! type](LoginLog::active_users) and (7) [of every
//! type](LoginLog::all_active_users) in a range, read from day indexes
//! instead of `KEYS loginLog_*`. Logs written before the day indexes
//! existed (by the PHP code) get them from [`LoginLog::reindex`]: a `SCAN`
//! of the month's log keys (every primary of a cluster), page by page,
//! resumable from a [`ReindexCursor`], idempotent.
//!
//! Every operation is an [`Op`](crate::Op): run it with `.run(&mut con)` on
//! a [`Connection`](crate::Connection) or `.run_async(&con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection).
//!
//! ```no_run
//! use redis_patterns::chrono::NaiveDate;
//! use redis_patterns::login_log::{LoginLog, ReindexOptions};
//! use redis_patterns::prelude::*;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let day = NaiveDate::from_ymd_opt(2024, 2, 29).expect("a date");
//! let log = LoginLog::default(); // loginLog_<YYYY-MM>_<type>_<uid>
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let first_today = log.record("client", 1001, day).run(&mut con)?;
//! let active = log.active_users("client", day, day).run(&mut con)?;
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let day = NaiveDate::from_ymd_opt(2024, 2, 29).expect("a date");
//! # let log = LoginLog::default();
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! log.record("client", 1001, day).run_async(&con).await?;
//! let from = NaiveDate::from_ymd_opt(2024, 1, 1).expect("a date");
//! let days = log.login_days("client", 1001, from, day).run_async(&con).await?;
//! // Day indexes for logs written before them (by the PHP code), then (6)/(7) see them.
//! let report = log.reindex(2017, 10, ReindexOptions::default()).run_async(&con).await?;
//! assert!(report.cursor.is_done());
//! # Ok(())
//! # }
//! ```
//!
//! # Keys
//!
//! * `<prefix><YYYY-MM>_<type>_<uid>`: the recipe's layout (default prefix
//!   [`LoginLog::DEFAULT_PREFIX`], e.g. `loginLog_2017-10_client_1001`): one bitmap
//!   per user and month, bit `n` set when the user logged in on day `n`
//!   (bit 0 unused, as in the recipe's `SETBIT loginLog_2017-10_client_1001
//!   25 1`).
//! * `<prefix>{<YYYY-MM>}:<YYYYMMDD>:<type>`: the day's index of users of a
//!   type, bit `uid` set when that user logged in that day (as the PHP
//!   daily sign-in recipe's `SETBIT <date> <uid> 1`). Queries (6) and (7)
//!   read these.
//! * `<prefix>{<YYYY-MM>}:types`: the set of user types seen that month.
//!
//! # What runs where
//!
//! The recipe's log keys have no hash tag, so on Redis Cluster a user's log
//! and the day's index are in different slots. On one server a login is one
//! atomic script (`login_log.record`) that writes the log, the index and the
//! types set. On a cluster (the connection knows) it is the same script when
//! the keys happen to share a slot, and otherwise two single-slot scripts in
//! one batch: `login_log.mark` (the log) and `login_log.index` (index and
//! types, which share the month's tag). Both are idempotent: if one is lost,
//! recording the login again repairs it.
//!
//! A query over several months sends one batch: one command (or read-only
//! `login_log.days` call) per month for queries (4) and (5); for (6) and (7)
//! one `signin.combine` (`OR`) call per month, which ORs the month's day
//! indexes into a temporary key of the month's tag, returns it and deletes
//! it (see [`bitmap`](crate::bitmap)); the months are ORed client-side.
//!
//! # The offset trap and expiry
//!
//! A uid is a bit offset in the day index: uids above the configured
//! maximum (default [`DEFAULT_MAX_UID`]) are refused with
//! [`ErrorKind::UidOutOfRange`](crate::ErrorKind::UidOutOfRange) before
//! anything is written; the scripts check it again for callers in other
//! languages. A first login at a high uid grows the day's index at once:
//! the scripts check that a growth of more than 64 KiB fits under
//! `maxmemory` (`INFO memory`, the rule of
//! [`ServerMemory::read`](crate::core::ServerMemory::read)) before their first write, and refuse with
//! [`ErrorKind::NotEnoughMemory`](crate::ErrorKind::NotEnoughMemory)
//! otherwise. Nothing expires by default (the recipe warns that a TTL
//! shorter than the sync interval loses data); a
//! [`Retention`] sets `EXPIREAT` to the end of the key's period (the month
//! for a log, the day for an index, 00:00 UTC) plus the retention.
//!
//! # Reindexing logs the PHP code wrote
//!
//! [`LoginLog::reindex`] gives logs written before the day indexes existed
//! their indexes: a `SCAN` of the month's log keys (`<prefix><YYYY-MM>_*`,
//! strings only; on a cluster every primary, each with its own cursor),
//! page by page, each page's logs read (`GETRANGE`) and every logged day
//! set with `login_log.index`, the script a login runs — so the indexes,
//! types set and expiry are exactly what [`LoginLog::record`] writes.
//! Memory is bounded by one page; a [`ReindexCursor`] (text
//! `node@cursor|done,...`) resumes it ([`LoginLog::reindex_page`]); a second
//! run sets nothing new (`ReindexReport::new == 0`); keys of another layout
//! are counted as skipped.
//!
//! # The sync rule
//!
//! The PHP login-log recipe decides expiry at sync time, not with a TTL:
//! [`LoginLog::sync_months`] (this month, and last month before the 8th),
//! [`LoginLog::month_users`] / [`LoginLog::month_logins`] (each user's days
//! of a month), [`LoginLog::mark_exported`] and [`LoginLog::expire_month`]
//! (deletes a month past retention only when its last export ran after it
//! ended); `redis-patterns login-log export` runs it.

mod active;
mod contract;
mod record;
mod reindex;
mod sync;
mod user;

pub use sync::{Expiry, MonthLogins};

use chrono::NaiveDate;
use serde::Serialize;

pub use self::reindex::{ReindexCursor, ReindexOptions, ReindexReport};
pub use crate::bitmap::DEFAULT_MAX_UID;
use crate::bitmap::{Settings, settings_accessors, settings_setters};
use crate::core::Retention;
use crate::error::{Error, Result};
use crate::keys::Prefix;
pub(crate) use contract::contract;

/// The value of [`LoginLog::DEFAULT_PREFIX`].
pub(crate) const DEFAULT_PREFIX: &str = "loginLog_";

impl LoginLog {
    /// The PHP login-log recipe's key prefix.
    pub const DEFAULT_PREFIX: &'static str = DEFAULT_PREFIX;
}

/// One user who logged in, as query (7) returns it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ActiveUser {
    /// The user's type (`client`).
    pub user_type: String,
    /// The user's id.
    pub uid: u64,
}

/// The per-user monthly login log with its day indexes. Cheap to clone;
/// holds no connection.
#[derive(Debug, Clone)]
pub struct LoginLog {
    settings: Settings,
}

/// Builds a [`LoginLog`]: setters never fail, [`LoginLogBuilder::build`]
/// checks.
#[derive(Debug, Clone)]
pub struct LoginLogBuilder {
    settings: Settings,
}

impl LoginLogBuilder {
    settings_setters!(
        "The key prefix (default [`LoginLog::DEFAULT_PREFIX`]); no whitespace.",
        "How long logs and indexes live after their period"
    );

    /// Checks the settings.
    pub fn build(self) -> Result<LoginLog> {
        Ok(LoginLog {
            settings: self.settings.check()?,
        })
    }
}

impl Default for LoginLog {
    /// The recipe's layout (`loginLog_...`), maximum uid
    /// [`DEFAULT_MAX_UID`], no expiry.
    fn default() -> Self {
        Self::builder().build().expect("the defaults are valid")
    }
}

impl LoginLog {
    /// A builder with the recipe's layout, maximum uid [`DEFAULT_MAX_UID`]
    /// and no expiry.
    pub fn builder() -> LoginLogBuilder {
        LoginLogBuilder {
            settings: Settings::new(DEFAULT_PREFIX),
        }
    }

    /// A login log whose keys start with `prefix` (e.g. `"loginLog_"`, the
    /// default), with the other defaults.
    pub fn new(prefix: &str) -> Result<Self> {
        Self::builder().prefix(Prefix::new(prefix)?).build()
    }

    settings_accessors!("How long logs and indexes live after their period");

    /// The key of a user's log for the month of `day`:
    /// `<prefix><YYYY-MM>_<type>_<uid>`.
    pub fn log_key(&self, user_type: &str, uid: u64, day: NaiveDate) -> String {
        self.settings
            .prefix
            .key(&format!("{}_{user_type}_{uid}", day.format("%Y-%m")))
    }

    /// `<prefix>{<YYYY-MM>}`: the tag of a month's indexes and types set.
    fn month_tag(&self, day: NaiveDate) -> String {
        self.settings
            .prefix
            .tagged(&day.format("%Y-%m").to_string())
    }

    /// The day's index of users of `user_type`:
    /// `<prefix>{<YYYY-MM>}:<YYYYMMDD>:<type>`.
    pub fn index_key(&self, user_type: &str, day: NaiveDate) -> String {
        format!(
            "{}:{}:{user_type}",
            self.month_tag(day),
            day.format("%Y%m%d")
        )
    }

    /// The set of user types seen in the month of `day`:
    /// `<prefix>{<YYYY-MM>}:types`.
    pub fn types_key(&self, day: NaiveDate) -> String {
        format!("{}:types", self.month_tag(day))
    }
}

/// Checks a user type: non-empty ASCII letters, digits or `-` (it is part of
/// the recipe's `_`-separated log key).
fn check_type(user_type: &str) -> Result<()> {
    if user_type.is_empty()
        || !user_type
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Err(Error::invalid(
            "user type",
            format!("`{user_type}` must be non-empty ASCII letters, digits or '-'"),
        ));
    }
    Ok(())
}
