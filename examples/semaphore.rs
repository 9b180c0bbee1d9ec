//! `cargo run --example semaphore`: at most two holders, a third refused
//! until a permit comes back. Talks to `REDIS_URL`, else starts a throwaway
//! redis-server.

use std::time::Duration;

use redis_patterns::prelude::*;
use redis_patterns::semaphore::Semaphore;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let exports = Semaphore::new("example:exports", 2, Duration::from_secs(30))?;
    let first = exports.try_acquire().run(&mut con)?;
    let second = exports.try_acquire().run(&mut con)?;
    println!("two permits: {} and {}", first.token, second.token);
    let refused = exports.try_acquire().run(&mut con).unwrap_err();
    println!("a third: {refused}");
    assert!(refused.is_busy());
    exports.release(&first.token).run(&mut con)?;
    let third = exports.acquire(Duration::from_secs(1)).run(&mut con)?;
    println!("after a release: {}", third.token);
    for p in [second, third] {
        exports.release(&p.token).run(&mut con)?;
    }
    Ok(())
}
