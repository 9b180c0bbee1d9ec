//! The rate limiters against a real redis-server (and a three-node cluster),
//! every test body through both drivers.
//!
//! The scripts' decisions are checked against independent oracles fed the
//! same arrival times, through the scripts' optional `now_us` argument (the
//! API leaves it out, so production reads the server's `TIME`): GCRA against
//! its dual, the continuous-state leaky bucket; the sliding log against a
//! queue of arrival times; the sliding counter against a brute-force search
//! over its weighted count, millisecond by millisecond. Simulated times lie
//! in 2096, so keys that expire at them (by the server's clock) outlive the
//! test.

#[path = "support/splitmix.rs"]
mod splitmix;
mod support;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use redis_patterns::rate_limit::{self, Decision, Limit, RateLimiter};
use redis_patterns::scripts::{self, rate_limit as wrappers};
use redis_patterns::{Batch, ErrorKind, Result, ScriptCall, keys::Prefix};
use splitmix::SplitMix64;
use support::Driver;

/// 2096-10-02 in unix microseconds.
const BASE_US: i64 = 4_000_000_000_000_000;

fn ceil_ms(us: i128) -> i64 {
    (us.max(0) as u128).div_ceil(1000) as i64
}

/// One script call `(key, quantity, now_us)` at a simulated time, through
/// a typed wrapper.
type Call = dyn Fn(&str, i64, i64) -> Result<ScriptCall<Vec<i64>>>;

fn gcra_at(max_burst: i64, count: i64, period_ms: i64) -> Box<Call> {
    Box::new(move |key, q, now| wrappers::throttle(key, max_burst, count, period_ms, q, &[now]))
}

fn counter_at(limit: i64, window_ms: i64) -> Box<Call> {
    Box::new(move |key, q, now| wrappers::window_counter(key, limit, window_ms, q, &[now]))
}

fn log_at(limit: i64, window_ms: i64) -> Box<Call> {
    Box::new(move |key, q, now| wrappers::window_log(key, limit, window_ms, q, &[now]))
}

/// Runs the calls `(now_us, quantity)` in order, 100 per batch (one round
/// trip each); with `card`, each call is followed by `ZCARD key` in the same
/// batch. Returns each reply and, with `card`, the log's size after it.
fn run_at(
    d: &mut Driver,
    script: &Call,
    key: &str,
    arrivals: &[(i64, i64)],
    card: bool,
) -> Vec<(Vec<i64>, i64)> {
    let mut out = Vec::with_capacity(arrivals.len());
    for chunk in arrivals.chunks(100) {
        let mut batch = Batch::new();
        for &(now, q) in chunk {
            batch.script(script(key, q, now));
            if card {
                batch.add(key, redis::cmd("ZCARD").arg(key).clone());
            }
        }
        let mut replies = d.run(batch).unwrap_or_else(|e| panic!("{}: {e}", d.name()));
        for _ in chunk {
            let reply: Vec<i64> = replies.take().expect("a script reply");
            let size = if card {
                replies.take().expect("ZCARD")
            } else {
                -1
            };
            out.push((reply, size));
        }
    }
    out
}

/// Random arrival times (non-decreasing, ties included) and quantities from
/// 0 to `max_q` (mostly 1), steps drawn around `step_us`.
fn arrivals(rng: &mut SplitMix64, n: usize, step_us: i64, max_q: i64) -> Vec<(i64, i64)> {
    let mut now = BASE_US + rng.below(1_000_000);
    (0..n)
        .map(|_| {
            now += match rng.below(10) {
                0 => 0,
                1..=5 => rng.below(step_us),
                6..=8 => rng.below(3 * step_us),
                _ => rng.below(20 * step_us),
            };
            let q = match rng.below(10) {
                0 => 0,
                1 => rng.below(max_q + 1),
                _ => 1.min(max_q),
            };
            (now, q)
        })
        .collect()
}

/// GCRA's dual form: a bucket that drains one microsecond per microsecond,
/// takes `interval` per unit and holds at most `tolerance`.
struct LeakyBucket {
    interval: i128,
    tolerance: i128,
    limit: i64,
    level: i128,
    last: i128,
}

