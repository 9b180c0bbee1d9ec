//! Building a month's day indexes from the log keys already there (written
//! by the PHP recipe, or by this crate before it kept indexes), so that
//! queries (6) and (7) see those logins too.
//!
//! A reindex `SCAN`s the month's log keys (`<prefix><YYYY-MM>_*`, strings
//! only) — on a cluster every primary, each with its own cursor — a page at
//! a time: each page reads its logs (`GETRANGE` of the 4 bytes days 1 to 31
//! live in) and sets every logged day's bit with `login_log.index`, the
//! script a login runs, so the indexes, the types set and their expiry are
//! exactly what recording those logins would have written. Memory is
//! bounded by one page (`count` keys per node), the [`ReindexCursor`] after
//! each page resumes it, and running it again changes nothing (the bits are
//! set already: [`ReindexReport::new`] is then 0).

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use chrono::{Datelike, NaiveDate};
use serde::Serialize;

use super::{LoginLog, check_type};
use crate::bitmap::{checked, days};
use crate::core::resend::changed;
use crate::core::slots::SlotMap;
use crate::core::{Batch, Op};
use crate::error::{Error, Result};
use crate::scripts;

/// Keys `SCAN` looks at per node and page unless told otherwise.
pub(crate) const DEFAULT_REINDEX_COUNT: u32 = 1000;

/// Where a reindex stands: for each node scanned (`server` on one server,
/// `host:port` of each primary on a cluster) its `SCAN` cursor, or that it
/// is done. Its text form ([`Display`](std::fmt::Display) /
/// [`FromStr`](std::str::FromStr)) is `0` at the start, else
/// `<node>@<cursor>` or `<node>@done` joined by `,`.
///
/// On a cluster the nodes are matched by address when a reindex resumes: a
/// primary the cursor does not name (a replica promoted meanwhile, a node
/// added) is scanned from the start and a name that is no primary any more
/// is dropped — safe, since a reindex may run any number of times.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ReindexCursor {
    nodes: Vec<(String, Option<u64>)>,
}

/// The node name of a single server in a [`ReindexCursor`].
const SERVER: &str = "server";

impl ReindexCursor {
    /// The start of a reindex.
    pub fn start() -> Self {
        Self::default()
    }

    /// Whether every node has been scanned to the end.
    pub fn is_done(&self) -> bool {
        !self.nodes.is_empty() && self.nodes.iter().all(|(_, at)| at.is_none())
    }

    /// Where `node` stands: `Some(cursor)` to scan from, `None` when done.
    fn position(&self, node: &str) -> Option<u64> {
        self.nodes
            .iter()
            .find(|(n, _)| n == node)
            .map_or(Some(0), |(_, at)| *at)
    }
}

impl std::fmt::Display for ReindexCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.nodes.is_empty() {
            return f.write_str("0");
        }
        for (i, (node, at)) in self.nodes.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match at {
                Some(c) => write!(f, "{node}@{c}")?,
                None => write!(f, "{node}@done")?,
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for ReindexCursor {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        if s == "0" {
            return Ok(Self::start());
        }
        let bad = || {
            Error::invalid(
                "reindex cursor",
                format!("{s:?} is not 0 or <node>@<cursor>|done,..."),
            )
        };
        let mut nodes = Vec::new();
        for part in s.split(',') {
            let (node, at) = part.rsplit_once('@').ok_or_else(bad)?;
            if node.is_empty() || node.contains('@') {
                return Err(bad());
            }
            let at = match at {
                "done" => None,
                n => Some(n.parse::<u64>().map_err(|_| bad())?),
            };
            nodes.push((node.to_string(), at));
        }
        Ok(Self { nodes })
    }
}

