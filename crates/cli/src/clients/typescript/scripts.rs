//! `scripts` (one typed function per script, from the registry: it checks
//! its arguments like the header says and returns a `Call`) and `contract`
//! (key templates, settings and constants, from the contracts), each in the
//! three spellings of [`Mode`].

use std::fmt::Write as _;

use redis_patterns::script::{ArgSpec, ArgType, ScriptInfo};
use redis_patterns::scripts::ALL;

use super::super::syntax::{Syntax, call_lists, calls, checks, contract_consts, script_doc};
use super::super::{camel as pascal, pattern_op, patterns, scripts_of};
use super::emit::{F, Mode, P, ident, lit};

/// TypeScript's spelling of the script calls.
pub(crate) struct Ts;

impl Syntax for Ts {
    const NULL: &'static str = "null";
    const TRUE: &'static str = "true";
    const FALSE: &'static str = "false";
    const INT64_MIN: &'static str = "-(2n ** 63n)";
    const INT64_MAX: &'static str = "2n ** 63n - 1n";

    const MAP: [&'static str; 3] = ["{ ", ": ", " }"];
    const WORDS: [&'static str; 2] = ["[", "]"];

    fn string(s: &str) -> String {
        lit(s)
    }

    fn var(name: &str) -> String {
        ident(name)
    }

    fn encode(a: &ArgSpec, v: &str) -> String {
        match a.ty {
            ArgType::Integer | ArgType::Int64 | ArgType::Float => format!("a.num({v})"),
            ArgType::Bool => format!("({v} ? \"1\" : \"0\")"),
            _ => v.to_string(),
        }
    }

    const ITEM: &'static str = "item";

    fn each_item(name: &str) -> (String, String) {
        (
            format!(
                "        for (const item of a.many({}, {})) {{\n",
                lit(name),
                ident(name)
            ),
            "        }\n".into(),
        )
    }

    fn key_expr(name: &str, variadic: bool) -> String {
        if variadic {
            format!("...a.keys({}, {})", lit(name), ident(name))
        } else {
            format!("a.key({}, {})", lit(name), ident(name))
        }
    }

    fn spread(a: &ArgSpec, encoded: String) -> String {
        format!("...{}.map((item) => {encoded})", ident(a.name))
    }

    /// An argument that accepts every value (no refusal reason) is not
    /// checked, unless it is text (whose check still tests string or Buffer).
    fn checks(a: &ArgSpec) -> bool {
        !a.reason.is_empty() || matches!(a.ty, ArgType::String | ArgType::Bytes)
    }

    fn check_call(pad: &str, check: &str, args: &[String]) -> String {
        let check = if check == "enum" { "oneOf" } else { check };
        format!("{pad}a.{check}({});\n", args.join(", "))
    }
}

/// The TypeScript type of a script's key or argument.
fn arg_type(a: Option<&ArgSpec>, variadic: bool) -> String {
    let one = match a.map(|a| a.ty) {
        None => "a.Arg",
        Some(ArgType::Integer) | Some(ArgType::Float) => "number",
        Some(ArgType::Int64) => "number | bigint",
        Some(ArgType::Bool) => "boolean",
        Some(_) => "a.Arg",
    };
    if variadic {
        format!("readonly {}", super::spelling::array(one))
    } else {
        one.to_string()
    }
}

/// One script function, as a method of its pattern's object.
fn script_fn(mode: Mode, s: &ScriptInfo) -> String {
    let (_, op) = pattern_op(s);
    let mut params = Vec::new();
    for k in s.keys {
        params.push(P::new(ident(k.name), arg_type(None, k.variadic)));
    }
    for a in s.args {
        params.push(P::new(ident(a.name), arg_type(Some(a), a.variadic)));
    }
    let (keys, args) = call_lists::<Ts>(s);
    // The generated checks are written at 8 spaces; the body starts at 0.
    let checks: String = checks::<Ts>(s)
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("        ").unwrap_or(l)))
        .collect();
    let body = format!(
        "{checks}return new a.Call({}, [{}], [{}]);",
        lit(s.name),
        keys.join(", "),
        args.join(", ")
    );
    let doc = script_doc(s, "");
    let m = mode.method(&F::new(&doc, &ident(op), params, "a.Call", body));
    match mode {
        Mode::Dts => m,
        _ => format!("{},\n", m.trim_end()),
    }
}

