//! The rate limiters' contract for other languages (see [`crate::contract`]).

use super::DEFAULT_PREFIX;
use super::limit::MAX_TOLERANCE_US;
use crate::contract::parts::*;

pattern_contract! {
    "rate_limit", "rate limits in one script call on one key per subject: GCRA with redis-cell's \
     CL.THROTTLE reply, a sliding window counter and an exact sliding log";
    params, keys, constants, functions, protocols
}

/// The limiters' constant: the longest burst window.
fn constants() -> Vec<Constant> {
    vec![constant(
        "max_tolerance_us",
        MAX_TOLERANCE_US as u64,
        "the longest GCRA burst window, (max_burst + 1) emission intervals, in microseconds",
    )]
}

/// The limiters' parameters: the prefix and subject, the throttle's burst and rate, the windows' limit and length.
fn params() -> Vec<Param> {
    vec![
        prefix_param_meaning(
            DEFAULT_PREFIX,
            "what every key starts with (no `{` or `}`); one limit per prefix",
        ),
        required_param(
            "subject",
            "string",
            "who is limited (a user, an API key ...): not empty, no `{` or `}`",
        ),
        required_param(
            "max_burst",
            "integer",
            "GCRA: units allowed at once beyond the steady rate (the limit is max_burst + 1)",
        ),
        required_param("count_per_period", "integer", "GCRA: units per period"),
        required_param(
            "period_ms",
            "duration_ms",
            "GCRA: the period, whole milliseconds",
        ),
        required_param("limit", "integer", "the windows: units allowed per window"),
        required_param(
            "window_ms",
            "duration_ms",
            "the windows: the window, whole milliseconds",
        ),
    ]
}

/// The limiters' keys: the throttle's TAT, the fixed window's counter, the sliding window's log.
fn keys() -> Vec<KeyTemplate> {
    vec![
        key(
            "tat",
            "<prefix>{<subject>}",
            "string",
            "GCRA: the theoretical arrival time in unix microseconds; expires at it",
        ),
        key(
            "counter",
            "<prefix>{<subject>}:counter",
            "hash",
            "sliding counter: fields w (window number), c (its count), p (the previous \
             window's count); expires when both windows have passed",
        ),
        key(
            "log",
            "<prefix>{<subject>}:log",
            "zset",
            "sliding log: one entry per unit taken in the last window, scored by its time in \
             unix microseconds; expires when the newest leaves the window",
        ),
    ]
}

/// The computations every client does: the throttle's emission interval and its decision.
fn functions() -> Vec<Function> {
    vec![
        function(
            "emission_interval_us",
            "emission_interval_us(period_ms: integer, count_per_period: integer) -> integer",
            &[
                "ceil(period_ms * 1000 / count_per_period): the GCRA's microseconds per unit",
                "refused when count_per_period > period_ms * 1000 (BADARG count_per_period)",
                "or when (max_burst + 1) * emission_interval_us > max_tolerance_us (BADARG max_burst)",
            ],
        ),
        function(
            "decision",
            "decision(reply: integers) -> {limited, limit, remaining, retry_after_ms, reset_after_ms}",
            &[
                "every script answers CL.THROTTLE's five fields, in its order, times in ms rounded up:",
                "limited: 1 refused (nothing taken), 0 taken; limit: the most one call may take",
                "(max_burst + 1, or the window's limit); remaining: units a call right after could take;",
                "retry_after_ms: -1 when allowed, else how long until the same quantity fits;",
                "reset_after_ms: how long until the subject is fully reset (its key expires then)",
            ],
        ),
    ]
}

/// How each limiter runs: the throttle, allow-once-per, the sliding windows.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "throttle",
            &["rate_limit.throttle"],
            &[
                "reply = rate_limit.throttle(tat, max_burst, count_per_period, period_ms, quantity)",
                "quantity 0 peeks and writes nothing; quantity above max_burst + 1 is refused",
                "leave the optional last argument now_us out: the script reads the server's TIME",
            ],
        ),
        protocol(
            "allow_once_per",
            &["rate_limit.throttle"],
            &[
                "one action per interval_ms: rate_limit.throttle(tat, 0, 1, interval_ms, 1)",
                "limited = 1 means too fast; retry_after_ms says how long to rest",
            ],
        ),
        protocol(
            "sliding_windows",
            &["rate_limit.window_counter", "rate_limit.window_log"],
            &[
                "reply = rate_limit.window_counter(counter, limit, window_ms, quantity) or",
                "rate_limit.window_log(log, limit, window_ms, quantity); quantity 0 takes nothing",
                "the counter allows at most limit per fixed window and 2 * limit - 1 in a span of window_ms;",
                "the log allows at most limit in any span of window_ms and never holds more than limit entries",
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::contract::parts::KeyTemplate;
    use crate::keys::Prefix;
    use crate::rate_limit::{Limit, RateLimiter};

    #[test]
    fn templates_render_the_keys_the_limiters_use() {
        let c = contract();
        let sec = Duration::from_secs(1);
        let vars = [("prefix", "app:rl:"), ("subject", "42:withdraw")];
        for (limit, template) in [
            (Limit::gcra(1, 2, sec), &c.keys[0].template),
            (Limit::sliding_counter(3, sec), &c.keys[1].template),
            (Limit::sliding_log(3, sec), &c.keys[2].template),
        ] {
            let limiter = RateLimiter::builder(limit)
                .prefix(Prefix::new("app:rl:").unwrap())
                .build()
                .unwrap();
            assert_eq!(
                KeyTemplate::render(template, &vars),
                limiter.key("42:withdraw").unwrap()
            );
        }
        assert_eq!(c.params[0].default, json!(DEFAULT_PREFIX));
        let default = RateLimiter::new(Limit::once_per(sec)).unwrap();
        assert_eq!(
            KeyTemplate::render(
                &c.keys[0].template,
                &[("prefix", DEFAULT_PREFIX), ("subject", "x")]
            ),
            default.key("x").unwrap()
        );
        assert_eq!(
            Limit::gcra(0, 3, sec).emission_interval(),
            Some(Duration::from_micros(333_334)),
            "ceil(1000 * 1000 / 3)"
        );
    }
}
