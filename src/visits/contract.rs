//! The visit counter's contract for other languages (see [`crate::contract`]).

use serde_json::json;

use super::{DEFAULT_LATE_WINDOW, DEFAULT_PREFIX, DEFAULT_RETENTION, MAX_SHARDS};
use crate::contract::parts::*;

pattern_contract! {
    "visits", "exact daily unique visitors: integer members in sharded intsets, a counter per day";
    params, keys, constants, functions, protocols
}

/// The counter's parameters: its prefix and name, shards, time zone, grace and late window.
fn params() -> Vec<Param> {
    vec![
        prefix_param(DEFAULT_PREFIX),
        name_param("counter"),
        required_param(
            "shards",
            "integer",
            "shard sets per day, 1 to max_shards; every writer of a counter uses the same",
        ),
        param(
            "time_zone",
            "time_zone",
            json!("UTC"),
            "the zone whose calendar days are counted (IANA name)",
        ),
        param(
            "grace_s",
            "integer",
            json!(match DEFAULT_RETENTION {
                crate::Retention::After(d) => d.as_secs(),
                crate::Retention::Forever => 0,
            }),
            "seconds a day's keys live after the day ends (default two days: yesterday stays readable); null: never expire",
        ),
        param(
            "late_s",
            "integer",
            json!(DEFAULT_LATE_WINDOW.as_secs()),
            "seconds after a day ends during which visits stamped on it are still accepted (at most grace_s; default five minutes); null: as long as its keys live",
        ),
    ]
}

/// A day's keys: its count, its shard sets and its layout.
fn keys() -> Vec<KeyTemplate> {
    vec![
        key(
            "counter",
            "<prefix>{<name>:<YYYY-MM-DD>}:count",
            "string",
            "the day's distinct count",
        ),
        key(
            "shard",
            "<prefix>{<name>:<YYYY-MM-DD>}:<shard>",
            "set",
            "the members of shard <shard> (0 to shards-1) of the day",
        ),
        key(
            "meta",
            "<prefix>{<name>:<YYYY-MM-DD>}:meta",
            "hash",
            "the day's layout (pattern, version, shards), written by the script of its first member",
        ),
    ]
}

/// The bounds on shards and grace.
fn constants() -> Vec<Constant> {
    vec![
        constant(
            "max_shards",
            MAX_SHARDS,
            "the most shards a counter may have",
        ),
        constant(
            "max_grace_s",
            366 * 86_400,
            "the longest grace after the end of a day",
        ),
    ]
}

/// The computations every client does: the shard of a member, a day's expiry and deadline, a batch's grouping.
fn functions() -> Vec<Function> {
    vec![
        shared::crc32(),
        function(
            "shard_of",
            "shard_of(member: int64, shards: integer) -> integer",
            &["crc32(the member's canonical decimal text, e.g. \"-42\") mod shards"],
        ),
        function(
            "day_expire_at",
            "day_expire_at(day: date, time_zone, grace_s) -> integer",
            &[
                "the first instant of the next day in time_zone (local midnight; in a DST gap the first valid local time after it,",
                "when ambiguous the earlier one), as unix seconds, plus grace_s; 0 when keys never expire",
            ],
        ),
        function(
            "day_accept_until",
            "day_accept_until(day: date, time_zone, late_s) -> integer",
            &[
                "the first instant of the next day in time_zone (as in day_expire_at), as unix seconds, plus late_s;",
                "0 when late_s is null (visits are accepted as long as the day's keys live)",
            ],
        ),
        function(
            "group_batch",
            "group_batch(members: int64[], shards) -> (shard keys, groups, positions)",
            &[
                "drop repeats (the first occurrence stays); group the rest by shard_of, shards in order of first appearance",
                "keys: the counter, the day's meta key, then the shard key of each group; groups: for each group its size n, then its n members",
                "the reply is {count, flag per member in group order}; a repeated member is not new",
            ],
        ),
    ]
}

/// How each operation runs: add, a day's final count, the distinct count over days.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "add",
            &["visits.add"],
            &[
                "visits.add(counter, shard key of shard_of(member), meta, day_expire_at(day), day_accept_until(day), member, shards)",
                "-> {new, count}",
                "DAYENDED: the day no longer accepts visits (by the server's clock, past day_accept_until) or its keys would",
                "already have expired; nothing was written. Idempotent: a resend after a lost reply answers new = 0",
                "LAYOUT: the day stores another shard count (its meta key); nothing was written",
            ],
        ),
        protocol(
            "final_count",
            &["TIME", "GET"],
            &[
                "TIME and GET counter in one pipeline to the counter's node; before day_accept_until(day) by that clock the",
                "day is still open (its count may grow), from day_expire_at(day) on its count is gone (not 0); between, GET",
                "is the final count",
            ],
        ),
        protocol(
            "distinct_over_days",
            &["SMEMBERS"],
            &[
                "the exact distinct count over several days: for each shard index i, the size of the union over the days",
                "of their shard i sets, summed over i (each day has its own hash tag: the union is client-side)",
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, Utc};

    use super::*;
    use crate::contract::parts::KeyTemplate;
    use crate::keys::Prefix;
    use crate::visits::VisitCounter;
    use crate::visits::shards::shard_of;

    #[test]
    fn templates_render_the_keys_the_counter_uses() {
        let c = contract();
        let v = VisitCounter::builder("site", Utc, 8)
            .prefix(Prefix::new("v:").unwrap())
            .build()
            .unwrap();
        let day = NaiveDate::from_ymd_opt(2024, 2, 29).unwrap();
        let shard = shard_of(-42, 8).to_string();
        let vars = [
            ("prefix", "v:"),
            ("name", "site"),
            ("YYYY-MM-DD", "2024-02-29"),
            ("shard", shard.as_str()),
        ];
        assert_eq!(
            KeyTemplate::render(&c.keys[0].template, &vars),
            v.counter_key(day)
        );
        assert_eq!(
            KeyTemplate::render(&c.keys[1].template, &vars),
            v.member_shard_key(day, -42)
        );
        assert_eq!(shard_of(-42, 8), crc32fast::hash(b"-42") % 8);
    }
}
