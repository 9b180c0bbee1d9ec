//! `cargo run --example layout`: a layout stored with the data, read back
//! by a reader that knows only the name, and a writer with another layout
//! refused. Talks to `REDIS_URL`, else starts a throwaway redis-server.

use redis_patterns::prelude::*;
use redis_patterns::sharded_hash::{ShardedHash, Sharding};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let writer = ShardedHash::builder("example:accounts", Sharding::Crc32 { shards: 64 })
        .record_layout(true)
        .build()?;
    writer.set("alice", "1").run(&mut con)?;
    let reader = ShardedHash::open("example:accounts").run(&mut con)?;
    println!(
        "a reader found {} shards in {}",
        reader.shards(),
        reader.meta_key()
    );
    let got: Option<String> = reader.get("alice").run(&mut con)?;
    println!("alice: {got:?}");
    let other = ShardedHash::builder("example:accounts", Sharding::Crc32 { shards: 3 })
        .record_layout(true)
        .build()?;
    let refused = other.set("bob", "2").run(&mut con).unwrap_err();
    println!("a writer with 3 shards: {refused}");
    assert_eq!(got.as_deref(), Some("1"));
    Ok(())
}
