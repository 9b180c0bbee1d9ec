//! The conformance suite on the generated TypeScript client with the real
//! interpreter (node + ioredis): every case on one server and on a 3-node
//! cluster; the cross-language cases written by Rust, Python or PHP and read by
//! TypeScript, and the reverse; and the package checks: `tsc --strict
//! --noEmit` accepts its sources, the shipped runtime JavaScript and
//! declarations are what tsc makes of them, the generated declarations are
//! tsc's, and the package loads by `require` and by `import` as shipped.
//!
//! Needs node and a node_modules with ioredis, typescript and @types/node,
//! named by REDIS_PATTERNS_NODE_MODULES (`.ci/run` installs them there);
//! without it every test here fails, naming what is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::common::{export, temp_dir};
use super::{Side, cases_path, passes_every_case, read_back_both_ways, run_runner, support};

const NODE_MODULES: &str = "REDIS_PATTERNS_NODE_MODULES";

/// The node_modules the tests use; panics naming what is missing.
fn node_modules() -> PathBuf {
    let dir = std::env::var_os(NODE_MODULES).map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "{NODE_MODULES} is not set: the TypeScript client's tests need node_modules with ioredis, typescript and @types/node (npm install --prefix DIR ioredis typescript @types/node, then {NODE_MODULES}=DIR/node_modules; .ci/run does)"
        )
    });
    for package in ["ioredis", "typescript", "@types/node"] {
        assert!(
            dir.join(package).join("package.json").exists(),
            "{NODE_MODULES}={}: {package} is not installed there",
            dir.display()
        );
    }
    dir
}

fn runner() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/conformance.js")
}

/// node with ioredis on its NODE_PATH.
pub(super) fn node() -> Command {
    let mut cmd = Command::new("node");
    cmd.env("NODE_PATH", node_modules());
    cmd
}

/// The exported TypeScript package, with node_modules linked beside it.
pub(super) fn exported_ts(what: &str) -> PathBuf {
    let dir = temp_dir(&format!("ts-{what}"));
    export(Some("typescript"), &dir);
    std::os::unix::fs::symlink(node_modules(), dir.join("node_modules"))
        .expect("link node_modules");
    dir
}

/// Runs the TypeScript runner on the client in `dir` (see [`run_runner`]).
fn run_ts(dir: &Path, urls: &[String], flags: &[&str]) -> String {
    run_runner(
        node()
            .arg(runner())
            .arg(dir)
            .arg(cases_path())
            .args(urls)
            .args(flags),
        "TypeScript",
    )
}

every_case_tests!(
    typescript_passes_every_case_on_a_server, typescript_passes_every_case_on_a_cluster:
    exported_ts, run_ts, &[("typescript", &[])]
);

/// The TypeScript client in the cross-language cases (exported for the
/// test `tag`).
fn typescript_side(url: &str, tag: &str) -> Side {
    Side::client("typescript", url, exported_ts(tag), run_ts)
}

/// Data written by the Rust API is read back by TypeScript, and the reverse.
#[test]
fn typescript_and_rust_read_back_what_the_other_wrote() {
    let server = support::server();
    let typescript = typescript_side(&server.url(), "cross-rust");
    read_back_both_ways(&Side::rust(&server.url()), &typescript);
}

/// Data written by the Python client is read back by TypeScript, and the reverse.
#[test]
fn typescript_and_python_read_back_what_the_other_wrote() {
    let server = support::server();
    let typescript = typescript_side(&server.url(), "cross-python");
    read_back_both_ways(
        &Side::python(&server.url(), "cross-typescript"),
        &typescript,
    );
}

/// Data written by the PHP client is read back by TypeScript, and the reverse.
#[test]
fn typescript_and_php_read_back_what_the_other_wrote() {
    let server = support::server();
    let typescript = typescript_side(&server.url(), "cross-php");
    read_back_both_ways(&Side::php(&server.url(), "cross-typescript"), &typescript);
}

fn tsc(dir: &Path, args: &[&str]) -> String {
    support::stdout_of(
        node()
            .arg(node_modules().join("typescript/bin/tsc"))
            .args(args)
            .current_dir(dir),
        &format!("tsc {} (of the TypeScript client)", args.join(" ")),
    )
}

