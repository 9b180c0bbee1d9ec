//! `redis-patterns load` on a Redis Cluster and the exported Functions
//! library, driven through the binary and `redis-cli`: after `load` the
//! printed SHAs run with `redis-cli -c EVALSHA` for keys on every node, the
//! read-only ones on replicas too, and after `load --functions` (or
//! `FUNCTION LOAD` of the exported `functions.lua`) `FCALL` runs.

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redis_patterns::functions;
use redis_patterns::scripts::{self, ALL};
use redis_patterns_test_support::{LocalCluster, LocalServer, cli_binary};

use common::redis_cli as cli;
use support::key_on;

/// Runs `redis-patterns load --url <url> [extra]`; returns its stdout and
/// stderr.
fn load(url: &str, extra: &[&str]) -> (String, String) {
    let mut args = vec!["load"];
    args.extend_from_slice(extra);
    let run = common::cli(url, &args).success();
    (run.stdout, run.stderr)
}

/// The columns after `name` on its line of `load`'s output.
fn columns<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} in load output:\n{out}"))
        .split(' ')
        .collect()
}

/// `FCALL lock_acquire` of the lock `key` (its fence `{key}:fence`) with
/// `token` and a lease of `lease_ms`, through `redis-cli -c` at `port`
/// (with now_us 0: the fencing token counts acquisitions).
fn fcall_acquire(port: u16, key: &str, token: &str, lease_ms: &str) -> String {
    let (fence, queue, places) = (
        format!("{key}:fence"),
        format!("{key}:queue"),
        format!("{key}:places"),
    );
    cli(
        port,
        true,
        &[
            "FCALL",
            "lock_acquire",
            "4",
            key,
            &fence,
            &queue,
            &places,
            token,
            lease_ms,
            "0",
            "0",
            "0",
        ],
    )
}

fn script_exists(node: &LocalServer, sha: &str) -> bool {
    let v: Vec<i64> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(sha)
        .query(&mut node.connection())
        .expect("SCRIPT EXISTS");
    v == [1]
}

/// The functions of the library on `node`, counted in `redis-cli FUNCTION
/// LIST` (one `name` line per function).
fn function_count(node: &LocalServer) -> usize {
    cli(
        node.port(),
        false,
        &["FUNCTION", "LIST", "LIBRARYNAME", functions::NAME],
    )
    .lines()
    .filter(|l| *l == "name")
    .count()
}

#[test]
fn load_on_a_cluster_makes_every_sha_work_against_any_node() {
    let cluster = LocalCluster::start().expect("a three-node cluster");
    let nodes = cluster.nodes();
    // Pointed at one node, load reaches the others.
    let (out, stderr) = load(&nodes[1].url(), &[]);
    assert!(
        stderr.contains(&format!("loaded {} scripts on 3 primaries", ALL.len())),
        "{stderr}"
    );
    for s in ALL {
        assert_eq!(columns(&out, s.name), [s.sha1], "{}", s.name);
        for (i, n) in nodes.iter().enumerate() {
            assert!(script_exists(n, s.sha1), "{} on node {i}", s.name);
        }
    }
    let acquire = columns(&out, "lock.acquire")[0].to_string();
    let release = columns(&out, "lock.release")[0].to_string();
    assert_eq!(acquire, scripts::LOCK_ACQUIRE.sha1);
    let entry = nodes[0].port();
    evalsha_finds_the_scripts_on_every_node(entry, nodes, &acquire, &release);
    // --functions: the library on every primary, FCALL by name.
    let (out, stderr) = load(&nodes[2].url(), &["--functions"]);
    assert!(
        stderr.contains("and the library redis_patterns"),
        "{stderr}"
    );
    for s in ALL {
        assert_eq!(columns(&out, s.name), [s.sha1, s.function], "{}", s.name);
    }
    for n in nodes {
        assert_eq!(function_count(n), ALL.len(), "port {}", n.port());
        let key = key_on(n, "job");
        assert_eq!(
            fcall_acquire(entry, &key, "tok2", "30000"),
            "2",
            "the fence goes on from EVALSHA's"
        );
        let left: i64 = cli(entry, true, &["FCALL_RO", "lock_owned", "1", &key, "tok2"])
            .parse()
            .expect("an integer");
        assert!(left > 0 && left <= 30_000, "{left}");
    }
}

/// redis-cli -c against node `entry`, for a key on each node: it follows the
/// redirect and EVALSHA finds the script where the key lives.
fn evalsha_finds_the_scripts_on_every_node(
    entry: u16,
    nodes: &[LocalServer],
    acquire: &str,
    release: &str,
) {
    for n in nodes {
        let key = key_on(n, "job");
        let (fence, queue, places) = (
            format!("{key}:fence"),
            format!("{key}:queue"),
            format!("{key}:places"),
        );
        let evalsha = |token: &str| {
            cli(
                entry,
                true,
                &[
                    "EVALSHA", acquire, "4", &key, &fence, &queue, &places, token, "30000", "0",
                    "0", "0",
                ],
            )
        };
        assert_eq!(evalsha("tok"), "1", "{key} on port {}", n.port());
        assert!(evalsha("other").starts_with('-'), "busy: minus the lease");
        assert_eq!(
            cli(
                entry,
                true,
                &[
                    "EVALSHA",
                    release,
                    "3",
                    &key,
                    &queue,
                    &places,
                    "tok",
                    &format!("{key}:wake")
                ]
            ),
            "1"
        );
    }
}

