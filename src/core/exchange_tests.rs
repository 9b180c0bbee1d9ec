//! The exchange with scripted outcomes: what it resends, what it files and
//! what it fails with, for the replies a failover produces (no server).

use std::time::Duration;

use redis::{Cmd, Value};

use super::*;
use crate::ServerErrorKind;
use crate::core::settings::Settings;
use crate::scripts;

fn err(text: &str) -> Value {
    redis::parse_redis_value(format!("-{text}\r\n").as_bytes()).expect("an error reply")
}

const DEMOTED_WAIT: &str = "ERR WAIT cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.";
const UNBLOCKED: &str =
    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)";

fn durable(cluster: bool) -> Settings {
    let mut s = Settings::new(cluster);
    s.durability = Durability::replicas(1, Duration::from_millis(5)).unwrap();
    s
}

fn cmd(args: &[&str]) -> Cmd {
    let mut c = redis::cmd(args[0]);
    c.arg(&args[1..]);
    c
}

/// A batch of `commands`, each filed under its first argument, its key.
fn batch_of(commands: &[&[&str]]) -> Batch {
    let mut b = Batch::new();
    for args in commands {
        b.add(args[1], cmd(args));
    }
    b
}

fn acquire() -> crate::ScriptCall<i64> {
    scripts::lock::acquire(
        "l{a}",
        "l{a}:fence",
        "l{a}:queue",
        "l{a}:places",
        "tok",
        1000,
        0,
        false,
        &[],
    )
    .unwrap()
}

/// The exchange of `batch`, with no backoff between rounds.
fn start(batch: Batch, settings: Settings) -> Exchange {
    let mut settings = settings;
    settings.policy = crate::core::RetryPolicy::builder()
        .base_delay(Duration::from_millis(1))
        .max_delay(Duration::from_millis(1))
        .build()
        .unwrap();
    Exchange::start(batch, &settings).unwrap()
}

/// The next round, every command to `target`; the refresh it asked for.
fn round(ex: &mut Exchange, target: Target) -> (Refresh, Vec<Part>) {
    let refresh = loop {
        match ex.next() {
            Next::Send(r) => break r,
            Next::Sleep(_) => continue,
            Next::Done => panic!("nothing left to send"),
        }
    };
    let targets = vec![target; ex.pending_slots().len()];
    (refresh, ex.round(targets))
}

/// What each part holds, as text: `LOAD`, `ASKING`, `CMD <i>`, `WAIT`.
fn shape(parts: &[Part]) -> Vec<String> {
    parts
        .iter()
        .flat_map(|p| p.items.iter())
        .map(|it| match it {
            Item::Load(_) => "LOAD".to_string(),
            Item::Asking => "ASKING".to_string(),
            Item::Cmd(i) => format!("CMD {i}"),
            Item::Wait => "WAIT".to_string(),
        })
        .collect()
}

fn replies(v: Vec<Value>) -> Vec<Outcome> {
    vec![Outcome::Replies(v)]
}

#[test]
fn a_durable_batch_reloads_a_missing_script_and_judges_the_batch_that_ran() {
    for (acked, durable_ok) in [(0, false), (1, true)] {
        let mut b = Batch::new();
        b.script(acquire());
        let mut ex = start(b, durable(false));
        let (_, parts) = round(&mut ex, Target::Server);
        assert_eq!(shape(&parts), ["CMD 0", "WAIT"]);
        // The call did not run: the WAIT's short count says nothing of it.
        ex.settle(
            parts,
            replies(vec![err("NOSCRIPT No matching script."), Value::Int(0)]),
        )
        .expect("a NOSCRIPT is reloaded, not NotDurable");
        let (_, parts) = round(&mut ex, Target::Server);
        assert_eq!(shape(&parts), ["LOAD", "CMD 0", "WAIT"]);
        let sha = Value::BulkString(scripts::LOCK_ACQUIRE.sha1.as_bytes().to_vec());
        ex.settle(parts, replies(vec![sha, Value::Int(7), Value::Int(acked)]))
            .unwrap();
        assert!(ex.is_done());
        match ex.finish() {
            Ok(mut r) => {
                assert!(durable_ok);
                assert_eq!(r.take::<i64>().unwrap(), 7);
            }
            Err(e) => {
                assert!(!durable_ok);
                assert!(matches!(e.kind(), ErrorKind::NotDurable { .. }), "{e}");
            }
        }
    }
}

