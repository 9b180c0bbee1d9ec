//! The library's shape, checked from its source: every pattern operation is
//! written once (an `Op`, run by both drivers) with no hand-written async
//! twin, only the drivers take connections, and every file says in its
//! first doc line which one concept it holds.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `(file relative to src/, line number, line)` of every line of the library.
fn lines() -> Vec<(String, usize, String)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(src())
            .expect("below src/")
            .display()
            .to_string();
        let text = std::fs::read_to_string(&f).expect("read file");
        for (i, line) in text.lines().enumerate() {
            out.push((rel.clone(), i + 1, line.to_string()));
        }
    }
    out
}

/// The drivers: the only code that runs requests on a connection.
fn is_driver(file: &str) -> bool {
    file.starts_with("core/")
}

/// Guards that hold a lock while their holder works: the one kind of code
/// with a sync and an async form, because keeping a lease alive is a thread
/// on one side and a task on the other.
fn is_guard(file: &str) -> bool {
    file.contains("guard") || file.contains("watchdog")
}

#[test]
fn no_hand_written_async_twins_outside_the_drivers() {
    let offenders: Vec<String> = lines()
        .into_iter()
        .filter(|(file, _, line)| {
            let code = line.trim_start();
            let is_async_fn = code.contains("async fn ")
                || (code.contains("fn ")
                    && code.split("fn ").nth(1).is_some_and(|rest| {
                        rest.split('(')
                            .next()
                            .is_some_and(|name| name.ends_with("_async"))
                    }));
            is_async_fn && !code.starts_with("//") && !is_driver(file) && !is_guard(file)
        })
        .map(|(file, n, line)| format!("src/{file}:{n}: {}", line.trim()))
        .collect();
    assert!(
        offenders.is_empty(),
        "write the operation once as an Op instead:\n{}",
        offenders.join("\n")
    );
}

/// The patterns: one per `lua/<pattern>/` folder, each with its module
/// `src/<pattern>.rs` or `src/<pattern>/` (the layout a newcomer relies on).
fn patterns() -> Vec<String> {
    let lua = Path::new(env!("CARGO_MANIFEST_DIR")).join("lua");
    let mut names: Vec<String> = std::fs::read_dir(lua)
        .expect("read lua/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        // lua/includes/ holds the shared functions the scripts include.
        .filter(|name| name != "includes")
        .collect();
    names.sort();
    for name in &names {
        assert!(
            src().join(format!("{name}.rs")).is_file() || src().join(name).join("mod.rs").is_file(),
            "lua/{name}/ has no src/{name}.rs or src/{name}/mod.rs"
        );
    }
    names
}

#[test]
fn every_pattern_operation_is_an_op_and_takes_no_connection() {
    let all = lines();
    let mut report = Vec::new();
    for pattern in patterns() {
        let in_pattern = |file: &str| {
            file == format!("{pattern}.rs") || file.starts_with(&format!("{pattern}/"))
        };
        let ops: Vec<&String> = all
            .iter()
            .filter(|(file, _, line)| {
                in_pattern(file)
                    && line.trim_start().starts_with("pub fn ")
                    && line.contains("-> Op<")
            })
            .map(|(_, _, line)| line)
            .collect();
        // Multi-line signatures: count `pub fn` whose return type follows on a
        // later line too, by looking for `) -> Op<` lines.
        let more = all
            .iter()
            .filter(|(file, _, line)| in_pattern(file) && line.trim_start().starts_with(") -> Op<"))
            .count();
        assert!(
            ops.len() + more > 0,
            "pattern {pattern} has no operation returning an Op"
        );
        report.push(format!("{pattern}: {} operations", ops.len() + more));
        let takes_connection: Vec<String> = all
            .iter()
            .filter(|(file, _, line)| {
                in_pattern(file)
                    && !is_guard(file)
                    && (line.contains("con: &mut Connection")
                        || line.contains("con: &mut AsyncConnection")
                        || line.contains("ConnectionLike"))
                    && !line.trim_start().starts_with("//")
            })
            .map(|(file, n, line)| format!("src/{file}:{n}: {}", line.trim()))
            .collect();
        // The one sync convenience that holds a connection: the lock guard.
        let takes_connection: Vec<String> = takes_connection
            .into_iter()
            .filter(|l| !(l.starts_with("src/lock") && l.contains("con: &'a mut Connection")))
            .collect();
        assert!(
            takes_connection.is_empty(),
            "pattern operations take no connection (return an Op):\n{}",
            takes_connection.join("\n")
        );
    }
    println!("{}", report.join("\n"));
}

#[test]
fn every_file_says_which_concept_it_holds() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let missing: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("read file");
            !text.trim_start().starts_with("//!")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "open each file with a `//!` line naming its concept:\n{}",
        missing.join("\n")
    );
}