impl LeakyBucket {
    fn new(max_burst: i64, count: i64, period_ms: i64) -> Self {
        let interval = (period_ms as i128 * 1000 + count as i128 - 1) / count as i128;
        Self {
            interval,
            tolerance: interval * (max_burst as i128 + 1),
            limit: max_burst + 1,
            level: 0,
            last: 0,
        }
    }

    fn remaining(&self, level: i128) -> i64 {
        ((self.tolerance - level).max(0) / self.interval) as i64
    }

    fn offer(&mut self, now: i64, q: i64) -> Vec<i64> {
        let now = now as i128;
        let drained = (self.level - (now - self.last)).max(0);
        let needed = drained + self.interval * q as i128;
        if needed > self.tolerance {
            return vec![
                1,
                self.limit,
                self.remaining(drained),
                ceil_ms(needed - self.tolerance),
                ceil_ms(drained),
            ];
        }
        if q > 0 {
            self.level = needed;
            self.last = now;
        }
        vec![0, self.limit, self.remaining(needed), -1, ceil_ms(needed)]
    }

    /// The theoretical arrival time the script stores.
    fn tat(&self) -> i128 {
        self.last + self.level
    }
}

#[test]
fn gcra_agrees_with_a_leaky_bucket_to_the_millisecond() {
    let server = support::server();
    // (max_burst, count_per_period, period_ms): a debounce, a per-second
    // limit, CL.THROTTLE's README example (15, 30 per 60 s), intervals that
    // round up (333,333.3 and 1,857.1 us) and a large burst.
    let params: [(i64, i64, i64); 5] = [
        (0, 1, 2000),
        (4, 10, 1000),
        (15, 30, 60_000),
        (2, 3, 1000),
        (99, 7, 13),
    ];
    support::each_driver(&server, |d| {
        let mut rng = SplitMix64(7);
        let mut total = 0;
        let (mut limited, mut allowed) = (0, 0);
        for (i, &(max_burst, count, period_ms)) in params.iter().enumerate() {
            let key = format!("rate:{{gcra-{i}}}");
            let mut oracle = LeakyBucket::new(max_burst, count, period_ms);
            let feed = arrivals(&mut rng, 2000, oracle.interval as i64, max_burst + 1);
            let script = gcra_at(max_burst, count, period_ms);
            for (n, ((reply, _), &(now, q))) in run_at(d, &script, &key, &feed, false)
                .into_iter()
                .zip(&feed)
                .enumerate()
            {
                let expected = oracle.offer(now, q);
                assert_eq!(
                    reply,
                    expected,
                    "{}: {params:?}[{i}], call {n}: now {now} quantity {q}",
                    d.name()
                );
                if reply[0] == 1 {
                    limited += 1;
                } else if q > 0 {
                    allowed += 1;
                }
            }
            let tat: String = d.cmd(&key, redis::cmd("GET").arg(&key));
            assert_eq!(tat, oracle.tat().to_string(), "{}: stored TAT", d.name());
            total += feed.len();
        }
        assert!(total >= 10_000);
        // The feed really exercises both answers.
        assert!(limited > 1000 && allowed > 1000, "{limited} / {allowed}");
    });
}

/// The exact sliding log, as a queue of arrival times.
struct Queue {
    limit: i64,
    window: i64,
    entries: VecDeque<i64>,
}

impl Queue {
    fn offer(&mut self, now: i64, q: i64) -> Vec<i64> {
        while self
            .entries
            .front()
            .is_some_and(|&t| t <= now - self.window)
        {
            self.entries.pop_front();
        }
        let n = self.entries.len() as i64;
        let (limited, retry) = if n + q > self.limit {
            let oldest = self.entries[(n + q - self.limit - 1) as usize];
            (1, ceil_ms((oldest + self.window - now) as i128))
        } else {
            self.entries.extend(std::iter::repeat_n(now, q as usize));
            (0, -1)
        };
        let reset = self
            .entries
            .back()
            .map_or(0, |&t| ceil_ms((t + self.window - now) as i128));
        let n = self.entries.len() as i64;
        vec![limited, self.limit, self.limit - n, retry, reset]
    }
}

