//! Bitmaps of user ids per day, the concept [`login_log`](crate::login_log)
//! and [`signin`](crate::signin) are built on: bit `uid` of a day's bitmap is
//! set when that user was active that day.
//!
//! * Offsets: a uid is a bit offset, and `SETBIT key 4000000000 1`
//!   makes Redis allocate ~500 MB (the offset trap). Uids above a configured
//!   maximum (default [`DEFAULT_MAX_UID`]: at most 1.25 MB per bitmap) are
//!   refused before anything is sent; [`decode_bits`] turns a bitmap back
//!   into uids.
//! * Day ranges: `from..=to`, at most 3660 days, split
//!   into calendar months where keys are monthly; a period's keys expire by
//!   [`Retention`] after the period ends (00:00 UTC).
//! * Combining the days of a range (OR: active on any day, AND: on
//!   every day): `BITOP` inside one script (`signin.combine`, or
//!   `signin.count` for the count alone) when the day keys share a slot or
//!   the connection is one server, else every day fetched in one batch and
//!   combined client-side.
//!
//! ```
//! use redis_patterns::bitmap::decode_bits;
//!
//! // SETBIT k 1 1; SETBIT k 9 1 leaves the bytes 0x40 0x40.
//! assert_eq!(decode_bits(&[0x40, 0x40]), vec![1, 9]);
//! ```

pub(crate) mod combine;
pub(crate) mod days;
pub(crate) mod offsets;

pub(crate) use days::MAX_RANGE_DAYS;
pub use offsets::DEFAULT_MAX_UID;
pub(crate) use offsets::MAX_OFFSET;
pub use offsets::decode_bits;

use crate::core::{Op, Retention};
use crate::error::{Error, Result};
use crate::keys::Prefix;

/// What both bitmap patterns are configured with: the key prefix, the
/// largest uid (bit offset) accepted, and how long a period's keys live.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) prefix: Prefix,
    pub(crate) max_uid: u64,
    pub(crate) retention: Retention,
}

impl Settings {
    /// `default_prefix`, [`DEFAULT_MAX_UID`], kept forever.
    pub(crate) fn new(default_prefix: &str) -> Self {
        Self {
            prefix: Prefix::new(default_prefix).expect("the default prefix is valid"),
            max_uid: DEFAULT_MAX_UID,
            retention: Retention::Forever,
        }
    }

    /// What a builder's `build` checks: a prefix without whitespace (the
    /// keys are typed at `redis-cli` and written by other languages) and a
    /// maximum uid Redis can address.
    pub(crate) fn check(self) -> Result<Self> {
        if self.prefix.as_str().chars().any(char::is_whitespace) {
            return Err(Error::invalid("prefix", "must not contain whitespace"));
        }
        offsets::check_max_uid(self.max_uid)?;
        Ok(self)
    }
}

/// The setters of [`Settings`] on a builder with a `settings` field (with
/// `Prefix` and `Retention` in scope):
/// `prefix` (documented with `$prefix_doc`), `max_uid` and `retention`
/// (documented with `$retention_doc`).
macro_rules! settings_setters {
    ($prefix_doc:literal, $retention_doc:literal) => {
        $crate::core::setters! {
            #[doc = $prefix_doc]
            prefix(prefix: Prefix) => settings.prefix;

            /// The largest uid accepted (default [`DEFAULT_MAX_UID`], at most
            /// 4294967295, the largest bit offset).
            max_uid(max_uid: u64) => settings.max_uid;

            #[doc = concat!($retention_doc, " (default [`Retention::Forever`]).")]
            retention(retention: Retention) => settings.retention;
        }
    };
}
pub(crate) use settings_setters;

/// The accessors of [`Settings`] on a pattern with a `settings` field (with
/// `Prefix` and `Retention` in scope):
/// `prefix`, `max_uid` and `retention` (documented with `$retention_doc`).
macro_rules! settings_accessors {
    ($retention_doc:literal) => {
        /// The key prefix.
        pub fn prefix(&self) -> &Prefix {
            &self.settings.prefix
        }

        /// The largest uid accepted.
        pub fn max_uid(&self) -> u64 {
            self.settings.max_uid
        }

        #[doc = concat!($retention_doc, ".")]
        pub fn retention(&self) -> Retention {
            self.settings.retention
        }
    };
}
pub(crate) use settings_accessors;

/// The op that `build` returns, or the op that fails with its refusal
/// (nothing sent): lets an operation check its input with `?`.
pub(crate) fn checked<T: Send + 'static>(build: impl FnOnce() -> Result<Op<T>>) -> Op<T> {
    build().unwrap_or_else(Op::fail)
}
