//! `cargo run --example rate_limit`: GCRA (redis-cell's CL.THROTTLE), a
//! sliding counter and an exact sliding log, one script call per decision.
//! Talks to `REDIS_URL`, else starts a throwaway redis-server.

use std::time::Duration;

use redis_patterns::prelude::*;
use redis_patterns::rate_limit::{self, Limit, RateLimiter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    // CL.THROTTLE user123 15 30 60: bursts of 16, then 30 per minute.
    let mut allowed = 0;
    for _ in 0..20 {
        let d = rate_limit::throttle("example:user123", 15, 30, Duration::from_secs(60), 1)
            .run(&mut con)?;
        if !d.limited {
            allowed += 1;
        } else {
            println!("limited: retry after {:?} ms", d.retry_after_ms);
        }
    }
    println!("{allowed} of 20 allowed at once");
    assert_eq!(allowed, 16);

    let logins = RateLimiter::new(Limit::sliding_log(3, Duration::from_secs(900)))?;
    for i in 1..=4 {
        let d = logins.throttle("example:alice", 1).run(&mut con)?;
        println!(
            "login attempt {i}: limited {}, remaining {}",
            d.limited, d.remaining
        );
    }
    let once = rate_limit::allow_once_per("example:42:withdraw", Duration::from_secs(2));
    let first = once.run(&mut con)?;
    let again =
        rate_limit::allow_once_per("example:42:withdraw", Duration::from_secs(2)).run(&mut con)?;
    println!("withdraw: {} then {}", first.limited, again.limited);
    assert!(!first.limited && again.limited);
    Ok(())
}
