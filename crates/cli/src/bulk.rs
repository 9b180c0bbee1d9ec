//! Bulk commands (imports and loads): the input read in chunks of lines,
//! one op per chunk, each sent again with backoff a bounded number of times
//! after a transient failure, a progress bar (or a spinner when the input
//! size is unknown) on a terminal, Ctrl-C stopping between chunks, and the
//! last completed position on any failure, for `--start`.
//!
//! Sending a chunk again is safe because every bulk write is idempotent:
//! imports set fields only if absent (a field that the lost attempt wrote
//! is found present) and loads set bits; a chunk is never half counted as
//! done, since the position moves only after its replies arrived.

use std::io::{BufRead, BufReader, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use redis_patterns::{Connection, Op, Request};

use crate::fail::{self, CliResult, Failure};

/// The options every bulk command takes.
#[derive(clap::Args, Debug, Clone)]
pub struct BulkArgs {
    /// Skip the first START lines: resume an interrupted run at the position it printed.
    #[arg(long, default_value_t = 0)]
    pub start: u64,
    /// Lines per pipelined batch (default: 50000 for imports, 5000 for loads).
    #[arg(long)]
    pub batch: Option<usize>,
    /// The longest line in bytes; longer lines are skipped and counted as rejected.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_line: usize,
    /// How many times a batch that failed on a transient error (connection
    /// reset, server loading, scripts flushed) is sent again, with backoff,
    /// before giving up.
    #[arg(long, default_value_t = 5)]
    pub retries: u32,
    /// Exit 0 even when lines were rejected (they are still counted).
    #[arg(long)]
    pub allow_rejects: bool,
}

impl BulkArgs {
    /// Checks the options before anything is read or sent.
    pub fn check(&self) -> CliResult<()> {
        if self.max_line == 0 {
            return Err(Failure::new(
                "--max-line must be at least 1 byte (0 would skip every line)",
            ));
        }
        if self.batch == Some(0) {
            return Err(Failure::new("--batch must be at least 1"));
        }
        Ok(())
    }

    pub fn batch_or(&self, default: usize) -> usize {
        self.batch.unwrap_or(default)
    }
}

/// Set by Ctrl-C: stop after the chunk in flight.
static STOP: AtomicBool = AtomicBool::new(false);

/// Installs the Ctrl-C handler (once): the first Ctrl-C stops the bulk
/// command after the chunk in flight, so it can print where to resume; a
/// second one exits at once.
fn on_ctrl_c() {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if STOP.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        });
    });
}

/// An input file, or stdin for `-`.
pub struct Input {
    pub name: String,
    pub reader: BufReader<Box<dyn Read + Send>>,
    /// The size in bytes, when known (a regular file).
    pub size: Option<u64>,
}

impl Input {
    /// Opens `path` (`-`: stdin).
    pub fn open(path: &Path) -> CliResult<Self> {
        if path == Path::new("-") {
            return Ok(Self {
                name: "stdin".into(),
                reader: BufReader::with_capacity(1 << 16, Box::new(std::io::stdin())),
                size: None,
            });
        }
        let file = std::fs::File::open(path).map_err(|e| fail::file("open", path, &e))?;
        let size = file
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        let mut reader: BufReader<Box<dyn Read + Send>> =
            BufReader::with_capacity(1 << 16, Box::new(file));
        // Read the first chunk now: an input that cannot be read (a
        // directory opens, then fails to read) is refused before the
        // command writes anything, its layout key included.
        reader
            .fill_buf()
            .map_err(|e| fail::file("read", path, &e))?;
        Ok(Self {
            name: path.display().to_string(),
            reader,
            size,
        })
    }

    /// The reader, for line reading.
    pub fn into_reader(self) -> impl BufRead + Send + 'static {
        self.reader
    }
}

/// Lines in `path`, streamed (a final line without a newline counts).
pub fn count_lines(path: &PathBuf) -> CliResult<u64> {
    let mut file = std::fs::File::open(path).map_err(|e| fail::file("open", path, &e))?;
    let mut buf = vec![0u8; 1 << 16];
    let (mut lines, mut last) = (0u64, b'\n');
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| fail::file("read", path, &e))?;
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        last = buf[n - 1];
    }
    Ok(lines + u64::from(last != b'\n'))
}

/// A bulk run: where it stands, its progress display, its retry budget.
pub struct Bulk {
    bar: ProgressBar,
    retries: u32,
    /// Lines completed (skipped `--start` lines included).
    pub position: u64,
    /// Batches sent again after a transient failure.
    pub resent: u64,
}

impl Bulk {
    /// Starts a run at `start`, for an input of `size` bytes when known.
    pub fn new(args: &BulkArgs, size: Option<u64>) -> Self {
        on_ctrl_c();
        let bar = if !std::io::stderr().is_terminal() {
            ProgressBar::hidden()
        } else if let Some(size) = size {
            let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        } else {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {bytes} read {binary_bytes_per_sec} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        };
        bar.enable_steady_tick(Duration::from_millis(200));
        Self {
            bar,
            retries: args.retries,
            position: args.start,
            resent: 0,
        }
    }

    /// Runs the op `make` builds, building and sending it again after a
    /// transient failure (at most `--retries` times, backing off from 100 ms
    /// to 2 s); any other failure, or the last one, names the position to
    /// resume from.
    pub fn send<T: Send + 'static>(
        &mut self,
        con: &mut Connection,
        make: impl Fn() -> Op<T>,
    ) -> CliResult<T> {
        let mut attempt = 0u32;
        loop {
            match make().run(con) {
                Ok(v) => return Ok(v),
                Err(e) if fail::transient(&e) && attempt < self.retries => {
                    let wait =
                        Duration::from_millis(100u64 << attempt.min(4)).min(Duration::from_secs(2));
                    std::thread::sleep(wait);
                    attempt += 1;
                    self.resent += 1;
                }
                Err(e) => return Err(self.stopped(Failure::from(e))),
            }
        }
    }

    /// A failure with the position to resume from.
    pub fn stopped(&self, f: Failure) -> Failure {
        self.bar.abandon();
        let p = self.position;
        Failure::new(format!(
            "{}; the first {p} lines are done: resume with --start {p}",
            f.message
        ))
        .status(f.status)
    }

    /// After a chunk: the new position, the bytes read so far, the counts.
    pub fn advance(&mut self, position: u64, bytes: u64, counts: &str) -> CliResult<()> {
        self.position = position;
        self.bar.set_position(bytes);
        self.bar.set_message(counts.to_string());
        if STOP.load(Ordering::SeqCst) {
            return Err(self
                .stopped(Failure::new("interrupted (Ctrl-C)"))
                .status(130));
        }
        Ok(())
    }

    /// Ends the progress display.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