#[test]
fn a_wait_refused_by_a_demoted_node_is_a_redirect() {
    let mut b = Batch::new();
    b.script(acquire());
    b.add("k{a}", cmd(&["SET", "k{a}", "1"]));
    let mut ex = start(b, durable(true));
    let node = Target::Node(("127.0.0.1".into(), 7000));
    let (_, parts) = round(&mut ex, node.clone());
    assert_eq!(shape(&parts), ["CMD 0", "CMD 1", "WAIT"]);
    let moved = || err("MOVED 1 127.0.0.1:7001");
    ex.settle(parts, replies(vec![moved(), moved(), err(DEMOTED_WAIT)]))
        .expect("sent again, not failed");
    let (refresh, parts) = round(&mut ex, Target::Node(("127.0.0.1".into(), 7001)));
    assert!(refresh.slots, "the slot map is read again");
    assert_eq!(shape(&parts), ["CMD 0", "CMD 1", "WAIT"]);
    ex.settle(
        parts,
        replies(vec![Value::Int(3), Value::Okay, Value::Int(1)]),
    )
    .unwrap();
    let mut r = ex.finish().unwrap();
    assert!(!r.resent(), "it had not run before");
    assert_eq!(r.take::<i64>().unwrap(), 3);
}

#[test]
fn writes_that_ran_on_a_demoted_primary_are_resent_when_idempotent() {
    // A SET (idempotent) ran, then the node was demoted while its WAIT
    // waited: the SET goes again (its reply is a resend's).
    let b = batch_of(&[&["SET", "k{a}", "1"], &["GET", "k{a}"]]);
    let mut ex = start(b, durable(true));
    let node = Target::Node(("127.0.0.1".into(), 7000));
    let (_, parts) = round(&mut ex, node.clone());
    ex.settle(
        parts,
        replies(vec![Value::Okay, Value::Nil, err(UNBLOCKED)]),
    )
    .unwrap();
    let (refresh, parts) = round(&mut ex, node);
    assert!(refresh.slots);
    assert_eq!(shape(&parts), ["CMD 0", "CMD 1", "WAIT"]);
    let one = Value::BulkString(b"1".to_vec());
    ex.settle(parts, replies(vec![Value::Okay, one, Value::Int(1)]))
        .unwrap();
    let mut r = ex.finish().unwrap();
    assert!(r.resent(), "the SET's reply is a resend's");
    r.take_value().unwrap();
    assert!(!r.resent(), "a read is not flagged");
    assert_eq!(r.take::<String>().unwrap(), "1");

    // An INCR may have been applied and then discarded: unknown.
    let b = batch_of(&[&["INCR", "k{a}"]]);
    let mut ex = start(b, durable(true));
    let (_, parts) = round(&mut ex, Target::Node(("127.0.0.1".into(), 7000)));
    let e = ex
        .settle(parts, replies(vec![Value::Int(1), err(UNBLOCKED)]))
        .unwrap_err();
    match e.kind() {
        ErrorKind::OutcomeUnknown {
            commands, cause, ..
        } => {
            assert_eq!(commands, &["INCR"]);
            assert!(cause.contains("UNBLOCKED"), "{cause}");
        }
        other => panic!("{other}"),
    }
    assert_eq!(e.server_kind(), None);
}

