//! `cargo bench --bench checks`: what the generated checks cost on the
//! server. For every script, the shipped script (generated checks + body)
//! against the same body without the checks (the file under `lua/`, loaded
//! here with `SCRIPT LOAD`), in the same run on the same server: server
//! microseconds per call from `INFO commandstats` (`cmdstat_evalsha` /
//! `cmdstat_evalsha_ro`, usec / calls, after `CONFIG RESETSTAT`), median of
//! the rounds, the variants interleaved (a b, b a, ...). Each call runs on
//! freshly reset data (the example's, `tests/support/examples.rs`), sent in
//! one pipeline with the reset, so every call does the same work; only the
//! script calls count in the figures. Batch scripts run a second time with
//! batch-sized calls.
//!
//! Environment: `BENCH_ROUNDS` (default 5), `BENCH_CALLS` calls per round
//! and variant (default 400).

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

/// One pipeline: reset the data, then call `sha` once; returns its reply.
fn once(con: &mut redis::Connection, s: &ScriptInfo, sha: &str, e: &Example) -> Value {
    let mut pipe = redis::pipe();
    pipe.cmd("FLUSHALL").ignore();
    for c in examples::seed().iter().chain(&e.setup) {
        pipe.add_command(c.clone()).ignore();
    }
    pipe.cmd(if s.read_only { "EVALSHA_RO" } else { "EVALSHA" })
        .arg(sha)
        .arg(e.keys.len())
        .arg(&e.keys)
        .arg(&e.args);
    let mut replies: Vec<Value> = pipe.query(con).expect("pipeline");
    replies.pop().expect("the script's reply")
}

/// Server microseconds per call of `sha` over `calls` calls.
fn usec_per_call(
    con: &mut redis::Connection,
    s: &ScriptInfo,
    sha: &str,
    e: &Example,
    calls: usize,
) -> f64 {
    common::reset_stats(con);
    for _ in 0..calls {
        once(con, s, sha, e);
    }
    let (n, usec) = common::command_stats(con, if s.read_only { "evalsha_ro" } else { "evalsha" });
    assert_eq!(n as usize, calls, "{}: every call counted", s.name);
    usec as f64 / n as f64
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
        "server us per call: shipped (generated checks + body) vs the body alone",
        &[
            "script",
            "keys",
            "args",
            "acl",
            "type",
            "shipped us",
            "unchecked us",
            "ratio",
            "extra us",
        ],
    );
    let small = examples::examples(false);
    let big = examples::examples(true);
    let mut single = Vec::new();
    for s in ALL {
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
            // Both variants answer the same.
            let (x, y) = (
                once(&mut con, s, s.sha1, e),
                once(&mut con, s, &unchecked, e),
            );
            assert_eq!(x, y, "{}: shipped and unchecked answer alike", s.name);
            assert!(!matches!(x, Value::ServerError(_)), "{}: {x:?}", s.name);
            let (mut a, mut u, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
            usec_per_call(&mut con, s, s.sha1, e, calls / 4);
            usec_per_call(&mut con, s, &unchecked, e, calls / 4);
            for round in 0..rounds {
                let (x, y) = if round % 2 == 0 {
                    let x = usec_per_call(&mut con, s, s.sha1, e, calls);
                    (x, usec_per_call(&mut con, s, &unchecked, e, calls))
                } else {
                    let y = usec_per_call(&mut con, s, &unchecked, e, calls);
                    (usec_per_call(&mut con, s, s.sha1, e, calls), y)
                };
                a.push(x);
                u.push(y);
                ratios.push(x / y);
            }
            let (a, u, r) = (median(&mut a), median(&mut u), median(&mut ratios));
            let (acl, types) = work(s, e);
            let one_key = e.keys.len() == 1;
            if one_key {
                single.push((s.name, r));
            }
            table.row(vec![
                s.name.to_string(),
                e.keys.len().to_string(),
                e.args.len().to_string(),
                acl.to_string(),
                types.to_string(),
                num(a),
                num(u),
                format!("{r:.2}x"),
                num(a - u),
            ]);
        }
    }
    table.print();
    let mut ratios: Vec<f64> = single.iter().map(|(_, r)| *r).collect();
    let worst = single
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("single-key scripts");
    println!(
        "\nsingle-key calls: median ratio {:.2}x, worst {} {:.2}x (acl: redis.acl_check_cmd calls, type: TYPE calls the checks make)",
        median(&mut ratios),
        worst.0,
        worst.1
    );
}
