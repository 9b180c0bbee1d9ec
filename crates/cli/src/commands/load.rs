//! `redis-patterns load`: the bundle on every node the SHAs will be used
//! on, so that `redis-cli -c EVALSHA <sha> ...` works against any node.
//!
//! On one server: `SCRIPT LOAD` of every script (and with `--functions`
//! `FUNCTION LOAD REPLACE` of the library). On a Redis Cluster node the
//! nodes come from its `CLUSTER NODES`: every primary gets every script
//! (and the library), every replica the read-only scripts (`EVALSHA_RO`
//! runs there; the library reaches replicas by replication, which `load`
//! waits for with `WAIT`). Nodes flagged `fail`, `handshake` or `noaddr`
//! are skipped and named; a listed node that cannot be reached fails the
//! command. Each node gets one pipeline, and every SHA the server reports
//! is checked against the registry.
//!
//! Prints `name sha1` per script (with `--functions`: `name sha1 function`)
//! on stdout, and what went where on stderr.

use redis::{ConnectionInfo, Value};
use redis_patterns::functions;
use redis_patterns::scripts::ALL;

use crate::conn::UrlArg;
use crate::fail::{self, CliResult, Failure};
use crate::out::{self, outln};

/// What the loading steps fail with before it becomes the command's message.
type LoadResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// One node of a cluster, as `CLUSTER NODES` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    id: String,
    host: String,
    port: u16,
    primary: bool,
    /// The primary's id, for a replica.
    primary_id: Option<String>,
    /// `fail`, `handshake` or `noaddr`: not loaded.
    down: bool,
}

/// Parses `CLUSTER NODES` (`<id> <ip:port@cport[,hostname]> <flags>
/// <primary> ...`, one node per line).
fn parse_cluster_nodes(text: &str) -> Result<Vec<Node>, String> {
    let mut nodes = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [id, addr, flags, primary, ..] = fields[..] else {
            return Err(format!("CLUSTER NODES line of an unknown shape: {line}"));
        };
        let addr = addr.split(['@', ',']).next().unwrap_or_default();
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
            .ok_or_else(|| format!("CLUSTER NODES address {addr:?} is not host:port"))?;
        let flags: Vec<&str> = flags.split(',').collect();
        let down = flags
            .iter()
            .any(|f| matches!(*f, "fail" | "handshake" | "noaddr"))
            || host.is_empty()
            || port == 0;
        nodes.push(Node {
            id: id.to_string(),
            host,
            port,
            primary: flags.contains(&"master"),
            primary_id: (primary != "-").then(|| primary.to_string()),
            down,
        });
    }
    Ok(nodes)
}

fn connect(info: ConnectionInfo) -> Result<redis::Connection, String> {
    let what = info.addr().to_string();
    redis::Client::open(info)
        .and_then(|c| c.get_connection_with_timeout(std::time::Duration::from_secs(5)))
        .map_err(|e| format!("cannot connect to {what}: {e}"))
}

/// What one node gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Share {
    /// Every script (and the library with `--functions`).
    Everything,
    /// The read-only scripts.
    ReadOnly,
}

/// Loads `share` on one node in one pipeline and checks every reply.
fn load_node(
    con: &mut redis::Connection,
    share: Share,
    library: bool,
    replicas: usize,
) -> Result<usize, String> {
    let scripts: Vec<_> = ALL
        .iter()
        .filter(|s| share == Share::Everything || s.read_only)
        .collect();
    let mut pipe = redis::pipe();
    for s in &scripts {
        pipe.cmd("SCRIPT").arg("LOAD").arg(s.source());
    }
    let library = library && share == Share::Everything;
    if library {
        pipe.cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(functions::LIBRARY);
        if replicas > 0 {
            pipe.cmd("WAIT").arg(replicas).arg(10_000);
        }
    }
    let replies: Vec<Value> = pipe.query(con).map_err(|e| e.to_string())?;
    let mut replies = replies.into_iter();
    for s in &scripts {
        let sha: String = match replies.next() {
            Some(Value::ServerError(e)) => return Err(format!("SCRIPT LOAD {}: {e}", s.name)),
            Some(v) => redis::from_redis_value(v).map_err(|e| e.to_string())?,
            None => return Err("fewer replies than commands".into()),
        };
        if !sha.eq_ignore_ascii_case(s.sha1) {
            return Err(format!(
                "server returned sha1 {sha} for script {}, expected {}",
                s.name, s.sha1
            ));
        }
    }
    if library {
        let name: String = match replies.next() {
            Some(Value::ServerError(e)) => return Err(format!("FUNCTION LOAD: {e}")),
            Some(v) => redis::from_redis_value(v).map_err(|e| e.to_string())?,
            None => return Err("fewer replies than commands".into()),
        };
        if name != functions::NAME {
            return Err(format!(
                "FUNCTION LOAD answered library {name:?}, expected {:?}",
                functions::NAME
            ));
        }
        if replicas > 0 {
            let acked: i64 = replies
                .next()
                .map(redis::from_redis_value)
                .transpose()
                .map_err(|e| e.to_string())?
                .unwrap_or(0);
            if (acked as usize) < replicas {
                eprintln!(
                    "warning: {acked} of {replicas} replicas confirmed the library within 10 s"
                );
            }
        }
    }
    Ok(scripts.len())
}