#[test]
fn sliding_log_is_exact_and_never_holds_more_than_its_limit() {
    let server = support::server();
    let params: [(i64, i64); 3] = [(1, 500), (5, 1000), (40, 60_000)];
    support::each_driver(&server, |d| {
        // Loaded first, as scripts and as the library (whichever the call
        // mode uses): a batch that mixes script calls and plain commands
        // cannot be re-sent in order after NOSCRIPT.
        d.run(redis_patterns::load_all()).expect("load the scripts");
        d.run(redis_patterns::functions::load())
            .expect("load the library");
        let mut rng = SplitMix64(11);
        let mut limited = 0;
        for (i, &(limit, window_ms)) in params.iter().enumerate() {
            let key = format!("rate:{{log-{i}}}:log");
            let mut oracle = Queue {
                limit,
                window: window_ms * 1000,
                entries: VecDeque::new(),
            };
            let feed = arrivals(&mut rng, 1500, window_ms * 1000 / limit, limit);
            let script = log_at(limit, window_ms);
            for ((reply, size), &(now, q)) in
                run_at(d, &script, &key, &feed, true).into_iter().zip(&feed)
            {
                assert_eq!(reply, oracle.offer(now, q), "{}: now {now} q {q}", d.name());
                assert!(size <= limit, "{}: {size} entries, limit {limit}", d.name());
                assert_eq!(size, oracle.entries.len() as i64);
                limited += reply[0];
            }
        }
        assert!(limited > 300, "{limited}");
        // A log written with a larger limit is cut to the smaller one.
        let key = "rate:{shrunk}:log";
        let wide = log_at(50, 60_000);
        let at: Vec<(i64, i64)> = (0..50).map(|i| (BASE_US + i, 1)).collect();
        run_at(d, &wide, key, &at, false);
        let narrow = log_at(10, 60_000);
        let (reply, size) = run_at(d, &narrow, key, &[(BASE_US + 100, 0)], true).remove(0);
        assert_eq!((reply[2], size), (0, 10), "{}", d.name());
    });
}

/// Units allowed per fixed window (window number -> units), and the
/// counter's rule read off it: the previous window's count weighted by the
/// share of it the sliding window still covers, plus the current one's.
struct Windows {
    limit: i64,
    window: i64,
    counts: HashMap<i64, i64>,
}

impl Windows {
    fn count(&self, k: i64) -> i64 {
        self.counts.get(&k).copied().unwrap_or(0)
    }

    fn fits(&self, ms: i64, q: i64) -> bool {
        let (k, e) = (ms.div_euclid(self.window), ms.rem_euclid(self.window));
        let used = self.count(k - 1) as i128 * (self.window - e) as i128
            + (self.count(k) + q) as i128 * self.window as i128;
        used <= self.limit as i128 * self.window as i128
    }

    /// The answer, by brute force: the first millisecond at which the
    /// quantity fits, the first at which both windows are empty, and the
    /// most that fits now.
    fn offer(&mut self, now_us: i64, q: i64) -> Vec<i64> {
        let ms = now_us.div_euclid(1000);
        let fits = self.fits(ms, q);
        if fits && q > 0 {
            *self.counts.entry(ms.div_euclid(self.window)).or_default() += q;
        }
        let retry = if fits {
            -1
        } else {
            (1..).find(|&t| self.fits(ms + t, q)).expect("fits later")
        };
        let reset = (0..)
            .find(|&t| {
                let k = (ms + t).div_euclid(self.window);
                self.count(k) == 0 && self.count(k - 1) == 0
            })
            .expect("empties");
        let remaining = (0..=self.limit)
            .rev()
            .find(|&r| self.fits(ms, r))
            .unwrap_or(0);
        vec![i64::from(!fits), self.limit, remaining, retry, reset]
    }
}

/// The most units allowed in any span of `window` (half-open), and in any
/// fixed window.
fn densest(allowed: &[(i64, i64)], window: i64) -> (i64, i64) {
    let (mut best, mut sum, mut j) = (0, 0, 0);
    for i in 0..allowed.len() {
        while j < allowed.len() && allowed[j].0 < allowed[i].0 + window {
            sum += allowed[j].1;
            j += 1;
        }
        best = best.max(sum);
        sum -= allowed[i].1;
    }
    let mut fixed: HashMap<i64, i64> = HashMap::new();
    for &(t, q) in allowed {
        *fixed.entry(t.div_euclid(window)).or_default() += q;
    }
    (best, fixed.values().copied().max().unwrap_or(0))
}

