//! A script applies completely or not at all, for any input, key type or
//! permission: one generic test over the registry, so a script is covered
//! the day it is added (it needs a valid example in
//! `tests/support/examples.rs`, or this test fails).
//!
//! From a server with some data and each script's example data, the
//! example call succeeds; then every declared key given a value of another
//! type, every declared argument given garbage (not of its type, out of its
//! range, empty where that is refused), one argument or key too few or too
//! many, and a user whose ACL denies one of the commands the script calls,
//! each get an error reply (`WRONGTYPE`, `BADARG <name> ...`, `NOPERM`) and
//! leave `DEBUG DIGEST` unchanged. The calls go out raw (`EVALSHA` with the
//! SHA, no Rust checks), and all of it again as `FCALL` of each script's
//! function in the library. A separate test checks, without any server, that
//! the typed Rust wrappers refuse the same garbage with the same reason
//! before anything is sent.

#[path = "support/examples.rs"]
mod examples;
mod support;

use examples::Example;
use redis::Value;
use redis_patterns::core::CallMode;
use redis_patterns::script::{ArgSpec, ArgType, Bound, KeyType};
use redis_patterns::scripts::{self, ALL};
use redis_patterns::{ErrorKind, ScriptInfo};
use support::digest;

/// The example of `script`; panics (failing the test) when there is none.
fn example_of<'a>(list: &'a [Example], script: &ScriptInfo) -> &'a Example {
    list.iter()
        .find(|e| e.script == script.name)
        .unwrap_or_else(|| {
            panic!(
                "{}: no valid example call in tests/support/examples.rs; add one",
                script.name
            )
        })
}

#[test]
fn every_script_has_exactly_one_example() {
    let list = examples::examples(false);
    for s in ALL {
        example_of(&list, s);
        assert_eq!(
            list.iter().filter(|e| e.script == s.name).count(),
            1,
            "{}",
            s.name
        );
    }
    for e in &list {
        assert!(
            ScriptInfo::by_name(e.script).is_some(),
            "example of unknown script {}",
            e.script
        );
    }
}

/// Empties the server and loads the seed data and the example's data.
fn reset(con: &mut redis::Connection, e: &Example) {
    let _: () = redis::cmd("FLUSHALL").query(con).expect("FLUSHALL");
    for c in examples::seed().iter().chain(&e.setup) {
        let _: Value = c.query(con).expect("example setup");
    }
}

/// The script called raw with these keys and args: `EVALSHA` (`EVALSHA_RO`)
/// with its SHA1, or in functions mode `FCALL` (`FCALL_RO`) of its function.
fn raw(
    mode: CallMode,
    con: &mut redis::Connection,
    s: &ScriptInfo,
    keys: &[String],
    args: &[String],
) -> redis::RedisResult<Value> {
    let (cmd, handle) = match (mode, s.read_only) {
        (CallMode::Evalsha, false) => ("EVALSHA", s.sha1),
        (CallMode::Evalsha, true) => ("EVALSHA_RO", s.sha1),
        (CallMode::Functions, false) => ("FCALL", s.function),
        (CallMode::Functions, true) => ("FCALL_RO", s.function),
    };
    redis::cmd(cmd)
        .arg(handle)
        .arg(keys.len())
        .arg(keys)
        .arg(args)
        .query(con)
}

/// The declared key at KEYS position `i` (0-based) and its type there.
fn key_at(s: &ScriptInfo, i: usize) -> (&'static str, KeyType) {
    let fixed = s.keys.iter().filter(|k| !k.variadic).count();
    if i < fixed {
        return (s.keys[i].name, s.keys[i].types[0]);
    }
    let tail = s
        .keys
        .last()
        .filter(|k| k.variadic)
        .expect("a variadic tail");
    (tail.name, tail.types[(i - fixed) % tail.types.len()])
}

/// The declared argument at ARGV position `i` (0-based).
fn arg_at(s: &ScriptInfo, i: usize) -> &'static ArgSpec {
    s.args
        .get(i)
        .filter(|a| !a.variadic)
        .or_else(|| s.args.last().filter(|a| a.variadic))
        .expect("an argument declared at this position")
}

