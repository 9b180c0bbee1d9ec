//! `cargo run --example login_log`: the PHP login-log recipe's monthly
//! bitmaps with its seven queries, and a day index built for logs the PHP
//! code wrote. Talks to `REDIS_URL`, else starts a throwaway redis-server.

use redis_patterns::chrono::NaiveDate;
use redis_patterns::login_log::{LoginLog, ReindexOptions};
use redis_patterns::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let day = |d| NaiveDate::from_ymd_opt(2017, 10, d).expect("a day of October 2017");
    let log = LoginLog::new("example:loginLog_")?;
    for (t, uid, d) in [("client", 1001, 5), ("client", 1001, 9), ("web", 7, 9)] {
        log.record(t, uid, day(d)).run(&mut con)?;
    }
    // A log the PHP code wrote: no day index yet.
    let _: () = con.query(
        redis::cmd("SETBIT")
            .arg("example:loginLog_2017-10_client_42")
            .arg(25)
            .arg(1),
    )?;
    let report = log
        .reindex(2017, 10, ReindexOptions::default())
        .run(&mut con)?;
    println!(
        "reindexed {} logs, {} new day bits",
        report.logs, report.new
    );
    let days = log
        .login_days("client", 1001, day(1), day(31))
        .run(&mut con)?;
    println!("client 1001 logged in on {days:?}");
    let active = log.all_active_users(day(1), day(31)).run(&mut con)?;
    println!("active in October: {active:?}");
    assert_eq!(active.len(), 3);
    Ok(())
}
