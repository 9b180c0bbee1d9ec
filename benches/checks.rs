//! `cargo bench --bench checks`: what the generated checks cost on the
//! server, script by script. For every script three variants of the same
//! call, in the same run on the same server:
//!
//! * **shipped**: the script as the crate ships it (generated checks +
//!   included functions + body), by its SHA1;
//! * **body**: the same text without the generated checks (loaded here with
//!   `SCRIPT LOAD`);
//! * **floor**: the commands the body issues for that call, recorded from a
//!   run of the body and sent natively inside `MULTI` / `EXEC` (no Lua at
//!   all): what the call cannot do without.
//!
//! Figures are server microseconds per call from `INFO commandstats`
//! (`evalsha` / `evalsha_ro` for the scripts, `exec` for the floor, whose
//! time includes the commands it runs), after `CONFIG RESETSTAT`; each the
//! median of the rounds, the three variants interleaved in a rotating
//! order; the ratios are medians of the per-round ratios. Each call runs on
//! freshly reset data (the example's, `tests/support/examples.rs`), sent in
//! one pipeline with the reset, so every call does the same work; only the
//! measured command counts. Scripts that take many keys or arguments run a
//! second time with batch-sized calls. The table is sorted by the ratio of
//! shipped to body, the largest first.
//!
//! Environment: `BENCH_ROUNDS` (default 5), `BENCH_CALLS` calls per round
//! and variant (default 1000; a tenth for calls above 100 us),
//! `BENCH_ONLY` (comma-separated script names or prefixes: `lock.,signin`).

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
use redis_patterns::scripts::ALL;

/// One way of making the example call.
enum Variant {
    /// `EVALSHA` (`EVALSHA_RO`) of this SHA1.
    Script(String),
    /// These commands inside `MULTI` / `EXEC`.
    Multi(Vec<redis::Cmd>),
}

/// The example's data, afresh: `FLUSHALL`, the shared data, its setup.
fn reset(pipe: &mut redis::Pipeline, e: &Example) {
    pipe.cmd("FLUSHALL").ignore();
    for c in examples::seed().iter().chain(&e.setup) {
        pipe.add_command(c.clone()).ignore();
    }
}

fn evalsha(s: &ScriptInfo, sha: &str, e: &Example) -> redis::Cmd {
    let mut cmd = redis::cmd(if s.read_only { "EVALSHA_RO" } else { "EVALSHA" });
    cmd.arg(sha).arg(e.keys.len()).arg(&e.keys).arg(&e.args);
    cmd
}

/// One pipeline: reset the data, then make the call one way; its reply.
fn once(con: &mut redis::Connection, s: &ScriptInfo, v: &Variant, e: &Example) -> Value {
    let mut pipe = redis::pipe();
    reset(&mut pipe, e);
    match v {
        Variant::Script(sha) => {
            pipe.add_command(evalsha(s, sha, e));
        }
        Variant::Multi(cmds) => {
            pipe.cmd("MULTI").ignore();
            for c in cmds {
                pipe.add_command(c.clone()).ignore();
            }
            pipe.cmd("EXEC");
        }
    }
    let mut replies: Vec<Value> = pipe.query(con).expect("pipeline");
    replies.pop().expect("the call's reply")
}

/// The `INFO commandstats` name of a variant's measured command.
fn stat_name(s: &ScriptInfo, v: &Variant) -> &'static str {
    match v {
        Variant::Multi(_) => "exec",
        Variant::Script(_) if s.read_only => "evalsha_ro",
        Variant::Script(_) => "evalsha",
    }
}

/// Server microseconds per call of `v` over `calls` calls.
fn usec_per_call(
    con: &mut redis::Connection,
    s: &ScriptInfo,
    v: &Variant,
    e: &Example,
    calls: usize,
) -> f64 {
    common::reset_stats(con);
    for _ in 0..calls {
        once(con, s, v, e);
    }
    let (n, usec) = common::command_stats(con, stat_name(s, v));
    assert_eq!(n as usize, calls, "{}: every call counted", s.name);
    usec as f64 / n as f64
}