/// The Rust examples of the crate's front page (`src/lib.rs`) and of the
/// README, as their lines read once the doc comment's `//! ` is taken off.
fn front_page_examples() -> Vec<(String, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("src/lib.rs");
    let lib: Vec<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l).to_string())
        .collect();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let readme: Vec<String> = readme.lines().map(str::to_string).collect();
    let mut out = Vec::new();
    for (page, lines) in [("src/lib.rs", lib), ("README.md", readme)] {
        let mut block: Option<Vec<String>> = None;
        for line in lines {
            let fence = line.trim_start().starts_with("```");
            match block.take() {
                None if fence => {
                    let info = line.trim_start().trim_start_matches('`');
                    let rust =
                        info.is_empty() || info.starts_with("rust") || info.starts_with("no_run");
                    block = rust.then(Vec::new);
                    if !rust {
                        // Skip a block of another language: up to its end.
                        block = Some(vec!["\u{0}skip".to_string()]);
                    }
                }
                None => {}
                Some(b) if fence && b.first().is_none_or(|l| l != "\u{0}skip") => {
                    out.push((page.to_string(), b));
                }
                Some(_) if fence => {}
                Some(mut b) => {
                    b.push(line);
                    block = Some(b);
                }
            }
        }
    }
    out
}

/// A user copies the front page's examples into a crate that depends on
/// `redis-patterns` alone: an example that names the `redis` crate must
/// import the crate's re-export (`use redis_patterns::redis;`), visibly.
#[test]
fn front_page_examples_compile_in_a_crate_of_their_own() {
    let mut offenders = Vec::new();
    for (page, block) in front_page_examples() {
        let shown: Vec<&String> = block
            .iter()
            .filter(|l| !l.trim_start().starts_with("# "))
            .collect();
        let names_redis = shown.iter().any(|l| {
            l.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .any(|w| w.starts_with("redis::"))
        });
        let imports = shown
            .iter()
            .any(|l| l.trim_start().starts_with("use redis_patterns::redis"));
        if names_redis && !imports {
            offenders.push(format!("{page}: {}", block.join("\n")));
        }
    }
    assert!(
        offenders.is_empty(),
        "examples naming `redis::` without `use redis_patterns::redis;`:\n{}",
        offenders.join("\n\n")
    );
}

/// The newest `lib<name>-*.rlib` in `deps` (the one this test links).
fn newest_rlib(deps: &Path, name: &str) -> PathBuf {
    let prefix = format!("lib{name}-");
    std::fs::read_dir(deps)
        .expect("the deps directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let file = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
            file.starts_with(&prefix) && file.ends_with(".rlib")
        })
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no {prefix}*.rlib in {}", deps.display()))
}

/// The front page's examples build as a user copies them into a crate of
/// their own that depends on `redis-patterns` alone: rustc checks each one
/// (its hidden lines too, as rustdoc does) with `redis_patterns` as its only
/// extern crate besides the test server's, so a name of another crate
/// (`redis::...`) that is not imported from the re-export fails to build,
/// as it would for the user (doctests see every dependency of the package
/// and cannot catch it).
#[test]
fn front_page_examples_build_with_redis_patterns_as_the_only_dependency() {
    let exe = std::env::current_exe().expect("the test's path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let externs = [
        ("redis_patterns", newest_rlib(deps, "redis_patterns")),
        (
            "redis_patterns_test_support",
            newest_rlib(deps, "redis_patterns_test_support"),
        ),
    ];
    let dir = std::env::temp_dir().join(format!("front-page-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut failed = Vec::new();
    let examples = front_page_examples();
    assert!(!examples.is_empty(), "the front page has Rust examples");
    for (i, (page, block)) in examples.iter().enumerate() {
        let mut code: Vec<&str> = block
            .iter()
            .map(|l| match l.trim_start() {
                "#" => "",
                t if t.starts_with("# ") => &t[2..],
                _ => l.as_str(),
            })
            .collect();
        let body = code.join("\n");
        if !body.contains("fn main") {
            code.insert(0, "fn main() {");
            code.push("}");
        }
        let file = dir.join(format!("example_{i}.rs"));
        std::fs::write(&file, code.join("\n")).expect("write the example");
        let mut rustc = std::process::Command::new("rustc");
        rustc
            .args([
                "--edition",
                "2024",
                "--crate-type",
                "bin",
                "--emit=metadata",
            ])
            .args(["--crate-name", &format!("example_{i}")])
            .arg("-L")
            .arg(format!("dependency={}", deps.display()))
            .arg("--out-dir")
            .arg(&dir);
        for (name, rlib) in &externs {
            rustc
                .arg("--extern")
                .arg(format!("{name}={}", rlib.display()));
        }
        let out = rustc.arg(&file).output().expect("run rustc");
        if !out.status.success() {
            failed.push(format!(
                "{page}, example {i}:\n{}\n{}",
                block.join("\n"),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failed.is_empty(),
        "front-page examples that do not build in a crate of their own:\n{}",
        failed.join("\n\n")
    );
}
