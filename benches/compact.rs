//! `cargo bench --bench compact`: memory per entry of four layouts of the
//! same 1,000,000 entries (19-byte payload: field `user:NNNNNN`, value
//! `vNNNNNNN`), and the streaming import's throughput and peak RSS.
//!
//! `COMPACT_N` changes the entry count (default 1,000,000), `BENCH_ROUNDS`
//! the rounds of the throughput runs (default 5), `COMPACT_RSS_LINES` the
//! two file sizes of the peak-RSS table (default `100000,1000000`).
//!
//! Servers: `cargo bench --bench compact -- --server redis --server valkey`
//! (or `BENCH_SERVER=redis,valkey`, or paths to server binaries) prints one
//! row per server and layout in the memory table; the import tables run on
//! the first server. Default: `$REDIS_SERVER` or `redis-server`.

mod common;

use std::io::Write as _;
use std::process::Command;
use std::time::Instant;

use common::{BenchServer, Table, median, num, ratio, rounds, used_memory};
use redis_patterns::packed::{ByteArray, PackedRecords};
use redis_patterns::sharded_hash::{ListpackLimits, Plan, ShardedHash, Sharding};
use redis_patterns::{Connection, Request};

const PAYLOAD: usize = 19;
const BATCH: usize = 50_000;

fn field(i: u64) -> String {
    format!("user:{i:06}")
}

fn value(i: u64) -> String {
    format!("v{i:07}")
}

fn flushall(con: &mut redis::Connection) {
    let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(con).unwrap();
}

/// Bytes of `used_memory` that `load` adds, per entry.
fn per_entry(
    con: &mut redis::Connection,
    n: u64,
    load: impl FnOnce(&mut redis::Connection),
) -> f64 {
    flushall(con);
    let before = used_memory(con);
    load(con);
    let after = used_memory(con);
    (after as f64 - before as f64) / n as f64
}

fn pipelined(con: &mut redis::Connection, n: u64, mut add: impl FnMut(&mut redis::Pipeline, u64)) {
    let mut start = 0;
    while start < n {
        let end = (start + BATCH as u64).min(n);
        let mut pipe = redis::pipe();
        for i in start..end {
            add(&mut pipe, i);
        }
        pipe.query::<()>(con).unwrap();
        start = end;
    }
}

fn fill_sharded(con: &mut Connection, h: &ShardedHash, n: u64) {
    let mut start = 0;
    while start < n {
        let end = (start + BATCH as u64).min(n);
        let pairs: Vec<(String, String)> = (start..end).map(|i| (field(i), value(i))).collect();
        h.set_many(&pairs).run(con).unwrap();
        start = end;
    }
}

fn write_file(path: &std::path::Path, lines: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..lines {
        writeln!(f, "{}\t{}", field(i), value(i)).unwrap();
    }
    f.flush().unwrap();
}

struct ImportRun {
    wall: f64,
    inserted: u64,
    peak_rss_kib: u64,
}

fn run_import(
    url: &str,
    base: &str,
    file: &std::path::Path,
    shards: u32,
    strict: bool,
) -> ImportRun {
    let mut cmd = Command::new(common::cli_binary());
    cmd.args(["import", "sharded-hash", base]).arg(file).args([
        "--tsv",
        "--url",
        url,
        "--shards",
        &shards.to_string(),
    ]);
    if !strict {
        cmd.arg("--no-strict");
    }
    let t = Instant::now();
    let out = cmd.output().unwrap();
    let wall = t.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "import failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let get = |name: &str| -> u64 {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no `{name}` in import output:\n{stdout}"))
    };
    ImportRun {
        wall,
        inserted: get("inserted"),
        peak_rss_kib: get("peak_rss_kib"),
    }
}

