//! Every example of the README and the guide (`docs/`) runs here, and the
//! text that changes with the build is checked to be current:
//!
//! - `console` blocks run in a shell against a throwaway server (or
//!   cluster, or TLS server: a page's `<!-- docs-test: cluster -->`), with
//!   the binary under test as `redis-patterns`, and what each command
//!   prints is compared with what the page shows ([`console`]);
//! - `python`, `php` and `ts` blocks run with their interpreters (python3 +
//!   redis-py, php + phpredis, tsc + node + ioredis) against the same
//!   server, with the clients `redis-patterns export --lang ...` writes;
//! - `rust` blocks are the crate's doctests (the guide's chapters are
//!   `redis_patterns::guide`, the README a doctest-only item): checked here
//!   to be included;
//! - `sh` blocks hold only what a test cannot run (cargo, installs);
//! - generated regions and SHA1s are current ([`generated`]);
//! - the book (`docs/SUMMARY.md`) lists every page, and links resolve.
//!
//! `UPDATE_DOCS=1` rewrites stale generated text and the shown output of
//! commands that printed something else (keeping shown lines that still
//! match), instead of failing: the generated text first, then the
//! examples run against it (one run brings a page current).

#[path = "../common/mod.rs"]
mod common;
mod console;
mod generated;
mod pages;
mod rustdoc;
mod session;
#[path = "../../../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;

use pages::{Block, Page};
use session::{Kind, Session};

fn updating() -> bool {
    std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1")
}

/// Languages whose blocks run here.
const RUN_HERE: &[&str] = &["console", "python", "php", "ts"];

/// Held by the tests that may rewrite pages (with `UPDATE_DOCS=1`), so
/// that the examples run against pages whose generated text (the SHA1s
/// the examples call) is current and no two tests write a page at once.
static WRITING_PAGES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The stale generated text of every page, one place a line; with
/// `UPDATE_DOCS=1` the pages are rewritten with the current text.
fn stale_generated_text() -> Vec<String> {
    let pages = pages::all();
    let regions = generated::regions(&pages);
    let mut stale = Vec::new();
    for page in &pages {
        let (text, found) = generated::generate(page, &regions);
        if found.is_empty() {
            continue;
        }
        if updating() {
            std::fs::write(&page.path, text).unwrap();
        }
        stale.extend(found);
    }
    stale
        .iter()
        .map(|s| format!("{}:{}: {}", s.page, s.line, s.what))
        .collect()
}

#[test]
fn generated_text_is_current() {
    let _writing = WRITING_PAGES.lock().unwrap_or_else(|e| e.into_inner());
    let report = stale_generated_text();
    assert!(
        report.is_empty() || updating(),
        "stale generated text (UPDATE_DOCS=1 cargo test -p redis-patterns-cli --test docs rewrites it):\n{}",
        report.join("\n")
    );
}

/// What ran, by kind of block.
#[derive(Default)]
struct Counts(BTreeMap<String, usize>);

impl Counts {
    fn add(&mut self, what: &str, n: usize) {
        *self.0.entry(what.to_string()).or_default() += n;
    }
}

/// Runs one console block; failures as text, and the block's new body when
/// a command printed something else.
fn run_console(
    session: &Session,
    page: &Page,
    block: &Block,
    counts: &mut Counts,
) -> (Vec<String>, Option<String>) {
    let mut commands = match console::parse(&block.body) {
        Ok(c) => c,
        Err(e) => return (vec![format!("{}:{}: {e}", page.name, block.line)], None),
    };
    let scripts: Vec<String> = commands.iter().map(|c| c.script()).collect();
    let ran = match session.console(&scripts) {
        Ok(r) => r,
        Err(e) => return (vec![format!("{}:{}: {e}", page.name, block.line)], None),
    };
    counts.add("console blocks", 1);
    counts.add("shell commands", commands.len());
    let mut failures = Vec::new();
    let mut changed = false;
    for (c, r) in commands.iter_mut().zip(&ran) {
        let ok = if c.expected.is_empty() {
            r.status == 0 && r.lines.is_empty()
        } else {
            console::matches(&c.expected, &r.lines)
        };
        if ok {
            continue;
        }
        failures.push(format!(
            "{}:{}: `{}` (exit {}) printed:\n{}\nbut the page shows:\n{}",
            page.name,
            block.line,
            c.script(),
            r.status,
            r.lines.join("\n"),
            c.expected.join("\n")
        ));
        if (r.status == 0 || !r.lines.is_empty()) && !stale_sha1(&c.expected, &r.lines) {
            c.expected = console::updated(&c.expected, &r.lines);
            changed = true;
        }
    }
    (failures, changed.then(|| console::render(&commands)))
}