/// The value of a bound for the example's arguments.
fn bound_value(s: &ScriptInfo, b: Bound, args: &[String]) -> i64 {
    match b {
        Bound::Value(v) => v,
        Bound::Arg { name, offset } => {
            let i = s
                .args
                .iter()
                .position(|a| a.name == name)
                .expect("named argument");
            args[i].parse::<i64>().expect("an integer example") + offset
        }
    }
}

/// Values that an argument declared as `a` must refuse.
fn garbage(s: &ScriptInfo, a: &ArgSpec, args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    match a.ty {
        ArgType::Integer => {
            out.extend(["abc", "1.5", "", " 1", "+1", "0x10", "1e3", "-0"].map(String::from));
            let (lo, hi) = (
                bound_value(s, a.min.expect("range"), args),
                bound_value(s, a.max.expect("range"), args),
            );
            out.push((lo - 1).to_string());
            out.push((hi + 1).to_string());
            if lo <= 7 && 7 <= hi {
                out.push("007".into());
            }
        }
        ArgType::Int64 => out.extend(
            [
                "abc",
                "",
                "007",
                "-0",
                "1.0",
                "9223372036854775808",
                "-9223372036854775809",
                "18446744073709551617",
            ]
            .map(String::from),
        ),
        ArgType::Float => out.extend(["abc", "", "nan", "inf"].map(String::from)),
        ArgType::Bool => out.extend(["2", "", "true", "01"].map(String::from)),
        ArgType::Enum => {
            out.extend(["", "XOR"].map(String::from));
            out.push(a.values[0].to_lowercase());
        }
        // Without the first key's hash tag (another slot on a cluster).
        ArgType::String | ArgType::Bytes if a.tagged => {
            out.extend(["", "x:untagged"].map(String::from))
        }
        ArgType::String | ArgType::Bytes if a.non_empty => out.push(String::new()),
        ArgType::String | ArgType::Bytes => {}
    }
    out
}

/// A value of another type than `t` for `key`.
fn wrong_type(con: &mut redis::Connection, key: &str, t: KeyType) {
    let _: () = redis::cmd("DEL").arg(key).query(con).expect("DEL");
    let c = match t {
        KeyType::String => redis::cmd("HSET").arg(key).arg("f").arg("v").clone(),
        _ => redis::cmd("SET").arg(key).arg("x").clone(),
    };
    let _: Value = c.query(con).expect("write a wrong type");
}

/// The call must fail with `code` (and, for `BADARG`, name `name` first)
/// and leave the dataset as it was.
#[allow(clippy::too_many_arguments)]
fn refused(
    mode: CallMode,
    con: &mut redis::Connection,
    s: &ScriptInfo,
    keys: &[String],
    args: &[String],
    code: &str,
    name: Option<&str>,
    case: &str,
) -> Option<String> {
    let before = digest(con);
    let reply = raw(mode, con, s, keys, args);
    let after = digest(con);
    let err = match reply {
        Err(e) => e,
        Ok(v) => panic!("{} {case}: expected {code}, got {v:?}", s.name),
    };
    assert_eq!(
        err.code(),
        Some(code),
        "{} {case}: expected {code}, got {err:?}",
        s.name
    );
    assert_eq!(before, after, "{} {case}: refused but wrote", s.name);
    let detail = err.detail().unwrap_or("").to_string();
    if let Some(name) = name {
        let (first, reason) = detail.split_once(' ').unwrap_or((&detail, ""));
        assert_eq!(first, name, "{} {case}: BADARG names {first:?}", s.name);
        return Some(reason.to_string());
    }
    None
}

