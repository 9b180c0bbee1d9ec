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
    let e = super::refusal(
        other.set("bob", "2").run(&mut con),
        |k| matches!(k, ErrorKind::LayoutMismatch { .. }),
        "a writer with another layout wrote",
    )?;
    crate::out::outln!("a writer with 3 shards is refused before it writes: {e}");
    super::delete(&mut con, first.shard_keys().chain([first.meta_key()]))
}