#[test]
fn a_lost_wait_reply_resends_idempotent_writes_and_the_rest_is_not_durable() {
    let lost =
        || redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
    let b = batch_of(&[&["SET", "k{a}", "1"]]);
    let mut ex = start(b, durable(false));
    let (_, parts) = round(&mut ex, Target::Server);
    ex.settle(parts, vec![failed(vec![Value::Okay], lost())])
        .unwrap();
    let (_, parts) = round(&mut ex, Target::Server);
    assert_eq!(shape(&parts), ["CMD 0", "WAIT"]);
    ex.settle(parts, replies(vec![Value::Okay, Value::Int(1)]))
        .unwrap();
    assert!(ex.finish().unwrap().resent());

    let b = batch_of(&[&["INCR", "k{a}"]]);
    let mut ex = start(b, durable(false));
    let (_, parts) = round(&mut ex, Target::Server);
    ex.settle(parts, vec![failed(vec![Value::Int(1)], lost())])
        .unwrap();
    assert!(ex.is_done(), "it ran: not sent again");
    let e = ex.finish().unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::NotDurable {
                acknowledged: 0,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_replication_wait_released_by_a_demotion_resends_the_acquire() {
    // The lock's own WAIT (a repeatable command after its script): the
    // script ran on a primary that was demoted while the WAIT waited.
    let mut b = Batch::new();
    b.script(acquire());
    b.add_repeatable("l{a}", cmd(&["WAIT", "1", "100"]));
    let mut ex = start(b, Settings::new(true));
    let node = Target::Node(("127.0.0.1".into(), 7000));
    let (_, parts) = round(&mut ex, node.clone());
    assert_eq!(shape(&parts), ["CMD 0", "CMD 1"]);
    ex.settle(parts, replies(vec![Value::Int(5), err(UNBLOCKED)]))
        .unwrap();
    let (refresh, parts) = round(&mut ex, node);
    assert!(refresh.slots);
    assert_eq!(shape(&parts), ["CMD 0", "CMD 1"]);
    ex.settle(parts, replies(vec![Value::Int(9), Value::Int(1)]))
        .unwrap();
    let mut r = ex.finish().unwrap();
    assert!(r.resent());
    assert_eq!(r.take::<i64>().unwrap(), 9);
    assert_eq!(r.take::<i64>().unwrap(), 1);
}

#[test]
fn demotion_errors_are_typed_and_retryable() {
    for text in [UNBLOCKED, DEMOTED_WAIT] {
        let Value::ServerError(e) = err(text) else {
            unreachable!()
        };
        let e = Error::from_redis(None, e.into());
        assert_eq!(e.server_kind(), Some(ServerErrorKind::Demoted), "{text}");
        assert!(e.is_retryable(), "{text}");
    }
}

// ---- The protocol's outcomes, one by one: reloads, redirects, backoffs,
// ---- lost replies, and a wrapped cluster connection's command-by-command
// ---- sending.

fn node(port: u16) -> Target {
    Target::Node(("127.0.0.1".into(), port))
}

fn sha(script: &ScriptInfo) -> Value {
    Value::BulkString(script.sha1.as_bytes().to_vec())
}

fn lost() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
}

fn refused() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
}

fn call(key: &str) -> crate::ScriptCall<i64> {
    scripts::lock::acquire(
        key,
        &format!("{key}:fence"),
        &format!("{}:queue", key),
        &format!("{}:places", key),
        "tok",
        1000,
        0,
        false,
        &[],
    )
    .unwrap()
}

/// A wrapped redis-rs cluster connection: no node reached by the driver.
fn wrapped() -> Settings {
    let mut s = Settings::new(true);
    s.per_node = false;
    s
}

/// What the driver's command-by-command loop over the router does with
/// `answers`, one per command it sends: the part's outcome and how many
/// commands went out.
fn route_through(
    part: &Part,
    answers: &mut dyn FnMut(usize) -> redis::RedisResult<Value>,
) -> (Outcome, usize) {
    let mut routed = Routed::new(part.len());
    for k in 0..part.len() {
        if let Some(outcome) = routed.file(answers(k)) {
            return (outcome, k + 1);
        }
    }
    (Routed::empty(), 0)
}

#[test]
fn a_noscript_in_the_middle_reloads_that_script_alone_and_keeps_the_replies_around_it() {
    let mut b = Batch::new();
    b.add("x{b}", cmd(&["SET", "x{b}", "1"]));
    b.script(call("l{a}"));
    b.add("y{c}", cmd(&["GET", "y{c}"]));
    let mut ex = start(b, Settings::new(true));
    let (_, parts) = round(&mut ex, node(7000));
    assert_eq!(shape(&parts), ["CMD 0", "CMD 1", "CMD 2"]);
    ex.settle(
        parts,
        replies(vec![
            Value::Okay,
            err("NOSCRIPT No matching script."),
            Value::Nil,
        ]),
    )
    .unwrap();
    assert!(
        matches!(ex.next(), Next::Send(r) if r == Refresh::default()),
        "a reload goes at once"
    );
    let targets = vec![node(7000); ex.pending_slots().len()];
    let parts = ex.round(targets);
    assert_eq!(shape(&parts), ["LOAD", "CMD 1"]);
    ex.settle(
        parts,
        replies(vec![sha(&scripts::LOCK_ACQUIRE), Value::Int(4)]),
    )
    .unwrap();
    let mut r = ex.finish().unwrap();
    assert!(r.take_value().unwrap() == Value::Okay);
    assert_eq!(r.take::<i64>().unwrap(), 4);
    assert_eq!(r.take_value().unwrap(), Value::Nil);
}

