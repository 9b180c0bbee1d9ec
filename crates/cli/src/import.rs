//! `redis-patterns import sharded-hash BASE FILE`: the seed's pipelined bulk
//! load (`hsetNx` of every line), streamed with bounded memory.
//!
//! Works on one server and on Redis Cluster: by default (`--topology auto`)
//! it asks the server (`INFO cluster`) and, on a cluster node, reconnects
//! through a cluster client seeded with `--url`; `--cluster` (or
//! `--topology cluster` / `standalone`) skips the question.

use std::io::{BufReader, IsTerminal as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Instant;

use redis::ConnectionLike;
use redis_patterns::sharded_hash::{
    ImportOptions, ImportReport, LineFormat, ListpackLimits, RejectReason, ShardedHash, Topology,
};

/// Whether the target is one server or a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TopologyArg {
    /// Ask the server (`INFO cluster`).
    Auto,
    /// One server: every batch is one pipeline.
    Standalone,
    /// Redis Cluster: connect with a cluster client seeded with --url.
    Cluster,
}

/// Arguments of `import sharded-hash`.
#[derive(clap::Args)]
pub struct ShardedHashArgs {
    /// The logical hash; shards are BASE:<n>.
    base: String,
    /// The file: one value per line (field = 0-based line index, as the
    /// seed), or field<TAB>value lines with --tsv.
    file: PathBuf,
    /// Redis URL, e.g. redis://127.0.0.1:6379/ (on a cluster: any node).
    #[arg(long, env = "REDIS_URL")]
    url: String,
    /// One server or a cluster; `auto` asks the server.
    #[arg(long, value_enum, default_value_t = TopologyArg::Auto)]
    topology: TopologyArg,
    /// The target is a Redis Cluster (same as --topology cluster).
    #[arg(long, conflicts_with = "topology")]
    cluster: bool,
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

fn reason(r: &RejectReason) -> String {
    match r {
        RejectReason::Blank => "blank line".into(),
        RejectReason::TooLong(n) => format!("line of {n} bytes is longer than --max-line"),
        RejectReason::InvalidUtf8 => "not valid UTF-8".into(),
        RejectReason::NoField => "no field<TAB>value".into(),
        RejectReason::BadField(e) => e.clone(),
        RejectReason::ValueTooLong(n) => {
            format!("{n} bytes exceed hash-max-listpack-value (would convert its shard)")
        }
        RejectReason::ShardFull => "shard at hash-max-listpack-entries".into(),
    }
}

/// Connects to `url` as the topology says (asking the server for `auto`).
pub(crate) fn connect(
    url: &str,
    wanted: TopologyArg,
) -> Result<(Box<dyn ConnectionLike>, Topology), String> {
    let cluster = || -> Result<(Box<dyn ConnectionLike>, Topology), String> {
        let con = redis::cluster::ClusterClient::new(vec![url])
            .and_then(|c| c.get_connection())
            .map_err(|e| format!("cannot connect to the cluster at {url}: {e}"))?;
        Ok((Box::new(con), Topology::Cluster))
    };
    if wanted == TopologyArg::Cluster {
        return cluster();
    }
    let mut con = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    if wanted == TopologyArg::Standalone {
        return Ok((Box::new(con), Topology::Standalone));
    }
    match Topology::detect(&mut con).map_err(|e| {
        format!(
            "cannot tell whether {url} is a cluster node (INFO cluster: {e}); \
             pass --topology standalone or --cluster"
        )
    })? {
        Topology::Cluster => {
            drop(con);
            cluster()
        }
        Topology::Standalone => Ok((Box::new(con), Topology::Standalone)),
    }
}

pub fn sharded_hash(args: ShardedHashArgs) -> CliResult {
    // Everything the arguments alone can tell is checked before connecting,
    // so bad input fails without a single command reaching the server.
    let options = ImportOptions {
        format: if args.tsv {
            LineFormat::Tsv
        } else {
            LineFormat::LineNumber
        },
        max_line: args.max_line,
        batch: args.batch,
        ..ImportOptions::default()
    };
    options.validate()?;
    // Checks the base and --shards; replaced by the planned hash without --shards.
    let fixed = ShardedHash::new(&args.base, args.shards.unwrap_or(1))?;
    let file = open(&args.file)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let expected = match (args.shards, args.expected) {
        (Some(_), _) => None,
        (None, Some(n)) => Some(n),
        (None, None) => Some(count_lines(&args.file)?),
    };
    let wanted = if args.cluster {
        TopologyArg::Cluster
    } else {
        args.topology
    };
    let (mut con, topology) = connect(&args.url, wanted)?;
    let con = con.as_mut();
    let hash = match expected {
        None => fixed.with_limits(ListpackLimits::from_server(con)?),
        Some(expected) => {
            let (hash, p) = ShardedHash::planned(con, &args.base, expected)?;
            eprintln!(
                "planned {} shards for {expected} entries ({:.1} per shard on average, limit {})",
                p.shards, p.mean_per_shard, p.limits.entries
            );
            hash
        }
    }
    .strict(!args.no_strict)
    .topology(topology);
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let progress = |r: &ImportReport| {
        if !tty {
            return;
        }
        let frac = if size > 0 {
            r.bytes as f64 / size as f64
        } else {
            1.0
        };
        let filled = (frac * 30.0).round() as usize;
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {:5.1}% {} lines, {} inserted, {} present, {} rejected",
            "#".repeat(filled.min(30)),
            "-".repeat(30 - filled.min(30)),
            frac * 100.0,
            r.lines,
            r.inserted,
            r.present,
            r.rejected
        );
        let _ = err.flush();
    };
    let report = hash.import_lines(con, BufReader::new(file), options, progress)?;
    let secs = started.elapsed().as_secs_f64();
    if tty {
        eprintln!();
    }
    println!(
        "imported {} into {}:<0..{}> ({} shards, {})",
        args.file.display(),
        hash.base(),
        hash.shard_count() - 1,
        hash.shard_count(),
        if hash.is_strict() {
            "strict"
        } else {
            "not strict"
        }
    );
    println!(
        "topology {}",
        match topology {
            Topology::Standalone => "standalone",
            Topology::Cluster => "cluster",
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
