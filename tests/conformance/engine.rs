//! The Rust runner of the conformance cases: reads `cases.json`, runs each
//! case's steps against a server or a cluster (flushed before each case),
//! dispatching operations by name to the Rust API ([`super::dispatch`]),
//! and matches results and errors as the README of the cases says.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use redis_patterns::Connection;
use serde_json::{Map, Value, json};

use super::dispatch::{self, Handle};

/// Where the cases are.
pub fn cases_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/cases.json")
}

/// The cases of `cases.json`.
pub struct Cases {
    pub cases: Vec<Value>,
}

impl Cases {
    pub fn load(path: &Path) -> Self {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let doc: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        let cases = doc["cases"].as_array().expect("a `cases` array").clone();
        let mut names = BTreeSet::new();
        for c in &cases {
            let name = c["name"].as_str().expect("every case has a name");
            assert!(names.insert(name.to_string()), "case {name} is given twice");
        }
        Self { cases }
    }

    /// Every `Class.op` the cases run (constructors as `Class.new`).
    pub fn operations(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut classes: HashMap<String, String> = HashMap::new();
        for c in &self.cases {
            walk(&c["steps"], &mut |s| {
                if let Some(class) = s["new"].as_str() {
                    out.insert(format!("{class}.new"));
                    if let Some(as_) = s["as"].as_str() {
                        classes.insert(as_.to_string(), class.to_string());
                    }
                }
                if let (Some(on), Some(op)) = (s["on"].as_str(), s["op"].as_str()) {
                    let class = classes.get(on).cloned().unwrap_or_else(|| on.to_string());
                    out.insert(format!("{class}.{op}"));
                    if let (Some(save), Some(c)) = (s["save"].as_str(), s["class"].as_str()) {
                        classes.insert(save.to_string(), c.to_string());
                    }
                }
            });
        }
        out
    }

    /// Every error kind a case expects.
    pub fn error_kinds(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for c in &self.cases {
            walk(&c["steps"], &mut |s| {
                if let Some(k) = s["error"].as_str() {
                    out.insert(k.to_string());
                }
            });
        }
        out
    }
}

/// Calls `f` on every step, nested ones (`spawn`, `body`) included.
fn walk(steps: &Value, f: &mut impl FnMut(&Value)) {
    for s in steps.as_array().into_iter().flatten() {
        f(s);
        walk(&s["steps"], f);
        walk(&s["body"], f);
    }
}

/// What the cases run against.
#[derive(Clone)]
pub struct Target {
    /// Every node (one for a server).
    pub urls: Vec<String>,
}

impl Target {
    pub fn server(url: &str) -> Self {
        Self {
            urls: vec![url.to_string()],
        }
    }

    pub fn cluster(urls: &[String]) -> Self {
        Self {
            urls: urls.to_vec(),
        }
    }

    pub fn connect(&self) -> Connection {
        super::support::connect(&self.urls[0])
    }

    fn node_cons(&self) -> Vec<redis::Connection> {
        self.urls
            .iter()
            .map(|u| {
                redis::Client::open(u.as_str())
                    .and_then(|c| c.get_connection())
                    .expect("a node connection")
            })
            .collect()
    }

    /// Deletes every key of every node (primaries; replicas refuse and
    /// follow).
    pub fn flush(&self) {
        for mut con in self.node_cons() {
            let _: redis::RedisResult<()> = redis::cmd("FLUSHALL").arg("SYNC").query(&mut con);
        }
    }

    /// Every key of every primary, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut out = Vec::new();
        for mut con in self.node_cons() {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut con)
                .unwrap_or_default();
            if info.contains("role:slave") {
                continue;
            }
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("*")
                .query(&mut con)
                .unwrap_or_default();
            out.extend(keys);
        }
        out.sort();
        out
    }
}

/// Which steps of a case run: a cross-language case has a `{"part":
/// "read"}` step; its steps before it write, the ones after read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Part {
    All,
    Write,
    Read,
}

/// The outcome of a run.
#[derive(Default)]
pub struct Report {
    pub passed: usize,
    pub failed: Vec<(String, String)>,
    /// Cases skipped because the server lacks a capability they need or
    /// has one they run only without (their `lacks`), the capabilities it
    /// lacks and those it has.
    pub skipped: usize,
    pub lacking: BTreeSet<String>,
    pub having: BTreeSet<String>,
}