/// The body made to return the commands it issues instead of its reply:
/// `redis.call` / `redis.pcall` go through a recorder (numbers as Redis
/// formats them), the body runs as a function.
fn recorder(body: &str) -> String {
    let (shebang, rest) = body.split_once('\n').expect("a shebang line");
    let rest = rest
        .replace("redis.call(", "__call(")
        .replace("redis.pcall(", "__pcall(");
    format!(
        "{shebang}
local __log = {{}}
local function __note(...)
  local c = {{...}}
  for i = 1, #c do
    if type(c[i]) == 'number' then c[i] = string.format('%.17g', c[i]) end
  end
  __log[#__log + 1] = c
end
local function __call(...) __note(...) return redis.call(...) end
local function __pcall(...) __note(...) return redis.pcall(...) end
local function __body()
{rest}
end
__body()
return __log
"
    )
}

/// The commands the body issues for the example call.
fn recorded(con: &mut redis::Connection, s: &ScriptInfo, sha: &str, e: &Example) -> Vec<redis::Cmd> {
    let mut plain = evalsha(s, sha, e);
    if s.read_only {
        // The recorder runs as a plain EVALSHA (its reply is no data).
        plain = redis::cmd("EVALSHA");
        plain.arg(sha).arg(e.keys.len()).arg(&e.keys).arg(&e.args);
    }
    let mut pipe = redis::pipe();
    reset(&mut pipe, e);
    pipe.add_command(plain);
    let mut replies: Vec<Value> = pipe.query(con).expect("record the body's commands");
    let log: Vec<Vec<Vec<u8>>> =
        redis::from_redis_value(replies.pop().expect("the log")).expect("a list of commands");
    log.into_iter()
        .map(|words| {
            let mut cmd = redis::cmd(std::str::from_utf8(&words[0]).expect("a command name"));
            for w in &words[1..] {
                cmd.arg(w.as_slice());
            }
            cmd
        })
        .collect()
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

/// Whether `BENCH_ONLY` (comma-separated names or prefixes) selects `name`.
fn selected(name: &str) -> bool {
    match std::env::var("BENCH_ONLY") {
        Ok(only) if !only.trim().is_empty() => only
            .split(',')
            .map(str::trim)
            .any(|p| !p.is_empty() && name.starts_with(p)),
        _ => true,
    }
}

/// One measured call: its figures, medians of the rounds.
struct Row {
    script: &'static str,
    keys: usize,
    args: usize,
    commands: usize,
    acl: usize,
    types: usize,
    floor: f64,
    body: f64,
    shipped: f64,
    /// shipped / body
    ratio: f64,
    /// body / floor
    lua: f64,
    /// The script takes one key (no variadic keys, one fixed key).
    single_key: bool,
}

/// The three variants of the call `e` of `s`, measured in `rounds`
/// interleaved rounds of `calls` calls each: (floor, body, shipped)
/// medians and the medians of shipped / body and body / floor.
fn measure(
    con: &mut redis::Connection,
    s: &ScriptInfo,
    variants: &[Variant; 3],
    e: &Example,
    calls: usize,
) -> ([f64; 3], f64, f64) {
    let rounds = common::rounds();
    let mut us: [Vec<f64>; 3] = Default::default();
    let (mut ratio, mut lua) = (Vec::new(), Vec::new());
    for v in variants {
        usec_per_call(con, s, v, e, (calls / 4).max(5));
    }
    for round in 0..rounds {
        let mut this = [0.0; 3];
        for k in 0..3 {
            let i = (round + k) % 3;
            this[i] = usec_per_call(con, s, &variants[i], e, calls);
        }
        for i in 0..3 {
            us[i].push(this[i]);
        }
        ratio.push(this[2] / this[1]);
        lua.push(this[1] / this[0]);
    }
    let [mut f, mut b, mut sh] = us;
    (
        [median(&mut f), median(&mut b), median(&mut sh)],
        median(&mut ratio),
        median(&mut lua),
    )
}

/// The calls measured for `s`: its example, and a batch-sized one when
/// the script takes many keys or arguments.
fn calls_of<'a>(s: &ScriptInfo, small: &'a [Example], big: &'a [Example]) -> Vec<&'a Example> {
    let mut out: Vec<&Example> = small.iter().filter(|e| e.script == s.name).collect();
    let b = big.iter().find(|e| e.script == s.name).expect("an example");
    if b.keys != out[0].keys || b.args != out[0].args {
        out.push(b);
    }
    out
}

/// Every selected script's calls, measured.
fn rows(con: &mut redis::Connection, calls: usize) -> Vec<Row> {
    let (small, big) = (examples::examples(false), examples::examples(true));
    let mut out = Vec::new();
    for s in ALL.iter().filter(|s| selected(s.name)) {
        let body = support::without_generated_checks(s.source()).expect("a checks block");
        let load = |con: &mut redis::Connection, text: &str| -> String {
            (redis::cmd("SCRIPT").arg("LOAD").arg(text).query(con)).expect("SCRIPT LOAD")
        };
        let unchecked = load(con, &body);
        let rec = load(con, &recorder(&body));
        for e in calls_of(s, &small, &big) {
            let shipped = Variant::Script(s.sha1.to_string());
            let plain = Variant::Script(unchecked.clone());
            // Both scripts answer the same, and the example succeeds.
            let (x, y) = (once(con, s, &shipped, e), once(con, s, &plain, e));
            assert_eq!(x, y, "{}: shipped and unchecked answer alike", s.name);
            assert!(!matches!(x, Value::ServerError(_)), "{}: {x:?}", s.name);
            let floor = Variant::Multi(recorded(con, s, &rec, e));
            let commands = match &floor {
                Variant::Multi(c) => c.len(),
                Variant::Script(_) => 0,
            };
            let variants = [floor, plain, shipped];
            let cost = usec_per_call(con, s, &variants[2], e, 5);
            let n = if cost > 100.0 { (calls / 10).max(20) } else { calls };
            let ([floor, body, shipped], ratio, lua) = measure(con, s, &variants, e, n);
            let (acl, types) = work(s, e);
            out.push(Row {
                script: s.name,
                keys: e.keys.len(),
                args: e.args.len(),
                commands,
                acl,
                types,
                floor,
                body,
                shipped,
                ratio,
                lua,
                single_key: s.keys.len() == 1 && !s.keys[0].variadic,
            });
        }
    }
    out
}

fn main() {
    let server = common::server(&[]);
    let mut con = server.connection();
    common::load_scripts(&server);
    let calls = common::env_or("BENCH_CALLS", 1000);
    println!(
        "redis-server on 127.0.0.1:{}; median of {} rounds (BENCH_ROUNDS); {calls} calls a round and variant (BENCH_CALLS)",
        server.port(),
        common::rounds()
    );
    let mut rows = rows(&mut con, calls);
    rows.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    let mut table = Table::new(
        "server us per call: the commands alone in MULTI (floor), the body without checks, the shipped script",
        &[
            "script", "keys", "args", "cmds", "acl", "type", "floor us", "body us", "shipped us",
            "shipped / body", "body / floor",
        ],
    );
    for r in &rows {
        table.row(vec![
            r.script.to_string(),
            r.keys.to_string(),
            r.args.to_string(),
            r.commands.to_string(),
            r.acl.to_string(),
            r.types.to_string(),
            num(r.floor),
            num(r.body),
            num(r.shipped),
            format!("{:.2}x", r.ratio),
            format!("{:.2}x", r.lua),
        ]);
    }
    table.print();
    summary(&rows);
}

/// The worst and median ratios of single-key and multi-key scripts.
fn summary(rows: &[Row]) {
    for (what, single, target) in [("single-key", true, 1.10), ("multi-key", false, 1.3)] {
        let of: Vec<&Row> = rows.iter().filter(|r| r.single_key == single).collect();
        let Some(worst) = of.iter().max_by(|a, b| a.ratio.total_cmp(&b.ratio)) else {
            continue;
        };
        let mut ratios: Vec<f64> = of.iter().map(|r| r.ratio).collect();
        let above: Vec<String> = of
            .iter()
            .filter(|r| r.ratio > target)
            .map(|r| format!("{} ({} args) {:.2}x", r.script, r.args, r.ratio))
            .collect();
        println!(
            "\n{what} scripts: {} calls, median shipped / body {:.2}x, worst {} {:.2}x; above {target:.2}x: {}",
            of.len(),
            median(&mut ratios),
            worst.script,
            worst.ratio,
            if above.is_empty() { "none".to_string() } else { above.join(", ") }
        );
    }
    println!(
        "(acl: redis.acl_check_cmd calls of the checks; type: their TYPE calls; cmds: the commands the body issues for the call)"
    );
}
