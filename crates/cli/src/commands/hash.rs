//! `redis-patterns hash plan|get|set|inspect|import`: sharded hashes that
//! stay listpack-encoded, with their layout stored in `<base>:meta`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use redis_patterns::layout::Layout;
use redis_patterns::sharded_hash::{
    ImportOptions, ImportReport, ListpackLimits, Plan, RejectReason, ShardedHash, Sharding,
};
use redis_patterns::{Connection, ErrorKind, Request};
use serde::Serialize;

use crate::bulk::{Bulk, BulkArgs, Input, count_lines};
use crate::conn::{At, UrlArg};
use crate::fail::{CliResult, Failure};
use crate::import_lines::{
    self, LineFormat, LineOptions, LineRejection, Lines, RejectedLine, Seen,
};
use crate::out;

#[derive(clap::Subcommand)]
pub enum HashCommand {
    /// Plan the shard count for N entries from the server's listpack limits.
    Plan {
        /// Entries the hash will hold.
        #[arg(long)]
        expected: u64,
        #[command(flatten)]
        url: UrlArg,
    },
    /// Print the values of fields (absent ones as "(absent)", null in JSON).
    Get {
        /// The logical hash; shards are BASE:<n>.
        base: String,
        /// The fields.
        #[arg(required = true)]
        fields: Vec<String>,
        #[command(flatten)]
        at: At<LayoutArg>,
    },
    /// Set one field (strict: refused when it would convert its shard).
    Set {
        base: String,
        field: String,
        value: String,
        #[command(flatten)]
        at: At<LayoutArg>,
    },
    /// Check the shards' encodings: how many are still listpack, how many converted.
    Inspect {
        base: String,
        /// Shards to look at, spread evenly (default: all).
        #[arg(long)]
        sample: Option<u64>,
        #[command(flatten)]
        at: At<LayoutArg>,
    },
    /// Set-if-absent every line of FILE (or - for stdin) into the hash BASE.
    Import(ImportArgs),
}

/// The layout of a hash written without a stored one.
#[derive(clap::Args, Debug, Clone)]
pub struct LayoutArg {
    /// The shard count (crc32 of the field), for data written without a
    /// stored layout (e.g. by the PHP sharded-hash recipe); refused when
    /// another layout is stored.
    #[arg(long)]
    pub shards: Option<u32>,
}

impl At<LayoutArg> {
    /// The connection, then the hash `base` on it (see [`open`]).
    fn hash(&self, base: &str, write: bool) -> CliResult<(ShardedHash, Connection)> {
        let mut con = self.url.connect()?;
        let hash = open(&mut con, base, self.pattern.shards, write)?;
        Ok((hash, con))
    }
}

/// Arguments of `hash import` (and its alias `import sharded-hash`).
#[derive(clap::Args)]
pub struct ImportArgs {
    /// The logical hash; shards are BASE:<n>, its layout BASE:meta.
    base: String,
    /// The file: one value per line (field = 0-based line index, as the PHP
    /// bulk-load recipe keys them), or field<TAB>value lines with --tsv; - reads stdin.
    file: PathBuf,
    #[command(flatten)]
    url: UrlArg,
    /// Shard count for a new hash (default: the stored layout, else planned
    /// from --expected or the file's line count); refused when another
    /// layout is stored.
    #[arg(long)]
    shards: Option<u32>,
    /// Entries the hash will hold, for the planner of a new hash (default: lines in FILE).
    #[arg(long, conflicts_with = "shards")]
    expected: Option<u64>,
    /// Lines are field<TAB>value.
    #[arg(long)]
    tsv: bool,
    /// Plain HSETNX without listpack limit checks (values over
    /// hash-max-listpack-value are stored and convert their shard).
    #[arg(long)]
    no_strict: bool,
    #[command(flatten)]
    bulk: BulkArgs,
}

pub fn run(command: HashCommand) -> CliResult {
    match command {
        HashCommand::Plan { expected, url } => plan_shards(expected, url),
        HashCommand::Get { base, fields, at } => get(base, fields, at),
        HashCommand::Set {
            base,
            field,
            value,
            at,
        } => set(base, field, value, at),
        HashCommand::Inspect { base, sample, at } => inspect(base, sample, at),
        HashCommand::Import(args) => import(args),
    }
}