#[test]
fn sliding_counter_follows_its_formula_and_its_overshoot_bound() {
    let server = support::server();
    let params: [(i64, i64); 3] = [(10, 1000), (3, 250), (25, 997)];
    support::each_driver(&server, |d| {
        let mut rng = SplitMix64(13);
        for (i, &(limit, window_ms)) in params.iter().enumerate() {
            let key = format!("rate:{{counter-{i}}}:counter");
            let mut oracle = Windows {
                limit,
                window: window_ms,
                counts: HashMap::new(),
            };
            let feed = arrivals(&mut rng, 1500, window_ms * 1000 / limit, limit);
            let script = counter_at(limit, window_ms);
            let (mut allowed, mut limited) = (Vec::new(), 0);
            for ((reply, _), &(now, q)) in run_at(d, &script, &key, &feed, false)
                .into_iter()
                .zip(&feed)
            {
                assert_eq!(reply, oracle.offer(now, q), "{}: now {now} q {q}", d.name());
                if reply[0] == 0 && q > 0 {
                    allowed.push((now.div_euclid(1000), q));
                }
                limited += reply[0];
            }
            assert!(limited > 150, "{}: only {limited} refusals", d.name());
            let (span, fixed) = densest(&allowed, window_ms);
            assert!(fixed <= limit, "{}: {fixed} in one fixed window", d.name());
            assert!(
                span < 2 * limit,
                "{}: {span} in a span of {window_ms} ms",
                d.name()
            );
        }

        // The worst case: a whole window's limit in its last millisecond,
        // then one unit at a time two milliseconds before the next window
        // ends. Together: 2 * limit - 1 units within 999 ms.
        let (limit, window_ms) = (10, 1000);
        let script = counter_at(limit, window_ms);
        let key = "rate:{worst}:counter";
        let start = BASE_US / 1_000_000 * 1_000_000; // a window's first microsecond
        let first = start + (window_ms - 1) * 1000;
        let second = start + (2 * window_ms - 2) * 1000;
        let mut feed = vec![(first, limit)];
        feed.extend((0..limit).map(|i| (second + i, 1)));
        let replies = run_at(d, &script, key, &feed, false);
        let taken: i64 = replies
            .iter()
            .zip(&feed)
            .filter(|((r, _), _)| r[0] == 0)
            .map(|(_, &(_, q))| q)
            .sum();
        assert_eq!(taken, 2 * limit - 1, "{}: {replies:?}", d.name());
        assert_eq!(second - first, (window_ms - 1) * 1000);
    });
}

#[test]
fn decisions_read_like_cl_throttle() {
    support::on_server(|d| {
        // 5 at once, then one an hour: nothing refills while the test runs.
        let hour = 3_600_000u64;
        let limiter = RateLimiter::new(Limit::gcra(4, 1, Duration::from_secs(3600))).unwrap();
        let key = limiter.key("user123").unwrap();
        assert_eq!(key, format!("{}{{user123}}", RateLimiter::DEFAULT_PREFIX));
        let first = d.run(limiter.throttle("user123", 1)).unwrap();
        assert_eq!(
            first,
            Decision {
                limited: false,
                limit: 5,
                remaining: 4,
                retry_after_ms: None,
                reset_after_ms: hour,
            },
            "{}",
            d.name()
        );
        // A minute of slack for a slow machine, in bounds, not timing.
        let near = |got: u64, want: u64| got <= want && got + 60_000 >= want;
        for k in 2..=5u64 {
            let d = d.run(limiter.throttle("user123", 1)).unwrap();
            assert!(!d.limited && d.remaining == 5 - k, "{d:?}");
            assert!(near(d.reset_after_ms, k * hour), "{d:?}");
        }
        let refused = d.run(limiter.throttle("user123", 1)).unwrap();
        assert!(refused.limited && refused.remaining == 0, "{refused:?}");
        assert!(near(refused.retry_after_ms.unwrap(), hour), "{refused:?}");
        assert!(near(refused.reset_after_ms, 5 * hour), "{refused:?}");
        // The key holds the TAT in microseconds and expires at it.
        let tat: i64 = d.cmd(&key, redis::cmd("GET").arg(&key));
        let expires: i64 = d.cmd(&key, redis::cmd("PEXPIRETIME").arg(&key));
        assert_eq!(expires, (tat + 999) / 1000);
        let pttl: i64 = d.cmd(&key, redis::cmd("PTTL").arg(&key));
        assert!(
            pttl > 0 && pttl as u64 <= refused.reset_after_ms + 1,
            "{pttl} {refused:?}"
        );
        // A peek takes nothing and writes nothing.
        let peek = d.run(limiter.peek("user123")).unwrap();
        assert!(!peek.limited && peek.remaining == 0, "{peek:?}");
        let after: i64 = d.cmd(&key, redis::cmd("GET").arg(&key));
        assert_eq!(after, tat);
        // A quantity: two units of a fresh subject.
        let two = d.run(limiter.throttle("bulk", 2)).unwrap();
        assert_eq!((two.remaining, two.reset_after_ms), (3, 2 * hour));
        assert_eq!(d.run(limiter.reset("user123")).unwrap(), Some(true));
        assert_eq!(d.run(limiter.reset("user123")).unwrap(), Some(false));
        let fresh = d.run(limiter.throttle("user123", 1)).unwrap();
        assert_eq!(fresh, first, "{}: reset forgets the subject", d.name());
    });
}

