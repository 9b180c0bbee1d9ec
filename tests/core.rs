//! The call core against real servers: batches in order with errors in
//! place, `NOSCRIPT` recovery, one pipeline per node on a cluster, and the op
//! combinators — each through both drivers.

mod support;

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use redis::Value;
use redis_patterns::core::machine::{Env, Machine, Step};
use redis_patterns::{Batch, ErrorKind, Op, Replies, ServerErrorKind, scripts};
use support::Driver;

fn cmd(name: &str, args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(name);
    for a in args {
        c.arg(*a);
    }
    c
}

/// Sets, reads and fails in one batch: replies in order, the failing
/// command's typed error in its place, the others unaffected.
fn batch_in_order(d: &mut Driver) {
    let mut b = Batch::new();
    b.add("k{1}", cmd("SET", &["k{1}", "a"]))
        .add("k{2}", cmd("RPUSH", &["k{2}", "x"]))
        .add("k{2}", cmd("INCR", &["k{2}"]))
        .add("k{1}", cmd("GET", &["k{1}"]));
    let replies = d.run(b).unwrap();
    assert_eq!(replies.len(), 4);
    let each = replies.each::<Value>();
    assert!(matches!(each[0], Ok(Value::Okay)), "{:?}", each[0]);
    assert!(matches!(each[1], Ok(Value::Int(1))));
    let err = each[2].as_ref().unwrap_err();
    assert_eq!(err.server_kind(), Some(ServerErrorKind::WrongType), "{err}");
    assert!(matches!(&each[3], Ok(Value::BulkString(v)) if v == b"a"));
}

#[test]
fn batches_keep_order_and_errors_in_place_on_one_server_and_a_cluster() {
    support::on_server_and_cluster(batch_in_order);
}

/// 600 keys over every slot range: each command lands on its node and the
/// replies come back in order.
fn fan_out(d: &mut Driver) {
    let keys: Vec<String> = (0..600).map(|i| format!("fan:{i}")).collect();
    let mut set = Batch::new();
    for (i, k) in keys.iter().enumerate() {
        set.add(k, cmd("SET", &[k, &i.to_string()]));
    }
    d.run(set).unwrap().all::<()>().unwrap();
    let mut get = Batch::new();
    for k in &keys {
        get.add(k, cmd("GET", &[k]));
    }
    let values: Vec<String> = d.run(get).unwrap().all().unwrap();
    let expected: Vec<String> = (0..600).map(|i| i.to_string()).collect();
    assert_eq!(values, expected, "{}", d.name());
}

#[test]
fn a_cluster_fan_out_lands_every_command_on_its_node_in_order() {
    let cluster = support::cluster();
    support::each_cluster_driver(&cluster, |d| {
        assert!(d.is_cluster());
        fan_out(d);
        let per_node: Vec<i64> = cluster
            .nodes()
            .iter()
            .map(|n| support::dbsize(&mut n.connection()))
            .collect();
        assert_eq!(per_node.iter().sum::<i64>(), 600);
        assert!(per_node.iter().all(|&n| n > 100), "{per_node:?}");
    });
    let server = support::server();
    support::each_driver(&server, fan_out);
}

/// Empties the script cache and deletes the functions: whichever call mode
/// the test runs in, the next calls find nothing loaded.
fn flush_scripts(con: &mut redis::Connection) {
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query(con)
        .expect("SCRIPT FLUSH");
    let _: () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query(con)
        .expect("FUNCTION FLUSH");
}

/// After `SCRIPT FLUSH` (`FUNCTION FLUSH` in functions mode) a single call
/// and a batch of calls reload and run every call exactly once, in order:
/// fencing tokens 1, 2, 3 … with no gap.
fn survive_flush(d: &mut Driver, flush: &dyn Fn()) {
    flush();
    let fence = d.run(support::lock_acquire("l{a}", "t", 10_000)).unwrap();
    assert_eq!(fence, 1, "{}", d.name());
    flush();
    let mut b = Batch::new();
    for i in 0..5 {
        b.script(scripts::lock::acquire(
            &format!("l{{a}}:{i}"),
            "l{a}:fence",
            &format!("l{{a}}:{i}:queue"),
            &format!("l{{a}}:{i}:places"),
            "t",
            10_000,
            0,
            false,
            &[0],
        ));
    }
    let fences: Vec<i64> = d.run(b).unwrap().all().unwrap();
    assert_eq!(fences, [2, 3, 4, 5, 6], "{}", d.name());
}

