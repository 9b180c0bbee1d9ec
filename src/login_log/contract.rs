//! The login log's contract for other languages (see [`crate::contract`]).

use serde_json::json;

use super::DEFAULT_PREFIX;
use crate::bitmap::{DEFAULT_MAX_UID, MAX_RANGE_DAYS};
use crate::contract::parts::{
    KeyTemplate, PatternContract, Protocol, bitmap_prefix_param, constant, function, key, param,
    protocol, required_param, shared,
};

pub(crate) fn contract() -> PatternContract {
    PatternContract {
        params: vec![
            bitmap_prefix_param(DEFAULT_PREFIX),
            param(
                "max_uid",
                "integer",
                json!(DEFAULT_MAX_UID),
                "the largest uid accepted (the offset trap guard of the day indexes)",
            ),
            required_param(
                "retention_s",
                "integer",
                "seconds logs and indexes live after their period (month / day, 00:00 UTC); null: forever",
            ),
        ],
        keys: keys(),
        constants: vec![
            constant("default_max_uid", DEFAULT_MAX_UID, "the default max_uid"),
            constant(
                "max_range_days",
                MAX_RANGE_DAYS,
                "the longest day range a query accepts",
            ),
        ],
        functions: vec![
            shared::expire_at(),
            function(
                "check_type",
                "check_type(user_type: string)",
                &[
                    "a user type is non-empty ASCII letters, digits or `-` (it is part of the `_`-separated log key)",
                ],
            ),
            function(
                "months",
                "months(from: date, to: date) -> (first, last)[]",
                &[
                    "the range from..to (at most max_range_days, not reversed) cut at month boundaries: one (first day, last day) per calendar month",
                ],
            ),
        ],
        protocols: protocols(),
        ..PatternContract::of(
            "login_log",
            "monthly login bitmaps per user in the PHP login-log recipe's layout, with per-day indexes per user type",
            include_str!("client.api"),
        )
    }
}

/// The keys of the login log.
fn keys() -> Vec<KeyTemplate> {
    vec![
        key(
            "log",
            "<prefix><YYYY-MM>_<type>_<uid>",
            "string",
            "a user's month: bit n set when the user logged in on day n (bit 0 unused); no hash tag",
        ),
        key(
            "day_index",
            "<prefix>{<YYYY-MM>}:<YYYYMMDD>:<type>",
            "string",
            "the day's users of a type: bit uid set",
        ),
        key(
            "types",
            "<prefix>{<YYYY-MM>}:types",
            "set",
            "the user types seen in the month",
        ),
        key(
            "tmp",
            "<prefix>{<YYYY-MM>}:tmp:<hex16>",
            "string",
            "the temporary key of signin.combine over a month's day indexes (16 random lowercase hex digits)",
        ),
    ]
}

/// The protocols of the login log.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "record",
            &["login_log.record", "login_log.mark", "login_log.index"],
            &[
                "uid > max_uid is refused before sending; log_expire_at = expire_at(first day of the next month 00:00 UTC), index_expire_at = expire_at(next day 00:00 UTC)",
                "one server (or the log and the day index in one cluster slot): login_log.record(log, day_index, types, day, uid, max_uid, type, log_expire_at, index_expire_at)",
                "cluster split (the log has no hash tag): login_log.mark(log, day, log_expire_at) and login_log.index(day_index, types, uid, max_uid, type, index_expire_at); both idempotent, the first-login flag is mark's reply",
            ],
        ),
        protocol(
            "queries",
            &[
                "GETBIT",
                "BITCOUNT",
                "login_log.days",
                "signin.combine",
                "SMEMBERS",
            ],
            &[
                "on a day: GETBIT log <day>; in a month: BITCOUNT log; within a range: BITCOUNT log <first> <last> BIT per month, any > 0",
                "the days of a range: login_log.days(log of the month, first, last) per month",
                "active users of a type: signin.combine(tmp of the month, the month's day_index keys, OR) per month, ORed client-side, decode_bits",
                "all active users: SMEMBERS types of every month, then active users of each type",
            ],
        ),
        protocol(
            "reindex",
            &["SCAN", "GETRANGE", "login_log.index"],
            &[
                "builds a month's day indexes from the log keys already there (written before the indexes, e.g. by the PHP recipe)",
                "SCAN <cursor> MATCH <prefix><YYYY-MM>_* (glob characters of the prefix escaped) COUNT <n> TYPE string, on one server or on every primary of a cluster, each with its own cursor",
                "a key <prefix><YYYY-MM>_<type>_<uid> with a valid type and a canonical uid <= max_uid is a log; other keys are skipped",
                "GETRANGE log 0 3; every set bit d from 1 to the month's last day: login_log.index(day_index of day d, types, uid, max_uid, type, index_expire_at of day d), as record sets it",
                "idempotent (bits already set stay set); resumable from the per-node cursors",
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::*;
    use crate::contract::parts::KeyTemplate;
    use crate::login_log::LoginLog;

    #[test]
    fn templates_render_the_keys_the_log_uses() {
        let c = contract();
        let log = LoginLog::default();
        let day = NaiveDate::from_ymd_opt(2017, 10, 25).unwrap();
        let vars = [
            ("prefix", DEFAULT_PREFIX),
            ("YYYY-MM", "2017-10"),
            ("YYYYMMDD", "20171025"),
            ("type", "client"),
            ("uid", "1001"),
        ];
        assert_eq!(
            KeyTemplate::render(&c.keys[0].template, &vars),
            log.log_key("client", 1001, day)
        );
        assert_eq!(
            KeyTemplate::render(&c.keys[0].template, &vars),
            "loginLog_2017-10_client_1001"
        );
        assert_eq!(
            KeyTemplate::render(&c.keys[1].template, &vars),
            log.index_key("client", day)
        );
        assert_eq!(
            KeyTemplate::render(&c.keys[2].template, &vars),
            log.types_key(day)
        );
        let tmp = crate::keys::tmp_key(&log.month_tag(day));
        let want = KeyTemplate::render(
            &c.keys[3].template,
            &[
                ("prefix", DEFAULT_PREFIX),
                ("YYYY-MM", "2017-10"),
                ("hex16", &tmp[tmp.len() - 16..]),
            ],
        );
        assert_eq!(tmp, want);
    }
}
