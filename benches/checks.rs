//! `cargo bench --bench checks`: what the generated checks cost on the
//! server. For every script, the shipped script (generated checks + body)
//! against the same body without the checks (the file under `lua/`, loaded
//! here with `SCRIPT LOAD`) and against the floor: the commands the body
//! issues for that call (recorded by the body itself, its `redis.call`s
//! logged), sent natively in one `MULTI` ... `EXEC`. All in the same run on
//! the same server: server microseconds per call from `INFO commandstats`
//! (`cmdstat_evalsha` / `cmdstat_evalsha_ro` / `cmdstat_exec`, usec /
//! calls, after `CONFIG RESETSTAT`), median of the rounds, the variants
//! interleaved (a b c, c b a, ...); rows sorted by the ratio of the shipped
//! script to its body, highest first. Each call runs on
//! freshly reset data (the example's, `tests/support/examples.rs`), sent in
//! one pipeline with the reset, so every call does the same work; only the
//! script calls count in the figures. Batch scripts run a second time with
//! batch-sized calls.
//!
//! Besides the median over the rounds, each row gives the ratio of the
//! fastest round of the shipped script to the fastest round of its body
//! (`min s/b`): a round is the mean of its calls, and on a shared machine a
//! round that the scheduler preempted is slower, never faster, so the
//! minimum is the figure least moved by other load. Both are printed, and
//! the closing lines list the rows above their bound by each.
//!
//! `BENCH_CALLGRIND=1` counts instead of timing: the server runs under
//! `valgrind --tool=callgrind` (so `valgrind` must be on PATH), collecting
//! only inside `evalShaCommand` (`EVALSHA`, `EVALSHA_RO`) and `execCommand`
//! (`EXEC`, with the commands it runs), and a `PING` before and after each
//! batch of calls dumps the counts (`--dump-before=pingCommand`); figures
//! are thousands of instructions per call (`Ir`), which other load does not
//! move (they vary with Lua's garbage collector only, averaged over the
//! calls of a batch). Instructions are not time: a call the CPU runs with more cache
//! misses costs more than its count tells, so this mode judges the checks'
//! own work, the timed one what a caller sees.
//!
//! Environment: `BENCH_ROUNDS` (default 5; 3 with `BENCH_CALLGRIND`),
//! `BENCH_CALLS` calls per round and variant (default 400; 200 with
//! `BENCH_CALLGRIND`: Redis runs a step of Lua's garbage collector every
//! 50 script calls, so a batch holds four, and their varying work averages
//! out: the median and fastest rounds then agree within 0.01x, where at 50
//! calls a batch they differed by up to 0.2x), `BENCH_SCRIPTS` only the scripts whose names start
//! with one of its comma-separated words (`BENCH_SCRIPTS=lock.,semaphore.`;
//! default every script), `BENCH_CALLGRIND=1` (above), `REDIS_SERVER` the
//! server binary.

mod common;
#[path = "../tests/support/examples.rs"]
mod examples;
#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use std::path::{Path, PathBuf};

use common::{Table, median, num};
use examples::Example;
use redis::Value;
use redis_patterns::ScriptInfo;

