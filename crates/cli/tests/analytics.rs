//! `redis-patterns analytics mark / count / query / cohort` through the
//! binary, against a real server and any node of a real cluster (where the
//! untagged events are in several slots: expressions and cohort tables are
//! then computed client-side over the fetched bitmaps), each answer read
//! back from its `--json` output, and the text form where it matters.

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use common::{cli, json};
use serde_json::json;

/// `analytics ARGS... [--tag TAG]` at `url`, its JSON output.
fn an(url: &str, tag: Option<&str>, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["analytics"];
    all.extend_from_slice(args);
    if let Some(t) = tag {
        all.extend(["--tag", t]);
    }
    json(url, &all)
}

/// `redis-patterns analytics LINE --url URL` (LINE: words split at each
/// space), as it ran.
fn analytics(url: &str, line: &str) -> common::Run {
    let mut all = vec!["analytics"];
    all.extend(line.split(' '));
    cli(url, &all)
}

/// [`an`] of a command line of words (split at each space).
fn an_words(url: &str, tag: Option<&str>, line: &str) -> serde_json::Value {
    an(url, tag, &line.split(' ').collect::<Vec<_>>())
}

fn leaf(event: &str, period: &str) -> serde_json::Value {
    json!({"event": event, "period": period})
}

/// Three users active on Monday 2024-03-04, two of them again on Tuesday,
/// one buying on Monday; the questions asked of them.
fn every_analytics_command(url: &str, tag: Option<&str>) {
    marks(url, tag);
    counts_and_expressions(url, tag);
    cohort_tables(url, tag);
    ready_queries(url, tag);
}

/// The marks: the periods each mark sets, and new counted once.
fn marks(url: &str, tag: Option<&str>) {
    let marked = an_words(url, tag, "mark active 1 2 3 --at 2024-03-04T10:00:00Z");
    assert_eq!(
        marked,
        json!({"event": "active", "at": "2024-03-04T10:00:00Z", "marked": 3, "new": 3,
               "periods": ["D:2024-03-04", "W:2024-W10", "M:2024-03"]})
    );
    // Unix seconds of 2024-03-05T09:00:00Z: both new that day, 3 again not.
    let again = an_words(url, tag, "mark active 2 3 --at 1709629200");
    assert_eq!(
        (again["marked"].clone(), again["new"].clone()),
        (json!(2), json!(2))
    );
    let resent = an(url, tag, &["mark", "active", "3", "--at", "1709629200"]);
    assert_eq!(resent["new"], 0);
    an_words(url, tag, "mark bought 2 --at 2024-03-04T18:30:00Z");
    an(url, tag, &["mark", "churned", "3", "--unique"]);
}

/// Counts per period, and an expression's count, membership and members.
fn counts_and_expressions(url: &str, tag: Option<&str>) {
    let count =
        |event: &str, period: &str| an(url, tag, &["count", event, period])["count"].clone();
    assert_eq!(count("active", "D:2024-03-04"), 3);
    assert_eq!(count("active", "D:2024-03-05"), 2);
    assert_eq!(count("active", "W:2024-W10"), 3);
    assert_eq!(count("churned", "U"), 1);
    assert_eq!(count("active", "D:2024-03-06"), 0);

    // Active on Monday, not buying that day, not churned: only 1.
    let monday = leaf("active", "D:2024-03-04");
    let expr = json!({"and": [monday, {"not": leaf("bought", "D:2024-03-04")}, {"not": leaf("churned", "U")}]});
    let expr = expr.to_string();
    assert_eq!(an(url, tag, &["query", &expr]), json!({"count": 1}));
    assert_eq!(
        an(url, tag, &["query", &expr, "--contains", "1"]),
        json!({"id": 1, "contains": true})
    );
    assert_eq!(
        an(url, tag, &["query", &expr, "--contains", "2"])["contains"],
        false
    );
    // Active on both days, paged two at a time.
    let both = json!({"or": [monday, leaf("active", "D:2024-03-05")]}).to_string();
    let page = an(url, tag, &["query", &both, "--members", "--limit", "2"]);
    assert_eq!(page, json!({"ids": [1, 2], "next": 3}));
    let rest = an(url, tag, &["query", &both, "--members", "--from", "3"]);
    assert_eq!(rest, json!({"ids": [3], "next": null}));
    let cached = an(
        url,
        tag,
        &["query", &both, "--cache", "mon_tue", "--ttl-ms", "60000"],
    );
    assert_eq!(cached, json!({"count": 3}));
}

