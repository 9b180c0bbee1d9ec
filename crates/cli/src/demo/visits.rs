use chrono::{Days, Utc};

use redis_patterns::visits::{self, VisitCounter};

pub fn run(client: &redis::Client, prefix: &str) -> super::DemoResult {
    let mut con = client.get_connection()?;
    let max_entries = visits::max_intset_entries(&mut con)?;
    println!(
        "planner: set-max-intset-entries {max_entries}; 1,000,000 expected daily uniques -> {} shards",
        visits::plan_shards(1_000_000, max_entries)?
    );
    let counter = VisitCounter::with_prefix(&format!("{prefix}visits:"), "site", Utc, 8)?;
    let today = counter.day_of(&Utc::now());
    let tomorrow = today + Days::new(1);
    for member in [1001, 1002, 1001] {
        let v = counter.add(&mut con, today, member)?;
        println!(
            "visit of {member} on {today}: new = {}, distinct count = {}",
            v.new, v.count
        );
    }
    let batch: Vec<i64> = (1000..2000).collect();
    let b = counter.add_batch(&mut con, today, &batch)?;
    println!(
        "batch of {} members (2 already counted) in one script call: {} new, count {}",
        batch.len(),
        b.new.iter().filter(|&&n| n).count(),
        b.count
    );
    let p = counter.add_pipelined(&mut con, tomorrow, &[1500, 5000, 5001])?;
    println!(
        "pipelined on {tomorrow}: count {}",
        p.last().map_or(0, |v| v.count)
    );
    println!(
        "contains(today, 1999) = {}, contains(today, 4242) = {}",
        counter.contains(&mut con, today, 1999)?,
        counter.contains(&mut con, today, 4242)?
    );
    println!(
        "exact distinct over {today}..{tomorrow}: {} (shard-wise union)",
        counter.distinct_between(&mut con, today, tomorrow)?
    );
    let expire: i64 = redis::cmd("EXPIRETIME")
        .arg(counter.counter_key(today))
        .query(&mut con)?;
    println!(
        "the day's keys expire at {} (end of {today} in UTC)",
        chrono::DateTime::from_timestamp(expire, 0).unwrap_or_default()
    );
    let sizes = counter.shard_sizes(&mut con, today)?;
    let enc: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(counter.shard_key(today, 0))
        .query(&mut con)?;
    println!("shard sizes {sizes:?} (shard 0 encoding: {enc})");
    println!(
        "string id \"alice\" -> member {} (crc32 as i32; may collide)",
        visits::member_from_string_id("alice")
    );
    match visits::parse_member("12a") {
        Err(e) => println!("parse_member(\"12a\") is refused: {e}"),
        Ok(m) => return Err(format!("expected an error, got {m}").into()),
    }
    let mut del = redis::cmd("DEL");
    for d in [today, tomorrow] {
        del.arg(counter.counter_key(d)).arg(counter.shard_keys(d));
    }
    let _: i64 = del.query(&mut con)?;
    Ok(())
}