/// What a reindex did (one page, or the whole run).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ReindexReport {
    /// Log keys of the month read (`<prefix><YYYY-MM>_<type>_<uid>`).
    pub logs: u64,
    /// (user, day) logins set in the day indexes.
    pub days: u64,
    /// Of those, bits that were not set yet (0 when the indexes were
    /// complete: a second run).
    pub new: u64,
    /// Of those, bits whose call was sent again after its reply was lost (a
    /// broken connection, a failover) and found them set: by the first
    /// attempt or before, it is not known which (not counted in `new`).
    pub unknown: u64,
    /// Keys the `SCAN` pattern matched that are no log of this layout (a
    /// type that is not letters, digits or `-`, a uid that is not a
    /// canonical decimal) or whose uid is above the configured maximum.
    pub skipped: u64,
    /// Where to resume; [`ReindexCursor::is_done`] after the last page.
    pub cursor: ReindexCursor,
}

impl ReindexReport {
    fn add(&mut self, page: ReindexReport) {
        self.logs += page.logs;
        self.days += page.days;
        self.new += page.new;
        self.unknown += page.unknown;
        self.skipped += page.skipped;
        self.cursor = page.cursor;
    }
}

/// How a reindex runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReindexOptions {
    /// The `COUNT` of each `SCAN` (keys looked at per node and page;
    /// default 1000, at least 1).
    pub count: u32,
    /// Where to start: [`ReindexCursor::start`] (the default) or the cursor
    /// of an interrupted reindex.
    pub start: ReindexCursor,
}

impl Default for ReindexOptions {
    fn default() -> Self {
        Self {
            count: DEFAULT_REINDEX_COUNT,
            start: ReindexCursor::start(),
        }
    }
}

/// One node to scan: its name in the cursor, a slot it serves (`None` on
/// one server) and the `SCAN` cursor to go on from (`None`: done).
#[derive(Debug, Clone)]
struct Node {
    name: String,
    slot: Option<u16>,
    at: Option<u64>,
}

/// A log key of the month, parsed.
struct Log {
    key: String,
    user_type: String,
    uid: u64,
}

/// `text` as a `SCAN MATCH` pattern that matches only itself.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `uid` when it is a canonical decimal (as `log_key` writes it).
fn canonical_uid(s: &str) -> Option<u64> {
    let ok = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s.len() == 1 || !s.starts_with('0'));
    ok.then(|| s.parse().ok()).flatten()
}

/// Where the nodes of this run stand, given the cursor.
fn nodes_of(cursor: &ReindexCursor, primaries: Option<Vec<(String, u16)>>) -> Vec<Node> {
    match primaries {
        None => vec![Node {
            name: SERVER.to_string(),
            slot: None,
            at: cursor.position(SERVER),
        }],
        Some(primaries) => primaries
            .into_iter()
            .map(|(name, slot)| Node {
                at: cursor.position(&name),
                name,
                slot: Some(slot),
            })
            .collect(),
    }
}

/// The primaries of the cluster with a slot each (`CLUSTER SLOTS`).
fn primaries() -> Op<Vec<(String, u16)>> {
    let mut batch = Batch::new();
    batch.add_keyless(SlotMap::cmd());
    Op::send(batch, |mut replies| {
        Ok(SlotMap::parse(replies.take_value()?)?.primaries())
    })
}

/// The month's nodes: one server, or every primary (read once).
fn month_nodes(start: ReindexCursor) -> Op<Vec<Node>> {
    Op::with_env(move |env| {
        if env.is_cluster() {
            primaries().map(move |p| nodes_of(&start, Some(p)))
        } else {
            Op::ready(nodes_of(&start, None))
        }
    })
}

/// The settings of one reindex run.
#[derive(Clone)]
struct Run {
    log: LoginLog,
    month: NaiveDate,
    pattern: String,
    count: u32,
}

impl Run {
    fn new(log: &LoginLog, year: i32, month: u32, count: u32) -> Result<Self> {
        let first = NaiveDate::from_ymd_opt(year, month, 1).ok_or_else(|| {
            Error::invalid("month", format!("{year}-{month:02} is not a valid month"))
        })?;
        if count == 0 {
            return Err(Error::invalid("count", "must be at least 1"));
        }
        // Each day's index expiry is checked up front (a retention that
        // would expire at or before the epoch is refused, as by `record`).
        for day in first.iter_days().take_while(|d| d.month() == first.month()) {
            days::expire_at(log.settings.retention, days::end_of_day(day)?)?;
        }
        let month_prefix = log.settings.prefix.key(&first.format("%Y-%m_").to_string());
        Ok(Self {
            log: log.clone(),
            month: first,
            pattern: format!("{}*", glob_escape(&month_prefix)),
            count,
        })
    }

