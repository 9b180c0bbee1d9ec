//! The client surface every generator writes from the API description
//! ([`redis_patterns::contract::api`]): the error classes with their data,
//! the named results (records) and, per pattern, its classes with their
//! constructors, accessors and operations, each operation's inputs checked
//! before it is handed to the language's runtime. The walk is written once
//! ([`emit`]); a language gives its spelling of each piece ([`Surface`]),
//! so a new language is one more implementation of that trait (plus its
//! runtime), not a copy of the walk.

use redis_patterns::contract::PatternContract;

use super::Lang;
use redis_patterns::contract::api::{self, Class, ErrorDecl, Operation, Param, Record, Type};

/// Whether a type is read (an input) or written (a result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    In,
    Out,
}

/// How a language spells the surface.
pub(super) trait Surface {
    /// The language: its column of the checks' tables ([`scalar_checks`],
    /// [`compound_checks`], [`MEMBER_CHECKS`]).
    const LANG: Lang;

    /// The language's type for `t`.
    fn ty(&self, t: &Type, dir: Dir) -> String;

    /// A string literal.
    fn quote(s: &str) -> String;

    /// What follows an enum's values in its check (nothing by default).
    fn after_words(&self) -> &str {
        ""
    }

    /// The check of the input `var` (named `name` in refusals) of the
    /// record type `record`, at lambda depth `depth`.
    fn record_check(&self, record: &str, name: &str, var: &str, depth: usize) -> String;

    /// The expression that checks and normalizes the input `var` (named
    /// `name` in refusals) of type `t`, at lambda depth `depth`: a record's
    /// check, else the tables' ([`input_check`]).
    fn check(&self, t: &Type, name: &str, var: &str, depth: usize) -> String {
        match t {
            Type::Named(r) => self.record_check(r, name, var, depth),
            t => input_check(self, t, name, var, depth),
        }
    }

    /// The opening (imports) of the file holding `part`.
    fn header(&mut self, out: &mut String, part: Part);

    fn error(&mut self, out: &mut String, e: &ErrorDecl);

    fn record(&mut self, out: &mut String, r: &Record);

    /// A class: its opening, constructor and accessors.
    fn class_open(&mut self, out: &mut String, pattern: &str, c: &Class);

    /// One operation of `c`.
    fn op(&mut self, out: &mut String, pattern: &str, c: &Class, op: &Operation);

    fn class_close(&mut self, out: &mut String, c: &Class);

    /// The closing of the file holding `part` (nothing by default).
    fn footer(&mut self, _out: &mut String, _part: Part) {}
}

/// The input check of each scalar type, in every language side by side
/// (PHP, Python, TypeScript): `{n}` stands for the input's name (a
/// literal), `{v}` for the value, `{a}` and `{b}` for a range's ends.
/// `None` for a type made of others (a list, an option, a record ...),
/// which each language spells itself.
fn scalar_checks(t: &Type) -> Option<[&'static str; 3]> {
    Some(match t {
        Type::Str => ["C::text({n}, {v})", "_c.text({n}, {v})", "c.str({n}, {v})"],
        Type::Name => ["C::name({n}, {v})", "_c.name({n}, {v})", "c.name({n}, {v})"],
        Type::Token => [
            "C::token({n}, {v})",
            "_c.token({n}, {v})",
            "c.token({n}, {v})",
        ],
        Type::Prefix => [
            "C::prefix({n}, {v})",
            "_c.prefix({n}, {v})",
            "c.prefix({n}, {v})",
        ],
        Type::Bytes => [
            "C::bytes({n}, {v})",
            "_c.bytes_({n}, {v})",
            "c.bytes({n}, {v})",
        ],
        Type::Int => [
            "C::int({n}, {v}, PHP_INT_MIN, PHP_INT_MAX)",
            "_c.int_({n}, {v}, -(2 ** 63), 2 ** 63 - 1)",
            "c.int({n}, {v})",
        ],
        Type::UInt => [
            "C::int({n}, {v}, 0, PHP_INT_MAX)",
            "_c.int_({n}, {v}, 0, 2 ** 64 - 1)",
            "c.uint({n}, {v})",
        ],
        Type::Range(..) => [
            "C::int({n}, {v}, {a}, {b})",
            "_c.int_({n}, {v}, {a}, {b})",
            "c.range({n}, {v}, {a}, {b})",
        ],
        Type::Ms => [
            "C::int({n}, {v}, 1, PHP_INT_MAX)",
            "_c.int_({n}, {v}, 1, 2 ** 63 - 1)",
            "c.ms({n}, {v})",
        ],
        Type::Float => [
            "C::float({n}, {v})",
            "_c.float_({n}, {v})",
            "c.float({n}, {v})",
        ],
        Type::Bool => [
            "C::bool({n}, {v})",
            "_c.bool_({n}, {v})",
            "c.bool({n}, {v})",
        ],
        Type::Date => ["C::date({n}, {v})", "_c.date({n}, {v})", "c.date({n}, {v})"],
        Type::Any => ["C::json({n}, {v})", "_c.json({n}, {v})", "c.json({n}, {v})"],
        Type::Null => ["null", "None", "null"],
        _ => return None,
    })
}

