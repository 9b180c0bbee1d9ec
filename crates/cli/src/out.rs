//! Output: human-readable lines by default, JSON with `--json` (one
//! document, or one JSON line per record for streams), and a closed pipe
//! (`redis-patterns list | head -1`) ends the program quietly with status 0.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

static JSON: AtomicBool = AtomicBool::new(false);

/// Turns `--json` output on.
/// An answer that may not be known (a call sent again after its reply was
/// lost, whose resend found the change made): the value, or says so.
pub fn known<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(
        || "not known (sent again after its reply was lost)".to_string(),
        |v| v.to_string(),
    )
}

pub fn set_json(on: bool) {
    JSON.store(on, Ordering::Relaxed);
}

/// Whether `--json` was given.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// Writes one line to stdout; a reader that went away (closed pipe) ends
/// the program with status 0, as `cat` and `ls` do.
pub fn line(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!(
            "redis-patterns: cannot write to stdout: {}",
            crate::fail::io_text(&e)
        );
        std::process::exit(1);
    }
}

/// `println!` through [`line`].
macro_rules! outln {
    ($($arg:tt)*) => { $crate::out::line(&format!($($arg)*)) };
}
pub(crate) use outln;

/// One JSON document (or one line of a JSON-lines stream).
pub fn json_line<T: Serialize + ?Sized>(value: &T) {
    match serde_json::to_string(value) {
        Ok(text) => line(&text),
        Err(e) => {
            eprintln!("redis-patterns: cannot write json: {e}");
            std::process::exit(1);
        }
    }
}

/// `value` as JSON with `--json`, else the lines `human` gives.
pub fn emit<T: Serialize + ?Sized>(value: &T, human: impl FnOnce() -> Vec<String>) {
    if json() {
        json_line(value);
    } else {
        for l in human() {
            line(&l);
        }
    }
}

/// Text lines `name value` for the named top-level fields of `value`'s
/// JSON form (strings without quotes, numbers and booleans as JSON writes
/// them), so that a report's text and its `--json` form say the same values
/// under the same names.
pub fn field_lines<T: Serialize + ?Sized>(value: &T, names: &[&str]) -> Vec<String> {
    let json = serde_json::to_value(value).expect("a report serializes");
    names
        .iter()
        .map(|name| {
            let field = json
                .get(name)
                .unwrap_or_else(|| panic!("the report has no field {name}"));
            match field {
                serde_json::Value::String(s) => format!("{name} {s}"),
                other => format!("{name} {other}"),
            }
        })
        .collect()
}

/// Fields and their values: one JSON object with `--json` (absent ones
/// null), else a `field<TAB>value` line each (absent ones "(absent)").
pub fn field_values(fields: &[String], values: &[Option<String>]) {
    if json() {
        let map: serde_json::Map<String, serde_json::Value> = fields
            .iter()
            .zip(values)
            .map(|(f, v)| (f.clone(), serde_json::json!(v)))
            .collect();
        json_line(&map);
    } else {
        for (f, v) in fields.iter().zip(values) {
            line(&format!("{f}\t{}", v.as_deref().unwrap_or("(absent)")));
        }
    }
}