#[test]
fn peeks_write_nothing_and_each_limiter_keeps_one_key_per_subject() {
    let server = support::server();
    let minute = Duration::from_secs(60);
    let limiters = [
        (Limit::gcra(2, 3, minute), "string", ""),
        (Limit::sliding_counter(3, minute), "hash", ":counter"),
        (Limit::sliding_log(3, minute), "zset", ":log"),
    ];
    support::each_driver(&server, |d| {
        for (limit, kind, suffix) in limiters {
            let limiter = RateLimiter::builder(limit)
                .prefix(Prefix::new("app:rl:").unwrap())
                .build()
                .unwrap();
            let key = limiter.key("u:1").unwrap();
            assert_eq!(key, format!("app:rl:{{u:1}}{suffix}"));
            let peek = d.run(limiter.peek("u:1")).unwrap();
            assert!(!peek.limited && peek.remaining == 3, "{kind}: {peek:?}");
            assert_eq!(peek.reset_after_ms, 0, "{kind}: {peek:?}");
            assert_eq!(support::dbsize(&mut server.connection()), 0, "{kind}");
            for left in (0..3).rev() {
                let taken = d.run(limiter.throttle("u:1", 1)).unwrap();
                assert!(
                    !taken.limited && taken.remaining == left,
                    "{kind}: {taken:?}"
                );
            }
            let refused = d.run(limiter.throttle("u:1", 1)).unwrap();
            assert!(refused.limited, "{kind}: {refused:?}");
            let retry = refused.retry_after_ms.expect("a retry-after");
            // The counter may wait into the next window: up to two windows.
            assert!(retry > 0 && retry <= 120_000, "{kind}: {refused:?}");
            let t: String = d.cmd(&key, redis::cmd("TYPE").arg(&key));
            assert_eq!(t, kind);
            let pttl: i64 = d.cmd(&key, redis::cmd("PTTL").arg(&key));
            // (+1: the key expires at a whole millisecond, rounded up.)
            assert!(
                pttl > 0 && pttl as u64 <= refused.reset_after_ms + 1,
                "{kind}"
            );
            assert_eq!(d.run(limiter.reset("u:1")).unwrap(), Some(true));
        }
    });
}

#[test]
fn allow_once_per_is_the_php_recipes_too_fast() {
    let server = support::server();
    support::each_driver(&server, |d| {
        // The PHP recipe's default lease: 2 s (long enough that a busy
        // machine does not let it pass between two calls).
        let interval = Duration::from_secs(2);
        let first = d
            .run(rate_limit::allow_once_per("42:-withdraw", interval))
            .unwrap();
        assert!(first.allowed(), "{first:?}");
        assert_eq!((first.limit, first.remaining), (1, 0));
        let again = d
            .run(rate_limit::allow_once_per("42:-withdraw", interval))
            .unwrap();
        assert!(again.limited, "{}: too fast: {again:?}", d.name());
        assert!(again.retry_after().unwrap() <= interval);
        // Another user is not affected.
        assert!(
            d.run(rate_limit::allow_once_per("43:-withdraw", interval))
                .unwrap()
                .allowed()
        );
        let keys = support::all_keys(&mut server.connection());
        assert_eq!(keys, ["rate:{42:-withdraw}", "rate:{43:-withdraw}"]);
        thread::sleep(interval + Duration::from_millis(10));
        let rested = d
            .run(rate_limit::allow_once_per("42:-withdraw", interval))
            .unwrap();
        assert!(rested.allowed(), "{}: after resting: {rested:?}", d.name());
        // The redis-cell form of the same call.
        let same = d
            .run(rate_limit::throttle("44", 0, 1, interval, 1))
            .unwrap();
        assert!(same.allowed());
    });
}

