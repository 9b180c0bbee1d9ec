use std::time::Duration;

use redis_patterns::keys::Prefix;
use redis_patterns::rate_limit::{self, Decision, Limit, RateLimiter};
use redis_patterns::{Connection, Request};

fn line(what: &str, d: &Decision) -> String {
    match d.retry_after_ms {
        None => format!(
            "{what}: allowed, {} of {} left, fully reset in {} ms",
            d.remaining, d.limit, d.reset_after_ms
        ),
        Some(ms) => format!("{what}: limited, retry in {ms} ms"),
    }
}

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;

    // The PHP lock recipe's throttle, Lock::add("<uid>:-withdraw"), as a
    // rate limit: one withdrawal every 300 ms.
    let subject = format!("{prefix}42:-withdraw");
    let interval = Duration::from_millis(300);
    let first = rate_limit::allow_once_per(&subject, interval).run(&mut con)?;
    crate::out::outln!("{}", line("withdrawal 1", &first));
    let again = rate_limit::allow_once_per(&subject, interval).run(&mut con)?;
    match again.retry_after_ms {
        Some(ms) => {
            crate::out::outln!(
                "withdrawal 2 right after: you are going too fast, please rest {ms} ms"
            )
        }
        None => return Err("a second withdrawal within 300 ms was allowed".into()),
    }
    std::thread::sleep(interval);
    let rested = rate_limit::allow_once_per(&subject, interval).run(&mut con)?;
    crate::out::outln!("{}", line("withdrawal 3 after resting", &rested));

    // CL.THROTTLE key 4 10 1 (bursts of 5, then 10 per second).
    let api = RateLimiter::builder(Limit::gcra(4, 10, Duration::from_secs(1)))
        .prefix(Prefix::new(prefix)?)
        .build()?;
    crate::out::outln!("GCRA, bursts of 5 then 10 per second, 7 calls at once:");
    for i in 1..=7 {
        let d = api.throttle("api-key-7f3a", 1).run(&mut con)?;
        crate::out::outln!("  {}", line(&format!("call {i}"), &d));
    }

    // At most 3 in any second: the exact log and the counter.
    for (name, limit) in [
        ("sliding log", Limit::sliding_log(3, Duration::from_secs(1))),
        (
            "sliding counter",
            Limit::sliding_counter(3, Duration::from_secs(1)),
        ),
    ] {
        let limiter = RateLimiter::builder(limit)
            .prefix(Prefix::new(prefix)?)
            .build()?;
        let taken = limiter.throttle("login:alice", 3).run(&mut con)?;
        let more = limiter.throttle("login:alice", 1).run(&mut con)?;
        crate::out::outln!(
            "{name}, 3 per second: {}; {}",
            line("3 at once", &taken),
            line("one more", &more)
        );
        limiter.reset("login:alice").run(&mut con)?;
    }
    api.reset("api-key-7f3a").run(&mut con)?;
    // allow_once_per's key: the default prefix's.
    RateLimiter::new(Limit::once_per(interval))?
        .reset(&subject)
        .run(&mut con)?;
    Ok(())
}
