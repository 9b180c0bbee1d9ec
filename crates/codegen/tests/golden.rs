//! Guards the generator behind `build.rs`: a golden file for its output on
//! fixture scripts, and one malformed header per rule of the grammar.

use std::path::Path;

use redis_patterns_codegen::{generate, parse_dir, parse_script};

use redis_patterns_codegen::sha1_hex as sha1;

/// `UPDATE_GOLDEN=1 cargo test -p redis-patterns-codegen --test golden` rewrites the golden file after
/// an intended change of the generator; review the diff before committing.
#[test]
fn generated_code_matches_golden_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let specs = parse_dir(&root.join("lua")).expect("fixture headers are valid");
    let code = generate(&specs);
    let golden = root.join("generated.rs.golden");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &code).expect("write golden file");
    }
    let expected = std::fs::read_to_string(&golden).expect("golden file exists");
    assert_eq!(
        code, expected,
        "generator output changed; see UPDATE_GOLDEN in crates/codegen/tests/golden.rs"
    );
}

#[test]
fn fixture_specs_are_parsed_as_declared() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lua");
    let specs = parse_dir(&root).expect("fixture headers are valid");
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["demo.peek", "demo.put"]);
    let put = &specs[1];
    assert!(!put.read_only);
    assert!(put.keys[1].variadic && !put.keys[0].variadic);
    assert_eq!(put.args.len(), 3);
    assert_eq!(
        put.returns_doc,
        "{new keys, counter} counter after the increment"
    );
    assert_eq!(put.errors, ["BADARG"]);
    let source = std::fs::read(root.join("demo/put.lua")).expect("fixture");
    assert_eq!(put.sha1_hex, sha1(&source));
    assert!(specs[0].read_only);
}

const GOOD_HEAD: &str = "#!lua\n--- Summary\n";

/// Parses `body` as `lua/p/op.lua` and returns the error's (line, message).
fn error_of(source: &str) -> (usize, String) {
    let e = parse_script("p/op.lua", source).expect_err("header must be rejected");
    assert_eq!(e.file, "lua/p/op.lua");
    assert!(
        e.to_string()
            .starts_with(&format!("lua/p/op.lua:{}: ", e.line))
    );
    (e.line, e.message)
}

fn assert_rejected(source: &str, line: usize, needle: &str) {
    let (l, msg) = error_of(source);
    assert!(
        msg.contains(needle),
        "message {msg:?} should contain {needle:?}"
    );
    assert_eq!(l, line, "wrong line for {msg:?}");
}

#[test]
fn malformed_headers_fail_with_file_and_line() {
    let ok = format!(
        "{GOOD_HEAD}-- KEYS[1] k: a key\n-- RETURNS integer: one\nreturn redis.call('DEL', KEYS[1])\n"
    );
    assert!(parse_script("p/op.lua", &ok).is_ok());

    assert_rejected("--- no shebang\n", 1, "first line");
    assert_rejected("#!lua\n-- KEYS[1] k: x\n", 2, "--- <summary>");
    assert_rejected(
        &format!("{GOOD_HEAD}-- KEYS[2] k: a key\n-- RETURNS integer: x\nreturn KEYS[2]\n"),
        3,
        "expected KEYS[1]",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- KEYS[1] K: a key\n"),
        3,
        "snake_case",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- KEYS[1] type: a key\n"),
        3,
        "keyword",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- KEYS[1] k a key\n"),
        3,
        "`: <meaning>`",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- ARGV[1] n: no type\n"),
        3,
        "missing type",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- ARGV[1] n number: wrong type\n"),
        3,
        "unknown type",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- ARGV[1] n integer:\n"),
        3,
        "must not be empty",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- KEYS[1] k: a\n-- ARGV[1] k integer: b\n"),
        4,
        "duplicate name",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- KEYS[1..] k: a\n-- KEYS[2] j: b\n"),
        4,
        "nothing may follow",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- RETURNS number: x\n"),
        3,
        "unknown return type",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- BOGUS x\n"),
        3,
        "unknown header line",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}--    orphan continuation\n"),
        3,
        "nothing to continue",
    );
    assert_rejected(&format!("{GOOD_HEAD}-- ERRORS bad_code\n"), 3, "UPPER_CASE");
    assert_rejected(
        &format!("{GOOD_HEAD}-- KEYS[1] k: a\nreturn KEYS[1]\n"),
        4,
        "no `-- RETURNS",
    );
}

#[test]
fn header_and_body_must_agree() {
    let head = format!(
        "{GOOD_HEAD}-- KEYS[1] k: a key\n-- ARGV[1] n integer: a number\n-- RETURNS integer: x\n"
    );
    // ARGV[2] used but not declared: reported at the line that uses it.
    assert_rejected(
        &format!("{head}local a = KEYS[1]\nreturn ARGV[1] + ARGV[2]\n"),
        7,
        "ARGV[2] is used but not declared",
    );
    // Declared but unused: reported at the declaration.
    assert_rejected(
        &format!("{head}return KEYS[1]\n"),
        4,
        "ARGV[1] `n` is declared but never used",
    );
    // A use inside a comment does not count.
    assert_rejected(
        &format!("{head}return KEYS[1] -- ARGV[1]\n"),
        4,
        "never used",
    );
    // Computed index without a variadic declaration.
    assert_rejected(
        &format!("{head}local i = 1\nreturn KEYS[i] .. ARGV[1]\n"),
        7,
        "no variadic KEYS",
    );
    // `#ARGV[1]` is the length of one entry, not the table: accepted.
    assert!(parse_script("p/op.lua", &format!("{head}return #ARGV[1] + #KEYS[1]\n")).is_ok());
    // A variadic tail must be read as a table.
    let var = format!("{GOOD_HEAD}-- KEYS[1..] ks: keys\n-- RETURNS integer: x\n");
    assert_rejected(
        &format!("{var}return KEYS[1]\n"),
        3,
        "never read with a computed index",
    );
    assert!(parse_script("p/op.lua", &format!("{var}return #KEYS\n")).is_ok());
    // Error codes: raised but undeclared, declared but never raised.
    let err = format!("{GOOD_HEAD}-- RETURNS integer: x\n");
    assert_rejected(
        &format!("{err}return redis.error_reply('NOPE detail')\n"),
        4,
        "`NOPE` is raised but not listed",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- RETURNS integer: x\n-- ERRORS GONE\nreturn 1\n"),
        4,
        "`GONE` is listed",
    );
}

#[test]
fn scripts_live_at_pattern_slash_op() {
    let e = parse_script("toplevel.lua", "#!lua\n").expect_err("must be rejected");
    assert!(e.message.contains("lua/<pattern>/<op>.lua"));
    let e = parse_script("Lock/Acquire.lua", "#!lua\n").expect_err("must be rejected");
    assert!(e.message.contains("snake_case"));
}