/// Whether a command answered `NOSCRIPT` where the page shows something
/// else: the page names a script by a SHA1 that is no longer shipped (the
/// generated-text check rewrites it), so what it printed is not the
/// example's output and `UPDATE_DOCS=1` must not write it into the page.
fn stale_sha1(expected: &[String], printed: &[String]) -> bool {
    let noscript = |lines: &[String]| lines.iter().any(|l| l.contains("NOSCRIPT"));
    noscript(printed) && !noscript(expected)
}

/// The session a page's examples need; `None` when it needs none or the
/// run skips it (TLS with REDIS_PATTERNS_SKIP_TLS=1).
fn session_for(page: &Page, blocks: &[Block]) -> Option<Session> {
    if !blocks.iter().any(|b| RUN_HERE.contains(&b.lang.as_str())) {
        return None;
    }
    let directives = page.directives();
    let kind = if directives.iter().any(|d| d == "cluster") {
        Kind::Cluster
    } else if directives.iter().any(|d| d == "tls") {
        if std::env::var_os("REDIS_PATTERNS_SKIP_TLS").is_some() {
            println!("{}: skipped (REDIS_PATTERNS_SKIP_TLS)", page.name);
            return None;
        }
        Kind::Tls
    } else {
        Kind::Server
    };
    let tag = page.name.replace(['/', '.'], "-");
    Some(Session::start(kind, &tag))
}

/// Runs every block of `page` that runs here, in order; the failures.
fn run_page(page: &Page, counts: &mut Counts) -> Vec<String> {
    let blocks = page.blocks();
    let Some(session) = session_for(page, &blocks) else {
        return Vec::new();
    };
    let mut failures = Vec::new();
    let mut rewritten = page.text.clone();
    // Replace bodies from the end, so earlier ranges stay valid.
    let mut new_bodies = Vec::new();
    for (n, block) in blocks.iter().enumerate() {
        let result = match block.lang.as_str() {
            "console" => {
                let (f, body) = run_console(&session, page, block, counts);
                failures.extend(f);
                if let Some(body) = body {
                    new_bodies.push((block.body_range.clone(), body));
                }
                continue;
            }
            "python" => session.python(n, &block.body),
            "php" => session.php(n, &block.body),
            "ts" => session.typescript(n, &block.body),
            _ => continue,
        };
        counts.add(&block.lang, 1);
        if let Err(e) = result {
            failures.push(format!(
                "{}:{}: the {} example failed: {e}",
                page.name, block.line, block.lang
            ));
        }
    }
    if updating() && !new_bodies.is_empty() {
        for (range, body) in new_bodies.into_iter().rev() {
            rewritten.replace_range(range, &body);
        }
        std::fs::write(&page.path, rewritten).unwrap();
    }
    failures
}