/// Retention tables: active after active, and active after buying.
fn cohort_tables(url: &str, tag: Option<&str>) {
    // Daily retention from Monday: 3 on day 0, 2 of them back on day 1.
    let table = an_words(
        url,
        tag,
        "cohort active active D:2024-03-04 --rows 2 --columns 2",
    );
    assert_eq!(
        table,
        json!({"periods": ["D:2024-03-04", "D:2024-03-05"], "sizes": [3, 2],
               "counts": [[3, 2], [2, null]]})
    );
    // Bought on Monday, then active: 1 of 1 on each day.
    let bought = an_words(
        url,
        tag,
        "cohort bought active D:2024-03-04 --rows 1 --columns 2",
    );
    assert_eq!(bought["counts"], json!([[1, 1]]));
}

/// The ready queries: a streak, and active on N of the last M days.
fn ready_queries(url: &str, tag: Option<&str>) {
    // 3's streak over Monday to Wednesday; who was active on 2 of the 2 days.
    let streak = an_words(url, tag, "streak active 3 D:2024-03-04 D:2024-03-06");
    assert_eq!(
        streak,
        json!({"longest": 2, "longest_ends": "D:2024-03-05", "current": 0, "marked": 2})
    );
    let regular = [
        "active",
        "active",
        "--at-least",
        "2",
        "--of-last",
        "2",
        "D:2024-03-05",
    ];
    assert_eq!(an(url, tag, &regular), json!({"count": 2}));
    let mut members = regular.to_vec();
    members.push("--members");
    assert_eq!(an(url, tag, &members), json!({"ids": [2, 3], "next": null}));
    let once = [
        "active",
        "active",
        "--at-least",
        "1",
        "--of-last",
        "3",
        "D:2024-03-06",
        "--contains",
        "1",
    ];
    assert_eq!(an(url, tag, &once)["contains"], true);
}

/// The text forms, refusals before anything is written, and bad arguments.
fn text_and_refusals(url: &str) {
    text_forms(url);
    mark_and_query_refusals(url);
    ready_query_text_and_refusals(url);
}

/// A mark's and a cohort table's text output.
fn text_forms(url: &str) {
    let out = analytics(url, "mark live 7 --at 2024-03-04T10:00:00Z").success();
    assert_eq!(
        out.stdout.trim(),
        "marked 1 id(s) in live at 2024-03-04T10:00:00Z (D:2024-03-04, W:2024-W10, M:2024-03); new: 1"
    );
    let table = analytics(url, "cohort live live D:2024-03-04 --rows 1 --columns 2").success();
    assert_eq!(table.stdout.trim(), "D:2024-03-04\t1\t1 (100.0%)\t-");
}

