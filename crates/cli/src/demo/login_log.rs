use std::collections::BTreeSet;

use chrono::NaiveDate;

use redis_patterns::login_log::LoginLog;
use redis_patterns::{Connection, ErrorKind, Request};

fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).expect("valid date")
}

fn list<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let items: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    format!("[{}]", items.join(", "))
}

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;
    let log = LoginLog::new(&format!("{prefix}loginLog_"))?;
    let logins = [
        ("client", 1001, day(2023, 12, 31)),
        ("client", 1001, day(2024, 1, 1)),
        ("client", 1001, day(2024, 2, 29)),
        ("client", 1001, day(2024, 3, 1)),
        ("client", 7, day(2024, 2, 28)),
        ("office", 1001, day(2024, 2, 29)),
    ];
    for (t, uid, d) in logins {
        log.record(t, uid, d).run(&mut con)?;
    }
    crate::out::outln!(
        "(1) recorded {} logins, e.g. key {}",
        logins.len(),
        log.log_key("client", 1001, day(2024, 2, 29))
    );
    queries(&mut con, &log)?;
    match log
        .record("client", 4_000_000_000, day(2024, 3, 1))
        .run(&mut con)
    {
        Err(e) if matches!(e.kind(), ErrorKind::UidOutOfRange { .. }) => {
            crate::out::outln!("offset trap refused before any write: {e}")
        }
        Err(e) => return Err(e.into()),
        Ok(_) => return Err("uid 4,000,000,000 was recorded despite the offset trap".into()),
    }
    let keys: BTreeSet<String> = logins
        .iter()
        .flat_map(|(t, uid, d)| {
            [
                log.log_key(t, *uid, *d),
                log.index_key(t, *d),
                log.types_key(*d),
            ]
        })
        .collect();
    super::delete(&mut con, keys)
}

/// The seven queries of the PHP login-log recipe over the recorded logins.
fn queries(con: &mut Connection, log: &LoginLog) -> super::DemoResult {
    crate::out::outln!(
        "(2) client 1001 on 2024-02-29: {}, on 2024-02-28: {}",
        log.logged_in_on("client", 1001, day(2024, 2, 29))
            .run(con)?,
        log.logged_in_on("client", 1001, day(2024, 2, 28))
            .run(con)?
    );
    crate::out::outln!(
        "(3) client 1001 in 2024-02: {} ({} day(s)); in 2024-04: {}",
        log.logged_in_in_month("client", 1001, 2024, 2).run(con)?,
        log.days_in_month("client", 1001, 2024, 2).run(con)?,
        log.logged_in_in_month("client", 1001, 2024, 4).run(con)?
    );
    crate::out::outln!(
        "(4) client 1001 between 2024-01-02 and 2024-02-28: {}",
        log.logged_in_between("client", 1001, day(2024, 1, 2), day(2024, 2, 28))
            .run(con)?
    );
    let days = log
        .login_days("client", 1001, day(2023, 12, 31), day(2024, 2, 29))
        .run(con)?;
    crate::out::outln!(
        "(5) client 1001 login days 2023-12-31..2024-02-29 (2024-03-01 is outside): {}",
        list(days)
    );
    crate::out::outln!(
        "(6) client users active 2024-02-28..2024-03-01: {}",
        list(
            log.active_users("client", day(2024, 2, 28), day(2024, 3, 1))
                .run(con)?
        )
    );
    let all = log
        .all_active_users(day(2024, 2, 29), day(2024, 2, 29))
        .run(con)?;
    crate::out::outln!(
        "(7) all users active 2024-02-29..2024-02-29: {}",
        list(all.iter().map(|u| format!("{} {}", u.user_type, u.uid)))
    );
    Ok(())
}
