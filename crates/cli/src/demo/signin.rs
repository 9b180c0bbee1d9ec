use chrono::NaiveDate;

use redis_patterns::ErrorKind;
use redis_patterns::signin::SignIn;

pub fn run(client: &redis::Client, prefix: &str) -> super::DemoResult {
    let mut con = client.get_connection()?;
    // A hash tag in the prefix keeps every day in one slot: range unions
    // and intersections run in one script, also on a cluster.
    let s = SignIn::new(&format!("{prefix}signin:{{app}}"))?;
    let day = |d| NaiveDate::from_ymd_opt(2022, 3, d).expect("valid date");
    // The seed: setbit 20220320 100 1; setbit 20220320 200 1; setbit 20220321 100 1; setbit 20220321 300 1
    for (uid, d) in [(100, 20), (200, 20), (100, 21), (300, 21), (100, 22)] {
        s.sign_in(&mut con, uid, day(d))?;
    }
    println!(
        "getbit {} 100 -> {}; bitcount -> {}",
        s.key(day(20)),
        s.signed_in(&mut con, 100, day(20))?,
        s.count(&mut con, day(20))?
    );
    println!(
        "signed in on any day of 03-20..03-22: {:?}; on every day: {:?}",
        s.active_any(&mut con, day(20), day(22))?,
        s.active_every(&mut con, day(20), day(22))?
    );
    let st = s.streak(&mut con, 100, day(18), day(22))?;
    println!(
        "uid 100 streak over 03-18..03-22: longest {} (ending {:?}), current {}",
        st.longest, st.longest_ends, st.current
    );
    match s.sign_in(&mut con, 4_000_000_000, day(22)) {
        Err(e) if matches!(e.kind(), ErrorKind::UidOutOfRange { .. }) => {
            println!("setbit at offset 4,000,000,000 (~500 MB) refused before any write: {e}")
        }
        other => return Err(format!("expected UidOutOfRange, got {other:?}").into()),
    }
    let _: i64 = redis::cmd("DEL")
        .arg(s.key(day(20)))
        .arg(s.key(day(21)))
        .arg(s.key(day(22)))
        .query(&mut con)?;
    Ok(())
}