/// How a call is made: the script by its SHA1, or its commands natively.
#[derive(Clone, Copy)]
enum Variant<'a> {
    Script(&'a str),
    Multi(&'a [Vec<Vec<u8>>]),
}

/// One pipeline: reset the data, then call the variant once; returns its
/// reply.
fn once(con: &mut redis::Connection, s: &ScriptInfo, v: Variant, e: &Example) -> Value {
    let mut pipe = redis::pipe();
    pipe.cmd("FLUSHALL").ignore();
    for c in examples::seed().iter().chain(&e.setup) {
        pipe.add_command(c.clone()).ignore();
    }
    match v {
        Variant::Script(sha) => {
            pipe.cmd(if s.read_only { "EVALSHA_RO" } else { "EVALSHA" })
                .arg(sha)
                .arg(e.keys.len())
                .arg(&e.keys)
                .arg(&e.args);
        }
        Variant::Multi(cmds) => {
            pipe.cmd("MULTI").ignore();
            for c in cmds {
                let mut cmd = redis::cmd(std::str::from_utf8(&c[0]).expect("a command name"));
                cmd.arg(&c[1..]);
                pipe.add_command(cmd).ignore();
            }
            pipe.cmd("EXEC");
        }
    }
    let mut replies: Vec<Value> = pipe.query(con).expect("pipeline");
    replies.pop().unwrap_or(Value::Nil)
}

/// What a call's cost is measured in.
enum Meter {
    /// Server microseconds, from `INFO commandstats`.
    Time,
    /// Thousands of instructions inside `EVALSHA` / `EXEC`, from the
    /// callgrind dumps the server writes into `dir` at each `PING`.
    Callgrind { dir: PathBuf },
}

impl Meter {
    /// The unit of the figures, for the table.
    fn unit(&self) -> &'static str {
        match self {
            Meter::Time => "us",
            Meter::Callgrind { .. } => "kIr",
        }
    }
}

/// The numbered dumps (`callgrind.out.<pid>.<n>`) in `dir`.
fn dumps(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).expect("read the callgrind directory");
    (entries.filter_map(|e| e.ok().map(|e| e.path())))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("callgrind.out.") && name.matches('.').count() == 3
        })
        .collect()
}

/// `PING`, which makes a server under callgrind dump its counts.
fn ping(con: &mut redis::Connection) {
    let _: String = redis::cmd("PING").query(con).expect("PING");
}

/// Cost per call of the variant over `calls` calls: server microseconds,
/// or thousands of instructions.
fn cost_per_call(
    con: &mut redis::Connection,
    meter: &Meter,
    s: &ScriptInfo,
    v: Variant,
    e: &Example,
    calls: usize,
) -> f64 {
    let Meter::Callgrind { dir } = meter else {
        return usec_per_call(con, s, v, e, calls);
    };
    // What was collected before (other calls) goes into a dump of its own.
    ping(con);
    for d in dumps(dir) {
        std::fs::remove_file(d).expect("remove a callgrind dump");
    }
    for _ in 0..calls {
        once(con, s, v, e);
    }
    ping(con);
    let [d] = dumps(dir).try_into().expect("one dump for the batch");
    let text = std::fs::read_to_string(&d).expect("read the callgrind dump");
    std::fs::remove_file(&d).expect("remove a callgrind dump");
    let ir: f64 = (text.lines().find_map(|l| l.strip_prefix("summary:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{}: a summary line in {}", s.name, d.display()));
    assert!(
        ir > 0.0,
        "{}: instructions counted in {}",
        s.name,
        d.display()
    );
    ir / calls as f64 / 1000.0
}

/// Server microseconds per call of the variant over `calls` calls.
fn usec_per_call(
    con: &mut redis::Connection,
    s: &ScriptInfo,
    v: Variant,
    e: &Example,
    calls: usize,
) -> f64 {
    common::reset_stats(con);
    for _ in 0..calls {
        once(con, s, v, e);
    }
    let stat = match v {
        Variant::Multi(_) => "exec",
        Variant::Script(_) if s.read_only => "evalsha_ro",
        Variant::Script(_) => "evalsha",
    };
    let (n, usec) = common::command_stats(con, stat);
    assert_eq!(n as usize, calls, "{}: every call counted", s.name);
    usec as f64 / n as f64
}

/// A server under callgrind (`BENCH_CALLGRIND`): `binary` started through
/// a wrapper that runs it under valgrind, dumps into `dir`.
fn callgrind_wrapper(binary: &str, dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(dir).expect("create the callgrind directory");
    let d = dir.display();
    let wrapper = dir.join("redis-server");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec valgrind --tool=callgrind --log-file={d}/valgrind.log \\\n  --callgrind-out-file={d}/callgrind.out.%p --dump-instr=no \\\n  --collect-atstart=no --toggle-collect=evalShaCommand --toggle-collect=execCommand \\\n  --dump-before=pingCommand '{binary}' \"$@\"\n"
        ),
    )
    .expect("write the callgrind wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        .expect("make the wrapper executable");
    wrapper
}

