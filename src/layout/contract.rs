//! The layout pattern's contract for other languages (see [`crate::contract`]).

use crate::contract::parts::{PatternContract, key, protocol, scripts_of};

pub(crate) fn contract() -> PatternContract {
    PatternContract {
        name: "layout".into(),
        summary: "layouts stored with the data: the meta hash of a sharded pattern".into(),
        scripts: scripts_of("layout"),
        params: vec![],
        keys: vec![key(
            "meta",
            "<key>",
            "hash",
            "a pattern's meta key (<base>:meta of a sharded hash or packed store): field -> value, with pattern and version",
        )],
        constants: vec![],
        functions: vec![],
        api: crate::contract::api::parse("layout", include_str!("client.api")),
        protocols: vec![protocol(
            "claim",
            &["layout.claim"],
            &[
                "layout.claim(meta, field, value, ...) stores the pairs when the key is absent and answers the stored pairs",
                "compare them with yours as a set: any difference means another layout; refuse to write (nothing was written)",
            ],
        )],
    }
}
