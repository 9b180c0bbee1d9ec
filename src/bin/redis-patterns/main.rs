//! `redis-patterns`: list, export and load the script bundle, and run the demo.

mod demo;
mod import;

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
        let keys: Vec<String> = s
            .keys
            .iter()
            .map(|k| format!("{}{}", k.name, if k.variadic { ".." } else { "" }))
            .collect();
        let args: Vec<String> = s
            .args
            .iter()
            .map(|a| {
                format!(
                    "{}:{}{}",
                    a.name,
                    a.ty.name(),
                    if a.variadic { ".." } else { "" }
                )
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
    let mut con = redis::Client::open(url)?.get_connection()?;
    for (name, sha) in redis_patterns::load_all(&mut con)? {
        println!("{name} {sha}");
    }
    Ok(())
}

fn bloom(command: BloomCommand) -> CliResult {
    use std::io::{BufRead, IsTerminal, Write};

    use redis_patterns::bloom::{Bloom, BloomOptions, LoadProgress, SeedBloom};
    use redis_patterns::fanout::Topology;

    let BloomCommand::Load {
        name,
        file,
        url,
        start,
        batch,
        expected,
        fp_rate,
        spread_blocks,
        seed,
        no_limit_memory,
    } = command;
    // A Redis Cluster node (INFO cluster: cluster_enabled:1) is used as the
    // seed of a cluster connection, which follows every key to its node.
    let mut direct = redis::Client::open(url.url.as_str())?.get_connection()?;
    let topology = Topology::detect(&mut direct)?;
    let mut con: Box<dyn redis::ConnectionLike> = match topology {
        Topology::Standalone => Box::new(direct),
        Topology::Cluster => {
            Box::new(redis::cluster::ClusterClient::new(vec![url.url.as_str()])?.get_connection()?)
        }
    };
    let con = &mut *con;
    let options = BloomOptions {
        spread_blocks,
        topology,
        ..BloomOptions::default()
    };
    let reader = std::io::BufReader::new(std::fs::File::open(&file)?);
    let mut read_error = None;
    let lines = reader.split(b'\n').map_while(|line| match line {
        Ok(mut l) => {
            if l.last() == Some(&b'\r') {
                l.pop();
            }
            Some(l)
        }
        Err(e) => {
            read_error = Some(e);
            None
        }
    });
    let tty = std::io::stderr().is_terminal();
    let mut last = LoadProgress {
        done: start,
        added: 0,
    };
    let progress = |p: LoadProgress| {
        last = p;
        if tty {
            eprint!("\r{} lines done, {} new", p.done, p.added);
            let _ = std::io::stderr().flush();
        }
    };
    let result = if seed {
        SeedBloom::new(&name)
            .map(|s| s.limit_memory(!no_limit_memory))
            .and_then(|s| s.load(con, lines, batch, start, progress))
    } else {
        match (expected, fp_rate) {
            (Some(n), Some(p)) => Bloom::create_with(con, &name, n, p, &options),
            _ => Bloom::open_with(con, &name, &options),
        }
        .and_then(|b| b.load(con, lines, batch, start, progress))
    };
    if tty {
        eprintln!();
    }
    match (result, read_error) {
        (Ok(done), None) => {
            println!("loaded {} into {name}: {} new", file.display(), done.added);
            println!("last position done: {}", done.done);
            Ok(())
        }
        (Ok(done), Some(e)) => Err(format!(
            "reading {} failed after line {}: {e}; resume with --start {}",
            file.display(),
            done.done,
            done.done
        )
        .into()),
        (Err(e), _) => Err(format!(
            "{e}; last position done: {}; resume with --start {}",
            last.done, last.done
        )
        .into()),
    }
}
