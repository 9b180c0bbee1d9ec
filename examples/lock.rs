//! `cargo run --example lock`: an owner-token lock with a fencing token,
//! a waiter woken by the release, and a guard that renews the lease while
//! its body runs. Talks to `REDIS_URL`, else starts a throwaway
//! redis-server.

use std::time::{Duration, Instant};

use redis_patterns::lease::Guard;
use redis_patterns::lock::Lock;
use redis_patterns::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let lock = Lock::new("example:report", Duration::from_secs(10))?;

    let lease = lock.try_acquire().run(&mut con)?;
    println!("acquired {} with fence {}", lock.key(), lease.fence);
    let busy = lock.try_acquire().run(&mut con).unwrap_err();
    println!("a second acquire: {busy}");

    // Another client waits; the release wakes it at once.
    let waiter = {
        let (lock, url) = (lock.clone(), url.to_string());
        std::thread::spawn(move || -> redis_patterns::Result<(u64, Duration)> {
            let mut con = Connection::open(url.as_str())?;
            let started = Instant::now();
            let lease = lock.acquire(Duration::from_secs(5)).run(&mut con)?;
            lock.release(&lease.token).run(&mut con)?;
            Ok((lease.fence, started.elapsed()))
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    lock.release(&lease.token).run(&mut con)?;
    let (fence, waited) = waiter.join().expect("the waiter")?;
    println!("the waiter got fence {fence} after {waited:?}");
    assert!(fence > lease.fence);

    // A guard renews the lease every lease/3 while the body runs.
    {
        let guard = Guard::acquire(&lock, &mut con, Duration::from_secs(1))?;
        println!("holding with fence {}", guard.fence());
        guard.check()?;
    }
    let status = lock.status().run(&mut con)?;
    println!("after the guard: held {}", status.held);
    assert!(!status.held);
    Ok(())
}
