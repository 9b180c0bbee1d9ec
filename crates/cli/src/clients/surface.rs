//! The client surface every generator writes from the API description
//! ([`redis_patterns::contract::api`]): the error classes with their data,
//! the named results (records) and, per pattern, its classes with their
//! constructors, accessors and operations, each operation's inputs checked
//! before it is handed to the language's runtime. The walk is written once
//! ([`emit`]); a language gives its spelling of each piece ([`Surface`]),
//! so a new language is one more implementation of that trait (plus its
//! runtime), not a copy of the walk.

use redis_patterns::contract::PatternContract;
use redis_patterns::contract::api::{self, Class, ErrorDecl, Operation, Record, Type};

/// Whether a type is read (an input) or written (a result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    In,
    Out,
}

/// How a language spells the surface.
pub(super) trait Surface {
    /// The language's type for `t`.
    fn ty(&self, t: &Type, dir: Dir) -> String;

    /// The expression that checks and normalizes the input `var` (named
    /// `name` in refusals) of type `t`, at lambda depth `depth`.
    fn check(&self, t: &Type, name: &str, var: &str, depth: usize) -> String;

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