/// The body of `shipped` (no checks) made to record its commands: every
/// `redis.call` / `redis.pcall` logged with its arguments as the server
/// receives them (numbers as Lua's `tostring`), and the log returned
/// instead of the body's reply.
fn recorder(shipped: &str) -> String {
    let body = support::without_generated_checks(shipped).expect("a checks block");
    let (shebang, rest) = body.split_once('\n').expect("a shebang line");
    let rest = rest
        .replace("redis.call(", "__record(redis.call, ")
        .replace("redis.pcall(", "__record(redis.pcall, ");
    format!(
        "{shebang}\nlocal __log = {{}}\nlocal function __record(f, ...)\n  local a = {{...}}\n  for i = 1, select('#', ...) do a[i] = tostring(a[i]) end\n  __log[#__log + 1] = a\n  return f(...)\nend\nlocal function __body()\n{rest}\nend\n__body()\nreturn __log\n"
    )
}

/// The commands the body issues for the call `e`, as recorded.
fn commands_of(con: &mut redis::Connection, s: &ScriptInfo, e: &Example) -> Vec<Vec<Vec<u8>>> {
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(recorder(s.source()))
        .query(con)
        .expect("SCRIPT LOAD the recording body");
    let log = once(con, s, Variant::Script(&sha), e);
    let Value::Array(cmds) = log else {
        panic!("{}: the recording body answers its log: {log:?}", s.name)
    };
    cmds.into_iter()
        .map(|c| match c {
            Value::Array(args) => args
                .into_iter()
                .map(|a| match a {
                    Value::BulkString(b) => b,
                    other => panic!("{}: a logged argument: {other:?}", s.name),
                })
                .collect(),
            other => panic!("{}: a logged command: {other:?}", s.name),
        })
        .collect()
}

/// Whether two replies agree but for their integers (time-dependent
/// scripts answer remaining milliseconds, which move between two calls).
fn alike(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(_), Value::Int(_)) => true,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| alike(a, b))
        }
        _ => a == b,
    }
}

/// What the generated checks of `s` do for the call `e`: ACL checks and
/// `TYPE` calls.
fn work(s: &ScriptInfo, e: &Example) -> (usize, usize) {
    let shipped = s.source();
    let begin = shipped
        .find("\n-- generated checks (crates/codegen")
        .expect("checks");
    let end = shipped
        .find("\n-- end of generated checks")
        .expect("checks");
    let block = &shipped[begin..end];
    let acl = block.matches("redis.acl_check_cmd(").count();
    // Fixed keys: one TYPE each; a loop `for i = S, #KEYS[, P] do` whose
    // round calls TYPE on KEYS[i]: one per key it reaches.
    let mut types = block.matches("redis.call('TYPE', KEYS[").count()
        - block.matches("redis.call('TYPE', KEYS[i])").count();
    let lines: Vec<&str> = block.lines().map(str::trim).collect();
    for (at, l) in lines.iter().enumerate() {
        let Some(bounds) = (l.strip_prefix("for i = ")).and_then(|r| r.strip_suffix(" do")) else {
            continue;
        };
        let typed =
            (lines[at + 1..].iter().take(2)).any(|n| n.contains("redis.call('TYPE', KEYS[i])"));
        let mut parts = bounds.split(", ");
        let (Some(start), Some("#KEYS")) =
            (parts.next().and_then(|v| v.parse().ok()), parts.next())
        else {
            continue;
        };
        let step: usize = parts.next().and_then(|v| v.parse().ok()).unwrap_or(1);
        if typed {
            types += (start..=e.keys.len()).step_by(step).count();
        }
    }
    (acl, types)
}