#[test]
fn calls_and_batches_reload_after_script_flush() {
    let server = support::server();
    support::each_driver(&server, |d| {
        survive_flush(d, &|| flush_scripts(&mut server.connection()))
    });
    let cluster = support::cluster();
    support::each_cluster_driver(&cluster, |d| {
        survive_flush(d, &|| {
            for n in cluster.nodes() {
                flush_scripts(&mut n.connection());
            }
        })
    });
}

/// Forwards to an inner op and counts the round trips it asks for.
struct Counting<T> {
    inner: Op<T>,
    sends: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl<T: Send + 'static> Machine for Counting<T> {
    type Output = T;
    fn step(&mut self, env: &Env, replies: Option<Replies>) -> redis_patterns::Result<Step<T>> {
        let step = self.inner.step(env, replies)?;
        if matches!(step, Step::Send(_)) {
            self.sends
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(step)
    }
}

fn get(key: &str) -> Op<Option<String>> {
    Op::cmd(key, cmd("GET", &[key]))
}

#[test]
fn joined_ops_share_round_trips_and_loops_do_not_nest() {
    support::on_server(|d| {
        d.run(Op::<()>::cmd("a", cmd("SET", &["a", "1"]))).unwrap();
        d.run(Op::<()>::cmd("b", cmd("SET", &["b", "2"]))).unwrap();
        let sends = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let joined = Op::join(vec![get("a"), get("b"), get("c")]);
        let counted = Op::from_machine(Counting {
            inner: joined,
            sends: sends.clone(),
        });
        let values = d.run(counted).unwrap();
        assert_eq!(values, [Some("1".into()), Some("2".into()), None]);
        assert_eq!(sends.load(std::sync::atomic::Ordering::Relaxed), 1);

        // and_then: the second op sees the first one's result.
        let chained = get("a").and_then(|a| {
            let v = a.unwrap_or_default() + "0";
            Op::<()>::cmd("a", cmd("SET", &["a", &v]))
        });
        d.run(chained).unwrap();
        assert_eq!(d.run(get("a")).unwrap().as_deref(), Some("10"));

        // repeat: 20 rounds of INCR with a short sleep between, no nesting.
        let started = Instant::now();
        let looped = Op::repeat(0u32, |n| {
            *n += 1;
            let done = *n == 20;
            Op::<i64>::cmd("n", cmd("INCR", &["n"])).and_then(move |_| {
                if done {
                    Op::ready(ControlFlow::Break(()))
                } else {
                    Op::sleep(Duration::from_millis(1)).map(|_| ControlFlow::Continue(()))
                }
            })
        });
        d.run(looped).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(19));
        assert_eq!(d.run(get("n")).unwrap().as_deref(), Some("20"));

        // or_else sees the typed error; a failed op sends nothing.
        let recovered = Op::<i64>::cmd("a", cmd("LPOP", &["a"]))
            .map(|_| "popped".to_string())
            .or_else(|e| Op::ready(format!("{:?}", e.server_kind())));
        assert_eq!(d.run(recovered).unwrap(), "Some(WrongType)");
        let refused: Op<i64> = Op::fail(redis_patterns::Error::invalid("x", "must be y"));
        let e = d.run(refused).unwrap_err();
        assert!(matches!(
            e.kind(),
            ErrorKind::InvalidArgument { script: None, .. }
        ));
        assert_eq!(e.to_string(), "invalid x: must be y");
    });
}

#[test]
fn a_plain_connection_to_a_cluster_node_is_refused_with_a_clear_message() {
    let cluster = support::cluster();
    let con = cluster.nodes()[0].connection();
    let e = redis_patterns::Connection::from_redis(con).unwrap_err();
    assert!(e.to_string().contains("Connection::open"), "{e}");
    let server = support::server();
    let c = redis_patterns::Connection::from_redis(server.connection()).unwrap();
    assert!(!c.is_cluster());
}

