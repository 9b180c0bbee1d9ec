//! `redis-patterns rolling add|recent|len`: the rolling sharded store of
//! recent records (the Java rolling-store recipe), JSON values.

use std::time::Duration;

use redis_patterns::keys::Prefix;
use redis_patterns::rolling::RollingStore;
use redis_patterns::{Connection, Request};

use crate::conn::UrlArg;
use crate::fail::{CliResult, Failure};
use crate::out;

/// The store: prefix, and its ring for a key without records yet.
#[derive(clap::Args, Debug, Clone)]
pub struct StoreArgs {
    /// Key prefix (keys PREFIX{KEY}, PREFIX{KEY}:<slot>).
    #[arg(long, default_value = RollingStore::DEFAULT_PREFIX)]
    prefix: String,
    /// Records always kept per key (for a key without records; else the stored ring is used).
    #[arg(long, requires = "shard_size")]
    limit: Option<u64>,
    /// Records per shard (with --limit).
    #[arg(long, requires = "limit")]
    shard_size: Option<u64>,
    /// Seconds a shard lives after its last write.
    #[arg(long, default_value_t = 3600)]
    ttl_secs: u64,
}

#[derive(clap::Subcommand)]
pub enum RollingCommand {
    /// Add (or replace) record FIELD of KEY with the JSON value VALUE.
    Add {
        key: String,
        field: String,
        /// A JSON value, e.g. '{"amount": 125}' or 42.
        value: String,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        url: UrlArg,
    },
    /// The newest N records of KEY, newest first (JSON lines with --json).
    Recent {
        key: String,
        #[arg(default_value_t = 10)]
        n: usize,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        url: UrlArg,
    },
    /// The number of records stored for KEY.
    Len {
        key: String,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        url: UrlArg,
    },
}

/// The store of `key`: the ring stored in its index, else the one the
/// arguments give; `None` for a key without records and no ring given.
fn store(con: &mut Connection, key: &str, args: &StoreArgs) -> CliResult<Option<RollingStore>> {
    let prefix = Prefix::new(&args.prefix)?;
    let ttl = Duration::from_secs(args.ttl_secs);
    if let (Some(limit), Some(size)) = (args.limit, args.shard_size) {
        // RINGCONF refuses it when the stored ring differs.
        return Ok(Some(
            RollingStore::builder(limit, size, ttl)
                .prefix(prefix)
                .build()?,
        ));
    }
    match RollingStore::stored_ring(&prefix, key).run(con)? {
        Some(ring) => Ok(Some(ring.store(prefix, ttl)?)),
        None => Ok(None),
    }
}

pub fn run(command: RollingCommand) -> CliResult {
    match command {
        RollingCommand::Add {
            key,
            field,
            value,
            store: args,
            url,
        } => {
            let value: serde_json::Value = serde_json::from_str(&value).map_err(|e| {
                Failure::new(format!(
                    "the value is not JSON ({e}): quote strings, e.g. '\"text\"'"
                ))
            })?;
            let mut con = url.connect()?;
            let s = store(&mut con, &key, &args)?.ok_or_else(|| {
                Failure::new(format!(
                    "{key} has no records yet: pass --limit N --shard-size N for its ring"
                ))
            })?;
            let added = s.add(&key, &field, &value).run(&mut con)?;
            out::emit(&added, || {
                vec![format!(
                    "added {field} to slot {} (generation {}{}){}",
                    added.slot,
                    added.generation,
                    match added.replaced {
                        Some(true) => ", replaced",
                        Some(false) => "",
                        None =>
                            ", sent again after its reply was lost: new or replaced is not known",
                    },
                    match added.evicted {
                        Some(0) => String::new(),
                        Some(n) => format!("; evicted {n} old records"),
                        None => "; evictions not known".to_string(),
                    }
                )]
            });
            Ok(())
        }
        RollingCommand::Recent {
            key,
            n,
            store: args,
            url,
        } => {
            let mut con = url.connect()?;
            let Some(s) = store(&mut con, &key, &args)? else {
                return Ok(());
            };
            let records: Vec<(String, serde_json::Value)> = s.recent(&key, n).run(&mut con)?;
            for (field, value) in records {
                if out::json() {
                    out::json_line(&serde_json::json!({"field": field, "value": value}));
                } else {
                    out::line(&format!("{field}\t{value}"));
                }
            }
            Ok(())
        }
        RollingCommand::Len {
            key,
            store: args,
            url,
        } => {
            let mut con = url.connect()?;
            let n = match store(&mut con, &key, &args)? {
                Some(s) => s.len(&key).run(&mut con)?,
                None => 0,
            };
            out::emit(&serde_json::json!({"key": key, "len": n}), || {
                vec![n.to_string()]
            });
            Ok(())
        }
    }
}