/// `READONLY` then `cmd` on one connection to a replica (so it serves its
/// primary's slots); the reply of `cmd`.
fn on_replica(port: u16, cmd: &str) -> String {
    let mut child = Command::new(cli_binary())
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli");
    writeln!(child.stdin.take().expect("stdin"), "READONLY\n{cmd}").expect("write");
    let out = child.wait_with_output().expect("redis-cli output");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("OK"), "{text}");
    lines.collect::<Vec<_>>().join("\n")
}

#[test]
fn load_on_a_cluster_with_replicas_puts_the_read_only_scripts_on_the_replicas() {
    let cluster = LocalCluster::builder()
        .replicas(1)
        .start()
        .expect("a cluster with replicas");
    let (primaries, replicas) = (cluster.primaries(), cluster.replicas());
    assert_eq!((primaries.len(), replicas.len()), (3, 3));
    let nodes = cluster.nodes();
    let (out, stderr) = load(&nodes[replicas[0]].url(), &["--functions"]);
    let read_only: Vec<_> = ALL.iter().filter(|s| s.read_only).collect();
    assert!(
        stderr.contains(&format!(
            "{} read-only scripts on 3 replicas",
            read_only.len()
        )),
        "{stderr}"
    );
    for &r in &replicas {
        for s in ALL {
            assert_eq!(
                script_exists(&nodes[r], s.sha1),
                s.read_only,
                "{} on replica {r}",
                s.name
            );
        }
        // load waited for the library to replicate.
        assert_eq!(function_count(&nodes[r]), ALL.len(), "replica {r}");
    }
    // A lock on each primary, then EVALSHA_RO and FCALL_RO of lock.owned on
    // the replica that serves its slots.
    let owned = columns(&out, "lock.owned")[0].to_string();
    let entry = nodes[primaries[0]].port();
    for &p in &primaries {
        let key = key_on(&nodes[p], "job");
        assert_eq!(fcall_acquire(entry, &key, "tok", "60000"), "1");
        let mut served = 0;
        for &r in &replicas {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let reply = on_replica(nodes[r].port(), &format!("EVALSHA_RO {owned} 1 {key} tok"));
                if reply.starts_with("MOVED") {
                    break;
                }
                if reply != "0" {
                    let left: i64 = reply.parse().expect("an integer");
                    assert!(left > 0, "{reply}");
                    let via_function =
                        on_replica(nodes[r].port(), &format!("FCALL_RO lock_owned 1 {key} tok"));
                    assert!(via_function.parse::<i64>().expect("an integer") > 0);
                    served += 1;
                    break;
                }
                assert!(Instant::now() < deadline, "replica {r} never saw {key}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        assert_eq!(served, 1, "one replica serves {key}'s slot");
    }
}

#[test]
fn redis_cli_loads_the_exported_library_and_calls_it() {
    let server = support::server();
    let dir = common::temp_dir("functions");
    common::export(None, &dir);
    let path = dir.join("functions.lua");
    let library = std::fs::read_to_string(&path).expect("functions.lua");
    assert_eq!(library, functions::LIBRARY);
    let loaded = Command::new(cli_binary())
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args(["-x", "FUNCTION", "LOAD", "REPLACE"])
        .stdin(std::fs::File::open(&path).expect("open functions.lua"))
        .output()
        .expect("redis-cli");
    assert_eq!(
        String::from_utf8_lossy(&loaded.stdout).trim(),
        functions::NAME
    );
    assert_eq!(function_count(&server), ALL.len());
    let port = server.port();
    let key = "redis:lock:{job}";
    let fcall = |token: &str, lease: &str| fcall_acquire(port, key, token, lease);
    assert_eq!(fcall("my-token", "30000"), "1");
    // The generated checks run inside the function, before any write.
    assert_eq!(
        fcall("other", "0"),
        "BADARG lease_ms must be an integer from 1 to 999999999999999"
    );
    assert_eq!(
        cli(
            port,
            false,
            &[
                "FCALL",
                "lock_release",
                "3",
                key,
                "redis:lock:{job}:queue",
                "redis:lock:{job}:places",
                "my-token",
                &format!("{key}:wake")
            ]
        ),
        "1"
    );
    let fence: i64 = redis::cmd("GET")
        .arg("redis:lock:{job}:fence")
        .query(&mut server.connection())
        .expect("GET");
    assert_eq!(fence, 1, "the refused call wrote nothing");
    let _ = std::fs::remove_dir_all(&dir);
}