/// `hash plan`: the shard count for `expected` entries from the server's limits.
fn plan_shards(expected: u64, url: UrlArg) -> CliResult {
    let mut con = url.connect()?;
    let limits = ListpackLimits::from_server().run(&mut con)?;
    let p = Plan::new(expected, limits, Plan::DEFAULT_OVERFLOW_TARGET)?;
    out::emit(&p, || {
        vec![
            format!("shards {}", p.shards),
            format!("expected {}", p.expected),
            format!("mean_per_shard {:.1}", p.mean_per_shard),
            format!("overflow_bound {:.1e}", p.overflow_bound),
            format!(
                "limits {} entries, {} bytes",
                p.limits.entries, p.limits.value
            ),
        ]
    });
    Ok(())
}

/// `hash get`: the fields' values, absent ones as "(absent)" (null in JSON).
fn get(base: String, fields: Vec<String>, at: At<LayoutArg>) -> CliResult {
    let (hash, mut con) = at.hash(&base, false)?;
    let values: Vec<Option<String>> = hash.get_many(&fields).run(&mut con)?;
    out::field_values(&fields, &values);
    Ok(())
}

/// `hash set`: one field, and whether it was new.
fn set(base: String, field: String, value: String, at: At<LayoutArg>) -> CliResult {
    let (hash, mut con) = at.hash(&base, true)?;
    let new = hash.set(&field, &value).run(&mut con)?;
    out::emit(&serde_json::json!({"field": field, "new": new}), || {
        vec![
            match new {
                Some(true) => "new field",
                Some(false) => "updated",
                None => "set (whether it was new is not known: the write was sent again after its reply was lost)",
            }
            .to_string(),
        ]
    });
    Ok(())
}

/// `hash inspect`: the layout and the shards' encodings.
fn inspect(base: String, sample: Option<u64>, at: At<LayoutArg>) -> CliResult {
    let (hash, mut con) = at.hash(&base, false)?;
    let health = hash.inspect(sample.unwrap_or(u64::MAX)).run(&mut con)?;
    #[derive(Serialize)]
    struct Inspect<'a> {
        base: &'a str,
        layout: Layout,
        #[serde(flatten)]
        health: &'a redis_patterns::sharded_hash::Health,
    }
    let report = Inspect {
        base: &base,
        layout: hash.layout(),
        health: &health,
    };
    out::emit(&report, || {
        let mut lines = vec![format!("layout {}", hash.layout())];
        let counts = ["sampled", "missing", "listpack", "converted", "max_len"];
        lines.extend(out::field_lines(&report, &counts));
        lines.push(format!("fields_in_sample {}", health.sampled_len));
        lines.extend(
            health
                .converted_keys
                .iter()
                .map(|k| format!("  converted {k}")),
        );
        lines
    });
    Ok(())
}

/// The hash `base` for a command: the stored layout, or the one `--shards`
/// names for data written without one (a stored different one is refused).
/// `write`: a hash that claims its layout before its first write.
fn open(
    con: &mut Connection,
    base: &str,
    shards: Option<u32>,
    write: bool,
) -> CliResult<ShardedHash> {
    let stored = ShardedHash::stored_sharding(base).run(con)?;
    let sharding = match (stored, shards) {
        (Some(s), None) => s,
        (stored, Some(n)) => {
            let asked = Sharding::Crc32 { shards: n };
            if let Some(s) = stored {
                s.layout()
                    .check(&ShardedHash::meta_key_of(base), &asked.layout())
                    .map_err(|e| mismatch(e.into()))?;
            }
            asked
        }
        (None, None) => {
            return Err(Failure::new(format!(
                "{base} has no stored layout ({} is absent): name it with --shards N (data written by other code), or create it with hash import",
                ShardedHash::meta_key_of(base)
            )));
        }
    };
    Ok(ShardedHash::builder(base, sharding)
        .record_layout(write)
        .build()?)
}