#[test]
fn config_get_answers_on_a_server_and_a_cluster_and_none_when_denied() {
    let server = support::server_with(&["--set-max-intset-entries", "300"]);
    let cluster = support::cluster();
    for url in [server.url(), cluster.nodes()[1].url()] {
        for mut d in support::drivers(&url) {
            let op = redis_patterns::core::config_get(&["set-max-intset-entries"]);
            let map = d.run(op).unwrap().expect("CONFIG allowed");
            let want = if url == server.url() { "300" } else { "512" };
            assert_eq!(map["set-max-intset-entries"], want, "{} {url}", d.name());
        }
    }
    let mut con = server.connection();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("noconfig")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .arg("-config")
        .query(&mut con)
        .unwrap();
    let url = format!("redis://noconfig:pw@127.0.0.1:{}/", server.port());
    for mut d in support::drivers(&url) {
        let op = redis_patterns::core::config_get(&["set-max-intset-entries"]);
        assert_eq!(d.run(op).unwrap(), None, "{}", d.name());
    }
}

#[test]
fn a_cluster_with_replicas_forms_and_serves_from_its_primaries() {
    let cluster = redis_patterns_test_support::LocalCluster::builder()
        .replicas(1)
        .node_timeout(Duration::from_millis(2000))
        .start()
        .expect("cluster with replicas");
    assert_eq!(cluster.nodes().len(), 6);
    assert_eq!(cluster.primaries().len(), 3);
    assert_eq!(cluster.replicas().len(), 3);
    for mut d in support::drivers(&cluster.nodes()[0].url()) {
        fan_out(&mut d);
    }
}

/// Waits on shard channels: a message published after the op subscribed
/// (a zero-timeout wait) and before its next wait wakes that wait at once;
/// a wait with no message ends at its timeout; a wait inside a join ends
/// with the join's. Whatever the timing, the outcomes are fixed by order.
#[test]
fn a_wait_is_woken_by_a_message_on_its_shard_channel_on_one_server_and_a_cluster() {
    support::on_server_and_cluster(|d| {
        let ch = "w:{chan}:wake";
        let publish =
            move |payload: &'static str| Op::<i64>::cmd(ch, cmd("SPUBLISH", &[ch, payload]));
        let woken = d
            .run(Op::wait(ch, Duration::ZERO).and_then(move |first| {
                publish("one").and_then(move |receivers| {
                    Op::wait(ch, Duration::from_secs(60)).map(move |w| (first, receivers, w))
                })
            }))
            .unwrap();
        assert_eq!(
            woken,
            (false, 1, true),
            "{}: subscribed, published to 1, woken",
            d.name()
        );
        // Nothing published: the timeout ends it.
        assert!(
            !d.run(Op::wait("w:{quiet}:wake", Duration::from_millis(30)))
                .unwrap()
        );
        // Two waits side by side end together (the shorter timeout).
        let both = d
            .run(Op::join(vec![
                Op::wait("w:{a}:wake", Duration::from_millis(20)),
                Op::wait("w:{b}:wake", Duration::from_secs(60)),
            ]))
            .unwrap();
        assert_eq!(both, [false, false]);
    });
}

