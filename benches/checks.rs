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
//! Environment: `BENCH_ROUNDS` (default 5), `BENCH_CALLS` calls per round
//! and variant (default 400), `BENCH_SCRIPTS` only the scripts whose names
//! start with one of its comma-separated words (`BENCH_SCRIPTS=lock.,semaphore.`;
//! default every script).

mod common;
#[path = "../tests/support/examples.rs"]
mod examples;
#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

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
    let fixed_keys = s.keys.iter().filter(|k| !k.variadic).count();
    let mut types = block.matches("redis.call('TYPE', KEYS[").count();
    if block.contains("redis.call('TYPE', KEYS[i])") {
        types = types - 1 + (e.keys.len() - fixed_keys);
    }
    (acl, types)
}

/// One measured call: medians of shipped, body and floor, and of the
/// shipped / body ratio.
struct Row {
    name: &'static str,
    keys: usize,
    cells: Vec<String>,
    ratio: f64,
}

/// Measures the call `e` of `s` (the body loaded as `unchecked`).
fn measure(
    con: &mut redis::Connection,
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
        usec_per_call(con, s, v, e, calls / 4);
    }
    for round in 0..rounds {
        let mut got = [0.0; 3];
        for i in 0..3 {
            let i = if round % 2 == 0 { i } else { 2 - i };
            got[i] = usec_per_call(con, s, variants[i], e, calls);
        }
        for i in 0..3 {
            us[i].push(got[i]);
        }
        ratios.push(got[0] / got[1]);
    }
    let [a, u, f] = us.map(|mut v| median(&mut v));
    let r = median(&mut ratios);
    let (acl, types) = work(s, e);
    Row {
        name: s.name,
        keys: e.keys.len(),
        ratio: r,
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
            num(a - u),
            format!("{:.2}x", u / f),
        ],
    }
}

fn main() {
    let server = common::server(&[]);
    let mut con = server.connection();
    common::load_scripts(&server);
    let calls = common::env_or("BENCH_CALLS", 400);
    let rounds = common::rounds();
    println!(
        "redis-server on 127.0.0.1:{}; median of {rounds} rounds (BENCH_ROUNDS); {calls} calls a round and variant (BENCH_CALLS)",
        server.port()
    );
    let mut table = Table::new(
        "server us per call: shipped (generated checks + body) vs the body alone vs its commands in MULTI (the floor); by shipped/body, highest first",
        &[
            "script",
            "keys",
            "args",
            "cmds",
            "acl",
            "type",
            "shipped us",
            "body us",
            "floor us",
            "shipped/body",
            "checks us",
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
            rows.push(measure(&mut con, s, &unchecked, e, (rounds, calls)));
        }
    }
    rows.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    for r in &rows {
        table.row(r.cells.clone());
    }
    table.print();
    println!(
        "\n(cmds: the commands the body issued; acl: redis.acl_check_cmd calls, type: TYPE calls the checks make; checks us: shipped - body)"
    );
    for (what, single, limit) in [("single-key", true, 1.10), ("multi-key", false, 1.3)] {
        let mut of: Vec<&Row> = rows.iter().filter(|r| (r.keys == 1) == single).collect();
        if of.is_empty() {
            continue;
        }
        of.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
        let mut ratios: Vec<f64> = of.iter().map(|r| r.ratio).collect();
        let over: Vec<String> = (of.iter().filter(|r| r.ratio > limit))
            .map(|r| format!("{} {:.2}x", r.name, r.ratio))
            .collect();
        println!(
            "{what} calls: {} calls, median ratio {:.2}x, worst {} {:.2}x; above {limit:.2}x: {}",
            of.len(),
            median(&mut ratios),
            of[0].name,
            of[0].ratio,
            if over.is_empty() {
                "none".to_string()
            } else {
                over.join(", ")
            }
        );
    }
}
