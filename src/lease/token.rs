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
    // Hex by table, into one allocation (a `format!` per byte cost a lock
    // acquire+release pair ~10k client instructions under callgrind).
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(2 * TOKEN_BYTES);
    for b in buf {
        hex.push(HEX[usize::from(b >> 4)] as char);
        hex.push(HEX[usize::from(b & 15)] as char);
    }
    hex
}

/// Refuses an empty token (the scripts' `nonempty`), before anything is
/// sent.
pub(crate) fn check_token(token: &str) -> Result<()> {
    if token.is_empty() {
        return Err(Error::invalid("token", "must not be empty"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_32_lowercase_hex_digits_and_differ() {
        let (a, b) = (new_token(), new_token());
        for t in [&a, &b] {
            assert_eq!(t.len(), 2 * TOKEN_BYTES);
            assert!(
                t.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')),
                "{t}"
            );
        }
        assert_ne!(a, b);
    }
}