/// A declaration file without its comments and whitespace.
fn declarations(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("/*") {
        out.push_str(&rest[..at]);
        rest = rest[at..]
            .find("*/")
            .map_or("", |end| &rest[at + end + 2..]);
    }
    out.push_str(rest);
    out.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
        .collect()
}

/// `tsc --strict --noEmit` accepts the exported sources; compiled, the
/// hand-written runtime's JavaScript and declarations are the ones the
/// package ships (REDIS_PATTERNS_BLESS=1 writes them into the crate), and
/// the declarations the generator writes for its modules are tsc's.
#[test]
fn the_typescript_package_type_checks_and_its_runtime_is_tsc_output() {
    let dir = exported_ts("package");
    tsc(&dir, &["-p", ".", "--strict", "--noEmit"]);
    println!("tsc --strict --noEmit: the exported sources type-check");
    let out = temp_dir("ts-compiled");
    tsc(
        &dir,
        &["-p", ".", "--outDir", out.to_str().expect("a UTF-8 path")],
    );
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/clients/typescript/dist");
    let bless = std::env::var_os("REDIS_PATTERNS_BLESS").is_some();
    let mut stale = Vec::new();
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/clients/typescript/src");
    for name in runtime_names(&runtime, "") {
        for ext in ["js", "d.ts"] {
            let file = format!("{name}.{ext}");
            let made = std::fs::read_to_string(out.join(&file)).expect("tsc wrote it");
            if std::fs::read_to_string(shipped.join(&file)).ok().as_deref() != Some(&made) {
                if bless {
                    let path = shipped.join(&file);
                    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
                    std::fs::write(path, &made).expect("write the compiled runtime");
                } else {
                    stale.push(file);
                }
            }
        }
    }
    assert!(
        stale.is_empty(),
        "the shipped runtime is not tsc's output of crates/cli/src/clients/typescript/src (stale: {}); rewrite it with REDIS_PATTERNS_BLESS=1 cargo test -p redis-patterns-cli --test conformance typescript_package",
        stale.join(", ")
    );
    for name in ["errors", "records", "index", "scripts", "contract"] {
        let file = format!("{name}.d.ts");
        let made = std::fs::read_to_string(out.join(&file)).expect("tsc wrote it");
        let written = std::fs::read_to_string(dir.join("dist").join(&file)).expect("exported");
        assert_eq!(
            declarations(&made),
            declarations(&written),
            "dist/{file}: the generator's declarations are not tsc's of src/{name}.ts"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&out);
}

/// The runtime's modules below `dir` (`ops/lock` ...), each exported.
fn runtime_names(dir: &Path, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the runtime's sources") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).expect("a name");
        if path.is_dir() {
            out.extend(runtime_names(&path, &format!("{prefix}{name}/")));
        } else if let Some(stem) = name.strip_suffix(".ts") {
            out.push(format!("{prefix}{stem}"));
        }
    }
    out
}

