//! `cargo run --example bloom`: a Bloom filter sized for 100,000 items at
//! a 1 % false-positive rate, on plain bitmaps (no module). Talks to
//! `REDIS_URL`, else starts a throwaway redis-server.

use redis_patterns::bloom::Bloom;
use redis_patterns::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let bf = Bloom::create("example:emails", 100_000, 0.01).run(&mut con)?;
    let p = bf.params();
    println!(
        "{} bits, k {}, {} blocks",
        p.total_bits(),
        p.k,
        bf.block_keys().len()
    );
    let items: Vec<String> = (0..100_000)
        .map(|i| format!("user{i}@example.com"))
        .collect();
    let done = bf.load(items).batch(10_000).into_op(|_| {}).run(&mut con)?;
    println!("loaded {} items, {} new", done.done, done.added);
    let probes: Vec<String> = (0..10_000)
        .map(|i| format!("other{i}@example.com"))
        .collect();
    let hits = bf.multi_exists(&probes).run(&mut con)?;
    let false_positives = hits.iter().filter(|h| **h).count();
    println!("false positives among 10,000 absent items: {false_positives}");
    assert!(bf.exists("user42@example.com").run(&mut con)?);
    assert!(false_positives < 200);
    Ok(())
}
