//! `redis-patterns`: list, export and load the script bundle, and run the demo.

mod clients;
mod demo;
mod import;
mod import_lines;
mod lines;
mod throttle_cmd;

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
    /// Write every script to DIR/<pattern>/<op>.lua and DIR/manifest.json, or
    /// with --lang a generated client library (scripts and manifest included).
    Export {
        /// Target directory (created if missing).
        dir: PathBuf,
        /// Write a client for this language instead: a Python package
        /// (DIR/redis_patterns, redis-py) or a PHP library (DIR/src, phpredis).
        #[arg(long, value_enum)]
        lang: Option<clients::Lang>,
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
    Throttle(throttle_cmd::ThrottleArgs),
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
        /// Sized filter name (key `bloom:{NAME}`), or with --jshash the bitmap key itself.
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
        /// The largest block in bytes of a filter created with --expected
        /// (default: 512 MiB, or the server's lower proto-max-bulk-len).
        #[arg(long, requires = "expected")]
        max_block_bytes: Option<u64>,
        /// The most memory a filter created with --expected may take (default
        /// 4 GiB); a bigger one is refused before anything is written.
        #[arg(long, requires = "expected")]
        max_memory: Option<u64>,
        /// PHP-compatible mode: NAME is a bitmap of the PHP BloomFilter::JSHash
        /// recipe (one JSHash bit per item). Empty lines are skipped (JSHash
        /// filters refuse empty items), counted in the position and reported.
        #[arg(long, conflicts_with_all = ["expected", "fp_rate"])]
        jshash: bool,
        /// JSHash mode without PHP's limitMemory folding.
        #[arg(long, requires = "jshash")]
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
        Command::Export { dir, lang: None } => export(&dir),
        Command::Export {
            dir,
            lang: Some(lang),
        } => export_client(lang, &dir),
        Command::Load { url } => load(&url.url),
        Command::Bloom { command } => bloom(command),
        Command::Import {
            target: ImportTarget::ShardedHash(args),
        } => import::sharded_hash(args),
        Command::Throttle(args) => throttle_cmd::run(args),
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

fn export_client(lang: clients::Lang, dir: &Path) -> CliResult {
    let n = clients::write(lang, dir)?;
    println!(
        "wrote the {} client ({n} files) to {}",
        lang.name(),
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

/// What `bloom load` counts of the lines it skips.
#[derive(Default)]
struct LineStats {
    empty: u64,
    long: u64,
    first_long: Option<u64>,
    /// A read error ends the input; it is reported after the load.
    error: Option<std::io::Error>,
}

/// The lines of `bloom load`'s input as load positions: a line's bytes, or
/// `None` for a line that is skipped (too long; empty in JSHash mode).
/// Lines before `start` are only counted.
struct InputLines<R> {
    reader: R,
    max_line: usize,
    start: u64,
    jshash: bool,
    read: u64,
    consumed: u64,
    stats: std::rc::Rc<std::cell::RefCell<LineStats>>,
}

impl<R: std::io::BufRead> Iterator for InputLines<R> {
    type Item = Option<Vec<u8>>;

    fn next(&mut self) -> Option<Option<Vec<u8>>> {
        use crate::lines::{BoundedLine, read_bounded_line};
        let mut buf = Vec::new();
        let line = match read_bounded_line(
            &mut self.reader,
            self.max_line,
            &mut buf,
            &mut self.consumed,
        ) {
            Ok(line) => line,
            Err(e) => {
                self.stats.borrow_mut().error = Some(e);
                return None;
            }
        };
        if line == BoundedLine::Eof {
            return None;
        }
        self.read += 1;
        if self.read <= self.start {
            return Some(None);
        }
        let mut stats = self.stats.borrow_mut();
        match line {
            BoundedLine::TooLong(_) => {
                stats.long += 1;
                stats.first_long.get_or_insert(self.read);
                Some(None)
            }
            // JSHash filters refuse empty items (JSHash("") is one constant
            // offset): skip them, counted, instead of failing the batch.
            BoundedLine::Line if self.jshash && buf.is_empty() => {
                stats.empty += 1;
                Some(None)
            }
            _ => Some(Some(buf)),
        }
    }
}

fn bloom(command: BloomCommand) -> CliResult {
    use std::io::{IsTerminal, Write};

    use redis_patterns::bloom::{Bloom, JsHashBloom};
    use redis_patterns::{Connection, Request};

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
        max_block_bytes,
        max_memory,
        jshash,
        no_limit_memory,
    } = command;
    if batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    let reader = std::io::BufReader::new(
        std::fs::File::open(&file).map_err(|e| format!("cannot open {}: {e}", file.display()))?,
    );
    // On a Redis Cluster node (INFO cluster: cluster_enabled:1) the
    // connection connects to its cluster and follows every key to its node.
    let mut con = Connection::open(url.url.as_str())?;
    let stats = std::rc::Rc::new(std::cell::RefCell::new(LineStats::default()));
    let lines = InputLines {
        reader,
        max_line,
        start,
        jshash,
        read: 0,
        consumed: 0,
        stats: std::rc::Rc::clone(&stats),
    };
    let load = if jshash {
        JsHashBloom::builder(&name)
            .limit_memory(!no_limit_memory)
            .build()?
            .load(lines)
    } else {
        let filter = match (expected, fp_rate) {
            (Some(n), Some(p)) => {
                let mut builder = Bloom::builder(&name)
                    .expected(n)
                    .fp_rate(p)
                    .spread_blocks(spread_blocks);
                if let Some(bytes) = max_block_bytes {
                    builder = builder.max_block_bytes(bytes);
                }
                if let Some(bytes) = max_memory {
                    builder = builder.max_memory(bytes);
                }
                builder.create()
            }
            _ => Bloom::open(&name),
        };
        filter.run(&mut con)?.load(lines)
    };
    // Positions count input lines, skipped ones included, so --start resumes
    // at the right line.
    let mut load = load.batch(batch).start(start);
    let tty = std::io::stderr().is_terminal();
    let failed = |e: &dyn std::fmt::Display, done: u64| -> Box<dyn std::error::Error> {
        format!("{e}; last position done: {done}; resume with --start {done}").into()
    };
    while let Some(op) = load.next() {
        let p = op
            .run(&mut con)
            .map_err(|e| failed(&e, load.progress().done))?;
        if tty {
            eprint!("\r{} lines done, {} new", p.done, p.added);
            let _ = std::io::stderr().flush();
        }
    }
    if tty {
        eprintln!();
    }
    let progress = load.progress();
    let stats = stats.borrow();
    if let Some(e) = &stats.error {
        return Err(failed(
            &format!("reading {}: {e}", file.display()),
            progress.done,
        ));
    }
    println!(
        "loaded {} into {name}: {} new",
        file.display(),
        progress.added
    );
    if stats.empty > 0 {
        println!(
            "skipped {} empty lines (JSHash filters refuse empty items)",
            stats.empty
        );
    }
    if let Some(first) = stats.first_long {
        println!(
            "skipped {} lines longer than --max-line {max_line} bytes (first: line {first})",
            stats.long
        );
    }
    println!("last position done: {}", progress.done);
    Ok(())
}
