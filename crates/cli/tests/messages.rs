//! What the binary says when something is wrong: one lowercase line on
//! stderr that names the URL (password masked), the path or both layouts
//! and says what to do, a non-zero exit, and no panic on a closed pipe.

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use common::{bin, cli, plain, run};

/// One line, lowercase first, no trailing period, no Debug text.
fn well_formed(message: &str) {
    assert!(!message.contains('\n'), "{message}");
    assert!(
        message.chars().next().is_some_and(|c| !c.is_uppercase()),
        "{message}"
    );
    assert!(!message.ends_with('.'), "{message}");
    for debug in [
        "Some(",
        "Err(",
        "Ok(",
        "InvalidClientConfig",
        "os error",
        "Pipeline failures",
        "{ ",
    ] {
        assert!(!message.contains(debug), "{message}");
    }
}

#[test]
fn a_closed_pipe_ends_list_quietly_with_status_0() {
    let bin = env!("CARGO_BIN_EXE_redis-patterns");
    let out = run(std::process::Command::new("bash")
        .args(["-c", &format!("set -o pipefail; '{bin}' list | head -1")]));
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 1);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
}

#[test]
fn connection_problems_name_the_url_and_the_cause() {
    let refused = cli("redis://127.0.0.1:1/", &["load"]).failure();
    assert_eq!(
        refused.message(),
        "cannot connect to redis://127.0.0.1:1/: connection refused"
    );
    let masked = cli("redis://:s3cret@127.0.0.1:1/", &["load"]).failure();
    masked.says("redis://:***@127.0.0.1:1/");
    assert!(!masked.stderr.contains("s3cret"));
    for url in ["http://127.0.0.1/", "redis://127.0.0.1:notaport/"] {
        let bad = cli(url, &["load"]).failure();
        let m = bad.message();
        assert!(
            m.contains(url) && m.contains("REDIS_URL") && m.contains("does not parse"),
            "{m}"
        );
        well_formed(m);
    }
    // From REDIS_URL too.
    let out = run(bin().arg("load").env("REDIS_URL", "nonsense"));
    let stderr = &out.stderr;
    assert!(
        !out.ok() && stderr.contains("the url nonsense (from --url or REDIS_URL)"),
        "{stderr}"
    );
    for r in [refused, masked] {
        well_formed(r.message());
    }
}

/// Without `--url` or `REDIS_URL` a command talks to
/// redis://127.0.0.1:6379/, and when nothing answers there it says which
/// URL it tried and how to name another. (Only run when nothing listens on
/// 6379 here: the test must not talk to a server it did not start.)
#[test]
fn the_default_url_is_local_6379_and_says_how_to_name_another() {
    match std::net::TcpListener::bind("127.0.0.1:6379") {
        Ok(free) => drop(free),
        Err(e) => {
            println!("skipped: 127.0.0.1:6379 is in use here ({e})");
            return;
        }
    }
    let out = run(bin().args(["lock", "status", "job"])).failure();
    assert_eq!(
        out.message(),
        "cannot connect to redis://127.0.0.1:6379/: connection refused (the default url, as neither --url nor REDIS_URL is set: name your server with --url URL or REDIS_URL=URL)"
    );
    well_formed(out.message());
    // A URL that was named is not called the default.
    let named = cli("redis://127.0.0.1:6379/", &["lock", "status", "job"]).failure();
    assert_eq!(
        named.message(),
        "cannot connect to redis://127.0.0.1:6379/: connection refused"
    );
    let help = run(bin().args(["lock", "status", "--help"])).success();
    assert!(
        help.stdout.contains("[default: redis://127.0.0.1:6379/]"),
        "{}",
        help.stdout
    );
}

#[test]
fn a_password_protected_server_says_what_to_put_in_the_url() {
    let server = support::server_with(&["--requirepass", "s3cret"]);
    let port = server.port();
    let none = cli(&server.url(), &["load"]).failure();
    assert_eq!(
        none.message(),
        format!(
            "the server at redis://127.0.0.1:{port}/ needs a password: put it in the url (redis://:PASSWORD@host/)"
        )
    );
    let dir = common::temp_dir("noauth");
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    let import = cli(
        &server.url(),
        &["hash", "import", "h", dir.join("a.txt").to_str().unwrap()],
    )
    .failure();
    import.says("needs a password");
    let wrong = cli(&format!("redis://:nope@127.0.0.1:{port}/"), &["load"]).failure();
    wrong.says("refused the password");
    assert!(!wrong.stderr.contains("nope"));
    cli(&format!("redis://:s3cret@127.0.0.1:{port}/"), &["load"]).success();
    for r in [none, import, wrong] {
        well_formed(r.message());
    }
}

