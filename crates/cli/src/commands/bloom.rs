//! `redis-patterns bloom create|add|exists|info|clear|load`: Bloom filters
//! on plain bitmaps, sized ones and the PHP `BloomFilter::JSHash` bitmaps.

use std::path::PathBuf;

use redis_patterns::bloom::{Bloom, JsHashBloom};
use redis_patterns::{Connection, Op, Request};
use serde::Serialize;

use crate::bulk::{Bulk, BulkArgs, Input};
use crate::conn::UrlArg;
use crate::fail::{self, CliResult, Failure};
use crate::lines::{BoundedLine, read_bounded_line};
use crate::out;

/// Which kind of filter NAME is.
#[derive(clap::Args, Debug, Clone)]
pub struct KindArg {
    /// PHP-compatible mode: NAME is a bitmap of the PHP BloomFilter::JSHash
    /// recipe (one JSHash bit per item), not a sized filter.
    #[arg(long)]
    pub jshash: bool,
    /// JSHash mode without PHP's limitMemory folding.
    #[arg(long, requires = "jshash")]
    pub no_limit_memory: bool,
}

#[derive(clap::Subcommand)]
pub enum BloomCommand {
    /// Create the sized filter NAME for N items at false-positive rate P.
    Create {
        name: String,
        #[arg(long)]
        expected: u64,
        #[arg(long)]
        fp_rate: f64,
        /// Give each block its own hash tag, so blocks spread over a cluster's nodes.
        #[arg(long)]
        spread_blocks: bool,
        /// The largest block in bytes (default: 512 MiB, or the server's
        /// lower proto-max-bulk-len).
        #[arg(long)]
        max_block_bytes: Option<u64>,
        /// The most memory the filter may take (default 4 GiB); a bigger one
        /// is refused before anything is written.
        #[arg(long)]
        max_memory: Option<u64>,
        #[command(flatten)]
        url: UrlArg,
    },
    /// Add items; prints per item whether it was new.
    Add(ItemsArgs),
    /// Check items; prints per item whether it may be present.
    Exists(ItemsArgs),
    /// Parameters, keys, bits set, the estimated count and the current false-positive rate.
    Info {
        name: String,
        #[command(flatten)]
        url: UrlArg,
    },
    /// Reset every bit of the sized filter NAME (keeps its parameters).
    Clear {
        name: String,
        #[command(flatten)]
        url: UrlArg,
    },
    /// Add every line of FILE (or - for stdin) in pipelined batches; prints
    /// the last position done (pass it to --start to resume).
    Load(LoadArgs),
}

// Items of the filter NAME (add, exists).
#[derive(clap::Args)]
pub struct ItemsArgs {
    name: String,
    #[arg(required = true)]
    items: Vec<String>,
    #[command(flatten)]
    kind: KindArg,
    #[command(flatten)]
    url: UrlArg,
}

#[derive(clap::Args)]
pub struct LoadArgs {
    /// Sized filter name (key `bloom:{NAME}`), or with --jshash the bitmap key itself.
    name: String,
    /// Input file, one item per line (`\n` or `\r\n`; bytes, not necessarily UTF-8); - reads stdin.
    file: PathBuf,
    #[command(flatten)]
    url: UrlArg,
    /// Create the sized filter for this many items (with --fp-rate) if it does not exist.
    #[arg(long, requires = "fp_rate")]
    expected: Option<u64>,
    /// Target false-positive rate of a filter created with --expected.
    #[arg(long, requires = "expected")]
    fp_rate: Option<f64>,
    /// Blocks of a filter created with --expected spread over a cluster's nodes.
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
    #[command(flatten)]
    kind: KindArg,
    #[command(flatten)]
    bulk: BulkArgs,
}

/// A filter of either kind.
impl ItemsArgs {
    /// Adds the items (`add`) or checks them, and prints the answers.
    fn answer(&self, add: bool) -> CliResult {
        let mut con = self.url.connect()?;
        let f = Filter::open(&mut con, &self.name, &self.kind)?;
        let flags = if add {
            f.multi_add(&self.items).run(&mut con)?
        } else {
            let flags = f.multi_exists(&self.items).run(&mut con)?;
            flags.into_iter().map(Some).collect()
        };
        answers(&self.items, &flags, add);
        Ok(())
    }
}