fn refusal(e: redis_patterns::Error) -> (Option<&'static str>, String) {
    match e.into_kind() {
        ErrorKind::InvalidArgument { script, name, .. } => (script, name),
        other => panic!("not an argument refusal: {other:?}"),
    }
}

#[test]
fn bad_parameters_are_refused_before_anything_is_sent() {
    let server = support::server();
    let sec = Duration::from_secs(1);
    support::each_driver(&server, |d| {
        let bad = [
            (Limit::gcra(1, 1, Duration::ZERO), "period"),
            (Limit::gcra(1, 0, sec), "count_per_period"),
            (Limit::gcra(1, 2_000_000, sec), "count_per_period"),
            (Limit::gcra(10_000_000_000, 1, sec), "max_burst"),
            (
                Limit::gcra(999_999, 1, Duration::from_secs(1001)),
                "max_burst",
            ),
            (Limit::gcra(1, 1, Duration::from_micros(10_500)), "period"),
            (Limit::sliding_counter(0, sec), "limit"),
            (Limit::sliding_counter(5, Duration::ZERO), "window"),
            (Limit::sliding_log(1_000_000, sec), "limit"),
        ];
        for (limit, name) in bad {
            let e = RateLimiter::new(limit).expect_err("refused");
            assert_eq!(refusal(e), (None, name.to_string()), "{limit:?}");
        }
        let e = d
            .run(rate_limit::throttle("x", 1, 1, Duration::ZERO, 1))
            .expect_err("zero period");
        assert_eq!(refusal(e), (None, "period".into()));
        let limiter = RateLimiter::new(Limit::gcra(4, 10, sec)).unwrap();
        for (subject, q, name) in [
            ("x", 6, "quantity"),
            ("", 1, "subject"),
            ("a{b}", 1, "subject"),
        ] {
            let e = d.run(limiter.throttle(subject, q)).expect_err("refused");
            assert_eq!(refusal(e), (None, name.to_string()), "{subject:?} {q}");
        }
        let log = RateLimiter::new(Limit::sliding_log(3, sec)).unwrap();
        let e = d.run(log.throttle("x", 4)).expect_err("refused");
        assert_eq!(refusal(e), (None, "quantity".into()));
        assert_eq!(support::dbsize(&mut server.connection()), 0);

        // The scripts refuse the same, called raw (as another language may).
        let throttle = &scripts::RATE_LIMIT_THROTTLE;
        for (args, name) in [
            (&["4", "10", "1000", "6"][..], "quantity"),
            (&["-1", "10", "1000", "1"], "max_burst"),
            (&["4", "2000000", "1", "1"], "count_per_period"),
            (&["999999", "1", "1001000", "1"], "max_burst"),
            (&["4", "10", "0", "1"], "period_ms"),
            (&["4", "10", "1000", "1", "1", "2"], "argv"),
        ] {
            let call = support::raw_call::<Vec<i64>>(throttle, &["rate:{x}"], args);
            let e = d.run(call).expect_err("refused by the script");
            assert_eq!(
                refusal(e),
                (Some("rate_limit.throttle"), name.to_string()),
                "{args:?}"
            );
        }
        assert_eq!(support::dbsize(&mut server.connection()), 0);
    });
}

/// `TIME` in microseconds.
fn server_time_us(con: &mut redis::Connection) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(con).expect("TIME");
    s * 1_000_000 + us
}