/// One measured call: medians of shipped, body and floor, and of the
/// shipped / body ratio; the ratio of their fastest rounds.
struct Row {
    name: &'static str,
    keys: usize,
    cells: Vec<String>,
    ratio: f64,
    min_ratio: f64,
}

/// Measures the call `e` of `s` (the body loaded as `unchecked`).
fn measure(
    con: &mut redis::Connection,
    meter: &Meter,
    s: &'static ScriptInfo,
    unchecked: &str,
    e: &Example,
    (rounds, calls): (usize, usize),
) -> Row {
    // Shipped and unchecked answer alike, and the calls succeed.
    let (x, y) = (
        once(con, s, Variant::Script(s.sha1), e),
        once(con, s, Variant::Script(unchecked), e),
    );
    assert!(
        alike(&x, &y),
        "{}: shipped and unchecked answer alike: {x:?} {y:?}",
        s.name
    );
    assert!(!matches!(x, Value::ServerError(_)), "{}: {x:?}", s.name);
    let cmds = commands_of(con, s, e);
    let variants = [
        Variant::Script(s.sha1),
        Variant::Script(unchecked),
        Variant::Multi(&cmds),
    ];
    let mut us: [Vec<f64>; 3] = Default::default();
    let mut ratios = Vec::new();
    for v in variants {
        cost_per_call(con, meter, s, v, e, (calls / 4).max(1));
    }
    for round in 0..rounds {
        let mut got = [0.0; 3];
        for i in 0..3 {
            let i = if round % 2 == 0 { i } else { 2 - i };
            got[i] = cost_per_call(con, meter, s, variants[i], e, calls);
        }
        for i in 0..3 {
            us[i].push(got[i]);
        }
        ratios.push(got[0] / got[1]);
    }
    let least = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let min_ratio = least(&us[0]) / least(&us[1]);
    let [a, u, f] = us.map(|mut v| median(&mut v));
    let r = median(&mut ratios);
    let (acl, types) = work(s, e);
    Row {
        name: s.name,
        keys: e.keys.len(),
        ratio: r,
        min_ratio,
        cells: vec![
            s.name.to_string(),
            e.keys.len().to_string(),
            e.args.len().to_string(),
            cmds.len().to_string(),
            acl.to_string(),
            types.to_string(),
            num(a),
            num(u),
            num(f),
            format!("{r:.2}x"),
            format!("{min_ratio:.2}x"),
            num(a - u),
            format!("{:.2}x", u / f),
        ],
    }
}

