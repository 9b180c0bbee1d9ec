//! What both client generators write alike, each in its language's
//! spelling ([`Syntax`]): JSON values as literals, an argument's range
//! bound, the runtime check of one argument, the order of the checks, and
//! the contract's tables (key templates, defaults, constants).

use redis_patterns::contract::PatternContract;
use redis_patterns::script::{ArgSpec, ArgType, Bound, ScriptInfo};
use serde_json::Value;

/// How a language spells what the generators write.
pub(super) trait Syntax {
    /// `null`, `true` and `false`.
    const NULL: &'static str;
    const TRUE: &'static str;
    const FALSE: &'static str;
    /// The smallest and the largest 64-bit integer.
    const INT64_MIN: &'static str;
    const INT64_MAX: &'static str;

    /// A map literal: its opening, what stands between a key and its
    /// value, its closing (`{`, `: `, `}`).
    const MAP: [&'static str; 3];
    /// The literal of the enum values a check accepts: its opening and its
    /// closing (the values stand between, separated by `, `).
    const WORDS: [&'static str; 2];

    /// A string literal.
    fn string(s: &str) -> String;

    /// A map literal of `(key literal, value literal)` entries.
    fn map(entries: Vec<(String, String)>) -> String {
        let [open, sep, close] = Self::MAP;
        let entries: Vec<String> = entries
            .iter()
            .map(|(k, v)| format!("{k}{sep}{v}"))
            .collect();
        format!("{open}{}{close}", entries.join(", "))
    }

    /// The enum values a check accepts, as a literal.
    fn words(words: Vec<String>) -> String {
        let [open, close] = Self::WORDS;
        format!("{open}{}{close}", words.join(", "))
    }

    /// The variable of the script parameter `name`.
    fn var(name: &str) -> String;

    /// The statement calling the runtime's check `check` (`int`, `text` ...)
    /// with `args`, indented by `pad`.
    fn check_call(pad: &str, check: &str, args: &[String]) -> String;

    /// The wire form of one value `v` of `a` (the text the script reads).
    fn encode(a: &ArgSpec, v: &str) -> String;

    /// The loop over the items of the variadic parameter `name`, whose
    /// body checks each item ([`Syntax::ITEM`]): its first line and its
    /// closing line (empty where indentation closes it), at 8 spaces.
    fn each_item(name: &str) -> (String, String);

    /// The variable a loop over a variadic parameter's items names each.
    const ITEM: &'static str;

    /// The KEYS expression of key `name` (a variadic one spreads its list).
    fn key_expr(name: &str, variadic: bool) -> String;

    /// The ARGV expression that spreads the encoded items of the variadic
    /// argument `a` (`encoded`: one item's wire form, of [`Syntax::ITEM`]).
    fn spread(a: &ArgSpec, encoded: String) -> String;

    /// Whether the client checks `a` at all (default: every argument).
    fn checks(_a: &ArgSpec) -> bool {
        true
    }

    /// `true` or `false`.
    fn bool(b: bool) -> &'static str {
        if b { Self::TRUE } else { Self::FALSE }
    }
}

/// The checks of `s`'s arguments before a call, in the script's order
/// ([`check_order`]), at 8 spaces; a variadic argument's in a loop over its
/// items.
pub(super) fn checks<S: Syntax>(s: &ScriptInfo) -> String {
    let first_key = s.keys.first().map_or(String::new(), |k| S::var(k.name));
    let mut out = String::new();
    for a in check_order(s.args).filter(|a| S::checks(a)) {
        if a.variadic {
            let (open, close) = S::each_item(a.name);
            out.push_str(&open);
            out.push_str(&check::<S>(a, S::ITEM, "            ", &first_key));
            out.push_str(&close);
        } else {
            out.push_str(&check::<S>(a, &S::var(a.name), "        ", &first_key));
        }
    }
    out
}

/// The KEYS and ARGV expressions of a call of `s`.
pub(super) fn call_lists<S: Syntax>(s: &ScriptInfo) -> (Vec<String>, Vec<String>) {
    let keys = s
        .keys
        .iter()
        .map(|k| S::key_expr(k.name, k.variadic))
        .collect();
    let args = s
        .args
        .iter()
        .map(|a| {
            if a.variadic {
                S::spread(a, S::encode(a, S::ITEM))
            } else {
                S::encode(a, &S::var(a.name))
            }
        })
        .collect();
    (keys, args)
}

/// A JSON value as a literal.
pub(super) fn literal<S: Syntax>(v: &Value) -> String {
    match v {
        Value::Null => S::NULL.into(),
        Value::Bool(b) => S::bool(*b).into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => S::string(s),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(literal::<S>).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(o) => S::map(
            o.iter()
                .map(|(k, v)| (S::string(k), literal::<S>(v)))
                .collect(),
        ),
    }
}

/// One end of an integer argument's range.
fn bound<S: Syntax>(b: &Bound) -> String {
    match *b {
        Bound::Value(v) => v.to_string(),
        Bound::Arg { name, offset: 0 } => S::var(name),
        Bound::Arg { name, offset } => format!("({} + {offset})", S::var(name)),
    }
}

/// The statement that checks one value `v` of `a` (indented by `pad`);
/// `first_key` is the variable of `KEYS[1]` (for `tagged`).
pub(super) fn check<S: Syntax>(a: &ArgSpec, v: &str, pad: &str, first_key: &str) -> String {
    let name = S::string(a.name);
    let reason = S::string(a.reason);
    let v = v.to_string();
    let (check, args) = match a.ty {
        ArgType::String | ArgType::Bytes if a.tagged => {
            ("tagged", vec![name, v, first_key.to_string(), reason])
        }
        ArgType::Integer => (
            "int",
            vec![
                name,
                v,
                bound::<S>(&a.min.expect("integers have ranges")),
                bound::<S>(&a.max.expect("integers have ranges")),
                reason,
            ],
        ),
        ArgType::Int64 => (
            "int",
            vec![name, v, S::INT64_MIN.into(), S::INT64_MAX.into(), reason],
        ),
        ArgType::Float => ("float", vec![name, v, reason]),
        ArgType::Bool => ("bool", vec![name, v, reason]),
        ArgType::Enum => {
            let words = S::words(a.values.iter().map(|w| S::string(w)).collect());
            ("enum", vec![name, v, words, reason])
        }
        ArgType::String | ArgType::Bytes => {
            ("text", vec![name, v, S::bool(a.non_empty).into(), reason])
        }
    };
    S::check_call(pad, check, &args)
}

/// Each call in the source of `s` by line, in words (how an ACL refusal
/// names the call), as a map literal.
pub(super) fn calls<S: Syntax>(s: &ScriptInfo) -> String {
    S::map(
        s.calls()
            .iter()
            .map(|(line, what)| (line.to_string(), S::string(what)))
            .collect(),
    )
}

/// The doc text of a script's function: its summary, a line per KEYS and
/// ARGV entry (position, name, what it is, its doc), what it returns and
/// its errors; every line but the summary indented by `indent`.
pub(super) fn script_doc(s: &ScriptInfo, indent: &str) -> String {
    let mut doc = format!("{}\n\n", s.summary);
    let mut entry = |list: &str, i: usize, variadic: bool, name: &str, what: String, text: &str| {
        let dots = if variadic { ".." } else { "" };
        doc.push_str(&format!(
            "{indent}{list}[{}{dots}] {name} ({what}): {text}\n",
            i + 1
        ));
    };
    for (i, k) in s.keys.iter().enumerate() {
        let types: Vec<&str> = k.types.iter().map(|t| t.name()).collect();
        let rw = if k.written { "rw" } else { "ro" };
        let what = format!("{}, {rw}", types.join(","));
        entry("KEYS", i, k.variadic, k.name, what, k.doc);
    }
    for (i, a) in s.args.iter().enumerate() {
        entry(
            "ARGV",
            i,
            a.variadic,
            a.name,
            a.ty.name().to_string(),
            a.doc,
        );
    }
    doc.push_str(&format!(
        "\n{indent}Returns ({}): {}\n{indent}Errors: {}. Refuses an argument outside its declaration with\n{indent}InvalidArgument before anything is sent.",
        s.returns,
        s.returns_doc,
        s.errors.join(", ")
    ));
    doc
}

/// The arguments in the order their checks run, as the script checks them:
/// those whose range names no other argument first.
pub(super) fn check_order(args: &'static [ArgSpec]) -> impl Iterator<Item = &'static ArgSpec> {
    let refs = |a: &ArgSpec| {
        [a.min, a.max]
            .into_iter()
            .flatten()
            .any(|b| matches!(b, Bound::Arg { .. }))
    };
    args.iter()
        .filter(move |a| !refs(a))
        .chain(args.iter().filter(move |a| refs(a)))
}

/// One table of the generated contract: per pattern, per name, a value.
pub(super) struct Table {
    name: &'static str,
    /// What it holds; `{null}` stands for the language's null.
    doc: &'static str,
    rows: Vec<(String, Vec<(String, Value)>)>,
}

impl Table {
    /// What the table holds, in the language's words.
    fn doc<S: Syntax>(&self) -> String {
        self.doc.replace("{null}", S::NULL)
    }

    /// The lines of the table as a map literal, one a pattern (a string
    /// literal, then its entries as a map literal, then a comma), each
    /// indented by `indent`; the map's opening and closing are the
    /// caller's.
    fn lines<S: Syntax>(&self, indent: &str) -> String {
        let sep = S::MAP[1];
        self.rows
            .iter()
            .map(|(pattern, entries)| {
                let entries = entries
                    .iter()
                    .map(|(k, v)| (S::string(k), literal::<S>(v)))
                    .collect();
                let (pattern, entries) = (S::string(pattern), S::map(entries));
                format!("{indent}{pattern}{sep}{entries},\n")
            })
            .collect()
    }
}

/// The contract's tables ([`contract_tables`]) one after the other, each
/// as `declare` writes it from its doc, its name and its lines (in `S`'s
/// spelling, indented by `indent`: [`Table::lines`]).
pub(super) fn contract_consts<S: Syntax>(
    indent: &str,
    declare: impl Fn(&str, &str, &str) -> String,
) -> String {
    contract_tables()
        .iter()
        .map(|t| declare(&t.doc::<S>(), t.name, &t.lines::<S>(indent)))
        .collect()
}

/// The contract's tables: `KEYS` (templates), `DEFAULTS` (settings) and
/// `CONSTANTS`.
fn contract_tables() -> [Table; 3] {
    let table = |name, doc, f: fn(&PatternContract) -> Vec<(String, Value)>| Table {
        name,
        doc,
        rows: PatternContract::all()
            .iter()
            .map(|c| (c.name.clone(), f(c)))
            .collect(),
    };
    [
        table(
            "KEYS",
            "Per pattern, per key role: its template (`<var>` placeholders).",
            |c| {
                c.keys
                    .iter()
                    .map(|k| (k.role.clone(), Value::String(k.template.clone())))
                    .collect()
            },
        ),
        table(
            "DEFAULTS",
            "Per pattern, per setting: its default ({null}: required).",
            |c| {
                c.params
                    .iter()
                    .map(|p| (p.name.clone(), p.default.clone()))
                    .collect()
            },
        ),
        table("CONSTANTS", "Per pattern, per constant: its value.", |c| {
            c.constants
                .iter()
                .map(|k| (k.name.clone(), k.value.clone()))
                .collect()
        }),
    ]
}
