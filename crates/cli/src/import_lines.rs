//! The lines of a file as the items of a sharded-hash import (what
//! `import sharded-hash` runs): one value per line, the field being the
//! 0-based line index as in the PHP bulk-load recipe (pipelined `hsetNx` of
//! `explode(PHP_EOL, ...)`), or `field<TAB>value` lines. Lines are read
//! with bounded memory; blank, over-long, non-UTF-8 and malformed lines are
//! counted as rejected, and the rest go to
//! [`ShardedHash::import_numbered`] numbered by line.

use std::io::BufRead;
use std::sync::{Arc, Mutex, PoisonError};

use redis_patterns::sharded_hash::{ImportOptions, ImportReport, RejectReason, ShardedHash};
use redis_patterns::{Error, Op};

use crate::lines::{BoundedLine, read_bounded_line};

/// The format of an imported file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineFormat {
    /// One value per line; the field is the 0-based line index (every line
    /// counts, rejected ones too, so field N is always line N + 1 of the
    /// file).
    #[default]
    LineNumber,
    /// `field<TAB>value` per line (the value may contain further tabs).
    Tsv,
}

/// How lines are read and imported.
#[derive(Debug, Clone, Copy)]
pub struct LineOptions {
    pub format: LineFormat,
    /// The longest accepted line in bytes (without its line ending); longer
    /// lines are skipped without buffering and counted as rejected.
    pub max_line: usize,
    /// How the import batches the lines' items.
    pub import: ImportOptions,
}

impl Default for LineOptions {
    fn default() -> Self {
        Self {
            format: LineFormat::LineNumber,
            max_line: 1 << 20,
            import: ImportOptions::default(),
        }
    }
}

impl LineOptions {
    /// Checks the options before anything is read or sent.
    pub fn validate(&self) -> redis_patterns::Result<()> {
        self.import.validate()?;
        if self.max_line == 0 {
            return Err(Error::invalid("max line", "must be at least 1"));
        }
        Ok(())
    }
}

/// Why a line was not imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineRejection {
    /// The line is empty (after removing the line ending).
    Blank,
    /// The line is longer than the maximum; it was skipped without being
    /// buffered. Holds its length in bytes.
    TooLong(u64),
    /// The line is not valid UTF-8.
    InvalidUtf8,
    /// In `field<TAB>value` format: no tab, or an empty field.
    NoField,
    /// The hash refused the line's item.
    Item(RejectReason),
}

/// One rejected line (1-based line number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedLine {
    pub line: u64,
    pub reason: LineRejection,
}

/// The counts of a line import.
#[allow(dead_code)] // the whole-file op, run by tests/import_lines.rs
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineReport {
    /// Lines read.
    pub lines: u64,
    /// Bytes read (lines and line endings).
    pub bytes: u64,
    /// Fields written because they were absent.
    pub inserted: u64,
    /// Fields left alone because they were already present.
    pub present: u64,
    /// Fields of writes sent again after a lost reply that found them
    /// present ([`ImportReport::unknown`]).
    pub unknown: u64,
    /// Lines not imported.
    pub rejected: u64,
    /// The first [`MAX_REJECTIONS`] rejections, by line (as an
    /// [`ImportReport`] lists them).
    pub rejections: Vec<RejectedLine>,
}

/// What the reader saw, shared with the operation that consumes it.
#[derive(Default)]
pub struct Seen {
    /// Lines read (skipped ones included).
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Lines rejected by the reader.
    pub rejected: u64,
    /// The first rejections.
    pub rejections: Vec<RejectedLine>,
    /// The read error that ended the input.
    pub error: Option<std::io::Error>,
}

impl Seen {
    fn reject(&mut self, line: u64, reason: LineRejection) {
        self.rejected += 1;
        if self.rejections.len() < ImportReport::MAX_REJECTIONS {
            self.rejections.push(RejectedLine { line, reason });
        }
    }

    /// The line counts with the import's own.
    #[allow(dead_code)] // the whole-file op, run by tests/import_lines.rs
    pub fn report(self, import: ImportReport) -> LineReport {
        let mut rejections = self.rejections;
        rejections.extend(import.rejections.into_iter().map(|r| RejectedLine {
            line: r.position,
            reason: LineRejection::Item(r.reason),
        }));
        rejections.sort_by_key(|r| r.line);
        rejections.truncate(ImportReport::MAX_REJECTIONS);
        LineReport {
            lines: self.lines,
            bytes: self.bytes,
            inserted: import.inserted,
            present: import.present,
            unknown: import.unknown,
            rejected: self.rejected + import.rejected,
            rejections,
        }
    }
}

/// The lines of `reader` as `(line number, field, value)` items; what it
/// rejects (and a read error, which ends it) goes to `seen`. The first
/// `skip` lines are read and counted, nothing else (a resumed import).
pub struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    options: LineOptions,
    skip: u64,
    seen: Arc<Mutex<Seen>>,
}

impl<R: BufRead> Lines<R> {
    /// The lines of `reader` after the first `skip`, and what it saw.
    pub fn new(reader: R, options: LineOptions, skip: u64) -> (Self, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let lines = Lines {
            reader,
            buf: Vec::new(),
            options,
            skip,
            seen: Arc::clone(&seen),
        };
        (lines, seen)
    }
}

/// What the reader saw so far.
pub fn seen(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = (u64, Vec<u8>, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let outcome = read_bounded_line(
                &mut self.reader,
                self.options.max_line,
                &mut self.buf,
                &mut seen.bytes,
            );
            let outcome = match outcome {
                Ok(BoundedLine::Eof) => return None,
                Ok(o) => o,
                Err(e) => {
                    seen.error = Some(e);
                    return None;
                }
            };
            seen.lines += 1;
            let line = seen.lines;
            if line <= self.skip {
                continue;
            }
            if let BoundedLine::TooLong(len) = outcome {
                seen.reject(line, LineRejection::TooLong(len));
                continue;
            }
            if self.buf.is_empty() {
                seen.reject(line, LineRejection::Blank);
                continue;
            }
            let Ok(text) = std::str::from_utf8(&self.buf) else {
                seen.reject(line, LineRejection::InvalidUtf8);
                continue;
            };
            match self.options.format {
                LineFormat::LineNumber => {
                    let field = (line - 1).to_string().into_bytes();
                    return Some((line, field, std::mem::take(&mut self.buf)));
                }
                LineFormat::Tsv => match text.split_once('\t') {
                    Some((f, v)) if !f.is_empty() => {
                        return Some((line, f.as_bytes().to_vec(), v.as_bytes().to_vec()));
                    }
                    _ => seen.reject(line, LineRejection::NoField),
                },
            }
        }
    }
}

/// Streams the lines of `reader` into `hash` with set-if-absent, never
/// holding more than one batch and one bounded line in memory. A read error
/// ends the import with that error; the lines before it stay written.
#[allow(dead_code)] // the whole-file op, run by tests/import_lines.rs
pub fn import_lines<R: BufRead + Send + 'static>(
    hash: &ShardedHash,
    reader: R,
    options: LineOptions,
) -> Op<LineReport> {
    if let Err(e) = options.validate() {
        return Op::fail(e);
    }
    let (lines, seen) = Lines::new(reader, options, 0);
    hash.import_numbered(lines, options.import)
        .try_map(move |report| {
            let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner));
            if let Some(e) = &seen.error {
                return Err(Error::invalid("input", format!("read failed: {e}")));
            }
            Ok(seen.report(report))
        })
}
