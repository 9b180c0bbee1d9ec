//! `redis-patterns map put|get|ttl|sweep|inspect`: expiring maps (entries
//! with a time to live and a max-idle time on listpack-sized shards). The
//! map's shard count and path are not stored with the data: pass the ones
//! it was written with (`--shards`, `--path`), as `redis-patterns map plan`
//! printed them.

use std::time::Duration;

use redis_patterns::expiring_map::{ExpiringMap, Path, Ttl};
use redis_patterns::{Connection, Request};

use crate::conn::UrlArg;
use crate::fail::CliResult;
use crate::out;

#[derive(clap::Subcommand)]
pub enum MapCommand {
    /// Plan the shard count for N entries and choose the path (measured on the server).
    Plan {
        /// The logical map; shards are BASE:<n> (its probe hash BASE:probe is written and deleted).
        base: String,
        /// Entries the map will hold.
        #[arg(long)]
        expected: u64,
        #[command(flatten)]
        url: UrlArg,
    },
    /// Set one entry, expiring after --ttl-ms (default: never).
    Put {
        base: String,
        field: String,
        value: String,
        /// Time to live in milliseconds.
        #[arg(long)]
        ttl_ms: Option<u64>,
        #[command(flatten)]
        map: MapArgs,
    },
    /// Print the live values of fields (absent or expired ones as "(absent)", null in JSON).
    Get {
        base: String,
        #[arg(required = true)]
        fields: Vec<String>,
        /// Max-idle time: each read pushes the entry's expiry to at least this many milliseconds from now.
        #[arg(long)]
        max_idle_ms: Option<u64>,
        #[command(flatten)]
        map: MapArgs,
    },
    /// Print an entry's time to live: milliseconds, "persistent" or "absent".
    Ttl {
        base: String,
        field: String,
        #[command(flatten)]
        map: MapArgs,
    },
    /// Remove the expired entries of --count shards from --from; prints where to resume.
    Sweep {
        base: String,
        /// The first shard.
        #[arg(long, default_value_t = 0)]
        from: u64,
        /// Shards to sweep (default: all from --from).
        #[arg(long)]
        count: Option<u64>,
        #[command(flatten)]
        map: MapArgs,
    },
    /// Check the shards' encodings: how many are still listpack, how many converted.
    Inspect {
        base: String,
        /// Shards to look at, spread evenly (default: all).
        #[arg(long)]
        sample: Option<u64>,
        #[command(flatten)]
        map: MapArgs,
    },
}

/// How the map was written.
#[derive(clap::Args)]
pub struct MapArgs {
    /// The shard count (crc32 of the field).
    #[arg(long)]
    shards: u32,
    /// Where expiries live: portable (in the entry) or native (per-field TTL).
    #[arg(long, value_enum, default_value_t = PathArg::Portable)]
    path: PathArg,
    #[command(flatten)]
    url: UrlArg,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum PathArg {
    Portable,
    Native,
}

impl MapArgs {
    fn open(&self, base: &str, max_idle_ms: Option<u64>) -> CliResult<(ExpiringMap, Connection)> {
        let path = match self.path {
            PathArg::Portable => Path::Portable,
            PathArg::Native => Path::Native,
        };
        let map = ExpiringMap::builder(base, self.shards)
            .path(path)
            .max_idle(max_idle_ms.map(Duration::from_millis))
            .build()?;
        Ok((map, self.url.connect()?))
    }
}

pub fn run(command: MapCommand) -> CliResult {
    match command {
        MapCommand::Plan {
            base,
            expected,
            url,
        } => plan_shards(base, expected, url),
        MapCommand::Put {
            base,
            field,
            value,
            ttl_ms,
            map,
        } => put(base, field, value, ttl_ms, map),
        MapCommand::Get {
            base,
            fields,
            max_idle_ms,
            map,
        } => get(base, fields, max_idle_ms, map),
        MapCommand::Ttl { base, field, map } => ttl(base, field, map),
        MapCommand::Sweep {
            base,
            from,
            count,
            map,
        } => sweep(base, from, count, map),
        MapCommand::Inspect { base, sample, map } => inspect(base, sample, map),
    }
}

/// `map plan`: the shard count for `expected` entries from the server's limits.
fn plan_shards(base: String, expected: u64, url: UrlArg) -> CliResult {
    let mut con = url.connect()?;
    let (_, plan) = ExpiringMap::planned(&base, expected).run(&mut con)?;
    out::emit(&plan, || {
        vec![
            format!("shards {}", plan.plan.shards),
            format!("path {}", plan.path.path.name()),
            format!("reason {}", plan.path.reason),
        ]
    });
    Ok(())
}

/// `map put`: one entry, with a time to live or none.
fn put(base: String, field: String, value: String, ttl_ms: Option<u64>, map: MapArgs) -> CliResult {
    let (m, mut con) = map.open(&base, None)?;
    let new = m
        .put(&field, &value, ttl_ms.map(Duration::from_millis))
        .run(&mut con)?;
    out::emit(&serde_json::json!({"field": field, "new": new}), || {
        vec![
            match new {
                Some(true) => "new entry",
                Some(false) => "updated",
                None => "set (whether it was new is not known: the write was sent again after its reply was lost)",
            }
            .to_string(),
        ]
    });
    Ok(())
}

/// `map get`: the live values of fields, absent or expired ones as "(absent)" (null in JSON).
fn get(base: String, fields: Vec<String>, max_idle_ms: Option<u64>, map: MapArgs) -> CliResult {
    let (m, mut con) = map.open(&base, max_idle_ms)?;
    let values: Vec<Option<String>> = m.get_many(&fields).run(&mut con)?;
    out::field_values(&fields, &values);
    Ok(())
}

/// `map ttl`: the time an entry has left.
fn ttl(base: String, field: String, map: MapArgs) -> CliResult {
    let (m, mut con) = map.open(&base, None)?;
    let (word, ms) = match m.ttl_of(&field).run(&mut con)? {
        Ttl::Missing => ("absent".to_string(), None),
        Ttl::Persistent => ("persistent".to_string(), None),
        Ttl::Expires(d) => (format!("{} ms", d.as_millis()), Some(d.as_millis() as u64)),
    };
    out::emit(
        &serde_json::json!({"field": field, "ttl_ms": ms, "state": word}),
        || vec![word.clone()],
    );
    Ok(())
}

/// `map sweep`: removes expired entries, a bounded and resumable pass.
fn sweep(base: String, from: u64, count: Option<u64>, map: MapArgs) -> CliResult {
    let (m, mut con) = map.open(&base, None)?;
    let r = m.sweep(from, count.unwrap_or(u64::MAX)).run(&mut con)?;
    out::emit(&r, || {
        vec![
            format!(
                "swept {} shards: {} expired entries removed, {} live",
                r.shards, r.removed, r.live
            ),
            match r.next {
                Some(n) => format!("resume with --from {n}"),
                None => "done: the last shard was swept".to_string(),
            },
        ]
    });
    Ok(())
}

/// `map inspect`: the shards' encodings.
fn inspect(base: String, sample: Option<u64>, map: MapArgs) -> CliResult {
    let (m, mut con) = map.open(&base, None)?;
    let health = m.inspect(sample.unwrap_or(u64::MAX)).run(&mut con)?;
    out::emit(&health, || {
        out::field_lines(
            &health,
            &["sampled", "missing", "listpack", "converted", "max_len"],
        )
    });
    Ok(())
}