/// The memory rows of one server: every layout's `used_memory` per entry.
fn memory(t: &mut Table, s: &BenchServer, n: u64) {
    let server = s.start(&[]);
    let url = server.url();
    let mut con = server.connection();
    // The patterns' connection; `con` sends the baselines' raw pipelines.
    let mut pcon = Connection::open(url.as_str()).unwrap();
    let raw = PAYLOAD as f64;
    // ---- memory ----
    let plain = per_entry(&mut con, n, |con| {
        pipelined(con, n, |p, i| {
            p.cmd("SET").arg(field(i)).arg(value(i)).ignore();
        })
    });
    let big = per_entry(&mut con, n, |con| {
        pipelined(con, n, |p, i| {
            p.cmd("HSET")
                .arg("big")
                .arg(field(i))
                .arg(value(i))
                .ignore();
        })
    });
    let limits = ListpackLimits::from_server().run(&mut pcon).unwrap();
    let the_plan = Plan::new(n, limits, Plan::DEFAULT_OVERFLOW_TARGET).unwrap();
    let planned = ShardedHash::from_plan("sh", &the_plan).unwrap();
    let sharded = per_entry(&mut con, n, |_| fill_sharded(&mut pcon, &planned, n));
    let health = planned.inspect(u64::MAX).run(&mut pcon).unwrap();
    // The mistake the planner avoids: shards sized by the mean (~500 per shard).
    let mean_shards = (n / 500).max(1) as u32;
    let by_mean = ShardedHash::builder(
        "mean",
        Sharding::Crc32 {
            shards: mean_shards,
        },
    )
    .strict(false)
    .build()
    .unwrap();
    let mean = per_entry(&mut con, n, |_| fill_sharded(&mut pcon, &by_mean, n));
    let mean_health = by_mean.inspect(u64::MAX).run(&mut pcon).unwrap();
    let packed_records = PackedRecords::new("pk", ByteArray::<PAYLOAD>, n - 1).unwrap();
    let packed = per_entry(&mut con, n, |_| {
        let mut start = 0;
        while start < n {
            let end = (start + BATCH as u64).min(n);
            let items: Vec<(u64, [u8; PAYLOAD])> = (start..end)
                .map(|i| {
                    let mut rec = [0u8; PAYLOAD];
                    rec[..11].copy_from_slice(field(i).as_bytes());
                    rec[11..].copy_from_slice(value(i).as_bytes());
                    (i, rec)
                })
                .collect();
            packed_records.set_many(&items).run(&mut pcon).unwrap();
            start = end;
        }
    });
    let label = format!("{} ({}/{})", s.label, limits.entries, limits.value);
    let mut row = |name: &str, keys: String, conv: String, b: f64| {
        t.row(vec![
            label.clone(),
            name.into(),
            keys,
            conv,
            format!("{b:.1}"),
            format!("{:.2}x", b / raw),
            ratio(plain, b),
        ]);
    };
    row(
        "plain keys (SET user:N v)",
        n.to_string(),
        "-".into(),
        plain,
    );
    row("one big hash", "1".into(), "-".into(), big);
    row(
        &format!(
            "sharded hash, planner ({:.0}/shard avg)",
            the_plan.mean_per_shard
        ),
        the_plan.shards.to_string(),
        format!("{} of {}", health.converted, health.sampled),
        sharded,
    );
    row(
        "sharded hash, by the mean (500/shard)",
        mean_shards.to_string(),
        format!("{} of {}", mean_health.converted, mean_health.sampled),
        mean,
    );
    row(
        &format!("packed records, W={PAYLOAD} (bytes/id)"),
        packed_records.shards().to_string(),
        "-".into(),
        packed,
    );
    println!(
        "{}: planner: {} shards, fullest shard {} fields (limit {}), overflow bound {:.1e}; packed: {} ids/shard, {} bytes/shard",
        s.label,
        the_plan.shards,
        health.max_len,
        limits.entries,
        the_plan.overflow_bound,
        packed_records.ids_per_shard(),
        packed_records.shard_bytes()
    );
    flushall(&mut con);
}

