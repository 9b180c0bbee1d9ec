//! The conformance suite on the Rust API: every case of
//! `tests/conformance/cases.json` (the language-neutral cases every client
//! runs, see `tests/conformance/README.md`) on one server and on a 3-node
//! cluster, dispatched by name to the Rust API (`dispatch.rs`). An
//! operation the description (`src/<pattern>/client.api`) lists that the
//! dispatcher does not know, or that no case covers, fails; so does a case
//! naming an operation the description does not list.

mod support;

#[path = "conformance/dispatch.rs"]
mod dispatch;
#[path = "conformance/engine.rs"]
mod engine;

use std::collections::BTreeSet;

use redis_patterns::contract::{PatternContract, api};

use engine::{Cases, Part, Target};

fn cases() -> Cases {
    Cases::load(&engine::cases_path())
}

/// Every operation of the description, as `Class.op` (constructors as
/// `Class.new`).
fn described() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for c in PatternContract::all() {
        for class in &c.api.classes {
            if class.new.is_some() {
                out.insert(format!("{}.new", class.name));
            }
            for op in &class.ops {
                out.insert(format!("{}.{}", class.name, op.name));
            }
        }
    }
    out
}

#[test]
fn every_described_operation_is_dispatched_and_covered() {
    let described = described();
    let dispatched: BTreeSet<String> = dispatch::OPERATIONS.iter().map(|s| s.to_string()).collect();
    let missing: Vec<_> = described.difference(&dispatched).collect();
    assert!(
        missing.is_empty(),
        "described but not dispatched to the Rust API: {missing:?}"
    );
    let extra: Vec<_> = dispatched.difference(&described).collect();
    assert!(extra.is_empty(), "dispatched but not described: {extra:?}");
    let covered = cases().operations();
    let uncovered: Vec<_> = described.difference(&covered).collect();
    assert!(uncovered.is_empty(), "no case covers: {uncovered:?}");
    let unknown: Vec<_> = covered.difference(&described).collect();
    assert!(
        unknown.is_empty(),
        "cases name operations the description lacks: {unknown:?}"
    );
    // The error kinds the cases expect are declared.
    let kinds: BTreeSet<String> = api::Api::errors()
        .errors
        .into_iter()
        .map(|e| e.name)
        .collect();
    for k in cases().error_kinds() {
        assert!(
            kinds.contains(&k),
            "a case expects error {k}, which errors.api lacks"
        );
    }
}

#[test]
fn the_rust_api_passes_every_case_on_a_server() {
    let server = support::server();
    passes_every_case("rust (server)", &Target::server(&server.url()), false);
}

#[test]
fn the_rust_api_passes_every_case_on_a_cluster() {
    let cluster = support::cluster();
    passes_every_case("rust (cluster)", &Target::cluster(&cluster.urls()), true);
}

/// Every case on `target` (named `who` in what it prints) passes, and
/// every script ran ([`every_script_ran`]).
fn passes_every_case(who: &str, target: &Target, cluster: bool) {
    let report = engine::run_all(&cases(), target);
    println!("conformance {who}: {}", report.summary());
    report.assert_passed();
    every_script_ran(who, target, cluster);
}

/// The clients' script-coverage check ([`engine::expect_every_script_ran`])
/// after the Rust API's run: in EVALSHA mode each script the API calls is in
/// a node's script cache; in functions mode (FCALL) none is, and the check
/// is left out. `bloom.add` and `bloom.exists` are the Rust API's only with
/// `Engine::Script` (its default engine sends BITFIELD, and the description
/// has no engine setting for a case to select; `tests/bloom.rs` runs both
/// engines); every other script must have run.
fn every_script_ran(who: &str, target: &Target, cluster: bool) {
    if support::call_mode() == redis_patterns::CallMode::Functions {
        println!(
            "{who}: script coverage not checked in functions mode (FCALL leaves the script cache empty)"
        );
        return;
    }
    engine::expect_every_script_ran(who, &target.urls, cluster, &["bloom.add", "bloom.exists"]);
}

/// The cross-language cases with the Rust API on both sides: every write
/// part, then every read part, without a flush between (the other languages'
/// runs pair up the same way).
#[test]
fn the_cross_cases_read_back_what_the_rust_api_wrote() {
    let server = support::server();
    let target = Target::server(&server.url());
    let cases = cases();
    let wrote = engine::run_selected(&cases, &target, Part::Write, false);
    wrote.assert_passed();
    let read = engine::run_selected(&cases, &target, Part::Read, false);
    println!("conformance cross rust -> rust: {}", read.summary());
    read.assert_passed();
}
