//! One registry entry per script (`ScriptInfo`): what the library, the
//! command line, the manifest and the generated clients read of its header.

use std::fmt::Write as _;

use super::types::{arg_variant, key_variant};
use super::{rust_str, upper};
use crate::header::{Bound, Idempotency};
use crate::script::ScriptSpec;

fn bound_registry(b: &Option<Bound>) -> String {
    match b {
        None => "None".into(),
        Some(Bound::Value(v)) => format!("Some(Bound::Value({v}))"),
        Some(Bound::Arg { name, offset }) => {
            format!(
                "Some(Bound::Arg {{ name: {}, offset: {offset} }})",
                rust_str(name)
            )
        }
    }
}

/// The entry's `keys: &[...]` lines.
fn keys(out: &mut String, s: &ScriptSpec) {
    out.push_str("    keys: &[\n");
    for k in &s.keys {
        let types: Vec<String> = k
            .types
            .iter()
            .map(|t| format!("KeyType::{}", key_variant(*t)))
            .collect();
        let _ = writeln!(
            out,
            "        KeySpec {{ name: {}, doc: {}, variadic: {}, types: &[{}], written: {} }},",
            rust_str(&k.name),
            rust_str(&k.doc),
            k.variadic,
            types.join(", "),
            k.written
        );
    }
    out.push_str("    ],\n");
}

/// The entry's `args: &[...]` lines.
fn args(out: &mut String, s: &ScriptSpec) {
    out.push_str("    args: &[\n");
    for a in &s.args {
        let values: Vec<String> = a.values.iter().map(|v| rust_str(v)).collect();
        let _ = writeln!(
            out,
            "        ArgSpec {{ name: {}, ty: ArgType::{}, doc: {}, variadic: {}, min: {}, max: {}, non_empty: {}, tagged: {}, values: &[{}], reason: {} }},",
            rust_str(&a.name),
            arg_variant(a.ty),
            rust_str(&a.doc),
            a.variadic,
            bound_registry(&a.min),
            bound_registry(&a.max),
            a.non_empty,
            a.tagged,
            values.join(", "),
            rust_str(&a.reason().unwrap_or_default())
        );
    }
    out.push_str("    ],\n");
}

/// The entry's `idempotent` value.
fn idempotent(s: &ScriptSpec) -> String {
    match &s.idempotent {
        Idempotency::Always => "Idempotency::Always".to_string(),
        Idempotency::Never => "Idempotency::Never".to_string(),
        Idempotency::IfArg(name) => format!(
            "Idempotency::IfArg {{ name: {}, index: {} }}",
            rust_str(name),
            s.args
                .iter()
                .position(|a| &a.name == name)
                .expect("checked by the parser")
        ),
    }
}

/// The registry entry of `s`.
pub(super) fn entry(out: &mut String, s: &ScriptSpec) {
    let _ = writeln!(
        out,
        "/// Registry entry of `{}` (`lua/{}`).",
        s.name, s.header.file
    );
    let _ = writeln!(
        out,
        "pub static {}: ScriptInfo = ScriptInfo {{",
        upper(&s.name)
    );
    let _ = writeln!(out, "    name: {},", rust_str(&s.name));
    let _ = writeln!(out, "    file: {},", rust_str(&s.header.file));
    let _ = writeln!(out, "    sha1: {},", rust_str(&s.sha1_hex));
    let _ = writeln!(out, "    function: {},", rust_str(&s.function_name()));
    let _ = writeln!(out, "    summary: {},", rust_str(&s.header.summary));
    keys(out, s);
    args(out, s);
    let _ = writeln!(out, "    returns: {},", rust_str(s.returns.name()));
    let _ = writeln!(out, "    returns_doc: {},", rust_str(&s.returns_doc));
    let _ = writeln!(out, "    errors: &{:?},", s.errors());
    let _ = writeln!(out, "    writes: &{:?},", s.header.writes);
    let _ = writeln!(out, "    reads: &{:?},", s.header.reads);
    let _ = writeln!(out, "    read_only: {},", s.read_only);
    let _ = writeln!(out, "    idempotent: {},", idempotent(s));
    let _ = writeln!(out, "    idempotent_doc: {},", rust_str(&s.idempotent_doc));
    let _ = writeln!(out, "    needs: &{:?},", s.needs);
    out.push_str("};\n\n");
}