/// A layout mismatch with what to do about it.
fn mismatch(f: Failure) -> Failure {
    Failure::new(format!(
        "refused: {}: drop --shards to use the stored layout, or use another name",
        f.message
    ))
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

/// One rejected line, for JSON.
#[derive(Serialize)]
struct Rejected {
    line: u64,
    reason: String,
}

/// What an import did, printed at its end (also after a failure).
#[derive(Serialize)]
struct ImportSummary {
    base: String,
    file: String,
    layout: Layout,
    topology: &'static str,
    start: u64,
    /// Lines completed (resume with --start position).
    position: u64,
    lines: u64,
    inserted: u64,
    already_present: u64,
    /// Fields whose write was sent again after a lost reply (by the crate,
    /// or a batch this command sent again) and found them present:
    /// inserted by the first attempt or present before.
    unknown: u64,
    rejected: u64,
    rejections: Vec<Rejected>,
    resent_batches: u64,
    seconds: f64,
    /// The process's peak resident memory (`VmHWM`), where the system
    /// reports it: a streamed import stays flat whatever the file's size.
    peak_rss_kib: Option<u64>,
    complete: bool,
}

/// `VmHWM` of `/proc/self/status` in KiB (Linux); `None` elsewhere.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

impl ImportSummary {
    fn print(&self) {
        out::emit(self, || {
            let mut lines = vec![format!(
                "imported {} into {} ({})",
                self.file, self.base, self.layout
            )];
            let fields = [
                "topology",
                "start",
                "position",
                "lines",
                "inserted",
                "already_present",
                "unknown",
                "rejected",
            ];
            lines.extend(out::field_lines(self, &fields));
            for r in &self.rejections {
                lines.push(format!("  line {}: {}", r.line, r.reason));
            }
            if self.rejected > self.rejections.len() as u64 {
                lines.push(format!(
                    "  ... {} more",
                    self.rejected - self.rejections.len() as u64
                ));
            }
            lines.push(format!("resent_batches {}", self.resent_batches));
            lines.push(format!("seconds {:.3}", self.seconds));
            if let Some(kib) = self.peak_rss_kib {
                lines.push(format!("peak_rss_kib {kib}"));
            }
            lines
        });
    }
}

pub fn import(args: ImportArgs) -> CliResult {
    // Everything the arguments alone can tell is checked before connecting.
    args.bulk.check()?;
    let options = line_options(&args);
    options.validate()?;
    ShardedHash::builder(
        &args.base,
        Sharding::Crc32 {
            shards: args.shards.unwrap_or(1),
        },
    )
    .build()?;
    let input = Input::open(&args.file)?;
    let mut con = args.url.connect()?;
    let hash = import_target(&args, &mut con, input.size)?;
    let bulk = Bulk::new(&args.bulk, input.size);
    let name = input.name.clone();
    let (lines, seen) = Lines::new(input.into_reader(), options, args.bulk.start);
    let mut run = ImportRun {
        args: &args,
        hash: &hash,
        topology: if con.is_cluster() {
            "cluster"
        } else {
            "standalone"
        },
        started: Instant::now(),
        bulk,
        name,
        seen,
        total: ImportReport::default(),
    };
    run.stream(&mut con, lines, options.import)?;
    run.bulk.finish();
    let s = run.summary(true);
    s.print();
    if s.rejected > 0 && !args.bulk.allow_rejects {
        return Err(Failure::new(format!(
            "{} of {} lines were rejected (listed above): fix them, or pass --allow-rejects",
            s.rejected, s.lines
        )));
    }
    Ok(())
}

/// How `hash import` reads its lines: line numbers or TSV, bounded, in batches.
fn line_options(args: &ImportArgs) -> LineOptions {
    LineOptions {
        format: if args.tsv {
            LineFormat::Tsv
        } else {
            LineFormat::LineNumber
        },
        max_line: args.bulk.max_line,
        import: ImportOptions {
            batch: args.bulk.batch_or(50_000),
            ..ImportOptions::default()
        },
    }
}

/// The hash an import writes, its layout claimed before anything is read
/// or written: another stored layout refuses the import with nothing written.
fn import_target(
    args: &ImportArgs,
    con: &mut Connection,
    size: Option<u64>,
) -> CliResult<ShardedHash> {
    let limits = ListpackLimits::from_server().run(con)?;
    let stored = ShardedHash::stored_sharding(&args.base).run(con)?;
    let sharding = match (args.shards, stored) {
        (Some(shards), _) => Sharding::Crc32 { shards },
        (None, Some(stored)) => stored,
        (None, None) => planned_sharding(args, limits, size)?,
    };
    let hash = ShardedHash::builder(&args.base, sharding)
        .limits(limits)
        .strict(!args.no_strict)
        .record_layout(true)
        .build()?;
    match hash.claim_layout().run(con) {
        Err(e) if matches!(e.kind(), ErrorKind::LayoutMismatch { .. }) => {
            return Err(mismatch(e.into()));
        }
        other => other?,
    }
    Ok(hash)
}

/// The planner's sharding for a new hash of `--expected` entries, else of
/// the file's line count (stdin has none: the user must say).
fn planned_sharding(
    args: &ImportArgs,
    limits: ListpackLimits,
    size: Option<u64>,
) -> CliResult<Sharding> {
    let expected = match args.expected {
        Some(n) => n,
        None if size.is_none() => {
            return Err(Failure::new(
                "a new hash read from stdin needs its size: pass --shards N or --expected N",
            ));
        }
        None => count_lines(&args.file)?,
    };
    let p = Plan::new(expected, limits, Plan::DEFAULT_OVERFLOW_TARGET)?;
    if !out::json() {
        eprintln!(
            "planned {} shards for {expected} entries ({:.1} per shard on average, limit {})",
            p.shards, p.mean_per_shard, p.limits.entries
        );
    }
    Ok(p.sharding())
}

/// A running `hash import`: what it writes to, where it stands, what it counted.
struct ImportRun<'a> {
    args: &'a ImportArgs,
    hash: &'a ShardedHash,
    topology: &'static str,
    started: Instant,
    bulk: Bulk,
    name: String,
    seen: Arc<Mutex<Seen>>,
    total: ImportReport,
}