#[test]
fn every_example_runs_and_prints_what_the_page_shows() {
    let _writing = WRITING_PAGES.lock().unwrap_or_else(|e| e.into_inner());
    if updating() {
        // Its own test reports what was stale.
        stale_generated_text();
    }
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for page in pages::all() {
        failures.extend(run_page(&page, &mut counts));
    }
    println!("docs examples run here: {:?}", counts.0);
    assert!(
        failures.is_empty() || updating(),
        "{} docs examples failed (UPDATE_DOCS=1 writes the printed output into the pages):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(counts.0.get("console blocks").copied().unwrap_or(0) > 0);
}

/// What an `sh` block (shown, not run) may hold: commands a test cannot
/// run (cargo, installers), each of them checked elsewhere.
const SETUP: &[&str] = &[
    "cargo ",
    "apt-get ",
    "pip ",
    "python3 -m pip ",
    "npm ",
    "composer ",
    "git ",
    "mdbook ",
    "cd ",
    "rustup ",
];

/// `line` without its leading `NAME=value` words (`REDIS_SERVER=... cargo
/// test`, a value possibly in quotes).
fn without_assignments(line: &str) -> String {
    let mut rest = line;
    loop {
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if name_len == 0 || !rest[name_len..].starts_with('=') {
            return rest.to_string();
        }
        let value = &rest[name_len + 1..];
        let end = match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..].find(q).map_or(value.len(), |i| i + 2),
            _ => value.find(' ').unwrap_or(value.len()),
        };
        rest = value[end..].trim_start();
    }
}

/// Runs `check` on every page, which adds each problem it finds to the
/// list, and fails with the list, one problem a line.
fn check_pages(mut check: impl FnMut(&Page, &mut Vec<String>)) {
    let mut bad = Vec::new();
    for page in pages::all() {
        check(&page, &mut bad);
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn shell_blocks_that_do_not_run_hold_only_setup_commands() {
    check_pages(|page, bad| {
        for b in page.blocks() {
            if !["sh", "bash", "shell"].contains(&b.lang.as_str()) {
                continue;
            }
            for line in b.body.lines().filter(|l| !l.trim().is_empty()) {
                let cmd = without_assignments(line.trim_start()) + " ";
                if cmd.starts_with('#') || SETUP.iter().any(|s| cmd.starts_with(s)) {
                    continue;
                }
                bad.push(format!(
                    "{}:{}: `{line}` is shown but never run: put it in a console block (`$ ...` with its output), which runs",
                    page.name, b.line
                ));
            }
        }
    });
}

/// Whether `page`'s Rust blocks are doctests: a chapter of the book
/// (`build.rs` makes every chapter `docs/SUMMARY.md` lists a module of
/// `redis_patterns::guide`), or the README (a doctest-only item of
/// `src/lib.rs`).
fn is_doctested(page: &Page) -> bool {
    let root = pages::root();
    match page.name.strip_prefix("docs/") {
        Some(rel) => std::fs::read_to_string(root.join("docs/SUMMARY.md"))
            .unwrap_or_default()
            .contains(&format!("]({rel})")),
        None => std::fs::read_to_string(root.join("src/lib.rs"))
            .unwrap_or_default()
            .contains(&format!("include_str!(\"../{}\")", page.name)),
    }
}

#[test]
fn every_rust_block_is_a_doctest() {
    let mut n = 0;
    check_pages(|page, bad| {
        let rust: Vec<Block> = page
            .blocks()
            .into_iter()
            .filter(|b| b.lang == "rust" || b.lang.is_empty())
            .collect();
        if !rust.is_empty() && !is_doctested(page) {
            bad.push(format!(
                "{} has Rust blocks but is no doctest: list it in docs/SUMMARY.md",
                page.name
            ));
        }
        for b in &rust {
            n += 1;
            if b.lang.is_empty() || b.info.contains("ignore") {
                bad.push(format!(
                    "{}:{}: a Rust block must be `rust` (or `rust,no_run` ...), never ignored or unnamed",
                    page.name, b.line
                ));
            }
        }
    });
    println!("rust blocks (doctests): {n}");
}

/// The relative links of `page`: (line, target).
fn links(page: &Page) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_code = false;
    for (i, line) in page.text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code {
            continue;
        }
        for part in line.split("](").skip(1) {
            let target = part.split(')').next().unwrap_or_default();
            if !target.contains("://") && !target.starts_with('#') && !target.is_empty() {
                out.push((i + 1, target.to_string()));
            }
        }
    }
    out
}

