use redis_patterns::packed::{IntField, Le, PackedRecords};
use redis_patterns::sharded_hash::{ImportOptions, ListpackLimits, Plan, ShardedHash};
use redis_patterns::{Connection, ErrorKind, Request};

fn used_memory(con: &mut Connection) -> redis_patterns::Result<i64> {
    // One server answers text; a cluster answers a map of node to text:
    // the memory of every node, summed.
    let info: redis::Value = con.query(redis::cmd("INFO").arg("memory"))?;
    let texts: Vec<redis::Value> = match info {
        redis::Value::Map(nodes) => nodes.into_iter().map(|(_, v)| v).collect(),
        v => vec![v],
    };
    Ok(texts
        .into_iter()
        .filter_map(|v| redis::FromRedisValue::from_redis_value(v).ok())
        .map(|text: String| {
            text.lines()
                .find_map(|l| l.strip_prefix("used_memory:")?.trim().parse::<i64>().ok())
                .unwrap_or(0)
        })
        .sum())
}

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;
    let n = 20_000u64;
    let limits = ListpackLimits::from_server().run(&mut con)?;
    let p = Plan::new(n, limits, 1e-9)?;
    crate::out::outln!(
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
    let options = ImportOptions {
        batch: 5_000,
        ..ImportOptions::default()
    };
    let report = h.import(items, options).run(&mut con)?;
    let after = used_memory(&mut con)?;
    crate::out::outln!(
        "imported {} fields into {base}:0..{} (set-if-absent): {} inserted, {} already present; {:.1} bytes/entry for a 19-byte payload",
        report.items,
        p.shards - 1,
        report.inserted,
        report.present,
        (after - before) as f64 / n as f64
    );
    let health = h.inspect(u64::MAX).run(&mut con)?;
    crate::out::outln!(
        "inspect: {} shards, {} listpack, {} converted, fullest shard {} fields",
        health.sampled,
        health.listpack,
        health.converted,
        health.max_len
    );
    let fields = ["user:000042", "user:999999", "user:000007"];
    let got: Vec<Option<String>> = h.get_many(&fields).run(&mut con)?;
    let shown: Vec<String> = fields
        .iter()
        .zip(&got)
        .map(|(f, v)| format!("{f} = {}", v.as_deref().unwrap_or("(absent)")))
        .collect();
    crate::out::outln!("multi-get (one batch): {}", shown.join(", "));
    let e = super::refusal(
        h.set("user:000001", "x".repeat(100)).run(&mut con),
        |k| matches!(k, ErrorKind::ListpackValueTooLong { .. }),
        "a 100-byte value was written into a strict hash",
    )?;
    crate::out::outln!("a 100-byte value is refused up front: {e}");

    super::section("packed: fixed-width records packed into sharded strings");
    let logins = PackedRecords::new(&format!("{prefix}logins"), Le::<u32>::new(), 999_999)?;
    let field = IntField {
        offset: 0,
        size: 4,
        signed: false,
    };
    logins.add(123_456, field, 1).run(&mut con)?;
    let count = logins.add(123_456, field, 1).run(&mut con)?;
    let (key, offset) = logins.locate(123_456)?;
    crate::out::outln!(
        "packed records: user 123456's login counter is {count} (4 bytes at offset {offset} of {key}); \
         {} ids per {}-byte shard",
        logins.ids_per_shard(),
        logins.shard_bytes()
    );
    let e = super::refusal(
        logins.get(4_294_967_295).run(&mut con),
        |k| matches!(k, ErrorKind::IdOutOfRange { .. }),
        "an id above the maximum was read",
    )?;
    crate::out::outln!("the huge-offset trap is refused: {e}");
    super::delete(&mut con, h.shard_keys().chain([key]))
}
