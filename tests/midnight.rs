//! Midnight, for real: a fixed-offset zone is chosen from the server's
//! clock so that local midnight falls three seconds into the test. With the
//! default retention and late window, a visit stamped 300 ms before
//! midnight that arrives after it still counts, yesterday's count stays
//! readable after midnight (it does not drop to 0), and its final count is
//! refused while visits may still arrive; with a short late window, a visit
//! that arrives after it is refused and the final count is read. Both
//! drivers, the same midnight.

mod support;

use std::time::Duration;

use chrono::{DateTime, FixedOffset, TimeDelta, Utc};
use redis_patterns::visits::VisitCounter;
use redis_patterns::{Error, ErrorKind, Retention};

/// The server's clock, in microseconds.
fn server_micros(con: &mut redis::Connection) -> i64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(con).unwrap();
    secs * 1_000_000 + micros
}

fn wait_for_server_time(con: &mut redis::Connection, micros: i64) {
    while server_micros(con) < micros {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kind<T: std::fmt::Debug>(r: redis_patterns::Result<T>) -> ErrorKind {
    r.map_err(Error::into_kind).expect_err("an error")
}

#[test]
fn midnight_in_a_fixed_offset_zone_keeps_late_visits_and_the_day_readable() {
    let server = support::server();
    let mut clock = server.connection();
    let mut drivers = support::drivers(&server.url());

    // The zone whose midnight is three seconds from now, by the server.
    let now = server_micros(&mut clock) / 1_000_000;
    let midnight = now + 3;
    let east = (86_400 - midnight.rem_euclid(86_400)) % 86_400;
    let zone = FixedOffset::east_opt(east as i32).expect("an offset within a day");
    let midnight_at = DateTime::<Utc>::from_timestamp(midnight, 0).unwrap();
    assert_eq!(
        midnight_at.with_timezone(&zone).time(),
        chrono::NaiveTime::MIN
    );
    // A visit stamped 300 ms before midnight belongs to the day that ends then.
    let stamped = midnight_at - TimeDelta::milliseconds(300);

    let counters = |d: &str| {
        let default = VisitCounter::new(&format!("mid-{d}"), zone, 8).unwrap();
        let short = VisitCounter::builder(&format!("short-{d}"), zone, 8)
            .retention(Retention::After(Duration::from_secs(3600)))
            .late_window(Some(Duration::from_secs(1)))
            .build()
            .unwrap();
        (default, short)
    };
    let day = counters("x").0.day_of(&stamped);
    assert_eq!(counters("x").0.end_of_day(day).unwrap(), midnight_at);

    // Before midnight.
    for d in &mut drivers {
        let (default, short) = counters(d.name());
        assert_eq!(default.retention(), VisitCounter::DEFAULT_RETENTION);
        assert_eq!(
            default.late_window(),
            Some(VisitCounter::DEFAULT_LATE_WINDOW)
        );
        for c in [&default, &short] {
            d.run(c.add(day, 1)).unwrap();
            d.run(c.add(day, 2)).unwrap();
            assert!(matches!(
                kind(d.run(c.final_count(day))),
                ErrorKind::DayOpen { .. }
            ));
        }
    }
    wait_for_server_time(&mut clock, (midnight + 1) * 1_000_000);

    // One second after midnight: yesterday is readable, and a visit stamped
    // before midnight still counts (the default late window is 5 minutes).
    for d in &mut drivers {
        let (default, _) = counters(d.name());
        assert_eq!(d.run(default.count(day)).unwrap(), 2, "{}", d.name());
        let late = d.run(default.add_at(&stamped, 3)).unwrap();
        assert!(late.new == Some(true) && late.count == 3, "{}", d.name());
        let b = d.run(default.add_batch(day, &[4, 5])).unwrap();
        assert_eq!(b.count, 5);
        assert!(matches!(
            kind(d.run(default.final_count(day))),
            ErrorKind::DayOpen { .. }
        ));
        // The day's keys live two days past its end.
        let key = default.counter_key(day);
        let at: i64 = d.cmd(&key, redis::cmd("EXPIRETIME").arg(&key));
        assert_eq!(at, midnight + 2 * 86_400, "{}", d.name());
        // Today is a new day.
        let today = default.day_of(&(midnight_at + TimeDelta::seconds(1)));
        assert_eq!(today, day.succ_opt().unwrap());
        assert_eq!(d.run(default.add(today, 1)).unwrap().count, 1);
    }

    // After the short counter's late window: its day is closed and final.
    wait_for_server_time(&mut clock, (midnight + 2) * 1_000_000);
    for d in &mut drivers {
        let (_, short) = counters(d.name());
        assert!(matches!(
            kind(d.run(short.add_at(&stamped, 9))),
            ErrorKind::DayEnded { .. }
        ));
        assert!(matches!(
            kind(d.run(short.add_batch(day, &[9]))),
            ErrorKind::DayEnded { .. }
        ));
        assert_eq!(d.run(short.final_count(day)).unwrap(), 2, "{}", d.name());
        assert_eq!(d.run(short.count(day)).unwrap(), 2);
    }

    // A day whose keys are gone has no final count (not 0); the late window
    // must fit in the retention; no late window means never final.
    for d in &mut drivers {
        let (default, _) = counters(d.name());
        let long_ago = day - chrono::Days::new(30);
        assert!(matches!(
            kind(d.run(default.final_count(long_ago))),
            ErrorKind::DayExpired { .. }
        ));
        let open = VisitCounter::builder("open", zone, 8)
            .retention(Retention::Forever)
            .late_window(None)
            .build()
            .unwrap();
        assert!(matches!(
            kind(d.run(open.final_count(long_ago))),
            ErrorKind::DayOpen { .. }
        ));
    }
    let too_late = VisitCounter::builder("x", zone, 8)
        .retention(Retention::After(Duration::from_secs(60)))
        .late_window(Some(Duration::from_secs(61)))
        .build();
    assert!(matches!(
        too_late.map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
}
