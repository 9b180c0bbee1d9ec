//! What the login_log and signin tests share: dates and the checks of a
//! refusal's kind.

use chrono::NaiveDate;
use redis_patterns::{Error, ErrorKind};

pub fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

/// The error kind of a reply, if it failed.
pub fn kind_of<T>(reply: &redis_patterns::Result<T>) -> Option<&ErrorKind> {
    reply.as_ref().err().map(Error::kind)
}

/// Whether a reply is the refusal of a uid out of range.
pub fn uid_out_of_range<T>(reply: &redis_patterns::Result<T>) -> bool {
    matches!(kind_of(reply), Some(ErrorKind::UidOutOfRange { .. }))
}

/// Whether a reply is the refusal of an invalid argument.
pub fn invalid_argument<T>(reply: &redis_patterns::Result<T>) -> bool {
    matches!(kind_of(reply), Some(ErrorKind::InvalidArgument { .. }))
}

/// Whether a script refused its arguments (`BADARG`) before writing.
pub fn script_refused<T>(reply: &redis_patterns::Result<T>) -> bool {
    matches!(
        kind_of(reply),
        Some(ErrorKind::InvalidArgument {
            script: Some(_),
            ..
        })
    )
}