impl Report {
    pub fn summary(&self) -> String {
        let mut out = format!("{} passed, {} failed", self.passed, self.failed.len());
        if self.skipped > 0 {
            out += &format!(
                ", {} skipped ({})",
                self.skipped,
                skip_reasons(&self.lacking, &self.having)
            );
        }
        out
    }

    pub fn assert_passed(&self) {
        let list: Vec<String> = self
            .failed
            .iter()
            .map(|(name, why)| format!("- {name}: {why}"))
            .collect();
        assert!(
            self.failed.is_empty(),
            "{} cases failed:\n{}",
            self.failed.len(),
            list.join("\n")
        );
        assert!(self.passed > 0, "no case ran");
    }
}

/// Whether `case` is a cross-language case.
pub fn is_cross(case: &Value) -> bool {
    case["steps"]
        .as_array()
        .is_some_and(|s| s.iter().any(|s| s["part"] == "read"))
}

/// Why cases were skipped, as every runner words it: `they need A and B,
/// which the server lacks`, `they run only without C, which the server
/// has`, or both joined by `; `.
fn skip_reasons(lacking: &BTreeSet<String>, having: &BTreeSet<String>) -> String {
    let join = |s: &BTreeSet<String>| {
        s.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" and ")
    };
    let mut why = Vec::new();
    if !lacking.is_empty() {
        why.push(format!(
            "they need {}, which the server lacks",
            join(lacking)
        ));
    }
    if !having.is_empty() {
        why.push(format!(
            "they run only without {}, which the server has",
            join(having)
        ));
    }
    why.join("; ")
}

/// The capabilities named in `case[list]` that `caps` has (`has`) or does
/// not have (`!has`).
fn named(case: &Value, list: &str, caps: &redis_patterns::core::Caps, has: bool) -> Vec<String> {
    case[list]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|n| (caps.has(n) == Some(true)) == has)
        .map(str::to_string)
        .collect()
}

/// The capabilities `case` needs (its `needs`) that `caps` does not have.
fn lacking(case: &Value, caps: &redis_patterns::core::Caps) -> Vec<String> {
    named(case, "needs", caps, false)
}

/// The capabilities `case` runs only without (its `lacks`: a refusal on a
/// server without them) that `caps` has.
fn having(case: &Value, caps: &redis_patterns::core::Caps) -> Vec<String> {
    named(case, "lacks", caps, true)
}

/// How many of the cases (of `part`: only the cross-language ones unless
/// `Part::All`) the server of `target` lacks a capability for, or has one
/// a case runs only without, by the crate's own detection: what a client's
/// runner must report as skipped there (exactly those, so none can pass by
/// skipping what it should run). Used by the CLI's tests of the clients.
#[allow(dead_code)]
pub fn skipped_on(cases: &Cases, target: &Target, part: Part) -> usize {
    let mut con = target.connect();
    let caps = redis_patterns::Request::run(redis_patterns::core::Caps::read(), &mut con)
        .expect("the server's capabilities");
    cases
        .cases
        .iter()
        .filter(|c| part == Part::All || is_cross(c))
        .filter(|c| !lacking(c, &caps).is_empty() || !having(c, &caps).is_empty())
        .count()
}

/// Runs every case (flushing before each).
pub fn run_all(cases: &Cases, target: &Target) -> Report {
    run_selected(cases, target, Part::All, true)
}

/// Runs `part` of the cases (only the cross-language ones unless `Part::All`);
/// `flush_each`: flush before every case (else once before all).
pub fn run_selected(cases: &Cases, target: &Target, part: Part, flush_each: bool) -> Report {
    let mut report = Report::default();
    let mut con = target.connect();
    let caps = redis_patterns::Request::run(redis_patterns::core::Caps::read(), &mut con)
        .expect("the server's capabilities");
    // A read part reads what the write part left: no flush before it.
    if !flush_each && part != Part::Read {
        target.flush();
    }
    for case in &cases.cases {
        if part != Part::All && !is_cross(case) {
            continue;
        }
        let (lacking, having) = (lacking(case, &caps), having(case, &caps));
        if !lacking.is_empty() || !having.is_empty() {
            report.skipped += 1;
            report.lacking.extend(lacking);
            report.having.extend(having);
            continue;
        }
        if flush_each {
            target.flush();
        }
        let name = case["name"].as_str().unwrap_or("?").to_string();
        let mut ctx = Ctx {
            target: target.clone(),
            saved: HashMap::new(),
            spawned: Vec::new(),
        };
        let steps = select(case["steps"].as_array().expect("steps"), part);
        let outcome = ctx.steps(&mut con, &steps).and_then(|()| ctx.join());
        match outcome {
            Ok(()) => report.passed += 1,
            Err(why) => {
                report.failed.push((name, why));
                // A failed case may leave the connection mid-way: reconnect.
                con = target.connect();
            }
        }
    }
    report
}