#[test]
fn the_book_lists_every_page_and_every_link_resolves() {
    let root = pages::root();
    let summary = std::fs::read_to_string(root.join("docs/SUMMARY.md")).expect("docs/SUMMARY.md");
    check_pages(|page, bad| {
        if let Some(rel) = page.name.strip_prefix("docs/")
            && rel != "SUMMARY.md"
            && !summary.contains(&format!("]({rel})"))
        {
            bad.push(format!("docs/SUMMARY.md does not list {rel}"));
        }
        let dir = page.path.parent().unwrap();
        for (line, target) in links(page) {
            let file = target.split('#').next().unwrap();
            if !dir.join(file).exists() {
                bad.push(format!(
                    "{}:{line}: the link {target} leads nowhere",
                    page.name
                ));
            }
        }
    });
}

#[test]
fn the_commands_the_pages_name_exist() {
    let root = pages::root();
    check_pages(|page, bad| {
        for (i, line) in page.text.lines().enumerate() {
            for (flag, dirs) in [
                ("--example ", &["examples"][..]),
                ("--bench ", &["benches", "crates/cli/benches"][..]),
                (
                    "--test ",
                    &["tests", "crates/cli/tests", "crates/codegen/tests"][..],
                ),
            ] {
                for part in line.split(flag).skip(1) {
                    let name: String = part
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                        .collect();
                    if name.is_empty() || name == "X" || name == "NAME" {
                        continue;
                    }
                    let found = dirs.iter().any(|d| {
                        root.join(d).join(format!("{name}.rs")).exists()
                            || root.join(d).join(&name).join("main.rs").exists()
                    });
                    if !found {
                        bad.push(format!(
                            "{}:{}: {flag}{name} does not exist",
                            page.name,
                            i + 1
                        ));
                    }
                }
            }
        }
    });
}

/// No file of the documentation holds a merge-conflict marker: not in the
/// prose, not in a generated region, not in a block's example output
/// (where `UPDATE_DOCS=1` would otherwise keep it as a shown line). Checked
/// before anything runs, also when updating.
#[test]
fn no_page_holds_a_merge_conflict_marker() {
    let root = pages::root();
    let mut bad = Vec::new();
    for name in pages::every_file() {
        let Ok(text) = std::fs::read_to_string(root.join(&name)) else {
            continue;
        };
        for line in pages::conflict_markers(&text) {
            bad.push(format!("{name}:{line}: a merge-conflict marker"));
        }
    }
    assert!(
        bad.is_empty(),
        "resolve the merge in these places (keep one side, then UPDATE_DOCS=1 for the outputs):\n{}",
        bad.join("\n")
    );
}

/// The marker check finds each of git's four markers, also indented in an
/// example's output, and passes lines that only look alike.
#[test]
fn the_marker_check_finds_markers_in_example_output() {
    let page = "# Title\n\n```console\n$ redis-patterns lock status k\n<<<<<<< HEAD\nfree\n|||||||\n=======\n  held\n  >>>>>>> main\n```\n\n======== underline\n<<<<<<<< eight\n==\n";
    assert_eq!(pages::conflict_markers(page), vec![5, 7, 8, 10]);
}

#[test]
fn a_noscript_answer_is_not_written_over_a_shown_output() {
    let lines = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let noscript = lines(&["(error) NOSCRIPT No matching script. Please use EVAL."]);
    assert!(stale_sha1(&lines(&["(integer) [..]"]), &noscript));
    assert!(!stale_sha1(&noscript, &noscript));
    assert!(!stale_sha1(
        &lines(&["(integer) [..]"]),
        &lines(&["(integer) 1"])
    ));
}