#[test]
fn a_noscript_before_a_write_of_its_domain_that_ran_interrupts_the_batch() {
    // One server: the whole batch is one ordering domain. The SET behind
    // the missing script ran ahead of it; sending the script now would
    // reorder them.
    let mut b = Batch::new();
    b.script(call("l{a}"));
    b.add("k{a}", cmd(&["SET", "k{a}", "1"]));
    let mut ex = start(b, Settings::new(false));
    let (_, parts) = round(&mut ex, Target::Server);
    let e = ex
        .settle(
            parts,
            replies(vec![err("NOSCRIPT No matching script."), Value::Okay]),
        )
        .unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::PipelineInterrupted {
                ran_in_order: 0,
                total: 2
            }
        ),
        "{e}"
    );
}

#[test]
fn moved_reads_the_slot_map_again_and_ask_goes_to_the_node_named_after_asking() {
    let b = batch_of(&[&["SET", "k{a}", "1"], &["GET", "m{b}"]]);
    let mut ex = start(b, Settings::new(true));
    let (_, parts) = round(&mut ex, node(7000));
    ex.settle(
        parts,
        replies(vec![
            err("MOVED 15495 127.0.0.1:7001"),
            err("ASK 3300 127.0.0.1:7002"),
        ]),
    )
    .unwrap();
    // By the old map both still go to 7000: the MOVED one after the map is
    // read again, the ASK one to the node it named.
    let (refresh, parts) = round(&mut ex, node(7000));
    assert!(refresh.slots, "MOVED reads the slot map again");
    assert_eq!(shape(&parts), ["CMD 0", "ASKING", "CMD 1"]);
    assert_eq!(parts[0].target, node(7000));
    assert_eq!(parts[1].target, node(7002));
    ex.settle(
        parts,
        vec![
            Outcome::Replies(vec![Value::Okay]),
            Outcome::Replies(vec![Value::Okay, Value::Nil]),
        ],
    )
    .unwrap();
    let mut r = ex.finish().unwrap();
    assert_eq!(r.take_value().unwrap(), Value::Okay);
    assert_eq!(r.take_value().unwrap(), Value::Nil);

    // A wrapped cluster connection follows ASK by its own settings: the
    // command stays on the router, without ASKING.
    let mut b = Batch::new();
    b.add_keyless(cmd(&["PING"]));
    let mut ex = start(b, wrapped());
    let (_, parts) = round(&mut ex, Target::Router);
    ex.settle(parts, replies(vec![err("ASK 1 127.0.0.1:7002")]))
        .unwrap();
    let (_, parts) = round(&mut ex, Target::Router);
    assert_eq!(shape(&parts), ["CMD 0"]);
    assert_eq!(parts[0].target, Target::Router);
}

#[test]
fn tryagain_and_clusterdown_go_again_after_a_backoff_and_end_as_the_refusal() {
    for (text, stale) in [
        (
            "TRYAGAIN Multiple keys request during rehashing of slot",
            false,
        ),
        ("CLUSTERDOWN The cluster is down", true),
    ] {
        let b = batch_of(&[&["GET", "k{a}"]]);
        let mut settings = Settings::new(true);
        settings.per_node = false;
        let mut ex = Exchange::start(b, &{
            settings.policy = crate::core::RetryPolicy::builder()
                .attempts(3)
                .base_delay(Duration::from_millis(1))
                .max_delay(Duration::from_millis(1))
                .build()
                .unwrap();
            settings
        })
        .unwrap();
        let mut sent = 0;
        loop {
            let (refresh, parts) = round(&mut ex, Target::Router);
            if sent > 0 {
                assert_eq!(refresh.slots, stale, "{text}");
                assert_eq!(
                    refresh.router, stale,
                    "{text}: the router's view is stale too"
                );
            }
            sent += 1;
            ex.settle(parts, replies(vec![err(text)])).unwrap();
            if ex.is_done() {
                break;
            }
            assert!(
                matches!(ex.next(), Next::Sleep(_)),
                "{text}: a backoff first"
            );
        }
        assert_eq!(sent, 3, "{text}: as many attempts as the policy allows");
        let e = ex.finish().unwrap().take::<String>().unwrap_err();
        assert!(
            e.to_string().contains(text.split(' ').next().unwrap()),
            "{e}"
        );
    }
}