/// The package loads as shipped: `require("redis-patterns")` and
/// `import { ... } from "redis-patterns"` (an ES module) from a project
/// that has it in node_modules, and a TypeScript user's code compiles
/// against its declarations with `--strict`.
#[test]
fn the_typescript_package_loads_by_require_and_import() {
    let dir = exported_ts("load");
    let project = temp_dir("ts-project");
    let modules = project.join("node_modules");
    std::fs::create_dir_all(&modules).expect("mkdir");
    std::os::unix::fs::symlink(&dir, modules.join("redis-patterns")).expect("link the package");
    for package in ["ioredis", "@types", "typescript"] {
        std::os::unix::fs::symlink(node_modules().join(package), modules.join(package))
            .expect("link a dependency");
    }
    let cjs = "const rp = require('redis-patterns'); if (typeof rp.Lock !== 'function' || !(new rp.LockBusy('k', 5) instanceof rp.RedisPatternsError) || typeof rp.scripts.Lock.acquire !== 'function') process.exit(1);";
    let esm = "import { Lock, VisitCounter, LockBusy, RedisPatternsError } from 'redis-patterns'; import rp from 'redis-patterns'; if (typeof Lock !== 'function' || typeof VisitCounter !== 'function' || !(new LockBusy('k', null) instanceof RedisPatternsError) || rp.Lock !== Lock) process.exit(1);";
    std::fs::write(project.join("main.cjs"), cjs).expect("write");
    std::fs::write(project.join("main.mjs"), esm).expect("write");
    for file in ["main.cjs", "main.mjs"] {
        support::stdout_of(
            Command::new("node").arg(file).current_dir(&project),
            &format!("node {file} (loading the package)"),
        );
    }
    std::fs::write(project.join("use.ts"), USER_CODE).expect("write");
    std::fs::write(project.join("tsconfig.json"), USER_TSCONFIG).expect("write");
    tsc(&project, &["-p", ".", "--noEmit"]);
    let _ = std::fs::remove_dir_all(&project);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TypeScript user's code: typed results, errors with data, options.
const USER_CODE: &str = r#"import Redis from "ioredis";
import { Lock, LockBusy, RateLimiter, VisitCounter, type Decision, type Lease } from "redis-patterns";

export async function tasks(redis: Redis): Promise<[Lease, number, Decision, number]> {
  const lock = new Lock(redis, "orders:42", { leaseMs: 5000 });
  const lease: Lease = await lock.tryAcquire();
  const fence: number = await lock.using(1000, async (held) => held.fence ?? 0);
  const limiter = new RateLimiter(redis, "gcra", { maxBurst: 15, countPerPeriod: 30, periodMs: 60000 });
  const decision = await limiter.throttle("user:42", { quantity: 1 });
  const visits = new VisitCounter(redis, "site", 64, { timeZone: "Europe/Paris" });
  const { count } = await visits.add(new Date("2026-01-02"), 42n);
  try {
    await lock.tryAcquire();
  } catch (e) {
    if (e instanceof LockBusy) {
      const retry: number | null = e.retryAfterMs;
      void retry;
    }
  }
  return [lease, fence + count, decision, decision.retryAfterMs ?? 0];
}
"#;

const USER_TSCONFIG: &str = r#"{
  "compilerOptions": {
    "target": "ES2022",
    "module": "commonjs",
    "strict": true,
    "esModuleInterop": true,
    "types": ["node"]
  },
  "files": ["use.ts"]
}
"#;

/// Counts the socket writes of `ShardedHash.len()` over 2,048 shards: one
/// pipeline on a server, one per node on a cluster (ioredis writes a
/// pipeline with one `write`).
const ROUND_TRIPS: &str = r#"
const Redis = require("ioredis");
const rp = require(process.argv[1]);
const urls = process.argv.slice(2);
function hostPort(u) { const x = new URL(u); return { host: x.hostname, port: Number(x.port) }; }
async function writes(conns, body) {
  let n = 0;
  const undo = conns.map((c) => {
    const s = c.stream;
    const write = s.write;
    s.write = function (...args) { n += 1; return write.apply(this, args); };
    return () => { s.write = write; };
  });
  await body();
  undo.forEach((u) => u());
  return n;
}
(async () => {
  const client = urls.length > 1 ? new Redis.Cluster(urls.map(hostPort)) : new Redis(urls[0]);
  const h = new rp.ShardedHash(client, "rt", { shards: 2048 });
  await h.setMany([["a", "1"], ["b", "2"], ["c", "3"]]);
  const n = await h.len();
  const conns = client.isCluster ? client.nodes("master") : [client];
  const count = await writes(conns, () => h.len());
  console.log(JSON.stringify({ len: n, writes: count, nodes: conns.length }));
  client.disconnect();
})().catch((e) => { console.error(e); process.exit(1); });
"#;

fn round_trips(dir: &Path, urls: &[String]) -> serde_json::Value {
    let out = support::stdout_of(
        node().args(["-e", ROUND_TRIPS]).arg(dir).args(urls),
        "node (round trips)",
    );
    serde_json::from_str(&out).expect("one JSON line")
}

#[test]
fn typescript_batches_go_out_as_one_pipeline_per_node() {
    let dir = exported_ts("round-trips");
    let server = support::server();
    let got = round_trips(&dir, &[server.url()]);
    println!("ShardedHash.len() over 2048 shards, server: {got}");
    assert_eq!(got["len"], 3);
    assert_eq!(got["writes"], 1, "one pipeline on a server: {got}");
    drop(server);
    let cluster = support::cluster();
    let got = round_trips(&dir, &cluster.urls());
    println!("ShardedHash.len() over 2048 shards, cluster: {got}");
    assert_eq!(got["len"], 3);
    assert_eq!(got["writes"], got["nodes"], "one pipeline per node: {got}");
    let _ = std::fs::remove_dir_all(&dir);
}