fn main() {
    let callgrind = std::env::var("BENCH_CALLGRIND").is_ok_and(|v| v == "1");
    let dir = std::env::temp_dir().join(format!(
        "redis-patterns-checks-callgrind-{}",
        std::process::id()
    ));
    let (server, meter) = if callgrind {
        let binary = redis_patterns_test_support::server_binary();
        let wrapper = callgrind_wrapper(&binary, &dir);
        let server = common::BenchServer {
            binary: wrapper.display().to_string(),
            label: format!("{binary} under callgrind"),
        }
        .start(&[]);
        (server, Meter::Callgrind { dir: dir.clone() })
    } else {
        (common::server(&[]), Meter::Time)
    };
    let mut con = server.connection();
    common::load_scripts(&server);
    let calls = common::env_or("BENCH_CALLS", if callgrind { 200 } else { 400 });
    let rounds = common::env_or("BENCH_ROUNDS", if callgrind { 3 } else { 5 });
    let unit = meter.unit();
    println!(
        "redis-server on 127.0.0.1:{}{}; median of {rounds} rounds (BENCH_ROUNDS); {calls} calls a round and variant (BENCH_CALLS)",
        server.port(),
        if callgrind {
            " under callgrind: thousands of instructions (kIr) per call inside EVALSHA / EXEC"
        } else {
            ": server microseconds per call (INFO commandstats)"
        }
    );
    let title = if callgrind {
        "kIr per call inside EVALSHA / EXEC: shipped (generated checks + body) vs the body alone vs its commands in MULTI (the floor); by shipped/body, highest first"
    } else {
        "server us per call: shipped (generated checks + body) vs the body alone vs its commands in MULTI (the floor); by shipped/body, highest first"
    };
    let (shipped_h, body_h, floor_h, checks_h) = (
        format!("shipped {unit}"),
        format!("body {unit}"),
        format!("floor {unit}"),
        format!("checks {unit}"),
    );
    let mut table = Table::new(
        title,
        &[
            "script",
            "keys",
            "args",
            "cmds",
            "acl",
            "type",
            &shipped_h,
            &body_h,
            &floor_h,
            "shipped/body",
            "min s/b",
            &checks_h,
            "body/floor",
        ],
    );
    let small = examples::examples(false);
    let big = examples::examples(true);
    let mut rows = Vec::new();
    let only = std::env::var("BENCH_SCRIPTS").unwrap_or_default();
    let chosen =
        |name: &str| only.is_empty() || only.split(',').any(|w| name.starts_with(w.trim()));
    let mut ours = redis_patterns::Connection::open(server.url()).expect("connect");
    let runnable = support::runnable_scripts(&mut ours);
    for s in runnable.into_iter().filter(|s| chosen(s.name)) {
        let body = support::without_generated_checks(s.source()).expect("a checks block");
        let unchecked: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(&body)
            .query(&mut con)
            .expect("SCRIPT LOAD the unchecked body");
        let mut calls_of: Vec<&Example> = small.iter().filter(|e| e.script == s.name).collect();
        let b = big.iter().find(|e| e.script == s.name).expect("an example");
        if b.keys != calls_of[0].keys || b.args != calls_of[0].args {
            calls_of.push(b);
        }
        for e in calls_of {
            rows.push(measure(&mut con, &meter, s, &unchecked, e, (rounds, calls)));
        }
    }
    rows.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    for r in &rows {
        table.row(r.cells.clone());
    }
    table.print();
    println!(
        "\n(cmds: the commands the body issued; acl: redis.acl_check_cmd calls, type: TYPE calls the checks make; shipped/body: the median of the rounds' ratios; min s/b: the shipped script's fastest round over its body's fastest; checks {unit}: shipped - body)"
    );
    for (what, single, limit) in [("single-key", true, 1.10), ("multi-key", false, 1.3)] {
        let mut of: Vec<&Row> = rows.iter().filter(|r| (r.keys == 1) == single).collect();
        if of.is_empty() {
            continue;
        }
        of.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
        let mut ratios: Vec<f64> = of.iter().map(|r| r.ratio).collect();
        let mut mins: Vec<f64> = of.iter().map(|r| r.min_ratio).collect();
        let over = |by: fn(&Row) -> f64| {
            let mut over: Vec<&&Row> = of.iter().filter(|r| by(r) > limit).collect();
            over.sort_by(|a, b| by(b).total_cmp(&by(a)));
            let words: Vec<String> = (over.iter())
                .map(|r| format!("{} {:.2}x", r.name, by(r)))
                .collect();
            if words.is_empty() {
                "none".to_string()
            } else {
                words.join(", ")
            }
        };
        println!(
            "{what} calls: {} calls, median ratio {:.2}x, worst {} {:.2}x; above {limit:.2}x: {}",
            of.len(),
            median(&mut ratios),
            of[0].name,
            of[0].ratio,
            over(|r| r.ratio)
        );
        println!(
            "{what} calls by fastest rounds: median {:.2}x; above {limit:.2}x: {}",
            median(&mut mins),
            over(|r| r.min_ratio)
        );
    }
    drop((ours, con, server));
    if callgrind {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
