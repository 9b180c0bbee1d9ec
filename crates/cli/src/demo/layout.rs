use redis_patterns::sharded_hash::{ShardedHash, Sharding};
use redis_patterns::{ErrorKind, Request};

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = crate::conn::connect(url)?;
    let base = format!("{prefix}accounts");
    let first = ShardedHash::builder(&base, Sharding::Crc32 { shards: 64 })
        .record_layout(true)
        .build()?;
    first.set("alice", "1").run(&mut con)?;
    let opened = ShardedHash::open(&base).run(&mut con)?;
    crate::out::outln!(
        "the first write stored the layout in {}: {}; a reader that knows only the name finds {} shards",
        first.meta_key(),
        first.layout(),
        opened.shards()
    );
    let other = ShardedHash::builder(&base, Sharding::Crc32 { shards: 3 })
        .record_layout(true)
        .build()?;
    match other
        .set("bob", "2")
        .run(&mut con)
        .map_err(|e| e.into_kind())
    {
        Err(e @ ErrorKind::LayoutMismatch { .. }) => {
            crate::out::outln!("a writer with 3 shards is refused before it writes: {e}")
        }
        Ok(_) => return Err("a writer with another layout wrote".into()),
        Err(e) => return Err(redis_patterns::Error::from(e).into()),
    }
    let mut cleanup = redis_patterns::Batch::new();
    for key in first.shard_keys().chain([first.meta_key()]) {
        let mut del = redis::cmd("DEL");
        del.arg(&key);
        cleanup.add(&key, del);
    }
    cleanup.run(&mut con)?.all::<i64>()?;
    Ok(())
}
