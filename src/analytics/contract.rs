//! The bitmap analytics' contract for other languages (see [`crate::contract`]).

use serde_json::json;

use super::DEFAULT_PREFIX;
use crate::bitmap::{DEFAULT_MAX_UID, MAX_OFFSET};
use crate::contract::parts::{
    KeyTemplate, PatternContract, Protocol, bitmap_prefix_param, constant, key, param, protocol,
    required_param,
};

pub(crate) fn contract() -> PatternContract {
    PatternContract {
        params: vec![
            bitmap_prefix_param(DEFAULT_PREFIX),
            required_param(
                "tag",
                "string",
                "optional hash tag shared by every event (one cluster slot for all); null: each event's own tag",
            ),
            param(
                "max_id",
                "integer",
                json!(DEFAULT_MAX_UID),
                "the largest id accepted, at most max_offset (a bitmap grows to max_id / 8 bytes)",
            ),
            required_param(
                "granularities",
                "string",
                "the periods a mark sets, comma-separated from hour, day, week (ISO), month, year; null: day, week, month",
            ),
            param(
                "hll",
                "bool",
                json!(false),
                "a mark also adds the id to the event's HyperLogLog of the finest period (analytics.mark_hll), and mark_unique to the unique event's (<period> U), for count_uniques (0.81 % standard error)",
            ),
        ],
        keys: keys(),
        constants: vec![
            constant(
                "default_max_id",
                DEFAULT_MAX_UID,
                "the default max_id (a bitmap is then at most 1.25 MB)",
            ),
            constant(
                "max_offset",
                MAX_OFFSET,
                "the largest bit offset Redis accepts",
            ),
        ],
        protocols: protocols(),
        ..PatternContract::of(
            "analytics",
            "bitmapist-style product analytics: events mark ids in hour / day / ISO week / month / year bitmaps; set expressions and cohort tables computed on the server",
            include_str!("client.api"),
        )
    }
}

/// The keys of the analytics.
fn keys() -> Vec<KeyTemplate> {
    vec![
        key(
            "event",
            "<prefix>{<event>}:<period>",
            "string",
            "an event's bitmap of one period without a tag (bit id); <period> is H:<YYYY-MM-DD>T<HH>, D:<YYYY-MM-DD>, W:<ISO year>-W<ww>, M:<YYYY-MM>, Y:<YYYY>, or U for a unique event",
        ),
        key(
            "event_tagged",
            "<prefix>{<tag>}:<event>:<period>",
            "string",
            "an event's bitmap of one period with a tag",
        ),
        key(
            "uniques",
            "<prefix>{<event>}:<period>:hll",
            "string",
            "the HyperLogLog beside an event's bitmap of a period of the finest configured granularity, or beside a unique event's (<period> U), without a tag: ids added by analytics.mark_hll, with the bits or instead of them (string ids)",
        ),
        key(
            "uniques_tagged",
            "<prefix>{<tag>}:<event>:<period>:hll",
            "string",
            "the HyperLogLog beside an event's bitmap of a period, with a tag",
        ),
        key(
            "tmp",
            "<base>:tmp:<hex16>",
            "string",
            "a temporary key of analytics.query / analytics.cohort (the result or a register), deleted by the script; <base> is <prefix>{<tag>} with a tag, else <prefix>{<event>} of the first event",
        ),
        key(
            "result",
            "<base>:cache:<name>",
            "string",
            "a cached expression result, kept for its TTL (or a tmp key)",
        ),
    ]
}

/// The protocols of the analytics.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "mark",
            &["analytics.mark"],
            &[
                "id > max_id is refused before sending; the periods of the instant (UTC) for every configured granularity, finest first",
                "analytics.mark(bitmaps, max_id, expire_at per bitmap (0: kept), id...) -> how many ids were new in the first bitmap",
            ],
        ),
        protocol(
            "uniques",
            &["analytics.mark_hll", "PFCOUNT"],
            &[
                "mark with hll, or a string id: the finest period's HyperLogLog <finest bitmap>:hll, then (integer ids with hll only) the bitmaps as for mark",
                "mark_unique with hll, or mark_unique_string: the unique event's HyperLogLog <unique bitmap>:hll (kept: expire_at 0), then (mark_unique only) the unique bitmap",
                "analytics.mark_hll(hll, bitmaps, max_id, expire_at per key (the hll's is the finest bitmap's), id...) -> {hll changed, ids new in the first bitmap}",
                "count_uniques: PFCOUNT of the HyperLogLogs of every finest period in the range (one slot); the asked granularity must be made of whole finest periods (hour and day make every coarser one, month makes year), at most 1000 keys; first U (last null or U): PFCOUNT of the unique event's HyperLogLog",
            ],
        ),
        protocol(
            "streak",
            &["analytics.streak"],
            &[
                "the event's bitmaps of consecutive periods from the first to the last (one granularity, at most 1000), oldest first; an id above max_id has no streak (nothing sent)",
                "analytics.streak(bitmaps, id) -> {longest, index of its last period (1-based, 0: none), current, marked}",
            ],
        ),
        protocol(
            "query",
            &["analytics.query", "analytics.cohort", "GET"],
            &[
                "an expression compiled to BITOP steps `<OP> <dst> <src>...` over KEYS indices (1: result, then the registers, then the input bitmaps); DIFF, DIFF1, ANDOR and ONE only with bitop_diff = 1 (the server's caps)",
                "on a cluster with the bitmaps in several slots: GET every bitmap and compute client-side (a missing key is an empty bitmap)",
            ],
        ),
    ]
}