enum Filter {
    Sized(Bloom),
    JsHash(JsHashBloom),
}

impl Filter {
    fn open(con: &mut Connection, name: &str, kind: &KindArg) -> CliResult<Self> {
        if kind.jshash {
            return Ok(Filter::JsHash(
                JsHashBloom::builder(name)
                    .limit_memory(!kind.no_limit_memory)
                    .build()?,
            ));
        }
        Ok(Filter::Sized(Bloom::open(name).run(con)?))
    }

    fn multi_add<T: AsRef<[u8]>>(&self, items: &[T]) -> Op<Vec<Option<bool>>> {
        match self {
            Filter::Sized(f) => f.multi_add(items),
            Filter::JsHash(f) => f.multi_add(items),
        }
    }

    fn multi_exists<T: AsRef<[u8]>>(&self, items: &[T]) -> Op<Vec<bool>> {
        match self {
            Filter::Sized(f) => f.multi_exists(items),
            Filter::JsHash(f) => f.multi_exists(items),
        }
    }
}

/// One item and its answer.
#[derive(Serialize)]
struct Answer<'a> {
    item: &'a str,
    /// `null` when not known (the add was sent again after its reply was
    /// lost and found the item's bits set).
    #[serde(skip_serializing_if = "Option::is_none")]
    new: Option<Option<bool>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    maybe_present: Option<bool>,
}

pub fn run(command: BloomCommand) -> CliResult {
    match command {
        BloomCommand::Create {
            name,
            expected,
            fp_rate,
            spread_blocks,
            max_block_bytes,
            max_memory,
            url,
        } => {
            let mut con = url.connect()?;
            let bf = sized(
                &name,
                expected,
                fp_rate,
                spread_blocks,
                max_block_bytes,
                max_memory,
            )
            .create()
            .run(&mut con)?;
            let p = bf.params();
            out::emit(p, || {
                vec![format!(
                    "created {} ({} bits, k {}, {} blocks) for {} items at p {}",
                    bf.config_key(),
                    p.m,
                    p.k,
                    p.block_bits.len(),
                    p.n,
                    p.p
                )]
            });
            Ok(())
        }
        BloomCommand::Add(args) => args.answer(true),
        BloomCommand::Exists(args) => args.answer(false),
        BloomCommand::Info { name, url } => {
            let mut con = url.connect()?;
            let info = Bloom::open(&name).run(&mut con)?.info().run(&mut con)?;
            out::emit(&info, || {
                vec![
                    format!("name {}", info.name),
                    format!("config_key {}", info.config_key),
                    format!("blocks {}", info.block_keys.len()),
                    format!("expected {}", info.params.n),
                    format!("fp_rate {}", info.params.p),
                    format!("bits {}", info.params.m),
                    format!("k {}", info.params.k),
                    format!("bits_set {}", info.bits_set.iter().sum::<u64>()),
                    format!("approx_count {}", info.approx_count),
                    format!("current_fp_rate {:.3e}", info.current_fp_rate),
                ]
            });
            Ok(())
        }
        BloomCommand::Clear { name, url } => {
            let mut con = url.connect()?;
            let bf = Bloom::open(&name).run(&mut con)?;
            bf.clear().run(&mut con)?;
            out::emit(&serde_json::json!({"cleared": name}), || {
                vec![format!("cleared {}", bf.config_key())]
            });
            Ok(())
        }
        BloomCommand::Load(args) => load(args),
    }
}

fn answers(items: &[String], flags: &[Option<bool>], add: bool) {
    for (item, &known) in items.iter().zip(flags) {
        let flag = known.unwrap_or(false);
        let a = Answer {
            item,
            new: add.then_some(known),
            maybe_present: (!add).then_some(flag),
        };
        if out::json() {
            out::json_line(&a);
        } else if add {
            out::line(&format!(
                "{item}\t{}",
                match known {
                    Some(true) => "new",
                    Some(false) => "maybe present already",
                    None =>
                        "added (new or present already is not known: sent again after its reply was lost)",
                }
            ));
        } else {
            out::line(&format!(
                "{item}\t{}",
                if flag { "maybe present" } else { "absent" }
            ));
        }
    }
}

