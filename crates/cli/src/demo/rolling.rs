use std::time::Duration;

use redis_patterns::keys::Prefix;
use redis_patterns::rolling::RollingStore;
use redis_patterns::{Connection, ErrorKind, Request};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Tx {
    id: u32,
    amount_cents: i64,
}

/// `tx<id> = <amount> cents`, or that it is gone.
fn describe(field: &str, tx: Option<Tx>) -> String {
    match tx {
        Some(tx) => format!("{field} = {} cents (id {})", tx.amount_cents, tx.id),
        None => format!("{field} is gone"),
    }
}

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;
    // Keep the newest 6 transactions per merchant in shards of 2 (ring of 4),
    // shards expiring 10 minutes after their last write, the index 60 s later.
    let store = RollingStore::builder(6, 2, Duration::from_secs(600))
        .prefix(Prefix::new(&format!("{prefix}rolling:"))?)
        .build()?;
    crate::out::outln!(
        "store: limit {} (the newest {} records of a merchant are always kept), shard size {}, \
         ring of {} shards, so at most {} records are held (the capacity)",
        store.limit(),
        store.limit(),
        store.shard_size(),
        store.shards(),
        store.capacity()
    );
    for id in 1..=9u32 {
        let added = store
            .add(
                "merchant:7",
                &format!("tx{id}"),
                &Tx {
                    id,
                    amount_cents: id as i64 * 250,
                },
            )
            .run(&mut con)?;
        crate::out::outln!(
            "add tx{id}: shard slot {} (generation {}){}",
            added.slot,
            added.generation,
            match added.evicted {
                Some(0) => String::new(),
                n => format!(
                    ", evicted the oldest shard ({} records)",
                    crate::out::known(n)
                ),
            }
        );
    }
    let len = store.len("merchant:7").run(&mut con)?;
    crate::out::outln!(
        "len = {len}: at least the limit ({}, the newest records) and at most the capacity ({}); \
         records are evicted a whole shard at a time, so an older one stays until its shard goes",
        store.limit(),
        store.capacity()
    );
    crate::out::outln!(
        "get: {} (evicted with its shard), {}",
        describe("tx1", store.get("merchant:7", "tx1").run(&mut con)?),
        describe("tx9", store.get("merchant:7", "tx9").run(&mut con)?)
    );
    let recent: Vec<String> = store
        .recent::<Tx>("merchant:7", 3)
        .run(&mut con)?
        .into_iter()
        .map(|(f, tx)| format!("{f}={}", tx.amount_cents))
        .collect();
    crate::out::outln!("recent 3 = [{}]", recent.join(", "));
    match store.add("merchant:7", "", &0).run(&mut con) {
        Err(e) if matches!(e.kind(), ErrorKind::InvalidArgument { .. }) => {
            crate::out::outln!("empty field refused: {e}")
        }
        Err(e) => return Err(e.into()),
        Ok(_) => return Err("an empty field was accepted".into()),
    }
    crate::out::outln!(
        "clear removed {} records",
        crate::out::known(store.clear("merchant:7").run(&mut con)?)
    );
    Ok(())
}