fn select(steps: &[Value], part: Part) -> Vec<Value> {
    let split = steps.iter().position(|s| s["part"] == "read");
    match (part, split) {
        (Part::All, _) | (_, None) => steps
            .iter()
            .filter(|s| s.get("part").is_none())
            .cloned()
            .collect(),
        (Part::Write, Some(i)) => steps[..i].to_vec(),
        (Part::Read, Some(i)) => steps[i + 1..].to_vec(),
    }
}

/// What a step saved: a handle, or a value.
#[derive(Clone)]
pub enum Saved {
    Handle(Handle),
    Value(Value),
}

/// One case's state.
pub struct Ctx {
    pub target: Target,
    pub saved: HashMap<String, Saved>,
    spawned: Vec<std::thread::JoinHandle<Result<(), String>>>,
}

impl Ctx {
    pub fn steps(&mut self, con: &mut Connection, steps: &[Value]) -> Result<(), String> {
        for (i, s) in steps.iter().enumerate() {
            self.step(con, s)
                .map_err(|e| format!("step {} {}: {e}", i + 1, compact(s)))?;
        }
        Ok(())
    }

    fn join(&mut self) -> Result<(), String> {
        for h in self.spawned.drain(..) {
            h.join()
                .map_err(|_| "a spawned part panicked".to_string())??;
        }
        Ok(())
    }

    fn step(&mut self, con: &mut Connection, s: &Value) -> Result<(), String> {
        if let Some(ms) = s["sleep_ms"].as_u64() {
            std::thread::sleep(Duration::from_millis(ms));
            return Ok(());
        }
        if let Some(spawn) = s.get("spawn") {
            return self.spawn(spawn);
        }
        if let Some(expected) = s.get("keys") {
            let keys = Value::from(self.target.keys());
            return self.matches(&self.resolve(expected)?, &keys);
        }
        if let Some(cmd) = s["redis"].as_array() {
            let reply = raw(con, &self.resolve_all(cmd)?);
            return self.expect(s, reply);
        }
        let args = self.resolve(s.get("args").unwrap_or(&json!({})))?;
        let args = args.as_object().cloned().unwrap_or_default();
        let outcome = if let Some(class) = s["new"].as_str() {
            dispatch::new(class, &args).map(Saved::Handle)
        } else {
            let on = s["on"]
                .as_str()
                .ok_or("a step needs new, on, redis, keys, sleep_ms or spawn")?;
            let op = s["op"].as_str().ok_or("`on` needs `op`")?;
            let handle = match self.saved.get(on) {
                Some(Saved::Handle(h)) => Some(h.clone()),
                Some(Saved::Value(_)) => return Err(format!("{on} is a value, not a handle")),
                None => None,
            };
            let class = match &handle {
                Some(h) => h.class().to_string(),
                None => on.to_string(),
            };
            dispatch::call(self, con, &class, handle.as_ref(), op, &args, s)
        };
        let outcome = match outcome {
            Ok(Saved::Handle(h)) => {
                if let Some(name) = s["as"].as_str().or(s["save"].as_str()) {
                    self.saved
                        .insert(name.to_string(), Saved::Handle(h.clone()));
                }
                Ok(h.describe())
            }
            Ok(Saved::Value(v)) => {
                if let Some(name) = s["save"].as_str() {
                    self.saved.insert(name.to_string(), Saved::Value(v.clone()));
                }
                Ok(v)
            }
            Err(e) => Err(e),
        };
        self.expect(s, outcome)
    }

