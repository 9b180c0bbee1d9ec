//! Daily sign-in bitmaps (`lua/signin/`): the PHP daily sign-in recipe's
//! `SETBIT <date> <uid> 1`, `GETBIT`, `BITCOUNT`, with the offset-trap guard,
//! unions and intersections over day ranges, and per-user streaks.
//!
//! Every operation is an [`Op`]: run it with `.run(&mut con)` on
//! a [`Connection`](crate::Connection) or `.run_async(&con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection).
//!
//! ```no_run
//! use redis_patterns::chrono::NaiveDate;
//! use redis_patterns::keys::Prefix;
//! use redis_patterns::prelude::*;
//! use redis_patterns::signin::SignIn;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let day = |d| NaiveDate::from_ymd_opt(2022, 3, d).expect("a date");
//! // Keys signin:{app}:<YYYYMMDD>: every day in one slot.
//! let s = SignIn::builder().tag("app").build()?;
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let first_today = s.sign_in(100, day(20)).run(&mut con)?;
//! let every_day = s.active_every(day(20), day(21)).run(&mut con)?;
//! // The recipe's own bare-date keys (SETBIT 20220320 100 1):
//! let bare = SignIn::builder().prefix(Prefix::none()).build()?;
//! let signed_in = bare.signed_in(100, day(20)).run(&mut con)?;
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let day = |d| NaiveDate::from_ymd_opt(2022, 3, d).expect("a date");
//! # let s = SignIn::builder().tag("app").build()?;
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! s.sign_in(100, day(21)).run_async(&con).await?;
//! let streak = s.streak(100, day(1), day(21)).run_async(&con).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Keys
//!
//! `<prefix><YYYYMMDD>`, one bitmap per day, bit `uid` set when that user
//! signed in (default prefix [`SignIn::DEFAULT_PREFIX`]: `signin:20220320`). The
//! recipe's keys are bare dates: [`Prefix::none`] gives exactly those
//! (`20220320`). With a [tag](SignInBuilder::tag) the keys are
//! `<prefix>{<tag>}:<YYYYMMDD>` (`signin:{app}:20220320`): every day shares
//! one cluster slot, and range unions and intersections run in one script
//! (`signin.combine`: `BITOP` into a temporary key that the script deletes;
//! `signin.count` does the same and returns only its `BITCOUNT`, so counts
//! do not download the bitmap). On one server they always run in the
//! script. Untagged days on a cluster are spread over the slots: the range
//! operations then fetch every day's bitmap in one batch and combine them
//! client-side (see [`bitmap`](crate::bitmap)).
//! [`SignIn::days_signed_in`] and [`SignIn::streak`] send one `GETBIT` per
//! day, in one batch.
//!
//! # The offset trap and expiry
//!
//! `SETBIT key 4000000000 1` allocates ~500 MB: uids above the configured
//! maximum (default [`DEFAULT_MAX_UID`]) are refused with
//! [`ErrorKind::UidOutOfRange`](crate::ErrorKind::UidOutOfRange) before
//! anything is written (and again inside `signin.mark`). Below the maximum,
//! a first write at a high uid still grows the day's bitmap at once: Redis
//! checks `maxmemory` only before a script starts, so `signin.mark` checks
//! itself that a growth of more than 64 KiB fits (`INFO memory`, the rule of
//! [`ServerMemory::read`](crate::core::ServerMemory::read)) and refuses with
//! [`ErrorKind::NotEnoughMemory`](crate::ErrorKind::NotEnoughMemory)
//! before writing otherwise. No TTL by default;
//! a [`Retention`] expires a day's bitmap that long after the day ends
//! (00:00 UTC).

mod contract;
mod ranges;
mod streak;

use chrono::NaiveDate;

pub use crate::bitmap::DEFAULT_MAX_UID;
use crate::bitmap::{Settings, checked, days, offsets, settings_accessors, settings_setters};
use crate::core::{Op, Retention, setters};
use crate::error::Result;
use crate::keys::{self, Prefix};
use crate::scripts;
pub(crate) use contract::contract;
pub use streak::Streak;

/// The value of [`SignIn::DEFAULT_PREFIX`].
pub(crate) const DEFAULT_PREFIX: &str = "signin:";

impl SignIn {
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = DEFAULT_PREFIX;
}

/// Daily sign-in bitmaps. Cheap to clone; holds no connection.
#[derive(Debug, Clone)]
pub struct SignIn {
    settings: Settings,
    tag: Option<String>,
}

