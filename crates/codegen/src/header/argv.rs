//! The `ARGV[n] <name> <arg type>: <meaning>` line, and the rule across
//! lines that a range may name another argument only if it is a fixed,
//! constant-bounded integer.

use super::bound::{Bound, MAX_BOUND};
use super::entry::Entry;
use crate::types::ArgType;

/// One `ARGV` entry of a header.
#[derive(Debug, Clone)]
pub struct Arg {
    pub name: String,
    pub ty: ArgType,
    pub doc: String,
    pub variadic: bool,
    /// Inclusive range of an `integer`.
    pub min: Option<Bound>,
    pub max: Option<Bound>,
    /// `string nonempty` / `bytes nonempty` (and `tagged`).
    pub non_empty: bool,
    /// `string tagged` / `bytes tagged`: a name that carries the hash tag of
    /// `KEYS[1]` (so it shares the call's slot), such as the shard channel a
    /// script publishes on; never empty.
    pub tagged: bool,
    /// The words of an `enum`.
    pub values: Vec<String>,
    /// Line of the declaration in the script.
    pub line: usize,
}

const TYPES_HELP: &str =
    "integer <lo>..<hi> | int64 | float | bool | enum <a>|<b> | string | bytes";

impl ArgType {
    const ALL: [ArgType; 7] = [
        Self::Integer,
        Self::Int64,
        Self::Float,
        Self::Bool,
        Self::Enum,
        Self::String,
        Self::Bytes,
    ];

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }
}

/// What an `ARGV` line declares after the name: its type and what follows it.
struct Decl {
    ty: ArgType,
    min: Option<Bound>,
    max: Option<Bound>,
    non_empty: bool,
    tagged: bool,
    values: Vec<String>,
}

impl Decl {
    fn of(ty: ArgType) -> Self {
        Self {
            ty,
            min: None,
            max: None,
            non_empty: false,
            tagged: false,
            values: Vec::new(),
        }
    }
}

/// `integer <lo>..<hi>`: the two bounds.
fn integer_range(rest: &[&str]) -> Result<(Bound, Bound), String> {
    let range = rest
        .first()
        .ok_or("an integer needs a range `<lo>..<hi>` (e.g. `0..999999999999999`)")?;
    let (lo, hi) = range
        .split_once("..")
        .ok_or_else(|| format!("expected a range `<lo>..<hi>`, found `{range}`"))?;
    let parse = |s: &str| {
        Bound::parse(s).ok_or_else(|| {
            format!("bound `{s}` is neither an integer nor `<arg>`, `<arg>-<n>`, `<arg>+<n>`")
        })
    };
    let (lo, hi) = (parse(lo)?, parse(hi)?);
    for b in [&lo, &hi] {
        if b.magnitude().unsigned_abs() > MAX_BOUND as u64 {
            return Err(format!(
                "bound `{}` is beyond 2^53-1, where Lua numbers stop being exact",
                b.text()
            ));
        }
    }
    if let (Some(a), Some(b)) = (lo.value(), hi.value())
        && a > b
    {
        return Err(format!("empty range {a}..{b}"));
    }
    if let Some(extra) = rest.get(1) {
        return Err(format!("unexpected `{extra}` after the range"));
    }
    Ok((lo, hi))
}

/// `enum <a>|<b>|...`: the words.
fn enum_words(rest: &[&str]) -> Result<Vec<String>, String> {
    let list = rest
        .first()
        .ok_or("an enum lists its words: `enum <a>|<b>`")?;
    let mut values: Vec<String> = Vec::new();
    for v in list.split('|') {
        if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("enum word `{v}` must be letters, digits or `_`"));
        }
        if values.iter().any(|x| x == v) {
            return Err(format!("enum word `{v}` is listed twice"));
        }
        values.push(v.to_string());
    }
    if values.len() < 2 {
        return Err("an enum lists at least two words".into());
    }
    if let Some(extra) = rest.get(1) {
        return Err(format!("unexpected `{extra}` after the enum words"));
    }
    Ok(values)
}

/// Parses the declaration of an argument after its name.
fn parse_decl(decl: &[&str]) -> Result<Decl, String> {
    let t = decl
        .first()
        .ok_or_else(|| format!("missing type ({TYPES_HELP})"))?;
    let ty = ArgType::parse(t).ok_or_else(|| format!("unknown type `{t}` ({TYPES_HELP})"))?;
    let rest = &decl[1..];
    let mut d = Decl::of(ty);
    match ty {
        ArgType::Integer => {
            let (lo, hi) = integer_range(rest)?;
            (d.min, d.max) = (Some(lo), Some(hi));
        }
        ArgType::Enum => d.values = enum_words(rest)?,
        ArgType::String | ArgType::Bytes => match rest {
            [] => {}
            ["nonempty"] => d.non_empty = true,
            ["tagged"] => (d.non_empty, d.tagged) = (true, true),
            [other, ..] => {
                return Err(format!(
                    "unexpected `{other}` (only `nonempty` or `tagged` may follow `{t}`)"
                ));
            }
        },
        ArgType::Int64 | ArgType::Float | ArgType::Bool => {
            if let Some(extra) = rest.first() {
                return Err(format!("unexpected `{extra}` after `{t}`"));
            }
        }
    }
    Ok(d)
}

