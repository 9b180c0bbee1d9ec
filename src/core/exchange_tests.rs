//! The exchange with scripted outcomes: what it resends, what it files and
//! what it fails with, for the replies a failover produces (no server).

use std::time::Duration;

use redis::Value;

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
    let mut b = Batch::new();
    b.add("k{a}", cmd(&["SET", "k{a}", "1"]));
    b.add("k{a}", cmd(&["GET", "k{a}"]));
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
    let mut b = Batch::new();
    b.add("k{a}", cmd(&["INCR", "k{a}"]));
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
    let mut b = Batch::new();
    b.add("k{a}", cmd(&["SET", "k{a}", "1"]));
    let mut ex = start(b, durable(false));
    let (_, parts) = round(&mut ex, Target::Server);
    ex.settle(parts, vec![failed(vec![Value::Okay], lost())])
        .unwrap();
    let (_, parts) = round(&mut ex, Target::Server);
    assert_eq!(shape(&parts), ["CMD 0", "WAIT"]);
    ex.settle(parts, replies(vec![Value::Okay, Value::Int(1)]))
        .unwrap();
    assert!(ex.finish().unwrap().resent());

    let mut b = Batch::new();
    b.add("k{a}", cmd(&["INCR", "k{a}"]));
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