#[test]
fn file_errors_name_the_path() {
    let export = plain(&["export", "/proc/nope"]).failure();
    assert_eq!(
        export.message(),
        "cannot create /proc/nope/analytics: no such file or directory"
    );
    let server = support::server();
    let missing = cli(
        &server.url(),
        &["hash", "import", "h", "/nonexistent/lines.txt"],
    )
    .failure();
    assert_eq!(
        missing.message(),
        "cannot open /nonexistent/lines.txt: no such file or directory"
    );
    let bloom = cli(
        &server.url(),
        &["bloom", "load", "bf", "/nonexistent/items.txt", "--jshash"],
    )
    .failure();
    assert!(bloom.message().contains("/nonexistent/items.txt"));
    assert_eq!(support::dbsize(&mut server.connection()), 0);
}

#[test]
fn bad_input_is_refused_or_counted_and_fails_the_run() {
    let server = support::server();
    let url = server.url();
    let dir = common::temp_dir("bad-input");
    let items = dir.join("items.txt");
    std::fs::write(&items, "a\nb\n").unwrap();
    let items = items.to_str().unwrap();
    for args in [
        &["bloom", "load", "bf", items, "--jshash", "--max-line", "0"][..],
        &["hash", "import", "h", items, "--max-line", "0"][..],
    ] {
        let r = cli(&url, args).failure();
        r.says("--max-line must be at least 1");
    }
    assert_eq!(support::dbsize(&mut server.connection()), 0);
    // A binary file: its lines are rejected, counted, and the run fails
    // unless rejects are allowed.
    let binary = dir.join("binary.bin");
    let bytes: Vec<u8> = (0..20_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 0x80)
        .collect();
    std::fs::write(&binary, &bytes).unwrap();
    let binary = binary.to_str().unwrap();
    let r = cli(&url, &["hash", "import", "bin", binary, "--shards", "4"]).failure();
    let m = r.message();
    assert!(
        m.contains("lines were rejected") && m.contains("--allow-rejects"),
        "{m}"
    );
    assert!(r.stdout.contains("not valid UTF-8"), "{}", r.stdout);
    well_formed(m);
    let allowed = common::json(&url, &["hash", "import", "bin", binary, "--allow-rejects"]);
    assert_eq!(allowed["rejected"], allowed["lines"]);
    assert_eq!(allowed["inserted"], 0);
}

#[test]
fn a_server_binary_that_exits_is_named() {
    let out = run(bin().arg("demo").env("REDIS_SERVER", "/bin/false"));
    let stderr = &out.stderr;
    assert!(!out.ok());
    assert!(
        stderr.starts_with(
            "redis-patterns: `/bin/false` exited (exit status: 1) before it answered on 127.0.0.1:"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("REDIS_SERVER"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_busy_lock_and_a_missing_layout_say_what_to_do() {
    let server = support::server();
    let url = server.url();
    common::json(&url, &["lock", "acquire", "job"]);
    let busy = cli(&url, &["lock", "acquire", "job"]).failure();
    assert!(busy.message().contains("--wait-ms"), "{}", busy.stderr);
    let missing = cli(&url, &["hash", "get", "nothing", "f"]).failure();
    assert!(missing.message().contains("--shards"), "{}", missing.stderr);
    let visits = cli(
        &url,
        &["visits", "contains", "site", "1", "--day", "2099-01-01"],
    )
    .failure();
    assert!(visits.message().contains("--shards"), "{}", visits.stderr);
    let packed = cli(&url, &["packed", "get", "logins", "1"]).failure();
    assert!(packed.message().contains("--width"), "{}", packed.stderr);
    for r in [busy, missing, visits, packed] {
        well_formed(r.message());
    }
}
