//! `cargo run --example packed`: a 4-byte counter per user id in sharded
//! strings, incremented atomically. Talks to `REDIS_URL`, else starts a
//! throwaway redis-server.

use redis_patterns::packed::{IntField, Le, PackedRecords};
use redis_patterns::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let logins = PackedRecords::new("example:logins", Le::<u32>::new(), 1_000_000)?;
    let counter = IntField {
        offset: 0,
        size: 4,
        signed: false,
    };
    for id in [7, 7, 7, 123_456] {
        let n = logins.add(id, counter, 1).run(&mut con)?;
        println!("user {id}: {n} logins");
    }
    let some = logins.get_many(&[7, 8, 123_456]).run(&mut con)?;
    println!("get_many [7, 8, 123456]: {some:?}");
    assert_eq!(some, [3, 0, 1]);
    let refused = logins.get(2_000_000).run(&mut con).unwrap_err();
    println!("an id past the maximum: {refused}");
    Ok(())
}