#[test]
fn a_reply_lost_after_sending_resends_the_idempotent_and_fails_the_rest_as_unknown() {
    // SET and GET are safe to send twice: both go again after a reconnect,
    // and the SET's reply is flagged a resend's.
    let b = batch_of(&[&["SET", "k{a}", "1"], &["GET", "k{a}"]]);
    let mut ex = start(b, Settings::new(false));
    let (_, parts) = round(&mut ex, Target::Server);
    ex.settle(parts, vec![failed(Vec::new(), lost())]).unwrap();
    assert!(
        matches!(ex.next(), Next::Sleep(_)),
        "a reconnect after a backoff"
    );
    let (refresh, parts) = round(&mut ex, Target::Server);
    assert!(refresh.slots);
    assert_eq!(shape(&parts), ["CMD 0", "CMD 1"]);
    let one = Value::BulkString(b"1".to_vec());
    ex.settle(parts, replies(vec![Value::Okay, one])).unwrap();
    let mut r = ex.finish().unwrap();
    assert!(r.resent());
    r.take_value().unwrap();
    assert_eq!(r.take::<String>().unwrap(), "1");

    // An INCR and a script that is not idempotent may have run: unknown,
    // naming both; the SET whose reply came back is not in doubt.
    let mut b = batch_of(&[&["SET", "k{a}", "1"], &["INCR", "n{a}"]]);
    b.script(crate::ScriptCall::<Value>::raw(
        &scripts::RATE_LIMIT_THROTTLE,
        &["t{a}"],
        &["10", "1", "1000", "1", "1"],
    ));
    let mut ex = start(b, Settings::new(false));
    let (_, parts) = round(&mut ex, Target::Server);
    let e = ex
        .settle(parts, vec![failed(vec![Value::Okay], lost())])
        .unwrap_err();
    let ErrorKind::OutcomeUnknown {
        scripts,
        commands,
        cause,
    } = e.kind()
    else {
        panic!("{e}");
    };
    assert_eq!(commands, &["INCR"]);
    assert_eq!(scripts, &["rate_limit.throttle"]);
    assert!(cause.contains("connection was lost"), "{cause}");

    // A refused connection sent nothing: the INCR goes again, unflagged.
    let b = batch_of(&[&["INCR", "n{a}"]]);
    let mut ex = start(b, Settings::new(false));
    let (_, parts) = round(&mut ex, Target::Server);
    ex.settle(parts, vec![failed(Vec::new(), refused())])
        .unwrap();
    let (_, parts) = round(&mut ex, Target::Server);
    ex.settle(parts, replies(vec![Value::Int(1)])).unwrap();
    let mut r = ex.finish().unwrap();
    assert!(!r.resent());
    assert_eq!(r.take::<i64>().unwrap(), 1);
}

#[test]
fn a_cache_flushed_every_round_gives_up_after_max_rounds_of_reloads() {
    let mut b = Batch::new();
    b.script(call("l{a}"));
    let mut ex = start(b, Settings::new(false));
    let mut rounds = 0;
    let e = loop {
        let (_, parts) = round(&mut ex, Target::Server);
        rounds += 1;
        let mut answer = vec![err("NOSCRIPT No matching script.")];
        if rounds > 1 {
            answer.insert(0, sha(&scripts::LOCK_ACQUIRE));
        }
        if let Err(e) = ex.settle(parts, replies(answer)) {
            break e;
        }
    };
    assert_eq!(rounds, MAX_ROUNDS + 1);
    assert!(
        matches!(e.kind(), ErrorKind::PipelineInterrupted { .. }),
        "{e}"
    );
}