/// Under a storm of `SCRIPT FLUSH` from another client, batches of script
/// calls reload their scripts and go on (within `MAX_ROUNDS` rounds of
/// reloads); whatever happens, no call runs twice: each call adds 1 to a
/// field of its own, which ends at 1 (or 0 in a batch that stopped).
#[test]
fn batches_survive_a_script_flush_storm_without_running_anything_twice() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let server = support::server();
    let stop = Arc::new(AtomicBool::new(false));
    let flushes = Arc::new(AtomicUsize::new(0));
    let storm = {
        let (stop, flushes, mut con) = (stop.clone(), flushes.clone(), server.connection());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                flush_scripts(&mut con);
                flushes.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(300));
            }
        })
    };
    let (ran, stopped) = (std::sync::Mutex::new(0usize), std::sync::Mutex::new(0usize));
    // SCRIPT FLUSH empties the script cache: EVALSHA mode.
    for mut d in support::drivers_in(&server.url(), redis_patterns::CallMode::Evalsha) {
        let d = &mut d;
        for b in 0..25 {
            let key = format!("storm:{}:{b}", d.name());
            let mut batch = Batch::new();
            for i in 0..300 {
                batch.script(scripts::sharded_hash::incr(
                    &key,
                    "storm:req",
                    format!("f{i}").as_bytes(),
                    1,
                    0,
                    0,
                ));
            }
            let result = d.run(batch);
            let values: Vec<i64> = d.cmd(&key, redis::cmd("HVALS").arg(&key));
            assert!(
                values.iter().all(|&v| v == 1),
                "{}: a call ran twice",
                d.name()
            );
            match result {
                Ok(replies) => {
                    assert_eq!(replies.all::<i64>().unwrap(), vec![1; 300]);
                    assert_eq!(values.len(), 300);
                    *ran.lock().unwrap() += 1;
                }
                Err(e) => {
                    assert!(
                        matches!(e.kind(), ErrorKind::PipelineInterrupted { .. }),
                        "{}: {e}",
                        d.name()
                    );
                    *stopped.lock().unwrap() += 1;
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    storm.join().unwrap();
    let (ran, stopped) = (*ran.lock().unwrap(), *stopped.lock().unwrap());
    let stats = server.info("commandstats");
    let loads = stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_script|load:calls="))
        .and_then(|rest| rest.split(',').next())
        .unwrap_or("?")
        .to_string();
    println!(
        "flush storm: {} flushes, {loads} script loads; {ran} batches of 300 calls ran, {stopped} stopped in order",
        flushes.load(Ordering::Relaxed)
    );
    assert!(ran > 0, "no batch got through the storm");
}

/// A read that answered `NOSCRIPT` while a later read of its slot ran is
/// sent again (reads commute); a write in the same place still stops the
/// batch in order.
#[test]
fn reads_that_did_not_run_are_sent_again_after_later_reads_of_their_slot() {
    let server = support::server();
    // SCRIPT FLUSH empties the script cache: EVALSHA mode.
    for mut d in support::drivers_in(&server.url(), redis_patterns::CallMode::Evalsha) {
        let d = &mut d;
        let mut con = server.connection();
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
        let _: () = redis::cmd("SET")
            .arg("v{t}:count")
            .arg(3)
            .query(&mut con)
            .unwrap();
        flush_scripts(&mut con);
        let mut reads = Batch::new();
        reads.script(scripts::visits::contains("v{t}:count", "v{t}:0", 7));
        reads.add("v{t}:count", cmd("GET", &["v{t}:count"]));
        let mut replies = d.run(reads).unwrap();
        assert_eq!(replies.take::<Vec<i64>>().unwrap(), [0, 3], "{}", d.name());
        assert_eq!(replies.take::<i64>().unwrap(), 3);
        flush_scripts(&mut con);
        let mut writes = Batch::new();
        writes.script(scripts::lock::acquire(
            "v{t}:l",
            "v{t}:f",
            "v{t}:l:queue",
            "v{t}:l:places",
            "a",
            60_000,
            0,
            false,
            &[0],
        ));
        writes.add("v{t}:count", cmd("INCR", &["v{t}:count"]));
        let e = d.run(writes).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::PipelineInterrupted { .. }),
            "{e}"
        );
    }
}

/// A request's time to live is refused exactly where the scripts that take
/// one would refuse it: up to the top of their `request_ttl_ms` range.
#[test]
fn a_request_ttl_is_bounded_like_the_scripts_that_take_it() {
    use redis_patterns::core::RequestId;
    use redis_patterns::script::Bound;
    let mut takers = 0;
    for s in scripts::ALL {
        let Some(arg) = s.arg("request_ttl_ms") else {
            continue;
        };
        let Some(Bound::Value(max)) = arg.max else {
            panic!("{}: request_ttl_ms has no numeric maximum", s.name);
        };
        let max = u64::try_from(max).expect("a positive maximum");
        assert!(RequestId::with_ttl("r", Duration::from_millis(max)).is_ok());
        let over = RequestId::with_ttl("r", Duration::from_millis(max + 1));
        assert!(over.is_err(), "{}: {max} + 1 ms accepted", s.name);
        takers += 1;
    }
    assert!(
        takers >= 2,
        "sharded_hash.incr and packed.add take a request"
    );
}
