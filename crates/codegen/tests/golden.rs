//! Guards the generator behind `build.rs`: golden files for its output on
//! fixture scripts (the Rust registry and wrappers, and each shipped
//! script), and one malformed header per rule of the grammar.

use std::path::Path;

use redis_patterns_codegen::{
    ArgType, Bound, HeaderError, Idempotency, Include, KeyType, generate, library, parse_dir,
    parse_include, parse_include_with, parse_script, parse_script_with,
};

use redis_patterns_codegen::sha1_hex as sha1;

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Compares `text` with the golden file `name` under `tests/fixtures`;
/// `UPDATE_GOLDEN=1` rewrites it instead.
fn golden(name: &str, text: &str) {
    let path = fixtures().join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("golden dir");
        std::fs::write(&path, text).expect("write golden file");
    }
    let expected = std::fs::read_to_string(&path).expect("golden file exists");
    assert_eq!(
        text, expected,
        "generator output for {name} changed; see UPDATE_GOLDEN in crates/codegen/tests/golden.rs"
    );
}

/// `UPDATE_GOLDEN=1 cargo test -p redis-patterns-codegen --test golden` rewrites the golden files after
/// an intended change of the generator; review the diff before committing.
#[test]
fn generated_code_matches_golden_file() {
    let specs = parse_dir(&fixtures().join("lua")).expect("fixture headers are valid");
    golden("generated.rs.golden", &generate(&specs));
}

#[test]
fn shipped_scripts_match_golden_files() {
    let specs = parse_dir(&fixtures().join("lua")).expect("fixture headers are valid");
    for s in &specs {
        golden(&format!("shipped/{}.golden", s.header.file), &s.shipped());
    }
}

#[test]
fn functions_library_matches_golden_file() {
    let specs = parse_dir(&fixtures().join("lua")).expect("fixture headers are valid");
    let lib = library(&specs).expect("distinct function names");
    golden("functions.lua.golden", &lib);
    assert!(lib.starts_with("#!lua name=redis_patterns\n"));
    // One registration per script, read-only ones flagged; every shipped
    // script is in it, byte for byte after its shebang line.
    assert_eq!(lib.matches("redis.register_function{").count(), specs.len());
    for s in &specs {
        let shipped = s.shipped();
        let (_, body) = shipped.split_once('\n').expect("a shebang line");
        assert!(
            lib.contains(body),
            "{} is in the library as shipped",
            s.name
        );
        let flags = if s.read_only { "{'no-writes'}" } else { "{}" };
        assert!(
            lib.contains(&format!(
                "function_name = '{}', flags = {flags},",
                s.function_name()
            )),
            "{}",
            s.name
        );
    }
}

#[test]
fn functions_library_refuses_two_scripts_with_one_function_name() {
    let one = parse_script(
        "a_b/c.lua",
        "#!lua flags=no-writes\n--- One\n-- RETURNS integer: 1\nreturn 1\n",
    )
    .expect("valid");
    let two = parse_script(
        "a/b_c.lua",
        "#!lua flags=no-writes\n--- Two\n-- RETURNS integer: 2\nreturn 2\n",
    )
    .expect("valid");
    assert_eq!(one.function_name(), two.function_name());
    let e = library(&[one, two]).unwrap_err();
    assert_eq!(e.file, "lua/a/b_c.lua");
    assert!(e.message.contains("a_b_c"), "{}", e.message);
}

#[test]
fn fixture_specs_are_parsed_as_declared() {
    let root = fixtures().join("lua");
    let specs = parse_dir(&root).expect("fixture headers are valid");
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["demo.peek", "demo.put", "demo.rotate"]);
    let put = &specs[1];
    assert!(!put.read_only);
    assert!(put.keys[1].variadic && !put.keys[0].variadic);
    assert_eq!(put.keys[0].types, [KeyType::String]);
    assert!(put.keys[0].written);
    assert_eq!(put.args.len(), 5);
    assert_eq!(put.args[0].ty, ArgType::Integer);
    assert_eq!(put.args[0].min, Some(Bound::Value(1)));
    assert_eq!(put.args[0].max, Some(Bound::Value(86_400_000)));
    assert_eq!(
        put.args[1].max,
        Some(Bound::Arg {
            name: "ttl_ms".into(),
            offset: 0
        })
    );
    assert_eq!(put.args[3].values, ["NX", "XX", "ANY"]);
    assert!(put.args[4].non_empty && put.args[4].variadic);
    assert_eq!(
        put.args[1].reason().as_deref(),
        Some("must be an integer from 0 to ttl_ms")
    );
    assert_eq!(
        put.returns_doc,
        "{new keys, counter} counter after the increment"
    );
    assert_eq!(put.errors(), ["BADARG"]);
    assert_eq!(put.header.writes, ["INCRBYFLOAT", "PEXPIRE", "SET"]);
    assert!(put.header.reads.is_empty());
    assert_eq!(put.idempotent, Idempotency::IfArg("grace_ms".into()));
    assert!(specs[0].read_only && specs[0].idempotent == Idempotency::Always);
    assert_eq!(specs[2].idempotent, Idempotency::Never);
    // The counter's first command (INCRBYFLOAT, the first write) checks its
    // type; the targets are a variadic tail: TYPE for each.
    assert_eq!(put.type_checked, [false, true]);
    // Ranges that name another argument are checked after it.
    assert_eq!(put.check_order(), [0, 2, 3, 4, 1]);
    let source = std::fs::read_to_string(root.join("demo/put.lua")).expect("fixture");
    assert_eq!(put.sha1_hex, sha1(put.shipped().as_bytes()));
    assert_ne!(put.sha1_hex, sha1(source.as_bytes()));
    // The shipped script is the file with the checks between header and body.
    let shipped = put.shipped();
    assert!(shipped.starts_with(&source[..put.header.body_offset]));
    assert!(shipped.ends_with(&source[put.header.body_offset..]));
    assert_eq!(shipped.len(), source.len() + put.checks().len());
    assert!(specs[0].read_only);
    assert!(
        specs[0].acl_checks.is_empty(),
        "a read-only script checks no ACL"
    );
    let rotate = &specs[2];
    assert_eq!(rotate.keys[1].types, [KeyType::Hash, KeyType::List]);
    assert!(!rotate.keys[0].written);
    assert_eq!(rotate.args[0].ty, ArgType::Int64);
    assert_eq!(rotate.args[1].ty, ArgType::Bool);
    // HGET as the argument of `tonumber(...)` that starts a statement runs
    // whenever the statement does, before any write: it checks the hash,
    // no TYPE for it.
    assert_eq!(rotate.type_checked, [false, true]);
    // HEXISTS runs after writes (the loop): checked like the writes.
    let acl: Vec<&str> = rotate.acl_checks.iter().map(|a| a.command.name).collect();
    assert_eq!(acl, ["DEL", "HEXISTS", "RPUSH"]);
}

const GOOD_HEAD: &str = "#!lua\n--- Summary\n";

