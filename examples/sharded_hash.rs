//! `cargo run --example sharded_hash`: a logical hash of 10,000 fields in
//! shards planned from the server's listpack limits, every shard still a
//! listpack. Talks to `REDIS_URL`, else starts a throwaway redis-server.

use redis_patterns::prelude::*;
use redis_patterns::sharded_hash::{ImportOptions, ShardedHash};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let (users, plan) = ShardedHash::planned("example:users", 10_000).run(&mut con)?;
    println!(
        "{} shards for {} fields ({:.1} per shard on average)",
        plan.shards, plan.expected, plan.mean_per_shard
    );
    let items = (0..10_000u32).map(|i| (format!("user:{i}"), i.to_string()));
    let report = users
        .import(items, ImportOptions::default())
        .run(&mut con)?;
    println!(
        "imported: {} inserted, {} already there",
        report.inserted, report.present
    );
    let got: Vec<Option<String>> = users
        .get_many(&["user:7", "user:9999", "nobody"])
        .run(&mut con)?;
    println!("get_many: {got:?}");
    let health = users.inspect(200).run(&mut con)?;
    println!(
        "sampled {} shards: {} listpack, {} converted",
        health.sampled, health.listpack, health.converted
    );
    assert_eq!(health.converted, 0);
    assert_eq!(users.len().run(&mut con)?, 10_000);
    Ok(())
}