/// What a load did.
#[derive(Serialize)]
struct LoadSummary {
    name: String,
    file: String,
    start: u64,
    position: u64,
    added: u64,
    /// Items whose add was sent again after a lost reply (by the crate, or
    /// a batch this command sent again) and found them present.
    unknown: u64,
    empty_skipped: u64,
    too_long: u64,
    first_too_long: Option<u64>,
    resent_batches: u64,
    complete: bool,
}

impl LoadSummary {
    fn print(&self, max_line: usize) {
        out::emit(self, || {
            let mut lines = vec![format!(
                "loaded {} into {}: {} new",
                self.file, self.name, self.added
            )];
            if self.unknown > 0 {
                lines.push(format!(
                    "{} more added, new or present already not known (sent again after a lost reply)",
                    self.unknown
                ));
            }
            if self.empty_skipped > 0 {
                lines.push(format!(
                    "skipped {} empty lines (JSHash filters refuse empty items)",
                    self.empty_skipped
                ));
            }
            if let Some(first) = self.first_too_long {
                lines.push(format!(
                    "skipped {} lines longer than --max-line {max_line} bytes (first: line {first})",
                    self.too_long
                ));
            }
            lines.push(format!("last position done: {}", self.position));
            lines
        });
    }
}

/// The builder of a sized filter from the command's settings.
fn sized(
    name: &str,
    expected: u64,
    fp_rate: f64,
    spread_blocks: bool,
    max_block_bytes: Option<u64>,
    max_memory: Option<u64>,
) -> redis_patterns::bloom::BloomBuilder {
    let mut builder = Bloom::builder(name)
        .expected(expected)
        .fp_rate(fp_rate)
        .spread_blocks(spread_blocks);
    if let Some(bytes) = max_block_bytes {
        builder = builder.max_block_bytes(bytes);
    }
    if let Some(bytes) = max_memory {
        builder = builder.max_memory(bytes);
    }
    builder
}

pub fn load(args: LoadArgs) -> CliResult {
    args.bulk.check()?;
    let batch = args.bulk.batch_or(5000);
    let input = Input::open(&args.file)?;
    let mut con = args.url.connect()?;
    let filter = load_target(&args, &mut con)?;
    let mut run = LoadRun {
        args: &args,
        bulk: Bulk::new(&args.bulk, input.size),
        summary: LoadSummary {
            name: args.name.clone(),
            file: input.name.clone(),
            start: args.bulk.start,
            position: args.bulk.start,
            added: 0,
            unknown: 0,
            empty_skipped: 0,
            too_long: 0,
            first_too_long: None,
            resent_batches: 0,
            complete: false,
        },
        read: 0,
        consumed: 0,
        buf: Vec::new(),
    };
    run.stream(&mut con, &filter, &mut input.into_reader(), batch)?;
    run.bulk.finish();
    let s = &mut run.summary;
    s.resent_batches = run.bulk.resent;
    s.complete = true;
    s.print(args.bulk.max_line);
    let rejected = s.too_long + s.empty_skipped;
    if rejected > 0 && !args.bulk.allow_rejects {
        return Err(Failure::new(format!(
            "{rejected} lines were skipped (see above): fix them, or pass --allow-rejects"
        )));
    }
    Ok(())
}

/// The filter `bloom load` adds to: created with `--expected` and
/// `--fp-rate`, else the one that stands.
fn load_target(args: &LoadArgs, con: &mut Connection) -> CliResult<Filter> {
    Ok(match (args.expected, args.fp_rate, args.kind.jshash) {
        (Some(n), Some(p), false) => Filter::Sized(
            sized(
                &args.name,
                n,
                p,
                args.spread_blocks,
                args.max_block_bytes,
                args.max_memory,
            )
            .create()
            .run(con)?,
        ),
        (Some(_), _, true) => {
            return Err(Failure::new(
                "--expected creates a sized filter: drop it with --jshash",
            ));
        }
        _ => Filter::open(con, &args.name, &args.kind)?,
    })
}

