//! `cargo run --example signin`: daily sign-in bitmaps with counts, users
//! active every day of a range and streaks. Talks to `REDIS_URL`, else
//! starts a throwaway redis-server.

use redis_patterns::chrono::NaiveDate;
use redis_patterns::prelude::*;
use redis_patterns::signin::SignIn;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let day = |d| NaiveDate::from_ymd_opt(2022, 3, d).expect("a day of March 2022");
    let signin = SignIn::builder().tag("example").build()?;
    for d in 14..=20 {
        signin.sign_in(100, day(d)).run(&mut con)?;
    }
    signin.sign_in(7, day(20)).run(&mut con)?;
    println!(
        "signed in on the 20th: {}",
        signin.count(day(20)).run(&mut con)?
    );
    let every = signin.active_every(day(14), day(20)).run(&mut con)?;
    println!("every day of the week: {every:?}");
    let streak = signin.streak(100, day(1), day(20)).run(&mut con)?;
    println!(
        "user 100: longest streak {}, current {}",
        streak.longest, streak.current
    );
    assert_eq!(streak.longest, 7);
    Ok(())
}
