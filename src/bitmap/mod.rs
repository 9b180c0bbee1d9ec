//! Bitmaps of user ids per day, the concept [`login_log`](crate::login_log)
//! and [`signin`](crate::signin) are built on: bit `uid` of a day's bitmap is
//! set when that user was active that day.
//!
//! * Offsets: a uid is a bit offset, and `SETBIT key 4000000000 1`
//!   makes Redis allocate ~500 MB (the offset trap). Uids above a configured
//!   maximum (default [`DEFAULT_MAX_UID`]: at most 1.25 MB per bitmap) are
//!   refused before anything is sent; [`decode_bits`] turns a bitmap back
//!   into uids.
//! * Day ranges: `from..=to`, at most [`MAX_RANGE_DAYS`] days, split
//!   into calendar months where keys are monthly; a period's keys expire by
//!   [`Retention`](crate::Retention) after the period ends (00:00 UTC).
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

pub use days::MAX_RANGE_DAYS;
pub use offsets::{DEFAULT_MAX_UID, MAX_OFFSET, decode_bits};

use crate::core::Op;
use crate::error::{Error, Result};
use crate::keys::Prefix;

/// Refuses a key prefix with whitespace: the keys of both bitmap patterns
/// are typed at `redis-cli` and written by other languages.
pub(crate) fn check_prefix(prefix: &Prefix) -> Result<()> {
    if prefix.as_str().chars().any(char::is_whitespace) {
        return Err(Error::invalid("prefix", "must not contain whitespace"));
    }
    Ok(())
}

/// The op that `build` returns, or the op that fails with its refusal
/// (nothing sent): lets an operation check its input with `?`.
pub(crate) fn checked<T: Send + 'static>(build: impl FnOnce() -> Result<Op<T>>) -> Op<T> {
    build().unwrap_or_else(Op::fail)
}
