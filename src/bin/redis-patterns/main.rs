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
