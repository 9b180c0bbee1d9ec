//! The sign-in bitmaps' contract for other languages (see [`crate::contract`]).

use serde_json::json;

use super::DEFAULT_PREFIX;
use crate::bitmap::{DEFAULT_MAX_UID, MAX_OFFSET, MAX_RANGE_DAYS};
use crate::contract::parts::*;

/// The temporary key's base when the prefix (without its trailing `:`) is
/// empty and there is no tag.
pub(crate) const BARE_TMP_BASE: &str = "signin";

pattern_contract! {
    "signin", "daily sign-in bitmaps: bit uid of a day's bitmap is set when that user signed in";
    params, keys, constants, functions, protocols
}

/// The bitmaps' parameters: the prefix, the tag, the largest uid and the retention.
fn params() -> Vec<Param> {
    vec![
        prefix_param_meaning(
            DEFAULT_PREFIX,
            "what every key starts with; empty for bare dates (SETBIT 20220320 100 1); no whitespace",
        ),
        required_param(
            "tag",
            "string",
            "optional hash tag putting every day in one cluster slot: not empty, no `{` or `}`",
        ),
        param(
            "max_uid",
            "integer",
            json!(DEFAULT_MAX_UID),
            "the largest uid accepted, at most max_offset (the offset trap guard)",
        ),
        required_param(
            "retention_s",
            "integer",
            "seconds a day's bitmap lives after the day ends (00:00 UTC); null: forever",
        ),
    ]
}

/// A day's keys: its bitmap (with and without a tag), a range query's temporary key.
fn keys() -> Vec<KeyTemplate> {
    vec![
        key(
            "day",
            "<prefix><YYYYMMDD>",
            "string",
            "the day's bitmap without a tag",
        ),
        key(
            "day_tagged",
            "<prefix>{<tag>}:<YYYYMMDD>",
            "string",
            "the day's bitmap with a tag",
        ),
        key(
            "tmp",
            "<base>:tmp:<hex16>",
            "string",
            "the temporary key of signin.combine / signin.count, deleted by the script; <base> is <prefix>{<tag>} with a tag, else the prefix without its trailing `:` (tmp_base_bare when that is empty); <hex16> is 16 random lowercase hex digits",
        ),
    ]
}

/// The bounds on uids, offsets and ranges, and the temporary keys' base.
fn constants() -> Vec<Constant> {
    vec![
        constant(
            "default_max_uid",
            DEFAULT_MAX_UID,
            "the default max_uid (a bitmap is then at most 1.25 MB)",
        ),
        constant(
            "max_offset",
            MAX_OFFSET,
            "the largest bit offset Redis accepts",
        ),
        constant(
            "max_range_days",
            MAX_RANGE_DAYS,
            "the longest day range a query accepts",
        ),
        constant(
            "tmp_base_bare",
            BARE_TMP_BASE,
            "<base> of the temporary key when the prefix is empty and there is no tag",
        ),
    ]
}

/// The computations every client does: decoding a bitmap's bits.
fn functions() -> Vec<Function> {
    vec![
        shared::expire_at(),
        function(
            "decode_bits",
            "decode_bits(bitmap: bytes) -> integer[]",
            &[
                "the offsets of the set bits, ascending; bit 0 is the most significant bit of byte 0 (as SETBIT numbers them)",
            ],
        ),
    ]
}

/// How each operation runs: a sign-in, a range.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "sign_in",
            &["signin.mark"],
            &[
                "uid > max_uid is refused before sending (UIDRANGE from the script otherwise); signin.mark(day key, uid, max_uid, expire_at(next day 00:00 UTC)) -> 1 when first that day",
            ],
        ),
        protocol(
            "range",
            &["signin.combine", "signin.count", "GET"],
            &[
                "the day keys of every day from..to (at most max_range_days); on one server, or when they share a slot (a tag), one signin.combine (OR: any day, AND: every day)",
                "with a fresh tmp key returns the combined bitmap (nil: empty) and signin.count only its BITCOUNT",
                "on a cluster without a tag: GET every day key and combine client-side (a missing day is an empty bitmap; AND truncates to the shortest)",
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::*;
    use crate::contract::parts::KeyTemplate;
    use crate::keys::Prefix;
    use crate::signin::SignIn;

    #[test]
    fn templates_render_the_keys_the_bitmaps_use() {
        let c = contract();
        let day = NaiveDate::from_ymd_opt(2022, 3, 20).unwrap();
        let plain = SignIn::default();
        assert_eq!(
            KeyTemplate::render(
                &c.keys[0].template,
                &[("prefix", DEFAULT_PREFIX), ("YYYYMMDD", "20220320")]
            ),
            plain.key(day)
        );
        let bare = SignIn::builder().prefix(Prefix::none()).build().unwrap();
        assert_eq!(
            KeyTemplate::render(
                &c.keys[0].template,
                &[("prefix", ""), ("YYYYMMDD", "20220320")]
            ),
            bare.key(day)
        );
        let tagged = SignIn::builder().tag("app").build().unwrap();
        assert_eq!(
            KeyTemplate::render(
                &c.keys[1].template,
                &[
                    ("prefix", DEFAULT_PREFIX),
                    ("tag", "app"),
                    ("YYYYMMDD", "20220320")
                ]
            ),
            tagged.key(day)
        );
        assert_eq!(tagged.tmp_base(), "signin:{app}");
        assert_eq!(plain.tmp_base(), "signin");
        assert_eq!(bare.tmp_base(), BARE_TMP_BASE);
    }
}
