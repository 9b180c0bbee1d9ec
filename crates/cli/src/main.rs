//! `redis-patterns`: read and write every pattern from the shell, list,
//! export and load the script bundle, and run the demo.
//!
//! One module per pattern under `commands/`; a command is one variant there
//! and one line in [`Command`] and [`run`] here.

mod bulk;
mod clients;
mod commands;
mod conn;
mod demo;
mod fail;
mod import_lines;
mod lines;
mod out;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::commands::{
    analytics, bloom, bundle, hash, info, load, lock, login_log, map, packed, rolling, signin,
    throttle, visits,
};
use crate::fail::CliResult;

/// Compound Redis patterns as atomic Lua scripts: read and write them from the shell.
#[derive(Parser)]
#[command(name = "redis-patterns", version, about)]
struct Cli {
    /// Print JSON (one document, or one JSON line per record) instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print every script with its sha1, keys and args (needs no server).
    List,
    /// Write every script to DIR/<pattern>/<op>.lua, the Functions library
    /// to DIR/functions.lua and DIR/manifest.json, or with --lang a generated
    /// client library (scripts and manifest included).
    Export {
        /// Target directory (created if missing).
        dir: PathBuf,
        /// Write a client for this language instead: a Python package
        /// (DIR/redis_patterns, redis-py), a PHP library (DIR/src, phpredis)
        /// or a Node package (DIR/package.json, ioredis; TypeScript).
        #[arg(long, value_enum)]
        lang: Option<clients::Lang>,
    },
    /// SCRIPT LOAD every script and print `name sha1` lines for redis-cli EVALSHA.
    Load {
        #[command(flatten)]
        url: conn::UrlArg,
        /// Also FUNCTION LOAD REPLACE the library (every primary; replicas
        /// get it by replication) and print `name sha1 function` lines, for
        /// redis-cli FCALL / FCALL_RO.
        #[arg(long)]
        functions: bool,
    },
    /// What the server is and can do: name, version, allocator, cluster and
    /// the capabilities the patterns may use (newer commands), as detected
    /// once per connection.
    Info {
        #[command(flatten)]
        url: conn::UrlArg,
    },
    /// Owner-token locks with fencing tokens.
    #[command(subcommand)]
    Lock(lock::LockCommand),
    /// Bloom filters on plain bitmaps.
    #[command(subcommand)]
    Bloom(bloom::BloomCommand),
    /// Sharded hashes that stay listpack-encoded.
    #[command(subcommand)]
    Hash(hash::HashCommand),
    /// Expiring maps: entries with a time to live and a max-idle time on listpack-sized shards.
    #[command(subcommand)]
    Map(map::MapCommand),
    /// Fixed-width records per integer id in sharded strings.
    #[command(subcommand)]
    Packed(packed::PackedCommand),
    /// Exact daily unique visitors in sharded intsets.
    #[command(subcommand)]
    Visits(visits::VisitsCommand),
    /// The PHP login-log recipe's monthly bitmaps, seven queries and sync export.
    #[command(subcommand)]
    LoginLog(login_log::LoginLogCommand),
    /// Daily sign-in bitmaps.
    #[command(subcommand)]
    Signin(signin::SigninCommand),
    /// bitmapist-style analytics: event bitmaps per hour/day/week/month/year, set expressions and cohort tables.
    #[command(subcommand)]
    Analytics(analytics::AnalyticsCommand),
    /// The rolling sharded store of recent records.
    #[command(subcommand)]
    Rolling(rolling::RollingCommand),
    /// One GCRA rate-limit decision, as redis-cell's CL.THROTTLE (no module needed).
    Throttle(throttle::ThrottleArgs),
    /// Bulk-load a file into a pattern's keys (`import sharded-hash` is `hash import`).
    #[command(subcommand)]
    Import(ImportTarget),
    /// Run every pattern against a server and say what happened. Without
    /// --url (or REDIS_URL) it starts a throwaway redis-server from PATH.
    Demo {
        /// Redis URL (a server, or any node of a cluster); default: a throwaway local redis-server.
        #[arg(long, env = "REDIS_URL")]
        url: Option<String>,
    },
}

#[derive(Subcommand)]
enum ImportTarget {
    /// Same as `hash import`.
    ShardedHash(hash::ImportArgs),
}

fn run(command: Command) -> CliResult {
    match command {
        Command::List => bundle::list(),
        Command::Export { dir, lang: None } => bundle::export(&dir),
        Command::Export {
            dir,
            lang: Some(lang),
        } => bundle::export_client(lang, &dir),
        Command::Load { url, functions } => load::run(&url, functions),
        Command::Info { url } => info::run(&url),
        Command::Lock(c) => lock::run(c),
        Command::Bloom(c) => bloom::run(c),
        Command::Hash(c) => hash::run(c),
        Command::Map(c) => map::run(c),
        Command::Packed(c) => packed::run(c),
        Command::Visits(c) => visits::run(c),
        Command::LoginLog(c) => login_log::run(c),
        Command::Signin(c) => signin::run(c),
        Command::Analytics(c) => analytics::run(c),
        Command::Rolling(c) => rolling::run(c),
        Command::Throttle(args) => throttle::run(args),
        Command::Import(ImportTarget::ShardedHash(args)) => hash::import(args),
        Command::Demo { url } => demo::run(url.as_deref()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    out::set_json(cli.json);
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("redis-patterns: {}", f.message);
            ExitCode::from(f.status)
        }
    }
}