#[test]
fn more_missing_scripts_than_reload_rounds_load_when_each_round_progresses() {
    // On a wrapped cluster connection, sent command by command, each
    // missing script stops its part: a batch of MAX_ROUNDS + 4 scripts the
    // server lacks takes a reload round each, and succeeds because every
    // round gave a call its reply.
    let n = MAX_ROUNDS + 4;
    let chosen: Vec<&'static ScriptInfo> = scripts::ALL.iter().copied().take(n).collect();
    let mut b = Batch::new();
    for (i, s) in chosen.iter().enumerate() {
        b.script(crate::ScriptCall::<Value>::raw(
            s,
            &[format!("k{{{i}}}")],
            &[] as &[&str],
        ));
    }
    let mut ex = start(b, wrapped());
    let mut loaded: Vec<&'static str> = Vec::new();
    let (mut rounds, mut sent_total) = (0, 0);
    while !ex.is_done() {
        let (_, parts) = round(&mut ex, Target::Router);
        assert_eq!(parts.len(), 1);
        rounds += 1;
        let part = &parts[0];
        let (outcome, sent) = route_through(part, &mut |k| {
            Ok(match part.items[k] {
                Item::Load(s) => {
                    loaded.push(s.name);
                    sha(s)
                }
                Item::Cmd(i) if loaded.contains(&chosen[i].name) => Value::Int(i as i64),
                _ => err("NOSCRIPT No matching script."),
            })
        });
        // It stops at the first call that did not run: the rest is not sent.
        let expect = if rounds == 1 { 1 } else { 3 };
        assert_eq!(sent, expect.min(part.len()), "round {rounds}");
        sent_total += sent;
        ex.settle(parts, vec![outcome]).unwrap();
    }
    assert_eq!(rounds, n + 1);
    assert_eq!(sent_total, 1 + 3 * (n - 1) + 2);
    let mut r = ex.finish().unwrap();
    for i in 0..n {
        assert_eq!(r.take::<i64>().unwrap(), i as i64);
    }
}

#[test]
fn a_wrapped_cluster_connection_stops_at_the_first_reply_proving_a_command_did_not_run() {
    let b = batch_of(&[
        &["SET", "a{1}", "1"],
        &["SET", "b{2}", "1"],
        &["SET", "c{3}", "1"],
    ]);
    let mut ex = start(b, wrapped());
    let (_, parts) = round(&mut ex, Target::Router);
    for refusal in [
        "TRYAGAIN later",
        "MOVED 1 127.0.0.1:7001",
        "CLUSTERDOWN down",
    ] {
        let (outcome, sent) = route_through(&parts[0], &mut |k| {
            Ok(if k == 1 { err(refusal) } else { Value::Okay })
        });
        assert_eq!(sent, 2, "{refusal}: the third SET is not sent");
        assert!(
            matches!(&outcome, Outcome::Stopped(v) if v.len() == 2),
            "{refusal}"
        );
    }
    // An error reply that does not prove a command did not run (it ran and
    // failed) goes on; a lost connection ends the part, keeping what came.
    let (outcome, sent) = route_through(&parts[0], &mut |k| {
        Ok(if k == 0 {
            err("WRONGTYPE no")
        } else {
            Value::Okay
        })
    });
    assert_eq!(sent, 3);
    assert!(matches!(outcome, Outcome::Replies(v) if v.len() == 3));
    let (outcome, sent) = route_through(&parts[0], &mut |k| {
        if k == 1 { Err(lost()) } else { Ok(Value::Okay) }
    });
    assert_eq!(sent, 2);
    assert!(
        matches!(outcome, Outcome::Failed { ref replies, reached: true, .. } if replies.len() == 1)
    );
    // The stopped part's rest goes in the next round, at once, after the
    // command that stopped it.
    let (outcome, _) = route_through(&parts[0], &mut |k| {
        Ok(if k == 1 {
            err("TRYAGAIN later")
        } else {
            Value::Okay
        })
    });
    ex.settle(parts, vec![outcome]).unwrap();
    assert!(
        matches!(ex.next(), Next::Sleep(_)),
        "the TRYAGAIN backs off first"
    );
    let (_, parts) = round(&mut ex, Target::Router);
    assert_eq!(shape(&parts), ["CMD 1", "CMD 2"]);
    ex.settle(parts, replies(vec![Value::Okay, Value::Okay]))
        .unwrap();
    let mut r = ex.finish().unwrap();
    assert!(!r.resent());
    for _ in 0..3 {
        assert_eq!(r.take_value().unwrap(), Value::Okay);
    }
}
