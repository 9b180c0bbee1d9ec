use std::time::Duration;

use redis_patterns::ErrorKind;
use redis_patterns::rolling::RollingStore;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Tx {
    id: u32,
    amount_cents: i64,
}

pub fn run(client: &redis::Client, prefix: &str) -> super::DemoResult {
    let mut con = client.get_connection()?;
    // Keep the newest 6 transactions per merchant in shards of 2 (ring of 4),
    // shards expiring 10 minutes after their last write, the index 60 s later.
    let store =
        RollingStore::with_prefix(&format!("{prefix}rolling:"), 6, 2, Duration::from_secs(600))?;
    println!(
        "store: limit {}, shard size {}, ring of {} shards, at most {} records per merchant",
        store.limit(),
        store.shard_size(),
        store.shards(),
        store.capacity()
    );
    for id in 1..=9u32 {
        let added = store.add(
            &mut con,
            "merchant:7",
            &format!("tx{id}"),
            &Tx {
                id,
                amount_cents: id as i64 * 250,
            },
        )?;
        println!(
            "add tx{id}: shard slot {} (generation {}){}",
            added.slot,
            added.generation,
            if added.evicted > 0 {
                format!(", evicted the oldest shard ({} records)", added.evicted)
            } else {
                String::new()
            }
        );
    }
    println!("len = {}", store.len(&mut con, "merchant:7")?);
    println!(
        "get tx1 = {:?} (evicted), get tx9 = {:?}",
        store.get::<Tx>(&mut con, "merchant:7", "tx1")?,
        store.get::<Tx>(&mut con, "merchant:7", "tx9")?
    );
    let recent: Vec<String> = store
        .recent::<Tx>(&mut con, "merchant:7", 3)?
        .into_iter()
        .map(|(f, tx)| format!("{f}={}", tx.amount_cents))
        .collect();
    println!("recent 3 = [{}]", recent.join(", "));
    match store.add(&mut con, "merchant:7", "", &0) {
        Err(e) if matches!(e.kind(), ErrorKind::InvalidArgument { .. }) => {
            println!("empty field refused: {e}")
        }
        other => return Err(format!("expected InvalidInput, got {other:?}").into()),
    }
    println!(
        "clear removed {} records",
        store.clear(&mut con, "merchant:7")?
    );
    Ok(())
}