/// The generated ACL checks of `spec`: (command, the key or channel probed).
fn acl_of(spec: &redis_patterns_codegen::ScriptSpec) -> Vec<(&str, &str)> {
    spec.acl_checks
        .iter()
        .map(|a| (a.command.name, a.key.as_str()))
        .collect()
}
const RO_HEAD: &str = "#!lua flags=no-writes\n--- Summary\n";

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
        "{GOOD_HEAD}-- KEYS[1] k string rw: a key\n-- RETURNS integer: one\n-- WRITES DEL\n-- IDEMPOTENT yes: deleted already\nreturn redis.call('DEL', KEYS[1])\n"
    );
    assert!(parse_script("p/op.lua", &ok).is_ok());

    // Each malformed text (after the good shebang and summary when marked
    // `true`), the line reported and a part of the message.
    let cases: &[(bool, &str, usize, &str)] = &[
        (false, "--- no shebang\n", 1, "first line"),
        (false, "#!lua\n-- KEYS[1] k: x\n", 2, "--- <summary>"),
        (
            true,
            "-- KEYS[2] k string ro: a key\n-- RETURNS integer: x\nreturn KEYS[2]\n",
            3,
            "expected KEYS[1]",
        ),
        (true, "-- KEYS[1] K string ro: a key\n", 3, "snake_case"),
        (true, "-- KEYS[1] type string ro: a key\n", 3, "keyword"),
        (
            true,
            "-- ARGV[1] argv string: a name the checks use\n",
            3,
            "`argv`",
        ),
        (true, "-- KEYS[1] k string ro a key\n", 3, "`: <meaning>`"),
        (true, "-- ARGV[1] n: no type\n", 3, "missing type"),
        (true, "-- ARGV[1] n number: wrong type\n", 3, "unknown type"),
        (true, "-- ARGV[1] n integer 0..9:\n", 3, "must not be empty"),
        (
            true,
            "-- KEYS[1] k string ro: a\n-- ARGV[1] k integer 0..9: b\n",
            4,
            "duplicate name",
        ),
        (
            true,
            "-- KEYS[1..] k string ro: a\n-- KEYS[2] j string ro: b\n",
            4,
            "nothing may follow",
        ),
        (true, "-- RETURNS number: x\n", 3, "unknown return type"),
        (true, "-- BOGUS x\n", 3, "unknown header line"),
        (
            true,
            "--    orphan continuation\n",
            3,
            "nothing to continue",
        ),
        (true, "-- ERRORS bad_code\n", 3, "UPPER_CASE"),
        (
            true,
            "-- KEYS[1] k string ro: a\nreturn KEYS[1]\n",
            4,
            "no `-- RETURNS",
        ),
    ];
    for &(headed, text, line, needle) in cases {
        let text = if headed {
            format!("{GOOD_HEAD}{text}")
        } else {
            text.to_string()
        };
        assert_rejected(&text, line, needle);
    }
}

#[test]
fn a_comment_right_after_the_header_starts_the_body() {
    let head = format!(
        "{GOOD_HEAD}-- KEYS[1] k string rw: a key\n-- RETURNS integer: one\n-- WRITES DEL\n-- IDEMPOTENT yes: deleted already\n"
    );
    let body = "-- the key goes first\nreturn redis.call('DEL', KEYS[1])\n";
    let spec =
        parse_script("p/op.lua", &format!("{head}{body}")).expect("a comment starts the body");
    assert_eq!(spec.header.body_offset, head.len());
    assert!(
        spec.shipped()
            .ends_with(&format!("-- end of generated checks\n{body}"))
    );
    // The same with a blank line in front, as before.
    let blank = parse_script("p/op.lua", &format!("{head}\n{body}")).expect("valid");
    assert_eq!(blank.checks(), spec.checks());
    // A misspelt header word is refused, not read as a comment.
    assert_rejected(
        &format!("{head}-- WRTIES DEL\n{body}"),
        7,
        "unknown header line `WRTIES`",
    );
    assert_rejected(
        &format!("{head}--WRITES DEL\n{body}"),
        7,
        "start with `-- `",
    );
}

#[test]
fn key_declarations_name_a_type_and_an_access() {
    assert_rejected(&format!("{GOOD_HEAD}-- KEYS[1] k: a key\n"), 3, "<ro|rw>");
    assert_rejected(
        &format!("{GOOD_HEAD}-- KEYS[1] k bitmap rw: a key\n"),
        3,
        "unknown key type `bitmap`",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- KEYS[1] k string w: a key\n"),
        3,
        "`ro` or `rw`",
    );
    assert_rejected(
        &format!("{GOOD_HEAD}-- KEYS[1] k hash,list rw: a key\n"),
        3,
        "only a variadic tail may cycle",
    );
    assert_rejected(
        &format!("{RO_HEAD}-- KEYS[1] k string rw: a key\n"),
        3,
        "`rw` in a `no-writes` script",
    );
}

#[test]
fn argument_declarations_are_strict() {
    let arg = |decl: &str| format!("{GOOD_HEAD}-- ARGV[1] {decl}: x\n");
    assert_rejected(&arg("n integer"), 3, "an integer needs a range");
    assert_rejected(&arg("n integer 5"), 3, "expected a range");
    assert_rejected(&arg("n integer 9..1"), 3, "empty range");
    assert_rejected(&arg("n integer 007..9"), 3, "bound `007`");
    assert_rejected(&arg("n integer 0..9007199254740992"), 3, "beyond 2^53-1");
    assert_rejected(&arg("n integer 0..9 extra"), 3, "unexpected `extra`");
    assert_rejected(&arg("n enum OR"), 3, "at least two words");
    assert_rejected(&arg("n enum OR|OR"), 3, "listed twice");
    assert_rejected(&arg("n enum A|b-c"), 3, "letters, digits");
    assert_rejected(&arg("n string short"), 3, "only `nonempty`");
    assert_rejected(&arg("n bool 0..1"), 3, "unexpected `0..1`");
    // A range may name a fixed, constant-bounded integer argument only.
    let two = |a: &str, b: &str| {
        format!("{GOOD_HEAD}-- ARGV[1] {a}: x\n-- ARGV[2] {b}: y\n-- RETURNS integer: z\n")
    };
    assert_rejected(
        &two("a integer 0..c", "b integer 0..9"),
        3,
        "names `c`, which is no argument",
    );
    assert_rejected(
        &two("a string", "b integer 0..a"),
        4,
        "only name a fixed integer",
    );
    assert_rejected(
        &two("a integer 0..9", "b integer 0..b"),
        4,
        "only name a fixed integer",
    );
}

