//! The login log's sync rule (the PHP login-log recipe: export this month,
//! and last month before the 8th; delete a month past retention only after
//! an export that ran after it ended), against a real server and a real
//! cluster, every body through both drivers.

mod support;

use chrono::NaiveDate;
use redis_patterns::login_log::{ActiveUser, Expiry, LoginLog, MonthLogins};
use support::Driver;

fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn sync(d: &mut Driver) {
    let log = LoginLog::default();
    for (t, uid, on) in [
        ("client", 1001, day(2023, 1, 5)),
        ("client", 1001, day(2023, 1, 20)),
        ("client", 1001, day(2023, 2, 2)),
        ("office", 7, day(2023, 2, 2)),
    ] {
        d.run(log.record(t, uid, on)).unwrap();
    }
    assert_eq!(
        LoginLog::sync_months(day(2023, 2, 3)),
        [day(2023, 1, 1), day(2023, 2, 1)]
    );
    let users = d.run(log.month_users(day(2023, 2, 1))).unwrap();
    assert_eq!(
        users,
        [
            ActiveUser {
                user_type: "client".into(),
                uid: 1001
            },
            ActiveUser {
                user_type: "office".into(),
                uid: 7
            }
        ]
    );
    let jan_users = d.run(log.month_users(day(2023, 1, 1))).unwrap();
    let jan = d
        .run(log.month_logins(day(2023, 1, 1), &jan_users))
        .unwrap();
    assert_eq!(
        jan,
        [MonthLogins {
            month: "2023-01".into(),
            user_type: "client".into(),
            uid: 1001,
            days: vec![5, 20]
        }]
    );
    // A sync on 2023-02-03 exports January whole and February in part.
    for m in LoginLog::sync_months(day(2023, 2, 3)) {
        d.run(log.mark_exported(m, day(2023, 2, 3))).unwrap();
    }
    // Too short a retention is refused; a month not past it is kept.
    assert!(
        d.run(log.expire_month(day(2023, 1, 1), 31, day(2023, 6, 1)))
            .is_err()
    );
    assert_eq!(
        d.run(log.expire_month(day(2023, 1, 1), 40, day(2023, 3, 1)))
            .unwrap(),
        Expiry::Kept {
            month: "2023-01".into()
        }
    );
    // February is past retention in June, but its last export ran before it ended.
    assert_eq!(
        d.run(log.expire_month(day(2023, 2, 1), 40, day(2023, 6, 1)))
            .unwrap(),
        Expiry::NotExported {
            month: "2023-02".into(),
            last_export: Some("2023-02-03".into())
        }
    );
    assert!(
        d.run(log.logged_in_on("client", 1001, day(2023, 2, 2)))
            .unwrap()
    );
    // January was exported after it ended: deleted, every key of it.
    match d
        .run(log.expire_month(day(2023, 1, 1), 40, day(2023, 6, 1)))
        .unwrap()
    {
        Expiry::Deleted { month, keys } => {
            assert_eq!((month.as_str(), keys), ("2023-01", Some(4)))
        }
        other => panic!("{other:?}"),
    }
    assert!(
        !d.run(log.logged_in_on("client", 1001, day(2023, 1, 5)))
            .unwrap()
    );
    assert!(d.run(log.month_users(day(2023, 1, 1))).unwrap().is_empty());
    assert_eq!(
        d.run(log.exports()).unwrap(),
        [(day(2023, 2, 1), day(2023, 2, 3))]
    );
}

#[test]
fn months_go_only_after_an_export_that_ran_after_they_ended() {
    support::on_server_and_cluster(sync);
}