/// Ids above the bound, a bad expression and an unknown granularity are
/// refused before anything is written.
fn mark_and_query_refusals(url: &str) {
    analytics(url, "mark live 8 20000000")
        .failure()
        .says("above the configured maximum");
    analytics(url, "mark vip 1 20000000 --unique --max-id 100")
        .failure()
        .says("nothing was marked");
    assert_eq!(json(url, &["analytics", "count", "vip", "U"])["count"], 0);
    let bad = cli(url, &["analytics", "query", r#"{"and": 3}"#]).failure();
    assert!(
        bad.stderr.contains("takes a list of expressions"),
        "{}",
        bad.stderr
    );
    let hour = analytics(url, "mark live 7 --granularities hours").failure();
    assert!(
        hour.stderr.contains("not one of hour, day"),
        "{}",
        hour.stderr
    );
}

/// A streak's text output; ranges of mixed granularities and "at least N of
/// M" with N > M are refused.
fn ready_query_text_and_refusals(url: &str) {
    let text = analytics(url, "streak live 7 D:2024-03-01 D:2024-03-04").success();
    assert_eq!(
        text.stdout.lines().collect::<Vec<_>>(),
        [
            "longest 1",
            "longest_ends D:2024-03-04",
            "current 1",
            "marked 1"
        ]
    );
    analytics(url, "streak live 7 D:2024-03-01 W:2024-W10")
        .failure()
        .says("different granularities");
    analytics(url, "active live --at-least 3 --of-last 2 D:2024-03-04")
        .failure()
        .says("at least 3 of 2");
}

/// Approximate uniques: `mark --hll` (beside the bitmaps), `mark
/// --strings` (HyperLogLog only) and `count --uniques` over a range; the
/// same for a unique event (`--unique`, period U).
fn uniques(url: &str, tag: Option<&str>) {
    // A mark of two new ids with --hll, then one with --strings: what it
    // marked, in which period.
    let hll_then_strings = |hll: &str, strings: &str, marked: u64, period: &str| {
        assert_eq!(an_words(url, tag, hll)["new"], 2);
        let strings = an_words(url, tag, strings);
        assert_eq!(strings["marked"], marked);
        assert_eq!(strings["period"], period);
    };
    hll_then_strings(
        "mark seen 1 2 --hll --at 2024-04-01T10:00:00Z",
        "mark seen a@example.com b@example.com --strings --at 2024-04-02T10:00:00Z",
        2,
        "D:2024-04-02",
    );
    let uniques = |args: &[&str]| {
        let mut all = vec!["count", "seen"];
        all.extend_from_slice(args);
        an(url, tag, &all)["uniques"].clone()
    };
    assert_eq!(uniques(&["D:2024-04-01", "--uniques"]), 2);
    assert_eq!(
        uniques(&["D:2024-04-01", "--uniques", "--to", "D:2024-04-02"]),
        4
    );
    assert_eq!(uniques(&["W:2024-W14", "--uniques"]), 4);
    // The bitmaps hold the integer ids only.
    assert_eq!(an(url, tag, &["count", "seen", "W:2024-W14"])["count"], 2);
    analytics(url, "mark seen a@example.com")
        .failure()
        .says("use --strings");
    // A unique event: its HyperLogLog beside the bitmap (--hll), or alone
    // (--strings); `count EVENT U --uniques`.
    hll_then_strings(
        "mark member 5 9 --unique --hll",
        "mark email a@example.com b@example.com a@example.com --unique --strings",
        3,
        "U",
    );
    let unique = |event: &str| an(url, tag, &["count", event, "U", "--uniques"])["uniques"].clone();
    assert_eq!(unique("member"), 2);
    assert_eq!(unique("email"), 2);
    assert_eq!(an(url, tag, &["count", "member", "U"])["count"], 2);
    assert_eq!(an(url, tag, &["count", "email", "U"])["count"], 0);
    analytics(url, "count email U --uniques --to D:2024-04-02")
        .failure()
        .says("no range");
}

#[test]
fn analytics_commands_on_one_server() {
    let server = support::server();
    let url = server.url();
    every_analytics_command(&url, None);
    every_analytics_command(&url, Some("shop"));
    text_and_refusals(&url);
    uniques(&url, None);
}

#[test]
fn analytics_commands_on_any_node_of_a_cluster() {
    let cluster = support::cluster();
    let url = cluster.nodes()[2].url();
    // Untagged: one slot per event (computed client-side); tagged: one slot.
    every_analytics_command(&url, None);
    every_analytics_command(&url, Some("shop"));
    uniques(&url, Some("shop"));
}
