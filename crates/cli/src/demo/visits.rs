use chrono::{Days, NaiveDate, Utc};

use redis_patterns::keys::Prefix;
use redis_patterns::visits::{self, VisitCounter};
use redis_patterns::{Connection, Op, Request};

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;
    let max_entries = visits::ShardPlan::max_intset_entries().run(&mut con)?;
    crate::out::outln!(
        "planner: set-max-intset-entries {max_entries}; 1,000,000 expected daily uniques -> {} shards",
        visits::ShardPlan::plan_shards(1_000_000, max_entries)?
    );
    let counter = VisitCounter::builder("site", Utc, 8)
        .prefix(Prefix::new(&format!("{prefix}visits:"))?)
        .build()?;
    let today = counter.day_of(&Utc::now());
    let tomorrow = today + Days::new(1);
    count(&mut con, &counter, today, tomorrow)?;
    storage(&mut con, &counter, today)?;
    member_ids()?;
    // Each day's keys share a hash tag: one DEL per day.
    let deletes = [today, tomorrow]
        .into_iter()
        .map(|d| {
            let counter_key = counter.counter_key(d);
            let mut del = redis::cmd("DEL");
            del.arg(&counter_key)
                .arg(counter.shard_keys(d))
                .arg(counter.meta_key(d));
            Op::<i64>::cmd(counter_key, del)
        })
        .collect();
    Op::join(deletes).run(&mut con)?;
    Ok(())
}

/// Visits one by one, in a batch and pipelined; membership and the distinct count over days.
fn count(
    con: &mut Connection,
    counter: &VisitCounter<Utc>,
    today: NaiveDate,
    tomorrow: NaiveDate,
) -> super::DemoResult {
    for member in [1001, 1002, 1001] {
        let v = counter.add(today, member).run(con)?;
        crate::out::outln!(
            "visit of {member} on {today}: new = {}, distinct count = {}",
            v.new.map_or("unknown".to_string(), |n| n.to_string()),
            v.count
        );
    }
    let batch: Vec<i64> = (1000..2000).collect();
    let b = counter.add_batch(today, &batch).run(con)?;
    crate::out::outln!(
        "batch of {} members (2 already counted) in one script call: {} new, count {}",
        batch.len(),
        b.new.iter().flatten().filter(|&&n| n).count(),
        b.count
    );
    let p = counter
        .add_pipelined(tomorrow, &[1500, 5000, 5001])
        .run(con)?;
    crate::out::outln!(
        "pipelined on {tomorrow}: count {}",
        p.last().map_or(0, |v| v.count)
    );
    crate::out::outln!(
        "contains(today, 1999) = {}, contains(today, 4242) = {}",
        counter.contains(today, 1999).run(con)?,
        counter.contains(today, 4242).run(con)?
    );
    crate::out::outln!(
        "exact distinct over {today}..{tomorrow}: {} (shard-wise union)",
        counter.distinct_between(today, tomorrow).run(con)?
    );
    Ok(())
}

/// What a day stores: when its keys expire, its layout, its shards' sizes and encoding.
fn storage(
    con: &mut Connection,
    counter: &VisitCounter<Utc>,
    today: NaiveDate,
) -> super::DemoResult {
    let expire: i64 = con.query(redis::cmd("EXPIRETIME").arg(counter.counter_key(today)))?;
    crate::out::outln!(
        "the day's keys expire at {} (end of {today} in UTC)",
        chrono::DateTime::from_timestamp(expire, 0).unwrap_or_default()
    );
    let sizes: Vec<String> = counter
        .shard_sizes(today)
        .run(con)?
        .iter()
        .map(u64::to_string)
        .collect();
    crate::out::outln!(
        "the day stores its layout with its first visit: {} shards in {}",
        counter
            .stored_shards(today)
            .run(con)?
            .map_or("no".to_string(), |n| n.to_string()),
        counter.meta_key(today)
    );
    let enc: String = con.query(
        redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(counter.shard_key(today, 0)),
    )?;
    crate::out::outln!(
        "shard sizes [{}] (shard 0 encoding: {enc})",
        sizes.join(", ")
    );
    Ok(())
}

/// Members from string ids, and a member that is refused.
fn member_ids() -> super::DemoResult {
    crate::out::outln!(
        "string id \"alice\" -> member {} (crc32 as i32; may collide)",
        VisitCounter::member_from_string_id("alice")
    );
    match VisitCounter::parse_member("12a") {
        Err(e) => crate::out::outln!("parse_member(\"12a\") is refused: {e}"),
        Ok(m) => return Err(format!("expected an error, got {m}").into()),
    }
    Ok(())
}