#[test]
fn commands_are_declared_both_ways() {
    let head = format!("{GOOD_HEAD}-- KEYS[1] k string rw: a key\n-- RETURNS integer: x\n");
    // Called but not declared; declared but never called.
    assert_rejected(
        &format!(
            "{head}-- WRITES SET\nredis.call('SET', KEYS[1], 'v')\nreturn redis.call('DEL', KEYS[1])\n"
        ),
        7,
        "`DEL` is called but not listed in `-- WRITES`",
    );
    assert_rejected(
        &format!("{head}-- WRITES SET DEL\n-- READS GET\nreturn redis.call('DEL', KEYS[1])\n"),
        5,
        "`SET` is listed in `-- WRITES` but never called",
    );
    assert_rejected(
        &format!("{head}-- WRITES DEL\n-- READS GET\nreturn redis.call('DEL', KEYS[1])\n"),
        6,
        "`GET` is listed in `-- READS`",
    );
    // Each list holds its own kind, known commands only, written literally.
    assert_rejected(&format!("{head}-- READS SET\n"), 5, "list it in WRITES");
    assert_rejected(&format!("{head}-- WRITES GET\n"), 5, "list it in READS");
    assert_rejected(
        &format!("{head}-- WRITES FLUSHALL\n"),
        5,
        "unknown command `FLUSHALL`",
    );
    assert_rejected(
        &format!("{head}-- WRITES DEL\nlocal c = 'DEL'\nreturn redis.call(c, KEYS[1])\n"),
        7,
        "string literal",
    );
    assert_rejected(
        &format!(
            "{head}-- WRITES DEL\nredis.call('DEL', KEYS[1])\nreturn redis.call('NOPE', KEYS[1])\n"
        ),
        7,
        "unknown command `NOPE`",
    );
    // A writing script writes; a read-only one does not.
    assert_rejected(
        &format!("{head}-- READS GET\nreturn redis.call('GET', KEYS[1])\n"),
        1,
        "flags=no-writes",
    );
    assert_rejected(
        &format!(
            "{RO_HEAD}-- KEYS[1] k string ro: a key\n-- RETURNS integer: x\nreturn redis.call('DEL', KEYS[1])\n"
        ),
        5,
        "the script is `no-writes`",
    );
    assert_rejected(
        &format!(
            "{GOOD_HEAD}-- KEYS[1] k string ro: a key\n-- RETURNS integer: x\n-- WRITES DEL\nreturn redis.call('DEL', KEYS[1])\n"
        ),
        5,
        "at least one `rw` key",
    );
}

#[test]
fn the_body_must_respect_types_and_write_order() {
    let head = format!(
        "{GOOD_HEAD}-- KEYS[1] k hash rw: a key\n-- KEYS[2] n string rw: a counter\n-- RETURNS integer: x\n"
    );
    // GET works on strings; k is a hash.
    assert_rejected(
        &format!(
            "{head}-- WRITES DEL\n-- READS GET\nlocal v = redis.call('GET', KEYS[1])\nreturn redis.call('DEL', KEYS[2])\n"
        ),
        8,
        "declared hash but `GET` works on a string",
    );
    // INCR can fail on what its key holds: not after another write.
    assert_rejected(
        &format!(
            "{head}-- WRITES DEL INCR\nredis.call('DEL', KEYS[1])\nreturn redis.call('INCR', KEYS[2])\n"
        ),
        8,
        "`INCR` can fail on the stored value",
    );
    // ... nor in a loop after itself.
    let tail = format!(
        "{GOOD_HEAD}-- KEYS[1..] ks string rw: counters\n-- RETURNS integer: x\n-- WRITES INCR\n"
    );
    assert_rejected(
        &format!("{tail}for i = 1, #KEYS do\n  redis.call('INCR', KEYS[i])\nend\nreturn 1\n"),
        7,
        "`INCR` can fail",
    );
    // First, it is fine; a write in an arm that returns does not reach on.
    assert!(
        parse_script(
            "p/op.lua",
            &format!("{head}-- WRITES DEL INCR\n-- IDEMPOTENT no: x\nlocal c = redis.call('INCR', KEYS[2])\nredis.call('DEL', KEYS[1])\nreturn c\n")
        )
        .is_ok()
    );
    assert!(
        parse_script(
            "p/op.lua",
            &format!("{head}-- WRITES DEL INCR\n-- IDEMPOTENT no: x\nif KEYS[2] == 'x' then\n  redis.call('DEL', KEYS[1])\n  return 0\nend\nreturn redis.call('INCR', KEYS[2])\n")
        )
        .is_ok()
    );
}

#[test]
fn type_checks_are_left_out_only_where_the_body_checks_first() {
    let spec = |body: &str| {
        let src = format!(
            "{GOOD_HEAD}-- KEYS[1] a set rw: a set\n-- KEYS[2] b string rw: a string\n-- RETURNS integer: x\n-- WRITES DEL SADD SET\n-- READS EXISTS GET SISMEMBER\n-- IDEMPOTENT yes: x\n{body}"
        );
        parse_script("p/op.lua", &src).expect("valid").type_checked
    };
    let uses = "redis.call('DEL', KEYS[2])\nredis.call('SET', KEYS[2], 'x')\nredis.call('EXISTS', KEYS[1])\nredis.call('GET', KEYS[2])\n";
    // SISMEMBER first checks a; SADD after another write would not.
    assert_eq!(
        spec(&format!(
            "local m = redis.call('SISMEMBER', KEYS[1], 'x')\n{uses}redis.call('SADD', KEYS[1], 'x')\nreturn m\n"
        )),
        [false, true]
    );
    assert_eq!(
        spec(&format!(
            "{uses}redis.call('SISMEMBER', KEYS[1], 'x')\nreturn redis.call('SADD', KEYS[1], 'x')\n"
        )),
        [true, true]
    );
    // A check inside a condition does not cover what follows the `if`.
    assert_eq!(
        spec(&format!(
            "if KEYS[2] ~= '' then\n  redis.call('SISMEMBER', KEYS[1], 'x')\nend\n{uses}redis.call('SADD', KEYS[1], 'x')\nreturn 1\n"
        )),
        [true, true]
    );
    // Nor one behind `and`.
    assert_eq!(
        spec(&format!(
            "local m = KEYS[2] ~= '' and redis.call('SISMEMBER', KEYS[1], 'x')\n{uses}redis.call('SADD', KEYS[1], 'x')\nreturn 1\n"
        )),
        [true, true]
    );
    // `if redis.call(...)` at the top level does.
    assert_eq!(
        spec(&format!(
            "if redis.call('SISMEMBER', KEYS[1], 'x') == 1 then\n  return 0\nend\n{uses}redis.call('SADD', KEYS[1], 'x')\nreturn 1\n"
        )),
        [false, true]
    );
    // b's first command is GET (a string check) before any write: checked.
    assert_eq!(
        spec(
            "local v = redis.call('GET', KEYS[2])\nredis.call('SET', KEYS[2], 'x')\nredis.call('SISMEMBER', KEYS[1], 'x')\nreturn redis.call('SADD', KEYS[1], 'x') + redis.call('DEL', KEYS[1]) + redis.call('EXISTS', KEYS[1])\n"
        ),
        [true, false]
    );
}

#[test]
fn a_loop_that_reads_every_key_first_checks_the_tail_even_in_its_condition() {
    let tail = |body: &str| {
        let src = format!(
            "#!lua flags=no-writes\n--- Summary\n-- KEYS[1..] maps string ro: bitmaps\n-- ARGV[1] id integer 0..9: a bit\n-- RETURNS integer: x\n-- READS GETBIT\n{body}"
        );
        parse_script("p/op.lua", &src)
            .expect("valid")
            .tail_type_checked
    };
    // The read as a statement of the loop, and as the condition of an `if`
    // of the loop's own: GETBIT checks every key, no TYPE probe.
    let plain = "local n = 0\nfor i = 1, #KEYS do\n  n = n + redis.call('GETBIT', KEYS[i], ARGV[1])\nend\nreturn n\n";
    assert_eq!(tail(plain), [true]);
    let bare = "for i = 1, #KEYS do\n  redis.call('GETBIT', KEYS[i], ARGV[1])\nend\nreturn 1\n";
    assert_eq!(tail(bare), [false]);
    let cond = "local n = 0\nfor i = 1, #KEYS do\n  if redis.call('GETBIT', KEYS[i], ARGV[1]) == 1 then\n    n = n + 1\n  end\nend\nreturn n\n";
    assert_eq!(tail(cond), [false]);
    // Not in an `elseif` condition, nor inside an arm.
    let elseif = "local n = 0\nfor i = 1, #KEYS do\n  if n > 5 then\n    n = 0\n  elseif redis.call('GETBIT', KEYS[i], ARGV[1]) == 1 then\n    n = n + 1\n  end\nend\nreturn n\n";
    assert_eq!(tail(elseif), [true]);
    let arm = "local n = 0\nfor i = 1, #KEYS do\n  if n < 5 then\n    n = n + redis.call('GETBIT', KEYS[i], ARGV[1])\n  end\nend\nreturn n\n";
    assert_eq!(tail(arm), [true]);
}