/// The script table and one object of script functions per pattern.
pub(crate) fn scripts(mode: Mode) -> String {
    let mut out = mode.opening(
        "One typed function per bundled script, from the script headers: each checks\n// its arguments like the header says and returns a Call (scripts' SHA1s, files and codes in SCRIPTS).",
    );
    out.push_str(&mode.import_ns("a", "./call", true));
    out.push('\n');
    out.push_str(&mode.export_type(
        "A bundled script: name, SHA1, file below lua/, read-only, domain error codes, and each call of its source by line, in words (how an ACL refusal names the call).",
        "interface ScriptInfo {\n  readonly name: string;\n  readonly sha1: string;\n  readonly file: string;\n  readonly readOnly: boolean;\n  readonly errors: readonly string[];\n  readonly calls: Readonly<Record<number, string>>;\n}\n",
    ));
    let mut table = String::from("{\n");
    for s in ALL {
        let errors = Ts::words(s.errors.iter().map(|e| lit(e)).collect());
        let _ = writeln!(
            table,
            "  {}: {{ name: {0}, sha1: {}, file: {}, readOnly: {}, errors: {errors}, calls: {} }},",
            lit(s.name),
            lit(s.sha1),
            lit(s.file),
            s.read_only,
            calls::<Ts>(s),
        );
    }
    table.push('}');
    out.push_str(&mode.export_const(
        "Every script of the bundle by name.",
        "SCRIPTS",
        "Readonly<Record<string, ScriptInfo>>",
        &table,
    ));
    for p in patterns() {
        let mut members = String::new();
        for s in scripts_of(p) {
            members.push_str(&script_fn(mode, s));
        }
        let doc = format!("The `{p}` scripts (lua/{p}/).");
        out.push('\n');
        out.push_str(&match mode {
            Mode::Dts => format!(
                "/** {doc} */\nexport declare const {}: {{\n{members}}};\n",
                pascal(p)
            ),
            _ => mode.export_const(&doc, &pascal(p), "", &format!("{{\n{members}}}")),
        });
    }
    out
}

/// The key templates, settings and constants of every pattern, and `key`.
pub(crate) fn contract(mode: Mode) -> String {
    let mut out = mode.opening(
        "Key templates, settings and constants of every pattern, from\n// redis_patterns::contract.",
    );
    out.push_str(&contract_consts::<Ts>("  ", |doc, name, lines| {
        let value = format!("{{\n{lines}}}");
        let ty = "Readonly<Record<string, Readonly<Record<string, any>>>>";
        format!("\n{}", mode.export_const(doc, name, ty, &value))
    }));
    out.push('\n');
    let values = || P::new("values", "Readonly<Record<string, string | number>>");
    out.push_str(&mode.function(&F::new(
        "`template` with every `<var>` replaced by String(values[var]).",
        "render",
        vec![P::new("template", "string"), values()],
        "string",
        "return template.replace(/<([^>]*)>/g, (_, v) => {\n  if (!(v in values)) {\n    throw new Error(`the template ${template} needs <${v}>`);\n  }\n  return String(values[v]);\n});\n".into(),
    )));
    out.push_str(&mode.function(&F::new(
        "The key of `role` in `pattern`, rendered from its template.",
        "key",
        vec![
            P::new("pattern", "string"),
            P::new("role", "string"),
            values(),
        ],
        "string",
        "return render(String(KEYS[pattern][role]), values);\n".into(),
    )));
    out
}
