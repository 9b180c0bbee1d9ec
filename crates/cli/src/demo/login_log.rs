use chrono::NaiveDate;

use redis_patterns::ErrorKind;
use redis_patterns::login_log::LoginLog;

fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).expect("valid date")
}

pub fn run(client: &redis::Client, prefix: &str) -> super::DemoResult {
    let mut con = client.get_connection()?;
    let log = LoginLog::with_prefix(&format!("{prefix}loginLog"))?;
    let logins = [
        ("client", 1001, day(2023, 12, 31)),
        ("client", 1001, day(2024, 1, 1)),
        ("client", 1001, day(2024, 2, 29)),
        ("client", 1001, day(2024, 3, 1)),
        ("client", 7, day(2024, 2, 28)),
        ("office", 1001, day(2024, 2, 29)),
    ];
    for (t, uid, d) in logins {
        log.record(&mut con, t, uid, d)?;
    }
    println!(
        "(1) recorded {} logins, e.g. key {}",
        logins.len(),
        log.log_key("client", 1001, day(2024, 2, 29))
    );
    println!(
        "(2) client 1001 on 2024-02-29: {}, on 2024-02-28: {}",
        log.logged_in_on(&mut con, "client", 1001, day(2024, 2, 29))?,
        log.logged_in_on(&mut con, "client", 1001, day(2024, 2, 28))?
    );
    println!(
        "(3) client 1001 in 2024-02: {} ({} day(s)); in 2024-04: {}",
        log.logged_in_in_month(&mut con, "client", 1001, 2024, 2)?,
        log.days_in_month(&mut con, "client", 1001, 2024, 2)?,
        log.logged_in_in_month(&mut con, "client", 1001, 2024, 4)?
    );
    println!(
        "(4) client 1001 between 2024-01-02 and 2024-02-28: {}",
        log.logged_in_between(&mut con, "client", 1001, day(2024, 1, 2), day(2024, 2, 28))?
    );
    let days = log.login_days(
        &mut con,
        "client",
        1001,
        day(2023, 12, 31),
        day(2024, 2, 29),
    )?;
    println!("(5) client 1001 login days 2023-12-31..2024-02-29 (2024-03-01 is outside): {days:?}");
    println!(
        "(6) client users active 2024-02-28..2024-03-01: {:?}",
        log.active_users(&mut con, "client", day(2024, 2, 28), day(2024, 3, 1))?
    );
    println!(
        "(7) all users active 2024-02-29..2024-02-29: {:?}",
        log.all_active_users(&mut con, day(2024, 2, 29), day(2024, 2, 29))?
    );
    match log.record(&mut con, "client", 4_000_000_000, day(2024, 3, 1)) {
        Err(e) if matches!(e.kind(), ErrorKind::UidOutOfRange { .. }) => {
            println!("offset trap refused before any write: {e}")
        }
        other => return Err(format!("expected UidOutOfRange, got {other:?}").into()),
    }
    let mut del = redis::cmd("DEL");
    for (t, uid, d) in logins {
        del.arg(log.log_key(t, uid, d))
            .arg(log.index_key(t, d))
            .arg(log.types_key(d));
    }
    let _: i64 = del.query(&mut con)?;
    Ok(())
}