/// `key` as an ACL key pattern matching only itself.
fn glob_escape(key: &str) -> String {
    let mut out = String::new();
    for c in key.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn connect_as(server: &redis_patterns_test_support::LocalServer, user: &str) -> redis::Connection {
    let url = format!("redis://{user}:pw@127.0.0.1:{}/", server.port());
    redis::Client::open(url)
        .expect("url")
        .get_connection()
        .expect("connect as the restricted user")
}

#[test]
fn every_script_applies_completely_or_not_at_all() {
    applies_completely_or_not_at_all(CallMode::Evalsha);
}

/// The same checks of every script called as its function in the library
/// (`FCALL`): the generated checks behave the same inside a function.
#[test]
fn every_function_applies_completely_or_not_at_all() {
    applies_completely_or_not_at_all(CallMode::Functions);
}

fn applies_completely_or_not_at_all(mode: CallMode) {
    let server = support::debug_server();
    let mut con = server.connection();
    let mut ours = redis_patterns::Connection::open(server.url()).expect("connect");
    match mode {
        CallMode::Evalsha => {
            redis_patterns::Request::run(redis_patterns::load_all(), &mut ours)
                .expect("load the bundle");
        }
        CallMode::Functions => {
            redis_patterns::Request::run(redis_patterns::functions::load(), &mut ours)
                .expect("load the library");
        }
    }
    let list = examples::examples(false);
    let mut cases = 0usize;
    for s in support::runnable_scripts(&mut ours) {
        let e = example_of(&list, s);
        let (keys, args) = (&e.keys, &e.args);

        // The example itself is valid.
        reset(&mut con, e);
        let ok = raw(mode, &mut con, s, keys, args);
        assert!(
            ok.is_ok(),
            "{}: the example call must succeed: {ok:?}",
            s.name
        );

        // Every key position given a value of another type.
        for i in 0..keys.len() {
            let (name, t) = key_at(s, i);
            if t == KeyType::Any {
                continue;
            }
            reset(&mut con, e);
            wrong_type(&mut con, &keys[i], t);
            refused(
                mode,
                &mut con,
                s,
                keys,
                args,
                "WRONGTYPE",
                None,
                &format!("KEYS[{}] {name} not a {}", i + 1, t.name()),
            );
            cases += 1;
        }

        // Every argument position given garbage: BADARG <its name>, with the
        // reason the registry (and the typed wrapper) gives.
        for i in 0..args.len() {
            let a = arg_at(s, i);
            for g in garbage(s, a, args) {
                let mut bad = args.clone();
                bad[i] = g.clone();
                reset(&mut con, e);
                let case = format!("ARGV[{}] {} = {g:?}", i + 1, a.name);
                let reason = refused(mode, &mut con, s, keys, &bad, "BADARG", Some(a.name), &case);
                assert_eq!(reason.as_deref(), Some(a.reason), "{} {case}", s.name);
                cases += 1;
            }
        }

        // Arity: one argument missing (each fixed one), one too many, and
        // a key too few or too many.
        let fixed_args = s.args.iter().filter(|a| !a.variadic).count();
        for n in 0..fixed_args {
            reset(&mut con, e);
            let reason = refused(
                mode,
                &mut con,
                s,
                keys,
                &args[..n],
                "BADARG",
                Some(s.args[n].name),
                &format!("{n} arguments"),
            );
            assert_eq!(reason.as_deref(), Some("missing"));
            cases += 1;
        }
        let arg_tail = s.args.last().is_some_and(|a| a.variadic);
        if !arg_tail {
            let mut more = args.clone();
            more.push("x".into());
            reset(&mut con, e);
            refused(
                mode,
                &mut con,
                s,
                keys,
                &more,
                "BADARG",
                Some("argv"),
                "one argument too many",
            );
            cases += 1;
        }
        let fixed_keys = s.keys.iter().filter(|k| !k.variadic).count();
        if fixed_keys > 0 {
            reset(&mut con, e);
            refused(
                mode,
                &mut con,
                s,
                &keys[..fixed_keys - 1],
                args,
                "BADARG",
                Some("keys"),
                "one key too few",
            );
            cases += 1;
        }
        if !s.keys.last().is_some_and(|k| k.variadic) {
            let mut more = keys.clone();
            more.push(format!("{}:extra", keys[0]));
            reset(&mut con, e);
            refused(
                mode,
                &mut con,
                s,
                &more,
                args,
                "BADARG",
                Some("keys"),
                "one key too many",
            );
            cases += 1;
        }

        // ACL: a user allowed every command but only the call's own keys
        // succeeds (the checks probe permissions with those keys only).
        let mut setuser = redis::cmd("ACL");
        setuser
            .arg("SETUSER")
            .arg("keyed")
            .arg("reset")
            .arg("on")
            .arg(">pw")
            .arg("&*")
            .arg("+@all");
        for k in keys {
            setuser.arg(format!("~{}", glob_escape(k)));
        }
        let _: () = setuser.query(&mut con).expect("ACL SETUSER");
        reset(&mut con, e);
        let ok = raw(mode, &mut connect_as(&server, "keyed"), s, keys, args);
        assert!(
            ok.is_ok(),
            "{}: a user allowed exactly its keys: {ok:?}",
            s.name
        );

        // ACL: a user denied one command. A denied write is refused with
        // NOPERM before anything is written; a denied read either is not
        // reached or fails before any write (the checks' own TYPE too).
        if !s.read_only {
            let commands = s.writes.iter().chain(s.reads).chain(&["TYPE"]);
            for cmd in commands {
                let _: () = redis::cmd("ACL")
                    .arg("SETUSER")
                    .arg("restricted")
                    .arg("reset")
                    .arg("on")
                    .arg(">pw")
                    .arg("~*")
                    .arg("&*")
                    .arg("+@all")
                    .arg(format!("-{cmd}"))
                    .query(&mut con)
                    .expect("ACL SETUSER");
                reset(&mut con, e);
                let mut user = connect_as(&server, "restricted");
                let before = digest(&mut con);
                let reply = raw(mode, &mut user, s, keys, args);
                let after = digest(&mut con);
                let case = format!("a user denied {cmd}");
                if s.writes.contains(cmd) {
                    let err = reply.expect_err(&format!("{} {case}: must be refused", s.name));
                    assert_eq!(err.code(), Some("NOPERM"), "{} {case}: {err:?}", s.name);
                    assert_eq!(before, after, "{} {case}: refused but wrote", s.name);
                } else if reply.is_err() {
                    assert_eq!(
                        before, after,
                        "{} {case}: failed but wrote: {reply:?}",
                        s.name
                    );
                }
                cases += 1;
            }
        }
    }
    assert!(cases > 500, "only {cases} cases");
}

#[test]
fn typed_wrappers_refuse_the_same_garbage_before_sending() {
    // No server at all: the wrappers build calls, they do not send them.
    let list = examples::examples(false);
    for s in ALL {
        let e = example_of(&list, s);
        let keys: Vec<&str> = e.keys.iter().map(String::as_str).collect();
        let bytes = |args: &[String]| -> Vec<Vec<u8>> {
            args.iter().map(|a| a.as_bytes().to_vec()).collect()
        };
        let call = |args: &[String]| {
            let b = bytes(args);
            let b: Vec<&[u8]> = b.iter().map(Vec::as_slice).collect();
            scripts::typed_call(s.name, &keys, &b)
        };
        // The example through the typed wrapper: the raw call, byte for byte.
        let cmd = call(&e.args)
            .unwrap_or_else(|| panic!("{}: the example fits the wrapper's types", s.name))
            .unwrap_or_else(|err| panic!("{}: the wrapper refuses the example: {err}", s.name));
        let mut raw = redis::cmd(if s.read_only { "EVALSHA_RO" } else { "EVALSHA" });
        raw.arg(s.sha1).arg(keys.len()).arg(&keys).arg(&e.args);
        assert_eq!(
            cmd.get_packed_command(),
            raw.get_packed_command(),
            "{}: the wrapper sends the raw call",
            s.name
        );
        let mut refused = 0;
        for i in 0..e.args.len() {
            let a = arg_at(s, i);
            for g in garbage(s, a, &e.args) {
                let mut bad = e.args.clone();
                bad[i] = g.clone();
                match call(&bad) {
                    // Not expressible in the wrapper's Rust types (not an
                    // integer, not 0/1 ...): nothing to refuse.
                    None => {}
                    Some(Ok(_)) => panic!("{}: the wrapper accepts {} = {g:?}", s.name, a.name),
                    Some(Err(err)) => match err.into_kind() {
                        ErrorKind::InvalidArgument {
                            script: None,
                            name,
                            reason,
                        } => {
                            assert_eq!(
                                (name.as_str(), reason.as_str()),
                                (a.name, a.reason),
                                "{} {g:?}",
                                s.name
                            );
                            refused += 1;
                        }
                        other => panic!("{}: {} = {g:?}: {other:?}", s.name, a.name),
                    },
                }
            }
        }
        let checked = s
            .args
            .iter()
            .any(|a| !a.reason.is_empty() && !matches!(a.ty, ArgType::Bool | ArgType::Int64));
        assert_eq!(refused > 0, checked, "{}: {refused} refusals", s.name);
        // Arity is the types' business: a missing or extra argument does
        // not fit the wrapper's signature.
        if !e.args.is_empty() && !s.args.last().is_some_and(|a| a.variadic) {
            assert!(call(&e.args[..e.args.len() - 1]).is_none(), "{}", s.name);
        }
    }
}