    /// The log a key names, if it is one of this month in the layout.
    fn parse(&self, key: &[u8]) -> Option<Log> {
        let key = std::str::from_utf8(key).ok()?;
        let month_prefix = self
            .log
            .settings
            .prefix
            .key(&self.month.format("%Y-%m_").to_string());
        let rest = key.strip_prefix(&month_prefix)?;
        let (user_type, uid) = rest.rsplit_once('_')?;
        check_type(user_type).ok()?;
        let uid = canonical_uid(uid)?;
        (uid <= self.log.settings.max_uid).then(|| Log {
            key: key.to_string(),
            user_type: user_type.to_string(),
            uid,
        })
    }

    /// One page: a `SCAN` on every node not done, then the logs found.
    fn page(&self, nodes: Vec<Node>) -> Op<(ReindexReport, Vec<Node>)> {
        let mut batch = Batch::new();
        let scanned: Vec<usize> = (0..nodes.len())
            .filter(|&i| nodes[i].at.is_some())
            .collect();
        for &i in &scanned {
            let mut scan = redis::cmd("SCAN");
            scan.arg(nodes[i].at.expect("filtered"))
                .arg("MATCH")
                .arg(&self.pattern)
                .arg("COUNT")
                .arg(self.count)
                .arg("TYPE")
                .arg("string");
            match nodes[i].slot {
                Some(slot) => batch.add_for_slot_node(slot, scan),
                None => batch.add_keyless(scan),
            };
        }
        let run = self.clone();
        Op::send(batch, move |replies| {
            let pages: Vec<(u64, Vec<Vec<u8>>)> = replies.all()?;
            let mut nodes = nodes;
            let mut keys = Vec::new();
            for (&i, (next, found)) in scanned.iter().zip(pages) {
                nodes[i].at = (next != 0).then_some(next);
                keys.extend(found);
            }
            Ok((nodes, keys))
        })
        .and_then(move |(nodes, keys)| {
            let mut logs = Vec::with_capacity(keys.len());
            let mut skipped = 0;
            for key in &keys {
                match run.parse(key) {
                    Some(log) => logs.push(log),
                    None => skipped += 1,
                }
            }
            let cursor = ReindexCursor {
                nodes: nodes.iter().map(|n| (n.name.clone(), n.at)).collect(),
            };
            let report = ReindexReport {
                logs: logs.len() as u64,
                skipped,
                cursor,
                ..ReindexReport::default()
            };
            run.index(logs).map(move |(days, new, unknown)| {
                (
                    ReindexReport {
                        days,
                        new,
                        unknown,
                        ..report
                    },
                    nodes,
                )
            })
        })
    }

    /// Reads the logs and sets their days in the day indexes; returns the
    /// (user, day) pairs set, how many were new and of how many more it is
    /// not known ([`ReindexReport::unknown`]).
    fn index(&self, logs: Vec<Log>) -> Op<(u64, u64, u64)> {
        if logs.is_empty() {
            return Op::ready((0, 0, 0));
        }
        let mut batch = Batch::with_capacity(logs.len());
        for log in &logs {
            // Days 1..=31 are bits 1..=31: the first 4 bytes.
            let mut getrange = redis::cmd("GETRANGE");
            getrange.arg(&log.key).arg(0).arg(3);
            batch.add(&log.key, getrange);
        }
        let run = self.clone();
        Op::send(batch, |replies| replies.all::<Vec<u8>>()).and_then(move |bitmaps| {
            let mut batch = Batch::new();
            let s = &run.log.settings;
            let month_days: Vec<NaiveDate> = run
                .month
                .iter_days()
                .take_while(|d| d.month() == run.month.month())
                .collect();
            let types = run.log.types_key(run.month);
            for (log, bitmap) in logs.iter().zip(&bitmaps) {
                for bit in crate::bitmap::decode_bits(bitmap) {
                    let Some(day) = month_days.get((bit as usize).wrapping_sub(1)) else {
                        continue; // bit 0, or a day the month does not have
                    };
                    let expire = match days::end_of_day(*day)
                        .and_then(|end| days::expire_at(s.retention, end))
                    {
                        Ok(at) => at,
                        Err(e) => return Op::fail(e),
                    };
                    batch.script(scripts::login_log::index(
                        &run.log.index_key(&log.user_type, *day),
                        &types,
                        log.uid as i64,
                        s.max_uid as i64,
                        &log.user_type,
                        expire,
                    ));
                }
            }
            Op::send(batch, |replies| {
                let resent = replies.resent_each();
                let set: Vec<i64> = replies.all()?;
                let known: Vec<Option<bool>> = set
                    .iter()
                    .zip(resent)
                    .map(|(&b, resent)| changed(b == 1, resent))
                    .collect();
                let count = |f: Option<bool>| known.iter().filter(|&&k| k == f).count() as u64;
                Ok((set.len() as u64, count(Some(true)), count(None)))
            })
        })
    }
}

