//! `cargo run --example rolling`: the newest 1,000 transactions of each
//! merchant in a ring of hash shards, one script call per add whatever the
//! ring's size. Talks to `REDIS_URL`, else starts a throwaway redis-server.

use std::time::Duration;

use redis_patterns::prelude::*;
use redis_patterns::rolling::RollingStore;

#[derive(serde::Serialize, serde::Deserialize, Debug)]
struct Tx {
    cents: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let store = RollingStore::new(1_000, 100, Duration::from_secs(3600))?;
    println!(
        "{} shards of 100, capacity {}",
        store.shards(),
        store.capacity()
    );
    let mut evicted = 0;
    for i in 0..2_500u64 {
        let added = store
            .add("example:merchant:42", &format!("tx-{i}"), &Tx { cents: i })
            .run(&mut con)?;
        // None only after a resend whose first attempt may have evicted.
        evicted += added.evicted.unwrap_or(0);
    }
    let len = store.len("example:merchant:42").run(&mut con)?;
    println!("2,500 added, {evicted} evicted with their shards, {len} kept");
    assert!((1_000..=store.capacity()).contains(&len));
    let newest: Vec<(String, Tx)> = store.recent("example:merchant:42", 3).run(&mut con)?;
    println!("newest: {newest:?}");
    assert_eq!(newest[0].0, "tx-2499");
    Ok(())
}
