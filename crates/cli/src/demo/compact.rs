use redis_patterns::{ErrorKind, Request};
use redis_patterns::packed::{IntField, Le, PackedRecords};
use redis_patterns::sharded_hash::{ListpackLimits, ShardedHash, plan};

fn used_memory(con: &mut redis::Connection) -> Result<i64, redis::RedisError> {
    let info: String = redis::cmd("INFO").arg("memory").query(con)?;
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:")?.trim().parse().ok())
        .unwrap_or(0))
}

pub fn run(client: &redis::Client, prefix: &str) -> super::DemoResult {
    let mut con = client.get_connection()?;
    let n = 20_000u64;
    let limits = ListpackLimits::from_server(&mut con)?;
    let p = plan(n, limits, 1e-9)?;
    println!(
        "server limits: {} entries / {} bytes per listpack hash; for {n} entries the planner picks {} shards \
         ({:.0} per shard on average, P(any shard overflows) <= {:.1e}; {} shards would do \"on average\")",
        limits.entries,
        limits.value,
        p.shards,
        p.mean_per_shard,
        p.overflow_bound,
        n.div_ceil(limits.entries)
    );
    let base = format!("{prefix}users");
    let h = ShardedHash::from_plan(&base, &p)?;
    let before = used_memory(&mut con)?;
    let items = (0..n).map(|i| (format!("user:{i:06}"), format!("v{i:07}")));
    let report = h.import(&mut con, items, 5_000, |_| {})?;
    let after = used_memory(&mut con)?;
    println!(
        "imported {} fields into {base}:0..{} (set-if-absent): {} inserted, {} already present; {:.1} bytes/entry for a 19-byte payload",
        report.lines,
        p.shards - 1,
        report.inserted,
        report.present,
        (after - before) as f64 / n as f64
    );
    let health = h.inspect(&mut con, u64::MAX)?;
    println!(
        "inspect: {} shards, {} listpack, {} converted, fullest shard {} fields",
        health.sampled, health.listpack, health.converted, health.max_len
    );
    let got: Vec<Option<String>> =
        h.get_many(&mut con, &["user:000042", "user:999999", "user:000007"])?;
    println!("multi-get user:000042, user:999999, user:000007 (one round trip): {got:?}");
    match h.set(&mut con, "user:000001", "x".repeat(100)) {
        Err(e) if matches!(e.kind(), ErrorKind::ListpackValueTooLong { .. }) => {
            println!("a 100-byte value is refused up front: {e}")
        }
        other => return Err(format!("expected ListpackValueTooLong, got {other:?}").into()),
    }

    super::section("packed: fixed-width records packed into sharded strings");
    let mut records_con = redis_patterns::Connection::open(client.get_connection_info().clone())?;
    let logins = PackedRecords::new(&format!("{prefix}logins"), Le::<u32>::new(), 999_999)?;
    let field = IntField {
        offset: 0,
        size: 4,
        signed: false,
    };
    logins.add(123_456, field, 1).run(&mut records_con)?;
    let count = logins.add(123_456, field, 1).run(&mut records_con)?;
    println!(
        "packed records: user 123456's login counter is {count} (4 bytes at offset {} of {}); \
         {} ids per {}-byte shard",
        logins.locate(123_456)?.1,
        logins.locate(123_456)?.0,
        logins.ids_per_shard(),
        logins.shard_bytes()
    );
    match logins.get(4_294_967_295).run(&mut records_con) {
        Err(e) if matches!(e.kind(), ErrorKind::IdOutOfRange { .. }) => {
            println!("the huge-offset trap is refused: {e}")
        }
        other => return Err(format!("expected IdOutOfRange, got {other:?}").into()),
    }
    let mut pipe = redis::pipe();
    for key in h.shard_keys() {
        pipe.cmd("DEL").arg(key).ignore();
    }
    pipe.cmd("DEL").arg(logins.locate(123_456)?.0).ignore();
    pipe.query::<()>(&mut con)?;
    Ok(())
}
