//! Owner tokens: an unguessable 128-bit token per holder, so that only the
//! holder can release or extend its lease.

use crate::error::{Error, Result};

/// The token length in random bytes (32 hex digits).
pub(crate) const TOKEN_BYTES: usize = 16;

/// A fresh unguessable 128-bit owner token, as 32 lowercase hex digits.
pub fn new_token() -> String {
    let mut buf = [0u8; TOKEN_BYTES];
    // The OS random source failing is not recoverable for a lock: a
    // predictable token would let others release our lock.
    getrandom::fill(&mut buf).expect("the operating system's random source is unavailable");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// Refuses an empty token (the scripts' `nonempty`), before anything is
/// sent.
pub(crate) fn check_token(token: &str) -> Result<()> {
    if token.is_empty() {
        return Err(Error::invalid("token", "must not be empty"));
    }
    Ok(())
}
