//! `typed_call`: every wrapper by name, with keys and arguments given as
//! bytes (as another language would send them), for generic callers.

use std::fmt::Write as _;

use super::rust_str;
use crate::script::ScriptSpec;
use crate::types::ArgType;

/// The dispatcher's doc comment, signature and byte conversions, up to
/// `match name {`.
const HEAD: &str = include_str!("typed_call_head.rs.in");

/// The test that `keys` and `args` are too few or too many for `s`.
fn arity(s: &ScriptSpec) -> Vec<String> {
    let key_tail = s.keys.iter().any(|k| k.variadic);
    let arg_tail = s.args.iter().any(|a| a.variadic);
    let mut arity = Vec::new();
    for (what, n, tail) in [
        ("keys", s.fixed_keys(), key_tail),
        ("args", s.fixed_args(), arg_tail),
    ] {
        match (tail, n) {
            (true, 0) => {}
            (true, 1) => arity.push(format!("{what}.is_empty()")),
            (true, n) => arity.push(format!("{what}.len() < {n}")),
            (false, 0) => arity.push(format!("!{what}.is_empty()")),
            (false, n) => arity.push(format!("{what}.len() != {n}")),
        }
    }
    arity
}

/// The locals of the wrapper's parameters converted from bytes; returns
/// the wrapper's arguments.
fn conversions(out: &mut String, s: &ScriptSpec) -> Vec<String> {
    let mut call_args = Vec::new();
    for (i, k) in s.keys.iter().enumerate() {
        let from = if k.variadic {
            format!("&keys[{i}..]")
        } else {
            format!("keys[{i}]")
        };
        let _ = writeln!(out, "            let k_{} = {from};", k.name);
        call_args.push(format!("k_{}", k.name));
    }
    for (i, a) in s.args.iter().enumerate() {
        let conv = match a.ty {
            ArgType::Integer | ArgType::Int64 => "int",
            ArgType::Float => "float",
            ArgType::Bool => "flag",
            ArgType::Enum | ArgType::String => "text",
            ArgType::Bytes => "",
        };
        let (from, borrowed) = match (a.variadic, conv.is_empty()) {
            (true, true) => (format!("&args[{i}..]"), false),
            (true, false) => (
                format!("args[{i}..].iter().map(|a| {conv}(a)).collect::<Option<Vec<_>>>()?"),
                true,
            ),
            (false, true) => (format!("args[{i}]"), false),
            (false, false) => (format!("{conv}(args[{i}])?"), false),
        };
        let _ = writeln!(out, "            let a_{} = {from};", a.name);
        call_args.push(format!("{}a_{}", if borrowed { "&" } else { "" }, a.name));
    }
    call_args
}

/// The dispatcher over `specs`.
pub(super) fn dispatcher(out: &mut String, specs: &[ScriptSpec]) {
    out.push('\n');
    out.push_str(HEAD);
    for s in specs {
        let _ = writeln!(out, "        {} => {{", rust_str(&s.name));
        let arity = arity(s);
        if !arity.is_empty() {
            let _ = writeln!(
                out,
                "            if {} {{\n                return None;\n            }}",
                arity.join(" || ")
            );
        }
        let call_args = conversions(out, s);
        let _ = writeln!(
            out,
            "            Some({}::{}({}).map(|c| c.cmd().clone()))\n        }}",
            s.pattern,
            s.op,
            call_args.join(", ")
        );
    }
    out.push_str("        _ => None,\n    }\n}\n");
}
