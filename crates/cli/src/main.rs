//! `redis-patterns`: list, export and load the script bundle, and run the demo.

mod demo;
mod import;
mod import_lines;
mod lines;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use redis_patterns::scripts::ALL;

/// Compound Redis patterns as atomic Lua scripts.
#[derive(Parser)]
#[command(name = "redis-patterns", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The server to talk to.
#[derive(clap::Args)]
struct Url {
    /// Redis URL, e.g. redis://127.0.0.1:6379/
    #[arg(long, env = "REDIS_URL")]
    url: String,
}

#[derive(Subcommand)]
enum Command {
    /// Print every script with its sha1, keys and args (needs no server).
    List,
    /// Write every script to DIR/<pattern>/<op>.lua and DIR/manifest.json.
    Export {
        /// Target directory (created if missing).
        dir: PathBuf,
    },
    /// SCRIPT LOAD every script and print `name sha1` lines for redis-cli EVALSHA.
    Load {
        #[command(flatten)]
        url: Url,
    },
    /// Bloom filters on plain bitmaps.
    Bloom {
        #[command(subcommand)]
        command: BloomCommand,
    },
    /// Bulk-load a file into a pattern's keys, streamed in pipelined batches.
    Import {
        #[command(subcommand)]
        target: ImportTarget,
    },
    /// Run every pattern against a server and print what happened. Without
    /// --url (or REDIS_URL) it starts a throwaway redis-server from PATH.
    Demo {
        /// Redis URL; default: a throwaway local redis-server.
        #[arg(long, env = "REDIS_URL")]
        url: Option<String>,
    },
}

#[derive(Subcommand)]
enum BloomCommand {
    /// Add every line of FILE (one item per line) to filter NAME in pipelined
    /// batches. Prints the last position (line count) done; pass it to
    /// --start to resume an interrupted load.
    Load {
        /// Sized filter name (key `bloom:{NAME}`), or with --seed the bitmap key itself.
        name: String,
        /// Input file, one item per line (`\n` or `\r\n`; bytes, not necessarily UTF-8).
        file: PathBuf,
        #[command(flatten)]
        url: Url,
        /// Skip the first START lines (resume an interrupted load).
        #[arg(long, default_value_t = 0)]
        start: u64,
        /// Items per pipelined batch.
        #[arg(long, default_value_t = 5000)]
        batch: usize,
        /// The longest item in bytes; longer lines are skipped and counted.
        #[arg(long, default_value_t = 1 << 20)]
        max_line: usize,
        /// Create the sized filter for this many items (with --fp-rate) if it does not exist.
        #[arg(long, requires = "fp_rate")]
        expected: Option<u64>,
        /// Target false-positive rate of a filter created with --expected.
        #[arg(long, requires = "expected")]
        fp_rate: Option<f64>,
        /// Give each block of a filter created with --expected its own hash
        /// tag, so its blocks spread over the nodes of a Redis Cluster.
        #[arg(long, requires = "expected")]
        spread_blocks: bool,
        /// Seed-compatible mode: NAME is a bitmap written by the PHP seed (JSHash, k = 1).
        /// Empty lines are skipped (the seed refuses empty items), counted in
        /// the position and reported.
        #[arg(long, conflicts_with_all = ["expected", "fp_rate"])]
        seed: bool,
        /// Seed mode without the seed's limitMemory folding.
        #[arg(long, requires = "seed")]
        no_limit_memory: bool,
    },
}

#[derive(Subcommand)]
enum ImportTarget {
    /// Set-if-absent every line of FILE into the sharded hash BASE; prints
    /// counts of inserted / already present / rejected lines.
    ShardedHash(import::ShardedHashArgs),
}

type CliResult = Result<(), Box<dyn std::error::Error>>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::List => list(),
        Command::Export { dir } => export(&dir),
        Command::Load { url } => load(&url.url),
        Command::Bloom { command } => bloom(command),
        Command::Import {
            target: ImportTarget::ShardedHash(args),
        } => import::sharded_hash(args),
        Command::Demo { url } => demo::run(url.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("redis-patterns: {e}");
            ExitCode::FAILURE
        }
    }
}

fn list() -> CliResult {
    let width = ALL.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for s in ALL {
        let tail = |variadic: bool| if variadic { ".." } else { "" };
        let keys: Vec<String> = s
            .keys
            .iter()
            .map(|k| {
                let types: Vec<&str> = k.types.iter().map(|t| t.name()).collect();
                format!(
                    "{}{}:{}:{}",
                    k.name,
                    tail(k.variadic),
                    types.join(","),
                    if k.written { "rw" } else { "ro" }
                )
            })
            .collect();
        let args: Vec<String> = s
            .args
            .iter()
            .map(|a| {
                let constraint = match (a.min, a.max) {
                    (Some(lo), Some(hi)) => format!(":{lo}..{hi}"),
                    _ if !a.values.is_empty() => format!(":{}", a.values.join("|")),
                    _ if a.non_empty => ":nonempty".to_string(),
                    _ => String::new(),
                };
                format!("{}{}:{}{constraint}", a.name, tail(a.variadic), a.ty.name())
            })
            .collect();
        println!(
            "{:width$}  {}  {}  keys [{}]  args [{}]",
            s.name,
            s.sha1,
            if s.read_only { "ro" } else { "rw" },
            keys.join(" "),
            args.join(" "),
        );
    }
    Ok(())
}

