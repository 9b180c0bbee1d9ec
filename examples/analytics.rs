//! `cargo run --example analytics`: bitmapist-style analytics — marks at
//! every granularity, an expression and a cohort table, each one script
//! call. Talks to `REDIS_URL`, else starts a throwaway redis-server.

use redis_patterns::analytics::{Analytics, Expr, Period};
use redis_patterns::chrono::{NaiveDate, TimeZone, Utc};
use redis_patterns::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let a = Analytics::builder().tag("example").build()?;
    let day = |d| Period::Day(NaiveDate::from_ymd_opt(2024, 3, d).expect("a day of March 2024"));
    // Users 1..=10 sign up on the 4th; the even ones come back on the 5th,
    // and 2 and 4 buy.
    for id in 1..=10 {
        let at = Utc.with_ymd_and_hms(2024, 3, 4, 9, 0, 0).unwrap();
        a.mark("active", id, &at).run(&mut con)?;
        if id % 2 == 0 {
            let at = Utc.with_ymd_and_hms(2024, 3, 5, 9, 0, 0).unwrap();
            a.mark("active", id, &at).run(&mut con)?;
        }
    }
    let at = Utc.with_ymd_and_hms(2024, 3, 5, 18, 0, 0).unwrap();
    a.mark_many("bought", &[(2, at), (4, at)]).run(&mut con)?;
    println!(
        "active on the 4th: {}",
        a.count("active", day(4)).run(&mut con)?
    );
    println!(
        "active in week 10: {}",
        a.count("active", Period::Week(2024, 10)).run(&mut con)?
    );
    let back_not_buying = Expr::event("active", day(4))
        .and(Expr::event("active", day(5)))
        .and_not(Expr::event("bought", day(5)));
    let page = a.query(back_not_buying).members(0, 100).run(&mut con)?;
    println!("came back without buying: {:?}", page.ids);
    assert_eq!(page.ids, [6, 8, 10]);
    let table = a.cohort("active", "active", day(4), 2, 2).run(&mut con)?;
    println!(
        "of the {} active on the 4th, {:.0} % came back the next day",
        table.sizes[0],
        table.percent(0, 1).unwrap_or(0.0)
    );
    Ok(())
}
