//! User ids as bit offsets: the offset-trap guard and the decoding of set
//! bits.

use crate::error::{Error, ErrorKind, Result};

/// The default maximum user id (a bitmap is then at most 1.25 MB).
pub const DEFAULT_MAX_UID: u64 = 10_000_000;

/// The largest bit offset Redis accepts (2^32 - 1; the `max_uid` range of
/// `lua/login_log/record.lua`'s header).
pub(crate) const MAX_OFFSET: u64 = crate::scripts::login_log::RECORD_MAX_UID_MAX as u64;

/// Checks a configured maximum uid: at most [`MAX_OFFSET`].
pub(crate) fn check_max_uid(max: u64) -> Result<()> {
    if max > MAX_OFFSET {
        return Err(Error::invalid(
            "max uid",
            format!("{max} is above the largest bit offset {MAX_OFFSET}"),
        ));
    }
    Ok(())
}

/// Refuses a uid above `max` with [`ErrorKind::UidOutOfRange`] (before
/// anything is written).
pub(crate) fn check_uid(uid: u64, max: u64) -> Result<()> {
    if uid > max {
        return Err(ErrorKind::UidOutOfRange {
            detail: format!("uid {uid} is above the configured maximum {max}"),
        }
        .into());
    }
    Ok(())
}

/// The offsets whose bits are set in `bitmap` (bit 0 is the most significant
/// bit of byte 0, as in `SETBIT`), ascending.
pub fn decode_bits(bitmap: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    for (i, &byte) in bitmap.iter().enumerate() {
        if byte == 0 {
            continue;
        }
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                out.push(i as u64 * 8 + bit);
            }
        }
    }
    out
}

/// The number of bits set in `bitmap` (what `BITCOUNT` answers).
pub(crate) fn count_bits(bitmap: &[u8]) -> u64 {
    bitmap.iter().map(|b| u64::from(b.count_ones())).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_decode_in_setbit_order() {
        assert_eq!(decode_bits(&[]), Vec::<u64>::new());
        assert_eq!(decode_bits(&[0x80, 0, 0x01]), vec![0, 23]);
        assert_eq!(count_bits(&[0xff, 0x01]), 9);
        assert!(check_uid(10, 10).is_ok());
        assert!(check_uid(11, 10).unwrap_err().is_invalid_input());
        assert!(check_max_uid(MAX_OFFSET).is_ok());
        assert!(check_max_uid(MAX_OFFSET + 1).is_err());
    }
}