#[test]
fn header_and_body_must_agree() {
    let head = format!(
        "{RO_HEAD}-- KEYS[1] k string ro: a key\n-- ARGV[1] n integer 0..9: a number\n-- RETURNS integer: x\n"
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
    // A use inside a comment (or a string) does not count.
    assert_rejected(
        &format!("{head}return KEYS[1] -- ARGV[1]\n"),
        4,
        "never used",
    );
    assert_rejected(
        &format!("{head}return KEYS[1] .. 'ARGV[1]'\n"),
        4,
        "never used",
    );
    assert_rejected(
        &format!("{head}return KEYS[1] --[[ ARGV[1]\n ARGV[1] ]]\n"),
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
    let var = format!("{RO_HEAD}-- KEYS[1..] ks string ro: keys\n-- RETURNS integer: x\n");
    assert_rejected(
        &format!("{var}return KEYS[1]\n"),
        3,
        "never read with a computed index",
    );
    assert!(parse_script("p/op.lua", &format!("{var}return #KEYS\n")).is_ok());
}

#[test]
fn error_codes_and_blocks_must_agree_with_the_header() {
    let head = format!(
        "{RO_HEAD}-- KEYS[1] k string ro: a key\n-- ARGV[1] n integer 0..9: a number\n-- RETURNS integer: x\n"
    );
    // Error codes: raised but undeclared, declared but never raised.
    let err = format!("{RO_HEAD}-- RETURNS integer: x\n");
    assert_rejected(
        &format!("{err}return redis.error_reply('NOPE detail')\n"),
        4,
        "`NOPE` is raised but not listed",
    );
    assert_rejected(
        &format!("{RO_HEAD}-- RETURNS integer: x\n-- ERRORS GONE\nreturn 1\n"),
        4,
        "`GONE` is listed",
    );
    // A body's BADARG names what it refuses.
    assert_rejected(
        &format!(
            "{head}-- ERRORS BADARG\nif ARGV[1] then return redis.error_reply('BADARG the number is odd') end\nreturn KEYS[1]\n"
        ),
        7,
        "not `the`",
    );
    assert!(
        parse_script(
            "p/op.lua",
            &format!("{head}-- ERRORS BADARG\nif ARGV[1] then return redis.error_reply('BADARG n is odd') end\nreturn KEYS[1]\n")
        )
        .is_ok()
    );
    // Blocks must balance.
    assert_rejected(
        &format!("{head}if ARGV[1] then\nreturn KEYS[1]\n"),
        6,
        "never closed",
    );
}

#[test]
fn writing_scripts_declare_whether_a_resend_is_safe() {
    let head = format!(
        "{GOOD_HEAD}-- KEYS[1] k string rw: a key\n-- ARGV[1] id string: a request id\n-- ARGV[2] ms integer 0..9: a ttl\n-- ARGV[3..] xs bytes: more\n-- RETURNS integer: x\n-- WRITES DEL\n"
    );
    let body = "return redis.call('DEL', KEYS[1], ARGV[1], ARGV[2], ARGV[#ARGV])\n";
    let parsed = |decl: &str| parse_script("p/op.lua", &format!("{head}{decl}{body}"));
    // Missing in a writing script: reported where the header ends.
    assert_rejected(&format!("{head}{body}"), 9, "declares `-- IDEMPOTENT");
    assert_eq!(
        parsed("-- IDEMPOTENT yes: deleted already\n")
            .unwrap()
            .idempotent,
        Idempotency::Always
    );
    let spec = parsed("-- IDEMPOTENT no: it is not\n--    at all\n").unwrap();
    assert_eq!(
        (spec.idempotent, spec.idempotent_doc.as_str()),
        (Idempotency::Never, "it is not at all")
    );
    for arg in ["id", "ms"] {
        assert_eq!(
            parsed(&format!("-- IDEMPOTENT if {arg}: with a request\n"))
                .unwrap()
                .idempotent,
            Idempotency::IfArg(arg.into())
        );
    }
    assert_rejected(
        &format!("{head}-- IDEMPOTENT if nope: x\n{body}"),
        9,
        "no argument has that name",
    );
    assert_rejected(
        &format!("{head}-- IDEMPOTENT if xs: x\n{body}"),
        9,
        "a fixed integer, string or bytes argument",
    );
    assert_rejected(
        &format!("{head}-- IDEMPOTENT maybe: x\n{body}"),
        9,
        "IDEMPOTENT yes|no|if <arg>",
    );
    assert_rejected(
        &format!("{head}-- IDEMPOTENT yes:\n{body}"),
        9,
        "must not be empty",
    );
    assert_rejected(
        &format!("{head}-- IDEMPOTENT yes: a\n-- IDEMPOTENT yes: b\n{body}"),
        10,
        "given twice",
    );
    // A read-only script is idempotent, said or not; it may not say otherwise.
    let ro =
        format!("{RO_HEAD}-- KEYS[1] k string ro: a key\n-- RETURNS integer: x\n-- READS GET\n");
    let get = "return redis.call('GET', KEYS[1])\n";
    assert_eq!(
        parse_script("p/op.lua", &format!("{ro}{get}"))
            .unwrap()
            .idempotent,
        Idempotency::Always
    );
    assert_rejected(
        &format!("{ro}-- IDEMPOTENT no: x\n{get}"),
        6,
        "may only say `IDEMPOTENT yes`",
    );
}

#[test]
fn scripts_live_at_pattern_slash_op() {
    let e = parse_script("toplevel.lua", "#!lua\n").expect_err("must be rejected");
    assert!(e.message.contains("lua/<pattern>/<op>.lua"));
    let e = parse_script("Lock/Acquire.lua", "#!lua\n").expect_err("must be rejected");
    assert!(e.message.contains("snake_case"));
}

#[test]
fn a_channel_command_is_probed_with_its_own_channel() {
    let head = format!(
        "{GOOD_HEAD}-- KEYS[1] lock string rw: the lock\n-- ARGV[1] token string nonempty: the owner\n-- ARGV[2] channel string tagged: where the release is announced\n-- RETURNS integer: x\n-- WRITES DEL\n-- READS GET SPUBLISH\n-- IDEMPOTENT yes: x\n"
    );
    let body = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  redis.call('DEL', KEYS[1])\n  redis.call('SPUBLISH', ARGV[2], 'released')\n  return 1\nend\nreturn 0\n";
    let spec = parse_script("p/op.lua", &format!("{head}{body}")).expect("valid");
    // SPUBLISH runs after a write: its ACL check asks about the channel the
    // body publishes to (ARGV[2]), not about a key.
    let acl = acl_of(&spec);
    assert_eq!(acl, [("DEL", "KEYS[1]"), ("SPUBLISH", "ARGV[2]")]);
    let shipped = spec.shipped();
    assert!(shipped.contains("redis.acl_check_cmd('SPUBLISH', ARGV[2])"));
    // `tagged`: the channel carries KEYS[1]'s hash tag, checked first.
    assert!(shipped.contains("if v == '' or (match(v, '^[^{]*{([^}]+)}') or v) ~= (match(KEYS[1], '^[^{]*{([^}]+)}') or KEYS[1]) then"));
    assert_eq!(
        spec.args[1].reason().as_deref(),
        Some("must carry the hash tag of the first key")
    );
    // A channel that is not declared `tagged` could be in another slot.
    assert_rejected(
        &format!("{head}{body}").replace("channel string tagged", "channel string nonempty"),
        12,
        "declare it `string tagged`",
    );
    // `tagged` needs a KEYS[1] to carry the tag of.
    assert_rejected(
        &format!(
            "{GOOD_HEAD}-- KEYS[1..] ks string rw: keys\n-- ARGV[1] c string tagged: a channel\n-- RETURNS integer: x\n-- WRITES DEL\nreturn redis.call('DEL', KEYS[#KEYS], ARGV[1])\n"
        ),
        4,
        "no fixed KEYS[1]",
    );
    // A computed channel cannot be probed: refused.
    assert_rejected(
        &format!(
            "{head}if redis.call('GET', KEYS[1]) == ARGV[1] then\n  redis.call('DEL', KEYS[1])\n  redis.call('SPUBLISH', KEYS[1] .. ARGV[2], 'released')\n  return 1\nend\nreturn 0\n"
        ),
        12,
        "pass it as a literal `ARGV[n]`",
    );
}

/// The include of most tests below: one function that reads and writes
/// what the script passes it.
const LEASE: &str = "--- Lease\n-- WRITES ZADD\n-- READS ZSCORE\n-- ERRORS BADARG\n\nlocal function lease(key, member, ends)\n  if not ends then\n    return redis.error_reply('BADARG ends is not a number')\n  end\n  local had = redis.call('ZSCORE', key, member)\n  redis.call('ZADD', key, ends, member)\n  return had\nend\n";

fn lease() -> Include {
    parse_include("includes/lease.lua", LEASE).expect("a valid include")
}

/// A script `lua/p/op.lua` over one zset key, with `head` (header lines
/// after KEYS and ARGV) and `body`.
fn with_lease(head: &str, body: &str) -> Result<redis_patterns_codegen::ScriptSpec, HeaderError> {
    parse_script_with(
        "p/op.lua",
        &format!(
            "{GOOD_HEAD}-- KEYS[1] k zset rw: a key\n-- ARGV[1] m string: a member\n-- ARGV[2] ends integer 1..9: when\n-- RETURNS integer: x\n{head}{body}"
        ),
        &[lease()],
    )
}

#[test]
fn an_include_is_inlined_after_the_generated_checks() {
    let root = fixtures().join("with_includes/lua");
    let specs = parse_dir(&root).expect("fixture headers are valid");
    let [spec] = specs.as_slice() else {
        panic!("one script")
    };
    assert_eq!(spec.header.includes, ["lease"]);
    golden(
        &format!("shipped_with_includes/{}.golden", spec.header.file),
        &spec.shipped(),
    );
    let include = std::fs::read_to_string(root.join("includes/lease.lua")).expect("fixture");
    let source = std::fs::read_to_string(root.join("demo/lease.lua")).expect("fixture");
    // Shipped: header, checks, the include's body between markers, body.
    let shipped = spec.shipped();
    let function = &include[include.find("-- (A fixture").expect("body")..];
    let inlined = format!(
        "-- included from lua/includes/lease.lua (crates/codegen: INCLUDE lease)\n{function}-- end of lua/includes/lease.lua\n"
    );
    assert_eq!(spec.inlined, inlined);
    assert_eq!(
        shipped,
        format!(
            "{}{}{inlined}{}",
            &source[..spec.header.body_offset],
            spec.checks(),
            &source[spec.header.body_offset..]
        )
    );
    assert_eq!(spec.sha1_hex, sha1(shipped.as_bytes()));
    // The function's commands count where the body calls it: ZADD and
    // PEXPIREAT write, ZRANGE runs after ZADD (ACL-checked like them).
    let acl: Vec<&str> = spec.acl_checks.iter().map(|a| a.command.name).collect();
    assert_eq!(acl, ["PEXPIREAT", "ZADD", "ZRANGE"]);
    assert!(shipped.contains("redis.acl_check_cmd('ZADD', KEYS[1])"));
    // The Functions library has the same bytes.
    let lib = library(&specs).expect("one function");
    let (_, body) = shipped.split_once('\n').expect("a shebang line");
    assert!(lib.contains(body));
}

/// Asserts that `with_lease(head, body)` is refused at `file:line` with a
/// message containing `needle`; returns the refusal.
fn lease_refused(head: &str, body: &str, (file, line): (&str, usize), needle: &str) -> HeaderError {
    let e = with_lease(head, body).expect_err("must be refused");
    assert!(e.message.contains(needle), "{e}");
    assert_eq!((e.file.as_str(), e.line), (file, line), "{e}");
    e
}

const CALL: &str = "return lease(KEYS[1], ARGV[1], ARGV[2]) and 1 or 0\n";
const SCRIPT: &str = "lua/p/op.lua";

#[test]
fn a_missing_or_unused_include_is_refused() {
    let head = "-- WRITES ZADD\n-- READS ZSCORE\n-- ERRORS BADARG\n-- IDEMPOTENT yes: x\n";
    let at = |line| (SCRIPT, line);
    assert!(with_lease(&format!("{head}-- INCLUDE lease\n"), CALL).is_ok());
    let nope = format!("{head}-- INCLUDE nope\n");
    let missing = "include `nope` not found: there is no lua/includes/nope.lua";
    lease_refused(&nope, CALL, at(11), missing);
    // Listed, but no function of it called; called, but not listed.
    let unused = "-- WRITES ZADD\n-- IDEMPOTENT yes: x\n-- INCLUDE lease\n";
    let zadd = "return redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])\n";
    lease_refused(
        unused,
        zadd,
        at(9),
        "none of its functions (`lease`) is called",
    );
    lease_refused(head, CALL, at(11), "add `-- INCLUDE lease` to the header");
    let twice = format!("{head}-- INCLUDE lease\n-- INCLUDE lease\n");
    lease_refused(&twice, CALL, at(12), "listed twice");
    // A file under lua/includes/ that no script includes fails the build.
    let dir = std::env::temp_dir().join(format!("rp-codegen-includes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("includes")).expect("temp dir");
    std::fs::create_dir_all(dir.join("p")).expect("temp dir");
    std::fs::write(dir.join("includes/lease.lua"), LEASE).expect("write");
    let one = "#!lua flags=no-writes\n--- One\n-- RETURNS integer: 1\nreturn 1\n";
    std::fs::write(dir.join("p/op.lua"), one).expect("write");
    let e = parse_dir(&dir).unwrap_err();
    assert_eq!(
        e.to_string(),
        "lua/includes/lease.lua:1: no script includes it: add `-- INCLUDE lease` to a header, or delete the file"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_an_include_calls_and_raises_the_script_declares() {
    let include = |line| ("lua/includes/lease.lua", line);
    // ZSCORE (the include's READS) is not in the script's READS: refused
    // at the include's line, naming the script that includes it.
    let no_reads = "-- WRITES ZADD\n-- ERRORS BADARG\n-- INCLUDE lease\n-- IDEMPOTENT yes: x\n";
    let e = lease_refused(no_reads, CALL, include(10), "`ZSCORE`");
    assert_eq!(e.included_by.as_deref(), Some("lua/p/op.lua"));
    assert_eq!(
        e.to_string(),
        "lua/includes/lease.lua:10 (included by lua/p/op.lua): `ZSCORE` is called here but not listed in the including script's `-- READS`"
    );
    // Its error codes likewise.
    let no_errors = "-- WRITES ZADD\n-- READS ZSCORE\n-- INCLUDE lease\n-- IDEMPOTENT yes: x\n";
    lease_refused(
        no_errors,
        CALL,
        include(8),
        "`BADARG` is raised here but not listed",
    );
    // Listed by the script, called by neither body nor include.
    let get = "-- WRITES ZADD\n-- READS GET ZSCORE\n-- ERRORS BADARG\n-- INCLUDE lease\n-- IDEMPOTENT yes: x\n";
    let never = "`GET` is listed in `-- READS` but never called";
    lease_refused(get, CALL, (SCRIPT, 8), never);
    // The include's BADARG names `ends`: a name the script must have.
    let e = parse_script_with(
        "p/op.lua",
        &format!(
            "{GOOD_HEAD}-- KEYS[1] k zset rw: a key\n-- ARGV[1] m string: a member\n-- ARGV[2] until integer 1..9: when\n-- RETURNS integer: x\n-- WRITES ZADD\n-- READS ZSCORE\n-- ERRORS BADARG\n-- INCLUDE lease\n-- IDEMPOTENT yes: x\n{CALL}"
        ),
        &[lease()],
    )
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line), include(8));
    assert!(e.message.contains("not `ends`"), "{e}");
}

#[test]
fn an_included_function_is_analysed_where_the_body_calls_it() {
    let head = "-- WRITES DEL ZADD\n-- READS ZSCORE\n-- ERRORS BADARG\n-- INCLUDE lease\n-- IDEMPOTENT no: x\n";
    // Called first: ZSCORE runs before any write (no ACL check), ZADD is a
    // write (checked). ZSCORE checks the key's type, but only after the
    // function's early return (the body goes on after it): TYPE stays.
    let spec = with_lease(
        head,
        "local had = lease(KEYS[1], ARGV[1], ARGV[2])\nredis.call('DEL', KEYS[1])\nreturn had and 1 or 0\n",
    )
    .expect("valid");
    let acl = acl_of(&spec);
    assert_eq!(acl, [("DEL", "KEYS[1]"), ("ZADD", "KEYS[1]")]);
    assert_eq!(spec.type_checked, [true]);
    // Called after a write: its ZSCORE may run after one (ACL-checked).
    let spec = with_lease(
        head,
        "redis.call('DEL', KEYS[1])\nreturn lease(KEYS[1], ARGV[1], ARGV[2]) and 1 or 0\n",
    )
    .expect("valid");
    let acl: Vec<&str> = spec.acl_checks.iter().map(|a| a.command.name).collect();
    assert_eq!(acl, ["DEL", "ZADD", "ZSCORE"]);
    // A key of another type: refused at the include's command.
    let e = parse_script_with(
        "p/op.lua",
        &format!(
            "{GOOD_HEAD}-- KEYS[1] k hash rw: a key\n-- ARGV[1] m string: a member\n-- ARGV[2] ends integer 1..9: when\n-- RETURNS integer: x\n{head}return lease(KEYS[1], ARGV[1], ARGV[2]) and 1 or 0\n"
        )
        .replace("DEL ", ""),
        &[lease()],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "lua/includes/lease.lua:10 (included by lua/p/op.lua): KEYS[1] `k` is declared hash but `ZSCORE` works on a zset (in `lease`, called at line 12)"
    );
}

#[test]
fn includes_hold_only_checked_local_functions() {
    let bad = |source: &str, line: usize, needle: &str| {
        let e = parse_include("includes/x.lua", source).expect_err("must be refused");
        assert_eq!(e.file, "lua/includes/x.lua");
        assert!(e.message.contains(needle), "{e}");
        assert_eq!(e.line, line, "{e}");
    };
    assert!(
        parse_include(
            "includes/x.lua",
            "--- X\nlocal function f(a)\n  return a\nend\n"
        )
        .is_ok()
    );
    bad("#!lua\n--- X\n", 1, "`--- <summary>`");
    bad("--- X\n-- INCLUDE y\n", 2, "include `y` not found");
    bad("--- X\nlocal x = 1\n", 2, "only `local function");
    bad(
        "--- X\nlocal function f(key)\n  return KEYS[1]\nend\n",
        3,
        "no KEYS or ARGV",
    );
    bad(
        "--- X\nlocal function f(key)\n  return redis.call('GET', key)\nend\n",
        3,
        "`GET` is called but not listed in `-- READS`",
    );
    bad(
        "--- X\n-- READS GET TYPE\nlocal function f(key)\n  return redis.call('GET', key)\nend\n",
        2,
        "`TYPE` is listed in `-- READS` but never called",
    );
    bad(
        "--- X\nlocal function f(a)\n  return a\nend\nlocal function g(a)\n  return f(a)\nend\n",
        6,
        "its functions call none of its own",
    );
    bad(
        "--- X\n-- ERRORS BADARG\nlocal function f(a)\n  return redis.error_reply('BADARG ' .. a:upper())\nend\n",
        4,
        "a BADARG detail starts with a name, or with a parameter",
    );
}

#[test]
fn an_include_may_include_another_inlined_once_before_it() {
    let inner = lease();
    let outer_src = "--- Lease twice\n-- INCLUDE lease\n-- WRITES ZADD\n-- READS ZSCORE\n-- ERRORS BADARG\n\nlocal function twice(key, a, b, ends)\n  return lease(key, a, ends) or lease(key, b, ends)\nend\n";
    let outer = parse_include_with(
        "includes/twice.lua",
        outer_src,
        std::slice::from_ref(&inner),
    )
    .expect("valid");
    assert_eq!(outer.header.includes, ["lease"]);
    // What the inner include calls and raises, the outer one declares.
    let e = parse_include_with(
        "includes/twice.lua",
        &outer_src.replace("-- READS ZSCORE\n", ""),
        std::slice::from_ref(&inner),
    )
    .unwrap_err();
    assert_eq!(e.line, 7);
    assert!(
        e.message
            .contains("`ZSCORE` is called but not listed in `-- READS`"),
        "{e}"
    );
    let e = parse_include_with(
        "includes/twice.lua",
        &outer_src.replace("-- ERRORS BADARG\n", ""),
        std::slice::from_ref(&inner),
    )
    .unwrap_err();
    assert!(
        e.message.contains("`BADARG` (raised by include `lease`)"),
        "{e}"
    );
    // A script that includes both ships the inner one once, first.
    let spec = parse_script_with(
        "p/op.lua",
        &format!(
            "{GOOD_HEAD}-- KEYS[1] k zset rw: a key\n-- ARGV[1] ends integer 1..9: when\n-- RETURNS integer: x\n-- WRITES ZADD\n-- READS ZSCORE\n-- ERRORS BADARG\n-- INCLUDE twice\n-- INCLUDE lease\n-- IDEMPOTENT yes: x\nreturn (twice(KEYS[1], 'a', 'b', ARGV[1]) or lease(KEYS[1], 'c', ARGV[1])) and 1 or 0\n"
        ),
        &[inner, outer],
    )
    .expect("valid");
    assert_eq!(spec.inlined.matches("-- included from").count(), 2);
    let at = |name: &str| {
        spec.inlined
            .find(&format!("local function {name}("))
            .expect(name)
    };
    assert!(at("lease") < at("twice"));
    // The inner function's commands reach the script through the outer one:
    // on its key, with its type checked by them.
    let acl = acl_of(&spec);
    assert_eq!(acl, [("ZADD", "KEYS[1]"), ("ZSCORE", "KEYS[1]")]);
}

/// An include whose function takes a script's table (`KEYS` or `ARGV`)
/// whole and reads its entry `index` (and its length).
fn table_reader(index: usize) -> Include {
    parse_include(
        "includes/args.lua",
        &format!(
            "--- Reads an entry of a table\n\nlocal function entry_of(t, at)\n  return tonumber(t[{index}]) + #t - at\nend\n"
        ),
    )
    .expect("a valid include")
}

/// A read-only script over `KEYS[1]`, `ARGV[1..2]` (and with `tails` a
/// variadic tail of each, the key tail read as `#KEYS`), whose body reads
/// `ARGV[1]` and `KEYS[1]` and makes `call`.
fn passing_tables(
    call: &str,
    known: &[Include],
    tails: bool,
) -> Result<redis_patterns_codegen::ScriptSpec, HeaderError> {
    let (key_tail, arg_tail, key_count) = if tails {
        (
            "-- KEYS[2..] more_keys string ro: more\n",
            "-- ARGV[3..] more bytes: more\n",
            " + #KEYS",
        )
    } else {
        ("", "", "")
    };
    parse_script_with(
        "p/op.lua",
        &format!(
            "{RO_HEAD}-- KEYS[1] k string ro: a key\n{key_tail}-- ARGV[1] a integer 0..9: read by the body\n-- ARGV[2] ttl integer 0..9: read by the include only\n{arg_tail}-- RETURNS integer: x\n-- INCLUDE {}\nreturn {call} + ARGV[1] + #KEYS[1]{key_count}\n",
            known.last().expect("an include").name
        ),
        known,
    )
}

#[test]
fn an_entry_an_included_function_reads_of_a_whole_table_is_used() {
    // ARGV[2] appears only as `t[2]` in the include that gets ARGV whole.
    passing_tables("entry_of(ARGV, 3)", &[table_reader(2)], true)
        .expect("ARGV[2] read by the include");
    // An include that reads another entry leaves ARGV[2] unused: refused.
    let e = passing_tables("entry_of(ARGV, 3)", &[table_reader(1)], true).unwrap_err();
    assert_eq!(
        (e.line, e.message.as_str()),
        (6, "ARGV[2] `ttl` is declared but never used")
    );
    // An entry the include reads must be declared: without the tails,
    // `t[4]` is ARGV[4], which the header does not declare.
    let e = passing_tables("entry_of(ARGV, 3)", &[table_reader(4)], false).unwrap_err();
    assert_eq!(
        (e.line, e.message.as_str()),
        (8, "ARGV[4] is used but not declared in the header")
    );
    // The same for KEYS: `t[5]` of a whole KEYS is KEYS[5], undeclared.
    let both = "entry_of(KEYS, 3) + entry_of(ARGV, 3)";
    passing_tables(both, &[table_reader(2)], true).expect("KEYS[2] is in the tail");
    let e = passing_tables("entry_of(KEYS, 3) + ARGV[2]", &[table_reader(5)], false).unwrap_err();
    assert_eq!(e.message, "KEYS[5] is used but not declared in the header");
    // Through a nested include that passes the table on whole.
    let inner = table_reader(2);
    let outer = parse_include_with(
        "includes/outer.lua",
        "--- Passes a table on\n-- INCLUDE args\n\nlocal function outer(t)\n  return entry_of(t, 3)\nend\n",
        std::slice::from_ref(&inner),
    )
    .expect("valid");
    let known = [inner, outer];
    assert!(passing_tables("outer(ARGV)", &known, true).is_ok());
    let e = passing_tables("outer(KEYS) + #ARGV", &known, true).unwrap_err();
    assert!(
        e.message
            .contains("ARGV[2] `ttl` is declared but never used"),
        "{e}"
    );
}

/// The generated checks of the script `body` under `head` (as
/// `lua/p/op.lua`), compared with the golden file `checks/<name>.golden`.
fn checks_golden(name: &str, head: &str, body: &str) -> redis_patterns_codegen::ScriptSpec {
    let spec = parse_script("p/op.lua", &format!("{GOOD_HEAD}{head}{body}")).expect("valid");
    golden(&format!("checks/{name}.golden"), &spec.checks());
    spec
}

#[test]
fn a_tail_the_body_hands_to_bitop_first_needs_no_type_checks() {
    let head = "-- KEYS[1] tmp string rw: the result\n-- KEYS[2..] days string ro: the sources\n-- ARGV[1] op enum OR|AND: how\n-- RETURNS bulk: x\n-- WRITES BITOP GETDEL\n-- ERRORS BADARG\n-- IDEMPOTENT yes: x\n";
    let bitop = "local bytes = redis.call('BITOP', ARGV[1], KEYS[1], unpack(KEYS, 2))\n";
    let tail = "return redis.call('GETDEL', KEYS[1])\n";
    let guard = "if #KEYS < 2 then\n  return redis.error_reply('BADARG days at least one is needed')\nend\n";
    // BITOP checks every source's type before it writes: only the
    // destination (which BITOP overwrites whatever it holds) gets a TYPE.
    let spec = checks_golden("bitop_tail", head, &format!("{guard}{bitop}{tail}"));
    assert_eq!(spec.type_checked, [true, false]);
    let spec = |body: &str| {
        parse_script("p/op.lua", &format!("{GOOD_HEAD}{head}{guard}{body}"))
            .expect("valid")
            .type_checked
    };
    // Behind a condition, after a write, with the destination among the
    // unpacked keys, or with another use of the tail: TYPE for each.
    assert_eq!(
        spec(&format!("if ARGV[1] == 'OR' then\n  {bitop}end\n{tail}")),
        [true, true]
    );
    // (A GETDEL first checks the destination itself.)
    assert_eq!(
        spec(&format!("redis.call('GETDEL', KEYS[1])\n{bitop}{tail}")),
        [false, true]
    );
    assert_eq!(
        spec(&format!(
            "local bytes = redis.call('BITOP', ARGV[1], unpack(KEYS, 1))\n{tail}"
        )),
        [true, true]
    );
    assert_eq!(
        spec(&format!("{bitop}local d = KEYS[#KEYS]\n{tail}")),
        [true, true]
    );
    assert_eq!(
        spec(&format!(
            "local bytes = redis.call('BITOP', ARGV[1], KEYS[1], unpack(KEYS, 3))\n{tail}"
        )),
        [true, true]
    );
    // A pcall answers a source's WRONGTYPE and the script goes on.
    assert_eq!(
        spec(&format!(
            "local bytes = redis.pcall('BITOP', ARGV[1], KEYS[1], unpack(KEYS, 2))\n{tail}"
        )),
        [true, true]
    );
}

/// The type checks of a script whose body passes `KEYS` whole to the
/// included `bitop_days`, whose function body is `body` (the `BITOP` in it).
fn bitop_through(body: &str, script: &str) -> Vec<bool> {
    let inc = parse_include(
        "includes/bitop_days.lua",
        &format!(
            "--- BITOP of the days\n-- WRITES BITOP\n-- ERRORS BADARG\n\nlocal function bitop_days(op, keys)\n  if #keys < 2 then\n    return redis.error_reply('BADARG days at least one is needed')\n  end\n{body}end\n"
        ),
    )
    .expect("a valid include");
    let head = "-- KEYS[1] tmp string rw: the result\n-- KEYS[2..] days string ro: the sources\n-- ARGV[1] op enum OR|AND: how\n-- RETURNS bulk: x\n-- WRITES BITOP GETDEL\n-- ERRORS BADARG\n-- INCLUDE bitop_days\n-- IDEMPOTENT yes: x\n";
    let tail = "if refused or bytes == 0 then\n  return refused\nend\nreturn redis.call('GETDEL', KEYS[1])\n";
    parse_script_with(
        "p/op.lua",
        &format!("{GOOD_HEAD}{head}{script}{tail}"),
        std::slice::from_ref(&inc),
    )
    .expect("valid")
    .type_checked
}

#[test]
fn a_tail_handed_to_bitop_through_an_include_needs_no_type_checks_either() {
    let bitop =
        "  local bytes = redis.call('BITOP', op, keys[1], unpack(keys, 2))\n  return nil, bytes\n";
    let call = "local refused, bytes = bitop_days(ARGV[1], KEYS)\n";
    // As in the body: the function's BITOP checks every day before it
    // writes, and reads the days nowhere else (its refusal before the
    // BITOP leaves them untouched).
    assert_eq!(bitop_through(bitop, call), [true, false]);
    // Behind a condition in the function, or in the body; after a write of
    // the body; the days read elsewhere in the function; from another
    // start; by a pcall: TYPE for each.
    let cases = [
        (
            "  if op == 'OR' then\n    redis.call('BITOP', op, keys[1], unpack(keys, 2))\n  end\n  return nil, 0\n"
                .to_string(),
            call.to_string(),
        ),
        (bitop.to_string(), "local refused, bytes\nif ARGV[1] == 'OR' then\n  refused, bytes = bitop_days(ARGV[1], KEYS)\nend\n".to_string()),
        (bitop.to_string(), format!("redis.call('GETDEL', KEYS[1])\n{call}")),
        (
            format!("  local d = keys[#keys]\n{bitop}"),
            call.to_string(),
        ),
        (
            format!("  local d = keys[3]\n{bitop}"),
            call.to_string(),
        ),
        (bitop.replace("unpack(keys, 2)", "unpack(keys, 3)"), call.to_string()),
        (bitop.replace("redis.call", "redis.pcall"), call.to_string()),
    ];
    for (body, script) in cases {
        let checked = bitop_through(&body, &script);
        assert!(checked[1], "{body}{script}");
    }
}

#[test]
fn acl_probes_are_one_per_command_and_key() {
    let head = "-- KEYS[1] a string rw: one\n-- KEYS[2] b string rw: two\n-- RETURNS integer: x\n-- WRITES SET\n-- READS GET\n-- IDEMPOTENT yes: x\n";
    // SET on two keys: a probe each (a selector may allow one and not the
    // other), however often each is written.
    let spec = checks_golden(
        "acl_per_key",
        head,
        "local v = redis.call('GET', KEYS[1])\nredis.call('SET', KEYS[2], 'x')\nredis.call('SET', KEYS[1], 'x')\nredis.call('SET', KEYS[2], 'y')\nreturn v and 1 or 0\n",
    );
    assert_eq!(acl_of(&spec), [("SET", "KEYS[1]"), ("SET", "KEYS[2]")]);
    let acl = |body: &str| {
        let body = body.replace("return ", "redis.call('SET', KEYS[2], 'x')\nreturn ");
        let spec = parse_script("p/op.lua", &format!("{GOOD_HEAD}{head}{body}")).expect("valid");
        acl_of(&spec)
            .into_iter()
            .map(|(c, k)| format!("{c} {k}"))
            .collect::<Vec<_>>()
    };
    // A read after a write is implied by the same read on the same key
    // before any write, unconditionally: a denial stops the body there.
    assert_eq!(
        acl(
            "local v = redis.call('GET', KEYS[1])\nredis.call('SET', KEYS[1], 'x')\nreturn redis.call('GET', KEYS[1]) == v and 1 or 0\n"
        ),
        ["SET KEYS[1]", "SET KEYS[2]"]
    );
    // Not by the same command on another key, nor by a conditional one.
    assert_eq!(
        acl(
            "local v = redis.call('GET', KEYS[2])\nredis.call('SET', KEYS[1], 'x')\nreturn redis.call('GET', KEYS[1]) == v and 1 or 0\n"
        ),
        ["GET KEYS[1]", "SET KEYS[1]", "SET KEYS[2]"]
    );
    assert_eq!(
        acl(
            "if KEYS[1] ~= 'x' then\n  redis.call('GET', KEYS[1])\nend\nredis.call('SET', KEYS[1], 'x')\nreturn redis.call('GET', KEYS[1]) and 1 or 0\n"
        ),
        ["GET KEYS[1]", "SET KEYS[1]", "SET KEYS[2]"]
    );
}

#[test]
fn a_tagged_argument_is_checked_by_one_pattern_match() {
    let spec = checks_golden(
        "tagged",
        "-- KEYS[1] lock string rw: the lock\n-- ARGV[1] channel string tagged: a channel\n-- RETURNS integer: x\n-- WRITES DEL\n-- READS SPUBLISH\n-- IDEMPOTENT yes: x\n",
        "redis.call('DEL', KEYS[1])\nredis.call('SPUBLISH', ARGV[1], 'x')\nreturn 1\n",
    );
    let checks = spec.checks();
    assert!(checks.contains("local match = string.match"));
    assert!(checks.contains("if v == '' or (match(v, '^[^{]*{([^}]+)}') or v) ~= (match(KEYS[1], '^[^{]*{([^}]+)}') or KEYS[1]) then"));
}

#[test]
fn a_bound_one_past_another_argument_is_compared_as_strings() {
    // `0..burst+1`: `v <= burst` by strings; only a value past it is
    // converted (to be `burst + 1` exactly), so no `n_burst` local.
    let spec = checks_golden(
        "one_past",
        "-- KEYS[1] k string rw: a key\n-- ARGV[1] burst integer 0..999: at once\n-- ARGV[2] quantity integer 0..burst+1: units\n-- RETURNS integer: x\n-- WRITES SET\n-- IDEMPOTENT no: x\n",
        "redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1] + 1)\nreturn 1\n",
    );
    let checks = spec.checks();
    assert!(checks.contains(
        "((#v < #ARGV[1] or #v == #ARGV[1] and v <= ARGV[1]) or tonumber(v) == tonumber(ARGV[1]) + 1)"
    ));
    assert!(!checks.contains("n_burst"));
}