impl ImportRun<'_> {
    /// Sends the lines chunk by chunk until they end; a failure prints the
    /// summary so far and names the position to resume from.
    fn stream(
        &mut self,
        con: &mut Connection,
        mut lines: impl Iterator<Item = NumberedLine>,
        import: ImportOptions,
    ) -> CliResult {
        loop {
            let chunk = next_chunk(&mut lines, import.batch, import.batch_bytes);
            let (position, read_bytes, error) = {
                let mut s = import_lines::seen(&self.seen);
                (s.lines, s.bytes, s.error.take())
            };
            if !chunk.is_empty() {
                let resent_before = self.bulk.resent;
                let hash = self.hash;
                let report = self
                    .bulk
                    .send(con, || hash.import_numbered(chunk.clone(), import))
                    .map_err(|f| self.stopped(f))?;
                self.add(report, self.bulk.resent > resent_before);
            }
            if let Some(e) = error {
                let f = Failure::new(format!(
                    "cannot read {}: {}",
                    self.name,
                    crate::fail::io_text(&e)
                ));
                self.summary(false).print();
                return Err(self.bulk.stopped(f));
            }
            let counts = format!(
                "{} inserted, {} present",
                self.total.inserted, self.total.present
            );
            self.bulk
                .advance(position, read_bytes, &counts)
                .map_err(|f| self.stopped(f))?;
            if chunk.is_empty() {
                return Ok(());
            }
        }
    }

    /// Counts a chunk's report. A batch sent again may have been written by
    /// its first attempt: what it found present is not known to have been
    /// there before.
    fn add(&mut self, report: ImportReport, resent: bool) {
        let total = &mut self.total;
        total.inserted += report.inserted;
        if resent {
            total.unknown += report.present;
        } else {
            total.present += report.present;
        }
        total.unknown += report.unknown;
        total.rejected += report.rejected;
        total.rejections.extend(report.rejections);
    }

    /// Prints the summary of an import that stopped, and hands `f` on.
    fn stopped(&self, f: Failure) -> Failure {
        self.summary(false).print();
        f
    }

    /// What the import did so far: the reader's rejections with the hash's.
    fn summary(&self, complete: bool) -> ImportSummary {
        let (args, bulk, total) = (self.args, &self.bulk, &self.total);
        let s = import_lines::seen(&self.seen);
        let mut rejections: Vec<RejectedLine> = s.rejections.clone();
        rejections.extend(total.rejections.iter().map(|r| RejectedLine {
            line: r.position,
            reason: LineRejection::Item(r.reason.clone()),
        }));
        rejections.sort_by_key(|r| r.line);
        rejections.truncate(100);
        ImportSummary {
            base: args.base.clone(),
            file: self.name.clone(),
            layout: self.hash.layout(),
            topology: self.topology,
            start: args.bulk.start,
            position: bulk.position,
            lines: bulk
                .position
                .saturating_sub(args.bulk.start.min(bulk.position)),
            inserted: total.inserted,
            already_present: total.present,
            unknown: total.unknown,
            rejected: s.rejected + total.rejected,
            rejections: rejections
                .iter()
                .map(|r| Rejected {
                    line: r.line,
                    reason: reason(&r.reason),
                })
                .collect(),
            resent_batches: bulk.resent,
            seconds: self.started.elapsed().as_secs_f64(),
            peak_rss_kib: peak_rss_kib(),
            complete,
        }
    }
}

/// A line as the import sends it: its number, its field, its value.
type NumberedLine = (u64, Vec<u8>, Vec<u8>);

/// The next lines, up to `batch` of them or `batch_bytes` of fields and values.
fn next_chunk(
    lines: &mut impl Iterator<Item = NumberedLine>,
    batch: usize,
    batch_bytes: usize,
) -> Vec<NumberedLine> {
    let mut chunk = Vec::with_capacity(batch.min(100_000));
    let mut bytes = 0usize;
    while chunk.len() < batch && bytes < batch_bytes {
        match lines.next() {
            Some(item) => {
                bytes += item.1.len() + item.2.len();
                chunk.push(item);
            }
            None => break,
        }
    }
    chunk
}