/// A running `bloom load`: where it stands in the input, what it counted.
struct LoadRun<'a> {
    args: &'a LoadArgs,
    bulk: Bulk,
    summary: LoadSummary,
    /// Lines read, skipped `--start` lines included.
    read: u64,
    /// Bytes read.
    consumed: u64,
    buf: Vec<u8>,
}

impl LoadRun<'_> {
    /// Adds the items of `reader` batch by batch until it ends; a failure
    /// prints the summary so far and names the position to resume from.
    fn stream(
        &mut self,
        con: &mut Connection,
        filter: &Filter,
        reader: &mut impl std::io::BufRead,
        batch: usize,
    ) -> CliResult {
        let mut ended = false;
        while !ended {
            let mut items: Vec<Vec<u8>> = Vec::with_capacity(batch);
            ended = self.read_items(reader, &mut items, batch)?;
            if !items.is_empty() {
                self.add(con, filter, &items)?;
            }
            // Positions count the lines there are (a start beyond the end
            // settles only those).
            self.summary.position = self.read;
            let counts = format!("{} new", self.summary.added);
            if let Err(f) = self.bulk.advance(self.read, self.consumed, &counts) {
                return Err(self.stopped(f));
            }
        }
        Ok(())
    }

    /// Reads up to `batch` items into `items`: true when the input ended.
    /// Too long lines and, for JSHash filters, empty ones are skipped and
    /// counted (JSHash("") is one constant offset).
    fn read_items(
        &mut self,
        reader: &mut impl std::io::BufRead,
        items: &mut Vec<Vec<u8>>,
        batch: usize,
    ) -> CliResult<bool> {
        let max_line = self.args.bulk.max_line;
        while items.len() < batch {
            let line = match read_bounded_line(reader, max_line, &mut self.buf, &mut self.consumed)
            {
                Ok(BoundedLine::Eof) => return Ok(true),
                Ok(line) => line,
                Err(e) => {
                    let f = Failure::new(format!(
                        "cannot read {}: {}",
                        self.summary.file,
                        fail::io_text(&e)
                    ));
                    return Err(self.stopped_reading(f));
                }
            };
            self.read += 1;
            if self.read <= self.args.bulk.start {
                continue;
            }
            let s = &mut self.summary;
            match line {
                BoundedLine::TooLong(_) => {
                    s.too_long += 1;
                    s.first_too_long.get_or_insert(self.read);
                }
                BoundedLine::Line if self.args.kind.jshash && self.buf.is_empty() => {
                    s.empty_skipped += 1
                }
                _ => items.push(std::mem::take(&mut self.buf)),
            }
        }
        Ok(false)
    }

    /// Adds one batch and counts it. A batch sent again may have been added
    /// by its first attempt: what it found present is not known to be old.
    fn add(&mut self, con: &mut Connection, filter: &Filter, items: &[Vec<u8>]) -> CliResult {
        let resent_before = self.bulk.resent;
        let flags = match self.bulk.send(con, || filter.multi_add(items)) {
            Ok(f) => f,
            Err(f) => return Err(self.stopped(f)),
        };
        let resent = self.bulk.resent > resent_before;
        let s = &mut self.summary;
        s.added += flags.iter().filter(|&&b| b == Some(true)).count() as u64;
        s.unknown += flags
            .iter()
            .filter(|&&b| b.is_none() || (resent && b == Some(false)))
            .count() as u64;
        Ok(())
    }

    /// Prints the summary of a load that stopped, and hands `f` on.
    fn stopped(&mut self, f: Failure) -> Failure {
        self.summary.resent_batches = self.bulk.resent;
        self.summary.print(self.args.bulk.max_line);
        f
    }

    /// A read error: the summary, then the failure with where to resume.
    fn stopped_reading(&mut self, f: Failure) -> Failure {
        let f = self.stopped(f);
        self.bulk.stopped(f)
    }
}
