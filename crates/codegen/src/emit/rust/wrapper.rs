//! One typed wrapper per script: `scripts::<pattern>::<op>(keys…, args…)`
//! checks every argument against the header (the same ranges and reasons
//! as the Lua checks) before anything is sent, and builds the call.

use std::fmt::Write as _;

use super::types::{arg_decl, refused, reply_type, rust_many, rust_one};
use super::{doc_text, rust_str, upper};
use crate::emit::variadic_text::variadic_text;
use crate::header::Idempotency;
use crate::script::ScriptSpec;
use crate::types::ArgType;

/// The wrapper's doc lines for its keys and arguments.
fn entry_docs(out: &mut String, s: &ScriptSpec) {
    for (i, k) in s.keys.iter().enumerate() {
        let types: Vec<&str> = k.types.iter().map(|t| t.name()).collect();
        let _ = writeln!(
            out,
            "    /// * `KEYS[{}]` `{}` ({}, {}): {}",
            variadic_text(i + 1, k.variadic),
            k.name,
            types.join(","),
            if k.written { "rw" } else { "ro" },
            doc_text(&k.doc)
        );
    }
    for (i, a) in s.args.iter().enumerate() {
        let _ = writeln!(
            out,
            "    /// * `ARGV[{}]` `{}` ({}): {}",
            variadic_text(i + 1, a.variadic),
            a.name,
            doc_text(&arg_decl(a)),
            doc_text(&a.doc)
        );
    }
}

/// The wrapper's doc comment.
fn docs(out: &mut String, s: &ScriptSpec) {
    let _ = writeln!(out, "    /// {}", doc_text(&s.header.summary));
    out.push_str("    ///\n");
    entry_docs(out, s);
    out.push_str("    ///\n");
    let _ = writeln!(
        out,
        "    /// Returns ({}): {}",
        s.returns.name(),
        doc_text(&s.returns_doc)
    );
    let codes: Vec<String> = s.errors().iter().map(|c| format!("`{c}`")).collect();
    out.push_str("    ///\n");
    let _ = writeln!(out, "    /// Domain errors: {}.", codes.join(", "));
    out.push_str("    ///\n");
    if s.args.iter().any(|a| a.reason().is_some()) {
        out.push_str("    /// Refuses an argument outside its declaration with\n");
        out.push_str("    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) (the reason the\n");
        out.push_str("    /// script's own checks give) before anything is sent.\n");
        out.push_str("    ///\n");
    }
    let resend = match &s.idempotent {
        Idempotency::Always => "yes".to_string(),
        Idempotency::Never => "no".to_string(),
        Idempotency::IfArg(name) => format!("when `{name}` is set"),
    };
    let _ = writeln!(
        out,
        "    /// Resent after an unknown outcome: {resend} ({}).",
        doc_text(&s.idempotent_doc)
    );
    out.push_str("    ///\n");
    let _ = writeln!(
        out,
        "    /// Runs with `{}` (or `{} {}` on a connection in functions mode); source `lua/{}`.",
        if s.read_only { "EVALSHA_RO" } else { "EVALSHA" },
        if s.read_only { "FCALL_RO" } else { "FCALL" },
        s.function_name(),
        s.header.file
    );
}

/// The wrapper's parameters: its keys, then its arguments.
fn params(s: &ScriptSpec) -> Vec<String> {
    let keys = s.keys.iter().map(|k| {
        let ty = if k.variadic {
            "&[impl AsRef<str>]"
        } else {
            "&str"
        };
        format!("{}: {ty}", k.name)
    });
    let args = s.args.iter().map(|a| {
        let ty = if a.variadic {
            rust_many(a.ty)
        } else {
            rust_one(a.ty).to_string()
        };
        format!("{}: {ty}", a.name)
    });
    keys.chain(args).collect()
}

/// The wrapper's argument checks, in [`ScriptSpec::check_order`].
fn argument_checks(out: &mut String, s: &ScriptSpec) {
    let first_key = s.keys.first().map_or(String::new(), |k| k.name.clone());
    for i in s.check_order() {
        let a = &s.args[i];
        let Some(reason) = a.reason() else { continue };
        let fail = format!(
            "return Err(Error::invalid({}, {}));",
            rust_str(&a.name),
            rust_str(&reason)
        );
        if a.variadic {
            let item = match a.ty {
                ArgType::String | ArgType::Enum | ArgType::Bytes => "item.as_ref()",
                _ => "item",
            };
            if let Some(cond) = refused(a, item, &first_key) {
                let _ = writeln!(
                    out,
                    "        for item in {} {{\n            if {cond} {{\n                {fail}\n            }}\n        }}",
                    a.name
                );
            }
        } else {
            let v = match a.ty {
                ArgType::Integer => format!("&{}", a.name),
                _ => a.name.clone(),
            };
            if let Some(cond) = refused(a, &v, &first_key) {
                let _ = writeln!(out, "        if {cond} {{\n            {fail}\n        }}");
            }
        }
    }
}

/// The `ScriptCall` the wrapper builds: its keys, then its arguments.
fn call(out: &mut String, s: &ScriptSpec) {
    let fixed = s.fixed_keys();
    let numkeys = match s.keys.iter().find(|k| k.variadic) {
        Some(k) if fixed == 0 => format!("{}.len()", k.name),
        Some(k) => format!("{fixed} + {}.len()", k.name),
        None => fixed.to_string(),
    };
    let _ = writeln!(
        out,
        "        #[allow(unused_mut)]\n        let mut call = ScriptCall::new(&super::{}, {numkeys});",
        upper(&s.name)
    );
    for k in &s.keys {
        if k.variadic {
            let _ = writeln!(
                out,
                "        for key in {} {{\n            call.key(key.as_ref().as_bytes());\n        }}",
                k.name
            );
        } else {
            let _ = writeln!(out, "        call.key({}.as_bytes());", k.name);
        }
    }
    for a in &s.args {
        let one = |v: &str| match a.ty {
            ArgType::Integer | ArgType::Int64 => format!("call.arg_int({v})"),
            ArgType::Bool => format!("call.arg_int(i64::from({v}))"),
            ArgType::Float => format!("call.arg_float({v})"),
            ArgType::String | ArgType::Enum => format!("call.arg({v}.as_bytes())"),
            ArgType::Bytes => format!("call.arg({v})"),
        };
        if !a.variadic {
            let _ = writeln!(out, "        {};", one(&a.name));
            continue;
        }
        let item = match a.ty {
            ArgType::Integer | ArgType::Int64 | ArgType::Float | ArgType::Bool => "*item",
            _ => "item.as_ref()",
        };
        let _ = writeln!(
            out,
            "        for item in {} {{\n            {};\n        }}",
            a.name,
            one(item)
        );
    }
}

/// The typed wrapper of `s`.
pub(super) fn wrapper(out: &mut String, s: &ScriptSpec) {
    out.push('\n');
    docs(out, s);
    let params = params(s);
    if params.len() > 7 {
        out.push_str("    #[allow(clippy::too_many_arguments)]\n");
    }
    let _ = writeln!(
        out,
        "    pub fn {}({}) -> Result<ScriptCall<{}>> {{",
        s.op,
        params.join(", "),
        reply_type(s.returns)
    );
    argument_checks(out, s);
    call(out, s);
    out.push_str("        Ok(call)\n    }\n");
}