    fn spawn(&mut self, spawn: &Value) -> Result<(), String> {
        let after = spawn["after_ms"].as_u64().unwrap_or(0);
        let steps = spawn["steps"].as_array().cloned().unwrap_or_default();
        let mut ctx = Ctx {
            target: self.target.clone(),
            saved: self.saved.clone(),
            spawned: Vec::new(),
        };
        let mut con = self.target.connect();
        self.spawned.push(std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(after));
            ctx.steps(&mut con, &steps).and_then(|()| ctx.join())
        }));
        Ok(())
    }

    /// Checks an outcome against the step's `expect` or `error` / `data`.
    fn expect(&self, s: &Value, outcome: Result<Value, dispatch::Failure>) -> Result<(), String> {
        match (outcome, s["error"].as_str()) {
            (Ok(v), None) => match s.get("expect") {
                Some(want) => self.matches(&self.resolve(want)?, &v),
                None => Ok(()),
            },
            (Ok(v), Some(kind)) => Err(format!("expected error {kind}, got {}", compact(&v))),
            (Err(e), None) => Err(format!("failed: {} {}", e.kind, compact(&e.data))),
            (Err(e), Some(kind)) if e.kind == kind => match s.get("data") {
                Some(want) => self.matches_part(&self.resolve(want)?, &e.data),
                None => Ok(()),
            },
            (Err(e), Some(kind)) => Err(format!(
                "expected error {kind}, got {} {} ({})",
                e.kind,
                compact(&e.data),
                e.message
            )),
        }
    }

    /// `want` (with matchers) against `got`.
    pub fn matches(&self, want: &Value, got: &Value) -> Result<(), String> {
        if matcher(want, got)? {
            return Ok(());
        }
        Err(format!("expected {}, got {}", compact(want), compact(got)))
    }

    /// Every field `want` names matches `got`'s (others are ignored).
    fn matches_part(&self, want: &Value, got: &Value) -> Result<(), String> {
        for (k, w) in want.as_object().ok_or("data must be an object")? {
            self.matches(w, &got[k]).map_err(|e| format!("{k}: {e}"))?;
        }
        Ok(())
    }

    /// `v` with `$ref` and `$today` resolved.
    pub fn resolve(&self, v: &Value) -> Result<Value, String> {
        Ok(match v {
            Value::Object(o) if o.len() == 1 && o.contains_key("$ref") => {
                self.lookup(o["$ref"].as_str().ok_or("$ref names a saved value")?)?
            }
            Value::Object(o) if o.contains_key("$today") => {
                let day = today(o["$today"].as_i64().ok_or("$today is a day offset")?);
                match o.get("in").and_then(Value::as_str) {
                    Some(text) => Value::from(text.replace('@', &day)),
                    None => Value::from(day),
                }
            }
            Value::Object(o) => {
                let mut out = Map::new();
                for (k, v) in o {
                    out.insert(k.clone(), self.resolve(v)?);
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(self.resolve_all(a)?),
            v => v.clone(),
        })
    }

    fn resolve_all(&self, a: &[Value]) -> Result<Vec<Value>, String> {
        a.iter().map(|v| self.resolve(v)).collect()
    }

    fn lookup(&self, path: &str) -> Result<Value, String> {
        let mut parts = path.split('.');
        let first = parts.next().unwrap_or_default();
        let mut v = match self.saved.get(first) {
            Some(Saved::Value(v)) => v.clone(),
            Some(Saved::Handle(h)) => h.describe(),
            None => return Err(format!("nothing saved as {first}")),
        };
        for p in parts {
            v = match p.parse::<usize>() {
                Ok(i) => v[i].clone(),
                Err(_) => v[p].clone(),
            };
        }
        Ok(v)
    }
}

/// The date `offset` days from today (UTC), `YYYY-MM-DD`.
fn today(offset: i64) -> String {
    let day = redis_patterns::chrono::Utc::now().date_naive()
        + redis_patterns::chrono::Duration::days(offset);
    day.format("%Y-%m-%d").to_string()
}

/// Whether `got` matches `want`: equal JSON, where an object with one `$`
/// key is a matcher (`$any`, `$range`, `$above`, `$len`, `$hex`, `$unordered`,
/// `$prefix`, `$type`).
pub fn matcher(want: &Value, got: &Value) -> Result<bool, String> {
    if let Value::Object(o) = want
        && o.len() == 1
        && let Some((k, arg)) = o.iter().next()
        && k.starts_with('$')
    {
        return Ok(match k.as_str() {
            "$any" => true,
            "$range" => {
                let (lo, hi) = (
                    arg[0].as_f64().ok_or("$range [lo, hi]")?,
                    arg[1].as_f64().ok_or("$range [lo, hi]")?,
                );
                got.as_f64().is_some_and(|g| g >= lo && g <= hi)
            }
            "$above" => {
                let lo = arg.as_f64().ok_or("$above takes a number")?;
                got.as_f64().is_some_and(|g| g > lo)
            }
            "$len" => got
                .as_array()
                .is_some_and(|a| Some(a.len() as u64) == arg.as_u64()),
            "$hex" => got == &dispatch::hex_value(arg.as_str().ok_or("$hex takes hex digits")?),
            "$prefix" => got
                .as_str()
                .is_some_and(|g| g.starts_with(arg.as_str().unwrap_or_default())),
            "$type" => match arg.as_str() {
                Some("str") => got.is_string(),
                Some("int") => got.is_i64() || got.is_u64(),
                Some("float") => got.is_number(),
                Some("bool") => got.is_boolean(),
                Some("list") => got.is_array(),
                other => return Err(format!("unknown $type {other:?}")),
            },
            "$unordered" => {
                let mut w: Vec<String> = arg
                    .as_array()
                    .ok_or("$unordered takes a list")?
                    .iter()
                    .map(compact)
                    .collect();
                let Some(g) = got.as_array() else {
                    return Ok(false);
                };
                let mut g: Vec<String> = g.iter().map(compact).collect();
                w.sort();
                g.sort();
                w == g
            }
            other => return Err(format!("unknown matcher {other}")),
        });
    }
    Ok(match (want, got) {
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(w, g)| matcher(w, g).unwrap_or(false))
        }
        (Value::Object(w), Value::Object(g)) => {
            w.len() == g.len()
                && w.iter()
                    .all(|(k, w)| g.get(k).is_some_and(|g| matcher(w, g).unwrap_or(false)))
        }
        (Value::Number(w), Value::Number(g)) => w.as_f64() == g.as_f64(),
        (w, g) => w == g,
    })
}