/// The input check of each type made of others but a record (which each
/// language spells itself), side by side as in [`scalar_checks`]: `{n}`
/// and `{v}` as there, `{w}` an enum's values (literals), `{c}` what the
/// language writes after them, `{i}` the check of a list's or an option's
/// item (a function of it), `{k}` and `{e}` those of a map's keys and
/// values or of the two sides of a list's pairs, `{t}` those of a tuple's
/// members.
fn compound_checks(t: &Type) -> Option<[&'static str; 3]> {
    Some(match t {
        Type::Enum(_) => [
            "C::enum({n}, {v}, [{w}])",
            "_c.enum({n}, {v}, ({w},))",
            "c.oneOf({n}, {v}, [{w}]{c})",
        ],
        Type::List(item) if matches!(item.as_ref(), Type::Tuple(ts) if ts.len() == 2) => [
            "C::pairs({n}, {v}, {k}, {e})",
            "_c.list_({n}, {v}, {i})",
            "c.list({n}, {v}, {i})",
        ],
        Type::List(_) => [
            "C::list({n}, {v}, {i})",
            "_c.list_({n}, {v}, {i})",
            "c.list({n}, {v}, {i})",
        ],
        Type::Opt(_) => ["C::opt({v}, {i})", "_c.opt({v}, {i})", "c.opt({v}, {i})"],
        Type::Tuple(_) => [
            "C::tuple({n}, {v}, {t})",
            "_c.pair({n}, {v}, {t})",
            "c.pair({n}, {v}, {t})",
        ],
        Type::Map(..) => [
            "C::map({n}, {v}, {k}, {e})",
            "_c.mapping({n}, {v}, {k}, {e})",
            "c.map({n}, {v}, {k}, {e})",
        ],
        _ => return None,
    })
}

/// `lang`'s column of [`scalar_checks`] and [`compound_checks`].
fn column(lang: Lang) -> usize {
    match lang {
        Lang::Php => 0,
        Lang::Python => 1,
        Lang::Typescript => 2,
    }
}