fn export(dir: &Path) -> CliResult {
    for s in ALL {
        let path = dir.join(s.file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, s.source())?;
    }
    let manifest = redis_patterns::manifest::manifest();
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)? + "\n",
    )?;
    println!(
        "wrote {} scripts and manifest.json to {}",
        ALL.len(),
        dir.display()
    );
    Ok(())
}

fn load(url: &str) -> CliResult {
    use redis_patterns::Request as _;
    let mut con = redis_patterns::Connection::open(url)?;
    for (name, sha) in redis_patterns::load_all().run(&mut con)? {
        println!("{name} {sha}");
    }
    Ok(())
}

fn bloom(command: BloomCommand) -> CliResult {
    use std::io::{IsTerminal, Write};

    use crate::lines::{BoundedLine, read_bounded_line};
    use redis_patterns::bloom::{Bloom, BloomOptions, SeedBloom};

    let BloomCommand::Load {
        name,
        file,
        url,
        start,
        batch,
        max_line,
        expected,
        fp_rate,
        spread_blocks,
        seed,
        no_limit_memory,
    } = command;
    if batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    let mut reader = std::io::BufReader::new(
        std::fs::File::open(&file).map_err(|e| format!("cannot open {}: {e}", file.display()))?,
    );
    // A Redis Cluster node (INFO cluster: cluster_enabled:1) is used as the
    // seed of a cluster connection, which follows every key to its node.
    let (mut con, topology) = import::connect(&url.url, import::TopologyArg::Auto)?;
    let con = con.as_mut();
    let options = BloomOptions {
        spread_blocks,
        topology,
        ..BloomOptions::default()
    };
    enum Target {
        Seed(SeedBloom),
        Sized(Bloom),
    }
    let target = if seed {
        Target::Seed(SeedBloom::new(&name)?.limit_memory(!no_limit_memory))
    } else {
        Target::Sized(match (expected, fp_rate) {
            (Some(n), Some(p)) => Bloom::create_with(con, &name, n, p, &options)?,
            _ => Bloom::open_with(con, &name, &options)?,
        })
    };
    let tty = std::io::stderr().is_terminal();
    // Positions count input lines, skipped ones included, so --start resumes
    // at the right line. `done`: every line before it is settled (loaded or
    // skipped); `read`: lines read so far.
    let (mut done, mut read, mut added) = (0u64, 0u64, 0u64);
    let (mut empty, mut long, mut first_long) = (0u64, 0u64, None);
    let mut buf = Vec::new();
    let mut consumed = 0u64;
    let mut items: Vec<Vec<u8>> = Vec::with_capacity(batch);
    let failed = |e: &dyn std::fmt::Display, done: u64| -> Box<dyn std::error::Error> {
        format!("{e}; last position done: {done}; resume with --start {done}").into()
    };
    while read < start {
        match read_bounded_line(&mut reader, max_line, &mut buf, &mut consumed) {
            Ok(BoundedLine::Eof) => break,
            Ok(_) => read += 1,
            Err(e) => return Err(failed(&format!("reading {}: {e}", file.display()), done)),
        }
        done = read;
    }
    loop {
        let line = read_bounded_line(&mut reader, max_line, &mut buf, &mut consumed)
            .map_err(|e| failed(&format!("reading {}: {e}", file.display()), done))?;
        let eof = line == BoundedLine::Eof;
        match line {
            BoundedLine::Eof => {}
            BoundedLine::TooLong(_) => {
                read += 1;
                long += 1;
                first_long.get_or_insert(read);
            }
            // The seed refuses empty items (JSHash("") is one constant
            // offset): skip them, counted, instead of failing the batch.
            BoundedLine::Line if seed && buf.is_empty() => {
                read += 1;
                empty += 1;
            }
            BoundedLine::Line => {
                read += 1;
                items.push(std::mem::take(&mut buf));
            }
        }
        if items.len() == batch || (eof && !items.is_empty()) {
            let flags = match &target {
                Target::Seed(s) => s.multi_add(con, &items),
                Target::Sized(b) => b.multi_add(con, &items),
            }
            .map_err(|e| failed(&e, done))?;
            added += flags.into_iter().filter(|&b| b).count() as u64;
            items.clear();
        }
        if items.is_empty() {
            done = read;
            if tty {
                eprint!("\r{done} lines done, {added} new");
                let _ = std::io::stderr().flush();
            }
        }
        if eof {
            break;
        }
    }
    if tty {
        eprintln!();
    }
    println!("loaded {} into {name}: {added} new", file.display());
    if empty > 0 {
        println!("skipped {empty} empty lines (the seed refuses empty items)");
    }
    if let Some(first) = first_long {
        println!(
            "skipped {long} lines longer than --max-line {max_line} bytes (first: line {first})"
        );
    }
    println!("last position done: {done}");
    Ok(())
}
