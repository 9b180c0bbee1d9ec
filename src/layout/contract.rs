//! The layout pattern's contract for other languages (see [`crate::contract`]).

use crate::contract::parts::{KeyTemplate, PatternContract, key, protocol};

/// The meta key `<base>:meta` of a pattern that stores its layout with its
/// data, holding `fields`.
pub(crate) fn meta_key_template(fields: &str) -> KeyTemplate {
    key(
        "meta",
        "<base>:meta",
        "hash",
        &format!("the layout stored with the data ({fields}): see the layout pattern"),
    )
}

pub(crate) fn contract() -> PatternContract {
    PatternContract {
        keys: vec![key(
            "meta",
            "<key>",
            "hash",
            "a pattern's meta key (<base>:meta of a sharded hash or packed store): field -> value, with pattern and version",
        )],
        protocols: vec![protocol(
            "claim",
            &["layout.claim"],
            &[
                "layout.claim(meta, field, value, ...) stores the pairs when the key is absent and answers the stored pairs",
                "compare them with yours as a set: any difference means another layout; refuse to write (nothing was written)",
            ],
        )],
        ..PatternContract::of(
            "layout",
            "layouts stored with the data: the meta hash of a sharded pattern",
            include_str!("client.api"),
        )
    }
}