/// `template` with each `{hole}` replaced by `hole(name)`.
fn fill(template: &str, hole: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let (name, tail) = rest[open + 1..].split_once('}').expect("closed hole");
        out.push_str(&hole(name));
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// `lang`'s check of the scalar input `v` (named by the literal `n`) of
/// type `t` ([`scalar_checks`]), `None` when `t` is made of others.
fn scalar_check(lang: Lang, t: &Type, n: &str, v: &str) -> Option<String> {
    let template = scalar_checks(t)?[column(lang)];
    Some(fill(template, |hole| match (hole, t) {
        ("n", _) => n.to_string(),
        ("v", _) => v.to_string(),
        ("a", Type::Range(a, _)) => a.to_string(),
        ("b", Type::Range(_, b)) => b.to_string(),
        _ => unreachable!("unknown hole {hole}"),
    }))
}

/// A member's check as a function of the member (what a compound check
/// takes for each member), in every language as in [`scalar_checks`]: the
/// member's variable (`{x}`: this, then the lambda depth) and the function
/// (`{body}`: the member's check).
const MEMBER_CHECKS: [[&str; 2]; 3] = [
    ["$x", "fn ({x}) => {body}"],
    ["x", "lambda {x}: {body}"],
    ["x", "({x}) => {body}"],
];

/// `s`'s check of the input `v` (named `name` in refusals) of type `t`, at
/// lambda depth `depth`: scalar ([`scalar_checks`]) or made of others
/// ([`compound_checks`], each member checked by [`Surface::check`] in a
/// function of it, [`MEMBER_CHECKS`]); not a record.
fn input_check<S: Surface + ?Sized>(s: &S, t: &Type, name: &str, v: &str, depth: usize) -> String {
    let n = S::quote(name);
    if let Some(check) = scalar_check(S::LANG, t, &n, v) {
        return check;
    }
    let template = compound_checks(t).unwrap_or_else(|| unreachable!("{t:?}: the language's"));
    let [var, function] = MEMBER_CHECKS[column(S::LANG)];
    let x = format!("{var}{depth}");
    let check = |t: &Type| {
        let body = s.check(t, name, &x, depth + 1);
        fill(function, |hole| match hole {
            "x" => x.clone(),
            "body" => body.clone(),
            _ => unreachable!("unknown hole {hole}"),
        })
    };
    let pair = |i: usize| match t {
        Type::List(item) => match item.as_ref() {
            Type::Tuple(ts) => check(&ts[i]),
            _ => unreachable!("a list of pairs"),
        },
        Type::Map(k, e) => check(if i == 0 { k } else { e }),
        _ => unreachable!("{t:?} has no pair of checks"),
    };
    fill(template[column(S::LANG)], |hole| match (hole, t) {
        ("n", _) => n.clone(),
        ("v", _) => v.to_string(),
        ("w", Type::Enum(words)) => words
            .iter()
            .map(|w| S::quote(w))
            .collect::<Vec<_>>()
            .join(", "),
        ("c", _) => s.after_words().to_string(),
        ("i", Type::List(item) | Type::Opt(item)) => check(item),
        ("k", _) => pair(0),
        ("e", _) => pair(1),
        // TypeScript's c.pair checks two members only.
        ("t", Type::Tuple(ts)) if S::LANG == Lang::Typescript && ts.len() != 2 => {
            panic!("{name}: only pairs are inputs")
        }
        ("t", Type::Tuple(ts)) => ts.iter().map(check).collect::<Vec<_>>().join(", "),
        _ => unreachable!("{t:?}: no hole {hole}"),
    })
}

/// How a language whose inputs are plain parameters (PHP, Python) spells
/// them: a signature of typed inputs with their defaults, each input checked
/// into a local variable, and those variables handed on.
pub(super) trait Inputs: Surface {
    /// Input `p` in a signature: its type, and its default when it has one.
    fn param(&self, p: &Param) -> String;

    /// The local variable input `p` is checked into.
    fn checked(&self, p: &Param) -> String;

    /// The statement that checks input `p` into [`Inputs::checked`] (its
    /// indent and newline included).
    fn check_line(&self, p: &Param) -> String;

    /// The inputs of a signature, `, `-separated.
    fn signature(&self, params: &[Param]) -> String {
        let each: Vec<String> = params.iter().map(|p| self.param(p)).collect();
        each.join(", ")
    }

    /// Each input checked into its variable.
    fn checks(&self, out: &mut String, params: &[Param]) {
        for p in params {
            out.push_str(&self.check_line(p));
        }
    }

    /// The checked inputs, `, `-separated.
    fn call_args(&self, params: &[Param]) -> String {
        let each: Vec<String> = params.iter().map(|p| self.checked(p)).collect();
        each.join(", ")
    }
}

/// What a surface file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// The error classes.
    Errors,
    /// The records.
    Records,
    /// The classes.
    Classes,
}

/// Writes `part` of the surface with spelling `s`.
pub(super) fn emit<S: Surface>(s: &mut S, part: Part) -> String {
    let mut out = String::new();
    s.header(&mut out, part);
    match part {
        Part::Errors => {
            for e in &api::Api::errors().errors {
                s.error(&mut out, e);
            }
        }
        Part::Records => {
            for c in PatternContract::all() {
                for r in &c.api.records {
                    s.record(&mut out, r);
                }
            }
        }
        Part::Classes => {
            for c in PatternContract::all() {
                for class in &c.api.classes {
                    s.class_open(&mut out, &c.name, class);
                    for op in &class.ops {
                        s.op(&mut out, &c.name, class, op);
                    }
                    s.class_close(&mut out, class);
                }
            }
        }
    }
    s.footer(&mut out, part);
    out
}

/// Every class of every pattern, with its pattern.
pub(super) fn classes() -> Vec<(String, Class)> {
    PatternContract::all()
        .into_iter()
        .flat_map(|c| {
            let name = c.name.clone();
            c.api.classes.into_iter().map(move |k| (name.clone(), k))
        })
        .collect()
}

/// Every record of every pattern.
pub(super) fn records() -> Vec<Record> {
    PatternContract::all()
        .into_iter()
        .flat_map(|c| c.api.records)
        .collect()
}

/// Whether `name` is a class (not a record).
pub(super) fn is_class(name: &str) -> bool {
    classes().iter().any(|(_, c)| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_lists_required_inputs_first() {
        for (_, c) in classes() {
            let lists = c.new.iter().chain(c.ops.iter().map(|o| &o.params));
            for ps in lists {
                let first_default = ps.iter().position(|p| p.default.is_some());
                if let Some(i) = first_default {
                    assert!(
                        ps[i..].iter().all(|p| p.default.is_some()),
                        "{}: an input without a default follows one with a default",
                        c.name
                    );
                }
            }
        }
        assert!(is_class("Lock") && !is_class("Lease"));
        assert!(!records().is_empty());
    }
}
