//! The command line over TLS: `--url rediss://… --tls-ca FILE` against a
//! server (and a cluster) the test starts with a throwaway CA; without the
//! CA, with another CA or with `#insecure` it refuses to connect, saying
//! why. Skipped with `REDIS_PATTERNS_SKIP_TLS=1` (servers built without
//! TLS; see tests/tls.rs at the root).

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use redis_patterns_test_support::{LocalCluster, LocalServer, TlsFiles};

/// A throwaway CA's files, a server with TLS signed by it and its
/// rediss:// url; None when the TLS tests are skipped.
fn tls_server() -> Option<(TlsFiles, LocalServer, String)> {
    if std::env::var_os("REDIS_PATTERNS_SKIP_TLS").is_some() {
        eprintln!("TLS tests skipped (REDIS_PATTERNS_SKIP_TLS is set)");
        return None;
    }
    let files = TlsFiles::generate().unwrap();
    let server = LocalServer::start_tls(&files, &[]).expect("a server built with TLS");
    let url = server.tls_url().unwrap();
    Some((files, server, url))
}

/// `redis-patterns ARGS --url URL --tls-ca CA`.
fn with_ca(url: &str, ca: &std::path::Path, args: &[&str]) -> common::Run {
    common::run(
        common::bin()
            .args(args)
            .args(["--url", url, "--tls-ca"])
            .arg(ca),
    )
}

#[test]
fn lock_and_info_run_over_tls_with_the_ca_given() {
    let Some((files, _server, url)) = tls_server() else {
        return;
    };
    let ca = files.ca_file();
    let acquired = with_ca(&url, &ca, &["--json", "lock", "acquire", "job"])
        .success()
        .json();
    let token = acquired["token"].as_str().expect("a token").to_string();
    let status = with_ca(&url, &ca, &["--json", "lock", "status", "job"])
        .success()
        .json();
    assert_eq!(status["held"], true, "{status}");
    with_ca(&url, &ca, &["lock", "release", "job", &token]).success();
    let info = with_ca(&url, &ca, &["--json", "info"]).success().json();
    assert_eq!(info["server"], "redis", "{info}");
    assert_eq!(info["cluster"], false);

    // The cluster: any node's rediss:// url and the same CA.
    let cluster = LocalCluster::builder()
        .tls(&files)
        .start()
        .expect("a TLS cluster");
    let node = &cluster.tls_urls()[1];
    let info = with_ca(node, &ca, &["--json", "info"]).success().json();
    assert_eq!(info["cluster"], true, "{info}");
    with_ca(node, &ca, &["lock", "acquire", "job"]).success();
    with_ca(node, &ca, &["--json", "load"]).success();
}

#[test]
fn an_unverified_server_is_refused_with_a_reason() {
    let Some((files, server, url)) = tls_server() else {
        return;
    };
    // The system's roots do not know the test CA.
    let run = common::cli(&url, &["lock", "status", "job"]).failure();
    assert!(
        run.message().to_lowercase().contains("certificate"),
        "{}",
        run.stderr
    );
    // Another CA.
    let other = TlsFiles::generate().unwrap();
    let run = with_ca(&url, &other.ca_file(), &["lock", "status", "job"]).failure();
    assert!(
        run.message().to_lowercase().contains("certificate"),
        "{}",
        run.stderr
    );
    // Accepting any certificate is refused before connecting.
    let run = common::cli(&format!("{url}#insecure"), &["lock", "status", "job"]).failure();
    assert!(run.message().contains("--tls-ca"), "{}", run.stderr);
    // A CA for a plain url is a mistake, said so.
    let run = with_ca(&server.url(), &files.ca_file(), &["lock", "status", "job"]).failure();
    assert!(run.message().contains("rediss://"), "{}", run.stderr);
}
