//! The demo's analytics section: marks at every granularity, an expression
//! and a cohort table, each one script call.

use chrono::{NaiveDate, TimeZone, Utc};

use redis_patterns::analytics::{Analytics, Expr, Period};
use redis_patterns::keys::Prefix;
use redis_patterns::{Connection, Request};

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;
    // One tag for every event: expressions and cohorts run in one script, also on a cluster.
    let a = Analytics::builder()
        .prefix(Prefix::new(&format!("{prefix}an:"))?)
        .tag("demo")
        .build()?;
    let day = |d| Period::Day(NaiveDate::from_ymd_opt(2024, 3, d).expect("valid date"));
    for (id, d) in [(1, 4), (2, 4), (3, 4), (2, 5), (3, 5)] {
        let at = Utc
            .with_ymd_and_hms(2024, 3, d, 9, 0, 0)
            .single()
            .expect("valid time");
        a.mark("active", id, &at).run(&mut con)?;
    }
    let at = Utc
        .with_ymd_and_hms(2024, 3, 5, 18, 0, 0)
        .single()
        .expect("valid time");
    a.mark("bought", 3, &at).run(&mut con)?;
    crate::out::outln!(
        "active on 03-04: {}; in ISO week 2024-W10: {}",
        a.count("active", day(4)).run(&mut con)?,
        a.count("active", Period::Week(2024, 10)).run(&mut con)?
    );
    let back = Expr::event("active", day(4))
        .and(Expr::event("active", day(5)))
        .and_not(Expr::event("bought", day(5)));
    let page = a.query(back).members(0, 100).run(&mut con)?;
    let ids: Vec<String> = page.ids.iter().map(u64::to_string).collect();
    crate::out::outln!("came back on 03-05 without buying: [{}]", ids.join(", "));
    let t = a.cohort("active", "active", day(4), 1, 2).run(&mut con)?;
    crate::out::outln!(
        "cohort of 03-04: {} users, {} back the next day",
        t.sizes[0],
        t.counts[0][1].unwrap_or(0)
    );
    Ok(())
}