fn main() {
    let n: u64 = std::env::var("COMPACT_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let servers = common::bench_servers();
    println!(
        "compact: {n} entries of a {PAYLOAD}-byte payload (field user:NNNNNN, value vNNNNNNN)"
    );
    let mut t = Table::new(
        &format!(
            "memory: used_memory delta per entry, {n} entries (server, its listpack limits entries/bytes)"
        ),
        &[
            "server",
            "layout",
            "keys",
            "shards converted",
            "bytes/entry",
            "x raw payload",
            "plain keys / this",
        ],
    );
    for s in &servers {
        memory(&mut t, s, n);
    }
    t.print();

    println!("\n(import on {})", servers[0].label);
    let server = servers[0].start(&[]);
    let url = server.url();
    let mut con = server.connection();
    let mut pcon = Connection::open(url.as_str()).unwrap();
    let limits = ListpackLimits::from_server().run(&mut pcon).unwrap();
    let the_plan = Plan::new(n, limits, Plan::DEFAULT_OVERFLOW_TARGET).unwrap();
    let planned = ShardedHash::from_plan("sh", &the_plan).unwrap();

    // ---- import throughput ----
    let dir = server.dir().join("bench-import");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{n}.tsv"));
    write_file(&file, n);
    let keys: Vec<String> = (0..n)
        .map(|i| planned.shard_key(field(i).as_bytes()).unwrap())
        .collect();
    let (mut ceiling, mut strict, mut loose, mut strict_rss) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds() {
        flushall(&mut con);
        let t0 = Instant::now();
        let mut start = 0;
        while start < n {
            let end = (start + BATCH as u64).min(n);
            let mut pipe = redis::pipe();
            for i in start..end {
                pipe.cmd("HSETNX")
                    .arg(&keys[i as usize])
                    .arg(field(i))
                    .arg(value(i))
                    .ignore();
            }
            pipe.query::<()>(&mut con).unwrap();
            start = end;
        }
        ceiling.push(n as f64 / t0.elapsed().as_secs_f64());
        flushall(&mut con);
        let r = run_import(&url, "sh", &file, the_plan.shards, true);
        assert_eq!(r.inserted, n);
        strict.push(n as f64 / r.wall);
        strict_rss.push(r.peak_rss_kib as f64);
        flushall(&mut con);
        let r = run_import(&url, "sh", &file, the_plan.shards, false);
        assert_eq!(r.inserted, n);
        loose.push(n as f64 / r.wall);
    }
    let ceiling = median(&mut ceiling);
    let mut t = Table::new(
        &format!(
            "import of a {n}-line field<TAB>value file (lines/s, median of {} rounds; import = whole CLI process)",
            rounds()
        ),
        &["method", "lines/s", "vs HSETNX ceiling"],
    );
    t.row(vec![
        "pipelined HSETNX from memory (ceiling)".into(),
        num(ceiling),
        "1.00x".into(),
    ]);
    let s = median(&mut strict);
    t.row(vec![
        "import sharded-hash (strict: put script per shard)".into(),
        num(s),
        ratio(s, ceiling),
    ]);
    let l = median(&mut loose);
    t.row(vec![
        "import sharded-hash --no-strict (HSETNX)".into(),
        num(l),
        ratio(l, ceiling),
    ]);
    t.print();

    // ---- peak RSS of the import process for two file sizes ----
    let sizes: Vec<u64> = std::env::var("COMPACT_RSS_LINES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, n]);
    let mut t = Table::new(
        &format!(
            "peak RSS (VmHWM) of the strict import process, {} shards",
            the_plan.shards
        ),
        &["file lines", "file MiB", "peak RSS MiB", "vs smallest file"],
    );
    let mut first = None;
    for &lines in &sizes {
        let path = dir.join(format!("rss-{lines}.tsv"));
        if lines != n {
            write_file(&path, lines);
        } else {
            std::fs::copy(&file, &path).unwrap();
        }
        // Same shard count for every size, so only the file size varies.
        flushall(&mut con);
        let r = run_import(&url, "rss", &path, the_plan.shards, true);
        assert_eq!(r.inserted, lines);
        let mib = r.peak_rss_kib as f64 / 1024.0;
        let base = *first.get_or_insert(mib);
        t.row(vec![
            lines.to_string(),
            format!(
                "{:.1}",
                std::fs::metadata(&path).unwrap().len() as f64 / (1 << 20) as f64
            ),
            format!("{mib:.1}"),
            ratio(mib, base),
        ]);
        std::fs::remove_file(&path).unwrap();
    }
    t.print();
    println!(
        "(strict import peak RSS over the throughput rounds: median {:.1} MiB)",
        median(&mut strict_rss) / 1024.0
    );
    std::fs::remove_file(&file).unwrap();
}
