//! `cargo run --example visits`: exact daily unique visitors, concurrent
//! first visits counted once, and a week's distinct count. Talks to
//! `REDIS_URL`, else starts a throwaway redis-server.

use redis_patterns::chrono::{Days, Utc};
use redis_patterns::prelude::*;
use redis_patterns::visits::VisitCounter;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let visits = VisitCounter::new("example:site", Utc, 8)?;
    let today = visits.day_of(&Utc::now());
    // Four clients count the same 100 visitors at once.
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (visits, url) = (visits.clone(), url.to_string());
            std::thread::spawn(move || -> redis_patterns::Result<()> {
                let mut con = Connection::open(url.as_str())?;
                for member in 0..100 {
                    visits.add(today, member).run(&mut con)?;
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a client")?;
    }
    let mut con = Connection::open(url)?;
    let count = visits.count(today).run(&mut con)?;
    println!("distinct visitors today: {count} (400 visits)");
    assert_eq!(count, 100);
    let batch = visits.add_batch(today, &[100, 101, 5]).run(&mut con)?;
    println!("after a batch: {}", batch.count);
    let week = visits
        .distinct_between(today - Days::new(6), today)
        .run(&mut con)?;
    println!("distinct over the last 7 days: {week}");
    Ok(())
}
