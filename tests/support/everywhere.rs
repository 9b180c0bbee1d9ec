//! One test body through both drivers on one server and on a Redis Cluster,
//! for the sharded patterns' tests that check a pattern answers and writes
//! the same everywhere (`#[path]`-included next to `mod support`).
#![allow(dead_code)]

use redis_patterns_test_support::{LocalCluster, LocalServer};

use crate::support::{self, Driver};

/// What the operations of a run answered, as text (`note(what, answer)`),
/// so that two runs can be compared.
#[derive(Debug, Default)]
pub struct Log(pub Vec<String>);

impl Log {
    pub fn note(&mut self, what: &str, answer: &dyn std::fmt::Debug) {
        self.0.push(format!("{what}: {answer:?}"));
    }
}

/// Runs `body` through both drivers on `server`, then through both drivers
/// on `cluster`, and checks that every run returns what the first did; on
/// the cluster also that the keys spread over every node and add up to the
/// one server's.
pub fn same_everywhere<T: PartialEq + std::fmt::Debug>(
    server: &LocalServer,
    cluster: &LocalCluster,
    body: impl Fn(&mut Driver) -> T,
) {
    let expected = std::cell::RefCell::new(None);
    support::each_driver(server, |d| {
        assert!(!d.is_cluster());
        let got = (body(d), support::dbsize(&mut server.connection()));
        let mut expected = expected.borrow_mut();
        match expected.as_ref() {
            None => *expected = Some(got),
            Some(e) => assert_eq!(e, &got, "{}", d.name()),
        }
    });
    let (expected, keys) = expected.into_inner().expect("ran on the server");
    support::each_cluster_driver(cluster, |d| {
        assert!(d.is_cluster());
        assert_eq!(body(d), expected, "{} on the cluster", d.name());
        // The shards really live on different nodes.
        let per_node = support::keys_per_node(cluster);
        assert!(per_node.iter().all(|&n| n > 0), "{per_node:?}");
        assert_eq!(per_node.iter().sum::<i64>(), keys);
    });
}

/// Every field of each hash key, sorted.
pub type HashDump = Vec<(String, Vec<(String, String)>)>;

/// `HGETALL` of each key, fields sorted.
pub fn dump_hashes(d: &mut Driver, keys: impl IntoIterator<Item = String>) -> HashDump {
    keys.into_iter()
        .map(|key| {
            let mut all: Vec<(String, String)> = d.cmd(&key, redis::cmd("HGETALL").arg(&key));
            all.sort();
            (key, all)
        })
        .collect()
}