impl Arg {
    /// The argument an `ARGV` line at `line` declares.
    pub(crate) fn declared(entry: &Entry, line: usize) -> Result<Self, String> {
        let d = parse_decl(&entry.decl)?;
        Ok(Arg {
            name: entry.name.to_string(),
            ty: d.ty,
            doc: entry.doc.to_string(),
            variadic: entry.variadic,
            min: d.min,
            max: d.max,
            non_empty: d.non_empty,
            tagged: d.tagged,
            values: d.values,
            line,
        })
    }

    /// The names of the arguments this one's range refers to.
    pub(crate) fn refs(&self) -> impl Iterator<Item = &str> {
        self.min.iter().chain(&self.max).filter_map(Bound::arg)
    }
}

/// Ranges that name another argument name a fixed integer with constant
/// bounds; refused at the line of the range that does not.
pub(crate) fn check_refs(args: &[Arg]) -> Result<(), (usize, String)> {
    for a in args {
        for r in a.refs() {
            let target = args.iter().find(|b| b.name == r).ok_or_else(|| {
                (
                    a.line,
                    format!("range of `{}` names `{r}`, which is no argument", a.name),
                )
            })?;
            if target.ty != ArgType::Integer
                || target.variadic
                || target.refs().next().is_some()
                || target.name == a.name
            {
                return Err((
                    a.line,
                    format!(
                        "range of `{}` may only name a fixed integer argument with a constant range, not `{r}`",
                        a.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::refusals::assert_refused;

    fn arg(rest: &str) -> Result<Arg, String> {
        Arg::declared(&Entry::parse("ARGV", rest).expect("an entry"), 4)
    }

    #[test]
    fn each_type_reads_what_follows_it() {
        let n = arg("[1] n integer -5..shards-1: x").expect("valid");
        assert_eq!(
            (n.ty, n.min.clone(), n.line),
            (ArgType::Integer, Some(Bound::Value(-5)), 4)
        );
        assert_eq!(n.refs().collect::<Vec<_>>(), ["shards"]);
        let e = arg("[1] op enum OR|AND: x").expect("valid");
        assert_eq!(e.values, ["OR", "AND"]);
        let t = arg("[2..] c string tagged: x").expect("valid");
        assert!(t.tagged && t.non_empty && t.variadic);
        assert!(arg("[1] b bytes nonempty: x").expect("valid").non_empty);
        for plain in ["int64", "float", "bool", "string", "bytes"] {
            let a = arg(&format!("[1] a {plain}: x")).expect(plain);
            assert!(
                a.min.is_none() && !a.non_empty && a.values.is_empty(),
                "{plain}"
            );
        }
    }

    #[test]
    fn a_declaration_is_refused_with_its_reason() {
        let declared = |decl: &str| arg(&format!("[1] n {decl}: x"));
        assert_refused(
            declared,
            &[
                ("", "missing type"),
                ("number", "unknown type `number`"),
                ("integer", "needs a range"),
                ("integer 5", "expected a range"),
                ("integer 9..1", "empty range 9..1"),
                ("integer 007..9", "bound `007`"),
                ("integer 0..9007199254740992", "beyond 2^53-1"),
                ("integer 0..a+9007199254740992", "beyond 2^53-1"),
                ("integer 0..9 extra", "unexpected `extra` after the range"),
                ("enum", "lists its words"),
                ("enum OR", "at least two words"),
                ("enum OR|OR", "listed twice"),
                ("enum A|b-c", "letters, digits"),
                ("enum A|B C", "unexpected `C` after the enum words"),
                ("string short", "only `nonempty` or `tagged`"),
                ("bool 0..1", "unexpected `0..1` after `bool`"),
            ],
        );
    }

    #[test]
    fn a_range_names_only_a_fixed_constant_integer() {
        let args = |decls: &[&str]| -> Vec<Arg> {
            (decls.iter().enumerate())
                .map(|(i, d)| arg(&format!("[{}] {d}: x", i + 1)).expect(d))
                .collect()
        };
        assert!(check_refs(&args(&["shards integer 1..9", "first integer 0..shards-1"])).is_ok());
        let refused = |decls: &[&str]| check_refs(&args(decls)).unwrap_err().1;
        assert!(refused(&["a integer 0..c"]).contains("names `c`, which is no argument"));
        assert!(refused(&["a string", "b integer 0..a"]).contains("only name a fixed integer"));
        assert!(refused(&["b integer 0..b"]).contains("only name a fixed integer"));
        assert!(
            refused(&["a integer 0..9", "b integer 0..a", "c integer 0..b"]).contains("not `b`")
        );
        let tail = [
            arg("[1] a integer 0..b: x").expect("valid"),
            arg("[2..] b integer 0..9: x").expect("valid"),
        ];
        assert!(check_refs(&tail).unwrap_err().1.contains("not `b`"));
    }
}
