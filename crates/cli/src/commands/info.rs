//! `redis-patterns info`: what the server at `--url` is and can do, as the
//! library detects it once per connection (`INFO server`, `COMMAND INFO` of
//! the commands the patterns may use, `COMMAND DOCS BITOP`), with the
//! allocator (`INFO memory`) and whether it is a cluster. `--json` gives
//! the same as one document, for other languages and operators.

use redis_patterns::core::{Capability, Caps, ServerMemory};
use redis_patterns::prelude::*;
use serde::Serialize;

use crate::conn::UrlArg;
use crate::fail::{CliResult, Failure};
use crate::out;

/// What `info` reports.
#[derive(Debug, Serialize)]
pub struct Report {
    /// `redis`, `valkey`, `other` or `unknown` (`INFO` refused).
    pub server: &'static str,
    /// `valkey_version` on Valkey, `redis_version` on Redis; `null` when
    /// not reported.
    pub version: Option<String>,
    /// `mem_allocator` (`jemalloc`, `libc`, ...).
    pub allocator: String,
    pub cluster: bool,
    /// Every capability of the manifest's `capabilities`, by name.
    pub capabilities: serde_json::Map<String, serde_json::Value>,
    /// Whether `INFO server` and `COMMAND INFO` answered (a refused one
    /// leaves every capability off).
    pub info_reported: bool,
    pub commands_reported: bool,
}

impl Report {
    fn new(caps: Caps, allocator: String, cluster: bool) -> Self {
        let capabilities = Capability::ALL
            .iter()
            .map(|c| (c.name.to_string(), caps.has(c.name).unwrap_or(false).into()))
            .collect();
        Self {
            server: caps.server.name(),
            version: caps.version.map(|v| v.to_string()),
            allocator,
            cluster,
            capabilities,
            info_reported: caps.info_reported,
            commands_reported: caps.commands_reported,
        }
    }

    /// The text form: `name value` lines, then one line per capability.
    fn lines(&self) -> Vec<String> {
        let mut lines = out::field_lines(
            self,
            &[
                "server",
                "version",
                "allocator",
                "cluster",
                "info_reported",
                "commands_reported",
            ],
        );
        for (name, on) in &self.capabilities {
            lines.push(format!("{name} {}", if on == true { "yes" } else { "no" }));
        }
        lines
    }
}

/// Runs `info`.
pub fn run(url: &UrlArg) -> CliResult {
    let mut con = url.connect()?;
    let caps = Caps::read().run(&mut con).map_err(Failure::from)?;
    let memory = ServerMemory::read("info")
        .run(&mut con)
        .map_err(Failure::from)?;
    let report = Report::new(caps, memory.allocator.name().to_string(), con.is_cluster());
    out::emit(&report, || report.lines());
    Ok(())
}
