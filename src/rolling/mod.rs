//! A rolling sharded store: the newest records of one logical key, split into
//! shards of `shard_size` fields, at most a fixed number of shards, each shard
//! expiring `ttl` after its last write (`lua/rolling/`).
//!
//! The Java rolling-store recipe (a class storing merchant transactions)
//! kept a routing set of shard names and, for every add, ran `SMEMBERS`,
//! sorted the names on the client, `HLEN`ed the newest shard and then sent
//! `SADD`, `EXPIRE`, `HSET` and `EXPIRE` as separate round trips: an add cost
//! O(shards), two writers could both open shard N+1 or overfill a shard,
//! eviction raced with writers, and the name comparator overflowed
//! (`(int)(longX - longY)`). Here an add is **one script call whose cost does
//! not depend on the number of shards**.
//!
//! Every operation is an [`Op`](crate::Op): run it with `.run(&mut con)` on
//! a [`Connection`](crate::Connection) or `.run_async(&con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection).
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::rolling::RollingStore;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! // The newest 10,000 records per merchant, in shards of 1,000, each shard
//! // expiring an hour after its last write.
//! let store = RollingStore::new(10_000, 1_000, Duration::from_secs(3600))?;
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let added = store.add("merchant:42", "tx-1001", &125_i64).run(&mut con)?;
//! println!("written to ring slot {}", added.slot);
//! let amount: Option<i64> = store.get("merchant:42", "tx-1001").run(&mut con)?;
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let store = RollingStore::new(10_000, 1_000, Duration::from_secs(3600))?;
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! store.add("merchant:42", "tx-1002", &250_i64).run_async(&con).await?;
//! let newest: Vec<(String, i64)> = store.recent("merchant:42", 10).run_async(&con).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! For the logical key `k` and the default prefix `redis:rolling:`:
//!
//! * `redis:rolling:{k}` — the index (meta) hash: `head` (ring slot being
//!   filled), `gen` (generation of the head shard: 0 for the first shard, +1
//!   per rotation), `shards` and `shard_size` (the layout, checked by every
//!   script). Its TTL is `ttl + index_margin` (60 s by default, like the Java
//!   recipe's `EXPIRE_ADD`), reset on every add, so it outlives every shard.
//! * `redis:rolling:{k}:<i>` for `i` in `0..shards` — shard hashes, field →
//!   the record as JSON (like the Java recipe's `JSON.toJSONString(value)`).
//! * `redis:rolling:{k}:<i>:order` — the shard's fields in insertion order
//!   (a hash bigger than `hash-max-listpack-entries` forgets its order;
//!   [`RollingStore::recent`] needs it).
//!
//! The ring has `shards = ceil(limit / shard_size) + 1` slots, fixed by the
//! configuration. Slots fill in ring order; when the head shard is full the
//! add moves the head to the next slot, which holds the oldest shard, deletes
//! that shard and writes there. So the store always keeps at least the newest
//! `limit` records it was given (until they expire) and never more than
//! `shards * shard_size` fields ([`RollingStore::capacity`]) — `limit +
//! shard_size` when `limit` is a multiple of `shard_size`. Every key of `k`
//! carries the hash tag `{k}`: one logical key lives in one Redis Cluster
//! slot, different keys spread.
//!
//! # Why an add is O(1) in the number of shards
//!
//! Lua never builds key names, so the script can only touch keys the client
//! passes. Passing the whole ring on every add would make each call
//! O(shards) (the server parses and converts every key into the `KEYS`
//! table: with 1,001 shards that is 2,003 keys per add). But an add touches at
//! most two ring slots: the head, and the slot after it when the head is
//! full. The client does not know the head — it lives on the server — so it
//! **guesses** it from a small cache of the head each earlier reply reported,
//! and passes the meta key plus the (hash, order) keys of the guessed head and
//! the slot after it: 5 keys, whatever the ring size. The script reads the
//! real head from the meta hash; if it is not among the slots passed (another
//! writer rotated twice meanwhile, or the cache had no entry), it writes
//! nothing and answers the real head, and the add sends the call again from
//! that head with a wider window (4, then 16 slots: other writers may be
//! rotating right now). A miss costs one extra round trip of a script that
//! only read one hash; the write itself is always one atomic script call.
//! After three misses in a row (only seen with tiny shards under heavy
//! contention) the add passes the whole ring once, which cannot miss. The
//! add is one step machine that both drivers run. The cache is a fixed array
//! of 1,024 entries indexed by a hash of the logical key (a collision only
//! costs a miss), shared by clones of the store. `benches/rolling.rs`
//! measures the result: flat adds/s from 10 to 1,000 shards.

mod add;
mod contract;
mod head;
mod open;
mod ring;
mod store;

pub use add::Added;
pub(crate) use contract::contract;
pub use open::RingLayout;
pub use store::{RollingStore, RollingStoreBuilder};

use std::time::Duration;

/// The value of [`RollingStore::DEFAULT_PREFIX`].
pub(crate) const DEFAULT_PREFIX: &str = "redis:rolling:";

impl RollingStore {
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = DEFAULT_PREFIX;
}

/// The default time the index outlives the shards (the Java recipe's
/// `EXPIRE_ADD`).
pub(crate) const DEFAULT_INDEX_MARGIN: Duration = Duration::from_secs(60);

/// The largest ring: reads pass every slot's keys, so the ring must stay a
/// sensible number of keys.
pub(crate) const MAX_SHARDS: u64 = 65_536;

/// The longest TTL the scripts accept, in milliseconds (the `ttl_ms` range
/// of `lua/rolling/add.lua`'s header).
pub(crate) const MAX_TTL_MS: u64 = crate::scripts::rolling::ADD_TTL_MS_MAX as u64;