pub fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 300 {
        format!("{}...", &s[..300])
    } else {
        s
    }
}

/// A raw command (`["GET", "key"]`): routed by its first key, the reply as
/// JSON (bulk strings as text, or `{"$hex": ...}` when not UTF-8).
fn raw(con: &mut Connection, cmd: &[Value]) -> Result<Value, dispatch::Failure> {
    let words: Vec<String> = cmd
        .iter()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .collect();
    let mut c = redis::cmd(&words[0]);
    for w in &words[1..] {
        c.arg(w);
    }
    let key = words.get(1).cloned().unwrap_or_default();
    let reply: redis::Value = dispatch::run(con, redis_patterns::Op::cmd(key, c))?;
    Ok(dispatch::reply_json(reply))
}

/// The scripts the cases cannot reach on one kind of target. A login is
/// recorded by `login_log.record` where the log and its day index share a
/// slot (always on one server), else by `login_log.mark` and
/// `login_log.index` in one pipeline; every case's log and index are in
/// different slots on a cluster. Each is reached on the other kind.
pub fn unreachable_scripts(cluster: bool) -> &'static [&'static str] {
    if cluster {
        &["login_log.record"]
    } else {
        &["login_log.mark"]
    }
}

/// Fails naming each script of the registry that the server behind `urls`
/// can run (capabilities) and `who`'s run of the cases never called: no
/// node's script cache holds it (`SCRIPT EXISTS`; a client loads a script at
/// its first `NOSCRIPT`, never before), so a script without a method in that
/// client, or one no case reaches, fails. Then empties the caches
/// (`SCRIPT FLUSH`) for the next run on the same servers.
///
/// `also_unreached`: scripts `who` reaches only through a setting no case
/// selects (the Rust API's `bloom.add` / `bloom.exists`: its script engine).
pub fn expect_every_script_ran(who: &str, urls: &[String], cluster: bool, also_unreached: &[&str]) {
    let mut ours = redis_patterns::Connection::open(urls[0].as_str()).expect("connect");
    let runnable = super::support::runnable_scripts(&mut ours);
    let shas: Vec<&str> = runnable.iter().map(|s| s.sha1).collect();
    let mut cached = vec![false; shas.len()];
    for url in urls {
        let mut con = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .expect("connect to a node");
        let exists: Vec<bool> = redis::cmd("SCRIPT")
            .arg("EXISTS")
            .arg(&shas)
            .query(&mut con)
            .expect("SCRIPT EXISTS");
        for (c, e) in cached.iter_mut().zip(exists) {
            *c |= e;
        }
        let _: () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query(&mut con)
            .expect("SCRIPT FLUSH");
    }
    let missed: Vec<&str> = runnable
        .iter()
        .zip(&cached)
        .filter(|(s, c)| {
            !**c && !unreachable_scripts(cluster).contains(&s.name)
                && !also_unreached.contains(&s.name)
        })
        .map(|(s, _)| s.name)
        .collect();
    assert!(
        missed.is_empty(),
        "{who} ran every case but never called the scripts {missed:?}: a script without a method of the client, or without a case that reaches it"
    );
    println!(
        "{who}: called {} of the {} scripts the server runs",
        cached.iter().filter(|c| **c).count(),
        runnable.len()
    );
}
