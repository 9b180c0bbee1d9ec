//! The generated Python and PHP clients with the real interpreters: the
//! manifest against its JSON Schema, each client against the golden vectors
//! (`tests/data`, made by real PHP) and the Rust planner, and visits exact
//! under four concurrent processes (every pattern end to end, and data
//! written by each client read back by the others: the conformance suite,
//! `tests/conformance.rs` of this crate). Needs python3 with redis-py (and jsonschema) on PYTHONPATH and
//! php-cli with php-redis; `.ci/run` installs them.

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use redis_patterns::bloom::BloomParams;
use redis_patterns::chrono::NaiveDate;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{Connection, Request};

use common::{export, php, python, repo_root, temp_dir};

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// One of the generated clients.
#[derive(Clone, Copy)]
enum Lang {
    Python,
    Php,
}

impl Lang {
    /// Its name for `export --lang`.
    fn name(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Php => "php",
        }
    }

    /// The short name of its temporary directories.
    fn tag(self) -> &'static str {
        match self {
            Lang::Python => "py",
            Lang::Php => "php",
        }
    }

    /// A fresh directory `{tag}-{what}` with the client exported into it.
    fn exported(self, what: &str) -> PathBuf {
        let dir = temp_dir(&format!("{}-{what}", self.tag()));
        export(Some(self.name()), &dir);
        dir
    }

    /// The interpreter running the test script `script` (`vectors`,
    /// `visits_worker`, of tests/clients) with the client exported in
    /// `dir`; the script's own arguments follow.
    fn script(self, dir: &Path, script: &str) -> Command {
        match self {
            Lang::Python => {
                let mut cmd = python(dir, "redis");
                cmd.arg(scripts_dir().join(format!("{script}.py")));
                cmd
            }
            Lang::Php => {
                let mut cmd = php();
                cmd.arg(scripts_dir().join(format!("{script}.php")))
                    .arg(dir.join("autoload.php"));
                cmd
            }
        }
    }
}

/// Two tests of `body`, one for each client: `$python` and `$php`.
macro_rules! client_tests {
    ($body:ident: $python:ident, $php:ident) => {
        #[test]
        fn $python() {
            $body(Lang::Python);
        }

        #[test]
        fn $php() {
            $body(Lang::Php);
        }
    };
}

#[test]
fn the_manifest_validates_against_its_json_schema() {
    let dir = temp_dir("schema");
    export(None, &dir);
    let out = support::stdout_of(
        Lang::Python
            .script(&dir, "schema")
            .arg(repo_root().join("manifest.schema.json"))
            .arg(dir.join("manifest.json")),
        "schema.py",
    );
    assert!(out.contains("manifest valid"));
    // The clients ship the same manifest.
    let py = Lang::Python.exported("schema");
    let a = std::fs::read(dir.join("manifest.json")).expect("manifest");
    assert_eq!(
        a,
        std::fs::read(py.join("redis_patterns/manifest.json")).expect("manifest")
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&py);
}

/// The Rust planner's parameters for many (n, p), and its p text.
fn params_tsv(dir: &Path) -> PathBuf {
    let mut text = String::from("# n\tp\tm\tk\tblock_bits\tp_text\n");
    let ps = [
        0.5, 0.1, 0.05, 0.01, 0.001, 0.0001, 0.00015, 0.00001, 1.5e-7, 1e-9, 0.3333, 0.02,
    ];
    let ns = [
        1u64,
        7,
        100,
        1000,
        12_345,
        1_000_000,
        10_000_000,
        123_456_789,
    ];
    for n in ns {
        for p in ps {
            let Ok(b) = BloomParams::new(
                n,
                p,
                BloomParams::DEFAULT_MAX_BITS,
                BloomParams::MAX_BLOCK_BYTES,
            ) else {
                continue;
            };
            let blocks: Vec<String> = b.block_bits.iter().map(u64::to_string).collect();
            text.push_str(&format!(
                "{n}\t{p:?}\t{}\t{}\t{}\t{p:?}\n",
                b.m,
                b.k,
                blocks.join(",")
            ));
        }
    }
    let path = dir.join("params.tsv");
    std::fs::write(&path, text).expect("write params");
    path
}

/// The client computes the golden vectors and the Rust planner's
/// parameters; its script prints `{name} vectors` when all agree.
fn computes_the_golden_vectors(lang: Lang) {
    let dir = lang.exported("vectors");
    let data = repo_root().join("tests/data");
    let out = support::stdout_of(
        lang.script(&dir, "vectors")
            .arg(data.join("jshash_vectors.tsv"))
            .arg(data.join("sized_vectors.tsv"))
            .arg(params_tsv(&dir)),
        "vectors",
    );
    assert!(out.contains(&format!("{} vectors", lang.name())), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

client_tests!(
    computes_the_golden_vectors:
    the_python_client_computes_the_golden_vectors,
    the_php_client_computes_the_golden_vectors
);

fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).expect("a date")
}

fn crowd() -> VisitCounter<redis_patterns::chrono::Utc> {
    VisitCounter::builder("crowd", redis_patterns::chrono::Utc, 16)
        .retention(redis_patterns::Retention::Forever)
        .late_window(None)
        .build()
        .unwrap()
}

/// Four processes of the client count overlapping members of one day at
/// once; the count is exact: every distinct member once.
fn visits_exact_under_four_processes(lang: Lang) {
    let server = support::server();
    let dir = lang.exported("crowd");
    let port = server.port().to_string();
    let mut children: Vec<_> = (0..4u64)
        .map(|w| {
            lang.script(&dir, "visits_worker")
                .args([&port, &(w * 50).to_string(), "100"])
                .spawn()
                .expect("start a worker")
        })
        .collect();
    for c in &mut children {
        let status = c.wait().expect("worker");
        assert!(status.success(), "a worker failed");
    }
    let mut con = Connection::open(server.url()).unwrap();
    assert_eq!(crowd().count(day(2024, 2, 29)).run(&mut con).unwrap(), 250);
    let sizes: u64 = crowd()
        .shard_sizes(day(2024, 2, 29))
        .run(&mut con)
        .unwrap()
        .iter()
        .sum();
    assert_eq!(sizes, 250);
    let _ = std::fs::remove_dir_all(&dir);
}

client_tests!(
    visits_exact_under_four_processes:
    python_visits_are_exact_under_four_processes,
    php_visits_are_exact_under_four_processes
);
