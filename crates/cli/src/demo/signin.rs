use chrono::NaiveDate;

use redis_patterns::keys::Prefix;
use redis_patterns::signin::SignIn;
use redis_patterns::{Connection, ErrorKind, Request};

fn list(uids: &[u64]) -> String {
    let uids: Vec<String> = uids.iter().map(u64::to_string).collect();
    format!("[{}]", uids.join(", "))
}

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;
    // A hash tag after the prefix keeps every day in one slot: range unions
    // and intersections run in one script, also on a cluster.
    let s = SignIn::builder()
        .prefix(Prefix::new(&format!("{prefix}signin:"))?)
        .tag("app")
        .build()?;
    let day = |d| NaiveDate::from_ymd_opt(2022, 3, d).expect("valid date");
    // The PHP daily sign-in recipe: setbit 20220320 100 1; setbit 20220320 200 1;
    // setbit 20220321 100 1; setbit 20220321 300 1 (Prefix::none() gives its bare-date keys)
    for (uid, d) in [(100, 20), (200, 20), (100, 21), (300, 21), (100, 22)] {
        s.sign_in(uid, day(d)).run(&mut con)?;
    }
    crate::out::outln!(
        "getbit {} 100 -> {}; bitcount -> {}",
        s.key(day(20)),
        s.signed_in(100, day(20)).run(&mut con)?,
        s.count(day(20)).run(&mut con)?
    );
    crate::out::outln!(
        "signed in on any day of 03-20..03-22: {}; on every day: {}",
        list(&s.active_any(day(20), day(22)).run(&mut con)?),
        list(&s.active_every(day(20), day(22)).run(&mut con)?)
    );
    let st = s.streak(100, day(18), day(22)).run(&mut con)?;
    let ends = st
        .longest_ends
        .map_or_else(|| "none".to_string(), |d| d.to_string());
    crate::out::outln!(
        "uid 100 streak over 03-18..03-22: longest {} (ending {ends}), current {}",
        st.longest,
        st.current
    );
    match s.sign_in(4_000_000_000, day(22)).run(&mut con) {
        Err(e) if matches!(e.kind(), ErrorKind::UidOutOfRange { .. }) => {
            crate::out::outln!(
                "setbit at offset 4,000,000,000 (~500 MB) refused before any write: {e}"
            )
        }
        Err(e) => return Err(e.into()),
        Ok(_) => return Err("uid 4,000,000,000 was signed in despite the offset trap".into()),
    }
    super::delete(&mut con, [20, 21, 22].map(|d| s.key(day(d))))
}