/// `redis-patterns load [--functions]`.
pub fn run(url: &UrlArg, with_functions: bool) -> CliResult {
    // Connecting first gives the command line's own messages (the url, a
    // refused connection, a missing password); the load then opens one
    // connection per node.
    drop(url.connect()?);
    load(url.info()?, with_functions).map_err(|e| {
        Failure::new(format!(
            "cannot load the bundle via {}: {e}",
            fail::mask(url.url())
        ))
    })
}

fn load(base: ConnectionInfo, with_functions: bool) -> LoadResult {
    let mut first = connect(base.clone())?;
    let info: String = redis::cmd("INFO").arg("cluster").query(&mut first)?;
    let cluster = info.lines().any(|l| l.trim() == "cluster_enabled:1");
    if !cluster {
        let n = load_node(&mut first, Share::Everything, with_functions, 0)
            .map_err(|e| format!("{}: {e}", base.addr()))?;
        print_shas(with_functions);
        eprintln!(
            "loaded {n} scripts{} on {}",
            if with_functions {
                format!(" and the library {}", functions::NAME)
            } else {
                String::new()
            },
            base.addr()
        );
        return Ok(());
    }
    let text: String = redis::cmd("CLUSTER").arg("NODES").query(&mut first)?;
    let nodes = parse_cluster_nodes(&text)?;
    let (mut primaries, mut replicas, mut skipped) = (0, 0, Vec::new());
    for node in &nodes {
        let addr = format!("{}:{}", node.host, node.port);
        if node.down {
            skipped.push(addr);
            continue;
        }
        let share = if node.primary {
            Share::Everything
        } else {
            Share::ReadOnly
        };
        let up_replicas = nodes
            .iter()
            .filter(|r| !r.down && r.primary_id.as_deref() == Some(node.id.as_str()))
            .count();
        let mut con = connect(redis_patterns::Connection::node_info(
            &base, &node.host, node.port,
        ))?;
        load_node(&mut con, share, with_functions, up_replicas)
            .map_err(|e| format!("{addr}: {e}"))?;
        match share {
            Share::Everything => primaries += 1,
            Share::ReadOnly => replicas += 1,
        }
    }
    print_shas(with_functions);
    let read_only = ALL.iter().filter(|s| s.read_only).count();
    eprintln!(
        "loaded {} scripts{} on {primaries} primaries and {read_only} read-only scripts on {replicas} replicas",
        ALL.len(),
        if with_functions {
            format!(" and the library {} (replicated)", functions::NAME)
        } else {
            String::new()
        },
    );
    if !skipped.is_empty() {
        eprintln!(
            "skipped {} nodes flagged down: {} (run load again when they are back)",
            skipped.len(),
            skipped.join(" ")
        );
    }
    Ok(())
}

/// `name sha1` lines (with `--functions`: `name sha1 function`), or with
/// `--json` one map of name to sha1 (or to `{sha1, function}`).
fn print_shas(with_functions: bool) {
    if out::json() {
        let map: serde_json::Map<String, serde_json::Value> = ALL
            .iter()
            .map(|s| {
                let v = if with_functions {
                    serde_json::json!({ "sha1": s.sha1, "function": s.function })
                } else {
                    serde_json::json!(s.sha1)
                };
                (s.name.to_string(), v)
            })
            .collect();
        out::json_line(&map);
        return;
    }
    for s in ALL {
        if with_functions {
            outln!("{} {} {}", s.name, s.sha1, s.function);
        } else {
            outln!("{} {}", s.name, s.sha1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_nodes_lines_parse() {
        let text = "\
82bc 127.0.0.1:17406@17506 slave 9a38 0 1796111491207 3 connected
664a 127.0.0.1:17402@17502,node-b master - 0 1796111492000 2 connected 5461-10922
86a4 127.0.0.1:17401@17501 myself,master - 0 1796111491000 1 connected 0-5460
dead 127.0.0.1:17409@17509 master,fail - 0 0 4 disconnected
";
        let nodes = parse_cluster_nodes(text).unwrap();
        assert_eq!(nodes.len(), 4);
        assert_eq!(
            nodes[0],
            Node {
                id: "82bc".into(),
                host: "127.0.0.1".into(),
                port: 17406,
                primary: false,
                primary_id: Some("9a38".into()),
                down: false,
            }
        );
        assert_eq!((nodes[1].port, nodes[1].primary), (17402, true));
        assert!(nodes[2].primary && nodes[2].primary_id.is_none());
        assert!(nodes[3].down);
        assert!(parse_cluster_nodes("short line").is_err());
    }
}