/// Builds a [`SignIn`]: setters never fail, [`SignInBuilder::build`] checks.
#[derive(Debug, Clone)]
pub struct SignInBuilder {
    settings: Settings,
    tag: Option<String>,
}

impl SignInBuilder {
    setters! {
        /// A hash tag after the prefix (`<prefix>{<tag>}:<YYYYMMDD>`), which puts
        /// every day in one cluster slot; not empty, no `{` or `}`.
        tag(tag: &str) => tag = Some(tag.to_string());
    }

    settings_setters!(
        "The key prefix (default [`SignIn::DEFAULT_PREFIX`]; [`Prefix::none`] for the recipe's bare dates); no whitespace.",
        "How long a day's bitmap lives after the day"
    );

    /// Checks the settings.
    pub fn build(self) -> Result<SignIn> {
        if let Some(tag) = &self.tag {
            keys::check_name("tag", tag)?;
        }
        Ok(SignIn {
            settings: self.settings.check()?,
            tag: self.tag,
        })
    }
}

impl Default for SignIn {
    /// Keys `signin:<YYYYMMDD>`, maximum uid [`DEFAULT_MAX_UID`], no expiry.
    fn default() -> Self {
        Self::builder().build().expect("the defaults are valid")
    }
}

impl SignIn {
    /// A builder with prefix [`SignIn::DEFAULT_PREFIX`], no tag, maximum uid
    /// [`DEFAULT_MAX_UID`] and no expiry.
    pub fn builder() -> SignInBuilder {
        SignInBuilder {
            settings: Settings::new(DEFAULT_PREFIX),
            tag: None,
        }
    }

    /// Bitmaps `<prefix><YYYYMMDD>` with the other defaults.
    pub fn new(prefix: &str) -> Result<Self> {
        Self::builder().prefix(Prefix::new(prefix)?).build()
    }

    settings_accessors!("How long a day's bitmap lives after the day");

    /// The hash tag after the prefix, if any.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The day's bitmap key: `<prefix><YYYYMMDD>`, or
    /// `<prefix>{<tag>}:<YYYYMMDD>` with a tag.
    pub fn key(&self, day: NaiveDate) -> String {
        let date = day.format("%Y%m%d");
        match &self.tag {
            None => self.settings.prefix.key(&date.to_string()),
            Some(tag) => format!("{}:{date}", self.settings.prefix.tagged(tag)),
        }
    }

    /// What the range scripts' temporary keys start with: the tagged prefix
    /// (the days' slot), else the prefix without its trailing `:`.
    fn tmp_base(&self) -> String {
        match &self.tag {
            Some(tag) => self.settings.prefix.tagged(tag),
            None => match self.settings.prefix.as_str().trim_end_matches(':') {
                "" => contract::BARE_TMP_BASE.to_string(),
                p => p.to_string(),
            },
        }
    }

    /// Marks `uid` signed in on `day`; `Some(true)` when it is the first
    /// sign-in of that user that day, `None` when that is not known: the
    /// call was sent again after its reply was lost (a broken connection, a
    /// failover) and found the bit set — by the first attempt, or before it.
    pub fn sign_in(&self, uid: u64, day: NaiveDate) -> Op<Option<bool>> {
        checked(|| {
            offsets::check_uid(uid, self.settings.max_uid)?;
            let expire = days::expire_at(self.settings.retention, days::end_of_day(day)?)?;
            Ok(Op::script_resent(scripts::signin::mark(
                &self.key(day),
                uid as i64,
                self.settings.max_uid as i64,
                expire,
            ))
            .map(|(first, resent)| crate::core::resend::changed(first == 1, resent)))
        })
    }

    /// Whether `uid` signed in on `day` (`GETBIT`; `false` without asking
    /// for a uid above the maximum).
    pub fn signed_in(&self, uid: u64, day: NaiveDate) -> Op<bool> {
        if uid > self.settings.max_uid {
            return Op::ready(false);
        }
        let key = self.key(day);
        let mut getbit = redis::cmd("GETBIT");
        getbit.arg(&key).arg(uid);
        Op::<i64>::cmd(&key, getbit).map(|bit| bit == 1)
    }

    /// How many users signed in on `day` (`BITCOUNT`).
    pub fn count(&self, day: NaiveDate) -> Op<u64> {
        let key = self.key(day);
        let mut bitcount = redis::cmd("BITCOUNT");
        bitcount.arg(&key);
        Op::<i64>::cmd(&key, bitcount).map(|n| n.max(0) as u64)
    }
}