/// 8 clients throttle `subjects` (round robin) for two seconds; returns the
/// units allowed per subject and the server time that passed, in us.
fn hammer(d: &Driver, url: &str, limiter: &RateLimiter, subjects: &[String]) -> (Vec<u64>, i64) {
    let allowed: Arc<Vec<AtomicU64>> =
        Arc::new(subjects.iter().map(|_| AtomicU64::new(0)).collect());
    let mut clock = redis::Client::open(url)
        .expect("url")
        .get_connection()
        .expect("a clock connection");
    let started = server_time_us(&mut clock);
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (limiter, subjects, allowed) =
                (limiter.clone(), subjects.to_vec(), allowed.clone());
            let mut d = d.another(url);
            thread::spawn(move || {
                let until = Instant::now() + Duration::from_secs(2);
                let mut i = t;
                let mut calls = 0u64;
                while Instant::now() < until {
                    let s = i % subjects.len();
                    let got = d.run(limiter.throttle(&subjects[s], 1)).expect("throttle");
                    if got.allowed() {
                        allowed[s].fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                    calls += 1;
                }
                calls
            })
        })
        .collect();
    let calls: u64 = handles.into_iter().map(|h| h.join().expect("client")).sum();
    let elapsed = server_time_us(&mut clock) - started;
    assert!(calls > subjects.len() as u64, "{calls} calls");
    (
        allowed.iter().map(|a| a.load(Ordering::Relaxed)).collect(),
        elapsed,
    )
}

/// GCRA's bound: `max_burst + 1` at once, then one per emission interval
/// (and one more for the rounding at either end).
fn gcra_bound(limit: Limit, elapsed_us: i64) -> u64 {
    let interval = limit.emission_interval().expect("a GCRA limit").as_micros() as u64;
    limit.max_quantity() + elapsed_us as u64 / interval + 1
}

#[test]
fn eight_clients_on_one_key_never_exceed_burst_plus_rate() {
    let server = support::server();
    let url = server.url();
    let limit = Limit::gcra(20, 200, Duration::from_secs(1));
    support::each_driver(&server, |d| {
        let limiter = RateLimiter::new(limit).unwrap();
        let (allowed, elapsed) = hammer(d, &url, &limiter, &["hot".to_string()]);
        let bound = gcra_bound(limit, elapsed);
        assert!(
            allowed[0] <= bound,
            "{}: {} allowed in {elapsed} us, bound {bound}",
            d.name(),
            allowed[0]
        );
        // The first burst always passes.
        assert!(allowed[0] >= 21, "{}: {}", d.name(), allowed[0]);
    });
}

#[test]
fn on_a_cluster_subjects_spread_and_each_stays_within_its_limit() {
    let cluster = support::cluster();
    let url = cluster.nodes()[0].url();
    let limit = Limit::gcra(5, 50, Duration::from_secs(1));
    let subjects: Vec<String> = (0..48).map(|i| format!("user:{i}")).collect();
    support::each_cluster_driver(&cluster, |d| {
        assert!(d.is_cluster());
        let limiter = RateLimiter::new(limit).unwrap();
        let (allowed, elapsed) = hammer(d, &url, &limiter, &subjects);
        let bound = gcra_bound(limit, elapsed);
        for (s, n) in subjects.iter().zip(&allowed) {
            assert!(*n <= bound, "{}: {s}: {n} allowed, bound {bound}", d.name());
            assert!(*n >= 1, "{}: {s} was never allowed", d.name());
        }
        // The subjects' keys spread over every node (with a limit slow
        // enough that none expires while counted).
        for node in cluster.nodes() {
            let _: () = redis::cmd("FLUSHALL")
                .query(&mut node.connection())
                .unwrap();
        }
        let slow = RateLimiter::new(Limit::gcra(5, 1, Duration::from_secs(3600))).unwrap();
        for s in &subjects {
            assert!(d.run(slow.throttle(s, 1)).unwrap().allowed());
        }
        let per_node = support::keys_per_node(&cluster);
        assert!(per_node.iter().all(|&n| n > 0), "{per_node:?}");
        assert_eq!(per_node.iter().sum::<i64>(), subjects.len() as i64);
        // The windows run on the cluster too.
        for limit in [
            Limit::sliding_counter(2, Duration::from_secs(60)),
            Limit::sliding_log(2, Duration::from_secs(60)),
        ] {
            let limiter = RateLimiter::new(limit).unwrap();
            for s in &subjects[..6] {
                let got: Vec<bool> = (0..3)
                    .map(|_| d.run(limiter.throttle(s, 1)).unwrap().limited)
                    .collect();
                assert_eq!(got, [false, false, true], "{}: {limit:?}", d.name());
            }
        }
    });
}
