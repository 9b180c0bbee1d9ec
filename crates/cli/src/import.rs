//! `redis-patterns import sharded-hash BASE FILE`: the PHP bulk-load recipe
//! (pipelined `hsetNx` of every line of a file), streamed with bounded
//! memory through [`import_lines`](crate::import_lines::import_lines).
//!
//! Works on one server and on Redis Cluster: the connection asks the server
//! (`INFO cluster`) and, on a cluster node, connects to its cluster.

use std::io::{BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::time::Instant;

use redis_patterns::sharded_hash::{
    DEFAULT_OVERFLOW_TARGET, ImportOptions, ListpackLimits, RejectReason, ShardedHash, Sharding,
    plan,
};
use redis_patterns::{Connection, Request};

use crate::import_lines::{LineFormat, LineOptions, LineRejection, import_lines};

/// Arguments of `import sharded-hash`.
#[derive(clap::Args)]
pub struct ShardedHashArgs {
    /// The logical hash; shards are BASE:<n>.
    base: String,
    /// The file: one value per line (field = 0-based line index, as the PHP
    /// bulk-load recipe keys them), or field<TAB>value lines with --tsv.
    file: PathBuf,
    /// Redis URL, e.g. redis://127.0.0.1:6379/ (on a Redis Cluster: any
    /// node; the cluster is detected).
    #[arg(long, env = "REDIS_URL")]
    url: String,
    /// Shard count (must match how the hash is read). Default: planned from
    /// --expected, or from the file's line count.
    #[arg(long)]
    shards: Option<u32>,
    /// Entries the hash will hold, for the planner (default: lines in FILE).
    #[arg(long, conflicts_with = "shards")]
    expected: Option<u64>,
    /// Lines are field<TAB>value.
    #[arg(long)]
    tsv: bool,
    /// Lines per pipelined batch.
    #[arg(long, default_value_t = 50_000)]
    batch: usize,
    /// The longest accepted line in bytes; longer ones are skipped and counted.
    #[arg(long, default_value_t = 1 << 20)]
    max_line: usize,
    /// Plain HSETNX without listpack limit checks (values over
    /// hash-max-listpack-value are stored and convert their shard).
    #[arg(long)]
    no_strict: bool,
}

type CliResult = Result<(), Box<dyn std::error::Error>>;

fn open(path: &Path) -> Result<std::fs::File, String> {
    std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))
}

/// Lines in the file (a final line without a newline counts), streamed.
fn count_lines(path: &Path) -> Result<u64, String> {
    let mut file = open(path)?;
    let mut buf = vec![0u8; 1 << 16];
    let (mut lines, mut last) = (0u64, b'\n');
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        last = buf[n - 1];
    }
    Ok(lines + u64::from(last != b'\n'))
}

/// Peak resident set size of this process in KiB (`VmHWM`), on Linux.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn reason(r: &LineRejection) -> String {
    match r {
        LineRejection::Blank => "blank line".into(),
        LineRejection::TooLong(n) => format!("line of {n} bytes is longer than --max-line"),
        LineRejection::InvalidUtf8 => "not valid UTF-8".into(),
        LineRejection::NoField => "no field<TAB>value".into(),
        LineRejection::Item(RejectReason::BadField(e)) => e.clone(),
        LineRejection::Item(RejectReason::ValueTooLong(n)) => {
            format!("{n} bytes exceed hash-max-listpack-value (would convert its shard)")
        }
        LineRejection::Item(RejectReason::ShardFull) => "shard at hash-max-listpack-entries".into(),
    }
}

pub fn sharded_hash(args: ShardedHashArgs) -> CliResult {
    // Everything the arguments alone can tell is checked before connecting,
    // so bad input fails without a single command reaching the server.
    let options = LineOptions {
        format: if args.tsv {
            LineFormat::Tsv
        } else {
            LineFormat::LineNumber
        },
        max_line: args.max_line,
        import: ImportOptions {
            batch: args.batch,
            ..ImportOptions::default()
        },
    };
    options.validate()?;
    // Checks the base and --shards; the shard count is planned without --shards.
    let fixed = Sharding::Crc32 {
        shards: args.shards.unwrap_or(1),
    };
    ShardedHash::builder(&args.base, fixed).build()?;
    let file = open(&args.file)?;
    let expected = match (args.shards, args.expected) {
        (Some(_), _) => None,
        (None, Some(n)) => Some(n),
        (None, None) => Some(count_lines(&args.file)?),
    };
    let mut con = Connection::open(args.url.as_str())
        .map_err(|e| format!("cannot connect to {}: {e}", args.url))?;
    let limits = ListpackLimits::from_server().run(&mut con)?;
    let sharding = match expected {
        None => fixed,
        Some(expected) => {
            let p = plan(expected, limits, DEFAULT_OVERFLOW_TARGET)?;
            eprintln!(
                "planned {} shards for {expected} entries ({:.1} per shard on average, limit {})",
                p.shards, p.mean_per_shard, p.limits.entries
            );
            p.sharding()
        }
    };
    let hash = ShardedHash::builder(&args.base, sharding)
        .limits(limits)
        .strict(!args.no_strict)
        .build()?;
    let started = Instant::now();
    let report = import_lines(&hash, BufReader::new(file), options).run(&mut con)?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "imported {} into {}:<0..{}> ({} shards, {})",
        args.file.display(),
        hash.base(),
        hash.shards() - 1,
        hash.shards(),
        if hash.is_strict() {
            "strict"
        } else {
            "not strict"
        }
    );
    println!(
        "topology {}",
        if con.is_cluster() {
            "cluster"
        } else {
            "standalone"
        }
    );
    println!("lines {}", report.lines);
    println!("inserted {}", report.inserted);
    println!("already_present {}", report.present);
    println!("rejected {}", report.rejected);
    for r in &report.rejections {
        println!("  line {}: {}", r.line, reason(&r.reason));
    }
    if report.rejected > report.rejections.len() as u64 {
        println!(
            "  ... {} more",
            report.rejected - report.rejections.len() as u64
        );
    }
    println!("seconds {secs:.3}");
    println!("lines_per_second {:.0}", report.lines as f64 / secs);
    if let Some(kib) = peak_rss_kib() {
        println!("peak_rss_kib {kib}");
    }
    Ok(())
}