impl LoginLog {
    /// Builds the day indexes of `year`-`month` from the log keys already
    /// there (`<prefix><YYYY-MM>_<type>_<uid>`, e.g. written by the PHP
    /// recipe before the switch), so that [active users](Self::active_users)
    /// and [all active users](Self::all_active_users) include those logins:
    /// `SCAN` page by page (on a cluster, every primary), then
    /// `login_log.index` for every logged day, as [`record`](Self::record)
    /// would have set it. Memory is bounded by one page; start from an
    /// interrupted run's cursor ([`ReindexOptions::start`]) to resume;
    /// running it again changes nothing. Keys of another layout are counted
    /// as skipped, not refused. Returns the totals and the final cursor.
    pub fn reindex(&self, year: i32, month: u32, options: ReindexOptions) -> Op<ReindexReport> {
        checked(|| {
            let run = Run::new(self, year, month, options.count)?;
            Ok(month_nodes(options.start).and_then(move |nodes| {
                let state = Arc::new(Mutex::new((nodes, ReindexReport::default())));
                Op::repeat(state, move |state| {
                    let (nodes, total) = {
                        let guard = state.lock().expect("reindex state");
                        (guard.0.clone(), guard.1.clone())
                    };
                    if nodes.iter().all(|n| n.at.is_none()) {
                        let cursor = ReindexCursor {
                            nodes: nodes.into_iter().map(|n| (n.name, None)).collect(),
                        };
                        return Op::ready(ControlFlow::Break(ReindexReport { cursor, ..total }));
                    }
                    let shared = Arc::clone(state);
                    run.page(nodes).map(move |(page, nodes)| {
                        let mut guard = shared.lock().expect("reindex state");
                        guard.1.add(page);
                        guard.0 = nodes;
                        ControlFlow::Continue(())
                    })
                })
            }))
        })
    }

    /// One page of a [reindex](Self::reindex) from `cursor`: one `SCAN` of
    /// `count` keys on every node not done (on a cluster the primaries are
    /// read first, `CLUSTER SLOTS`), then the logs found. Returns what the
    /// page did and where to go on from; run it again with that cursor
    /// until [`ReindexCursor::is_done`] (saving it between pages makes an
    /// interrupted reindex resumable from outside the process).
    pub fn reindex_page(
        &self,
        year: i32,
        month: u32,
        cursor: &ReindexCursor,
        count: u32,
    ) -> Op<ReindexReport> {
        checked(|| {
            let run = Run::new(self, year, month, count)?;
            Ok(month_nodes(cursor.clone()).and_then(move |nodes| {
                if nodes.iter().all(|n| n.at.is_none()) {
                    let cursor = ReindexCursor {
                        nodes: nodes.into_iter().map(|n| (n.name, None)).collect(),
                    };
                    return Op::ready(ReindexReport {
                        cursor,
                        ..ReindexReport::default()
                    });
                }
                run.page(nodes).map(|(page, _)| page)
            }))
        })
    }
}
