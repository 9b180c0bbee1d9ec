//! Set expressions over event bitmaps: AND, OR, XOR, NOT (inside an AND),
//! DIFF, ONE (exactly one of) and "at least n of", over events and over
//! other expressions.

use super::Period;
use crate::error::{Error, Result};

/// The most bitmaps one expression may name.
pub const MAX_LEAVES: usize = 1_000;

/// The largest `n` of [`Expr::at_least`] (each needs a temporary key).
pub const MAX_AT_LEAST: usize = 32;

/// A set expression over event bitmaps.
///
/// ```
/// use redis_patterns::analytics::{Expr, Period};
/// use redis_patterns::chrono::NaiveDate;
///
/// let day = |d| Period::Day(NaiveDate::from_ymd_opt(2024, 3, d).unwrap());
/// // Active on Monday AND bought on Tuesday BUT NOT churned.
/// let e = Expr::event("active", day(4))
///     .and(Expr::event("bought", day(5)))
///     .and_not(Expr::unique("churned"));
/// assert_eq!(e.to_string(), "((active@D:2024-03-04 AND bought@D:2024-03-05) AND NOT churned@U)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// The ids `event` marked in `period` (`None`: the unique event).
    Event {
        /// The event name.
        event: String,
        /// The period, or `None` for the unique event's bitmap.
        period: Option<Period>,
    },
    /// In every one of them.
    And(Vec<Expr>),
    /// In any of them.
    Or(Vec<Expr>),
    /// In an odd number of them.
    Xor(Vec<Expr>),
    /// Not in it: only as an operand of [`Expr::And`] beside at least one
    /// other (`a AND NOT b`); a complement of its own has no universe.
    Not(Box<Expr>),
    /// In the first, in none of the others.
    Diff(Box<Expr>, Vec<Expr>),
    /// In exactly one of them.
    One(Vec<Expr>),
    /// In at least `n` of them ("active on 3 of the last 7 days").
    AtLeast(usize, Vec<Expr>),
}

impl Expr {
    /// The bitmap of `event` in `period`.
    pub fn event(event: &str, period: Period) -> Self {
        Self::Event {
            event: event.to_string(),
            period: Some(period),
        }
    }

    /// The bitmap of the unique event `event`.
    pub fn unique(event: &str) -> Self {
        Self::Event {
            event: event.to_string(),
            period: None,
        }
    }

    /// `self AND other`.
    pub fn and(self, other: Expr) -> Self {
        Self::And(vec![self, other])
    }

    /// `self OR other`.
    pub fn or(self, other: Expr) -> Self {
        Self::Or(vec![self, other])
    }

    /// `self XOR other`.
    pub fn xor(self, other: Expr) -> Self {
        Self::Xor(vec![self, other])
    }

    /// `self AND NOT other`.
    pub fn and_not(self, other: Expr) -> Self {
        Self::And(vec![self, Self::Not(Box::new(other))])
    }

    /// The ids in at least `n` of `of`.
    pub fn at_least(n: usize, of: Vec<Expr>) -> Self {
        Self::AtLeast(n, of)
    }

    /// Every event bitmap the expression names, in order (with repeats).
    pub(super) fn leaves(&self) -> Vec<(&str, Option<Period>)> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Event { event, period } = e {
                out.push((event.as_str(), *period));
            }
        });
        out
    }

    fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match self {
            Expr::Event { .. } => {}
            Expr::Not(e) => e.walk(f),
            Expr::Diff(a, rest) => {
                a.walk(f);
                rest.iter().for_each(|e| e.walk(f));
            }
            Expr::And(v) | Expr::Or(v) | Expr::Xor(v) | Expr::One(v) | Expr::AtLeast(_, v) => {
                v.iter().for_each(|e| e.walk(f))
            }
        }
    }

    /// Refuses an expression the scripts cannot compute: an empty operand
    /// list, a NOT outside an AND (or an AND of NOTs alone), an `at least n`
    /// of fewer than `n` (or `n` of 0 or above [`MAX_AT_LEAST`]), more than
    /// [`MAX_LEAVES`] bitmaps.
    pub(super) fn check(&self) -> Result<()> {
        let bad = |why: String| Err(Error::invalid("expression", why));
        if self.leaves().len() > MAX_LEAVES {
            return bad(format!("names more than {MAX_LEAVES} bitmaps"));
        }
        self.check_node(false)
            .or_else(|why| bad(format!("{why} in {self}")))
    }

    fn check_node(&self, in_and: bool) -> std::result::Result<(), String> {
        match self {
            Expr::Event { .. } => Ok(()),
            Expr::Not(e) if in_and => e.check_node(false),
            Expr::Not(_) => Err("NOT is only allowed as an operand of AND".into()),
            Expr::And(v) => {
                if v.is_empty() {
                    return Err("AND of nothing".into());
                }
                if v.iter().all(|e| matches!(e, Expr::Not(_))) {
                    return Err("AND of NOTs alone".into());
                }
                v.iter().try_for_each(|e| e.check_node(true))
            }
            Expr::Or(v) | Expr::Xor(v) | Expr::One(v) if v.is_empty() => {
                Err("an operator of nothing".into())
            }
            Expr::Or(v) | Expr::Xor(v) | Expr::One(v) => {
                v.iter().try_for_each(|e| e.check_node(false))
            }
            Expr::Diff(a, rest) => {
                if rest.is_empty() {
                    return Err("DIFF of nothing to subtract".into());
                }
                a.check_node(false)?;
                rest.iter().try_for_each(|e| e.check_node(false))
            }
            Expr::AtLeast(n, v) => {
                if *n == 0 || *n > MAX_AT_LEAST || *n > v.len() {
                    return Err(format!(
                        "at least {n} of {} (n from 1 to {MAX_AT_LEAST} and at most the operands)",
                        v.len()
                    ));
                }
                v.iter().try_for_each(|e| e.check_node(false))
            }
        }
    }
}

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |f: &mut std::fmt::Formatter<'_>, op: &str, v: &[Expr]| {
            f.write_str("(")?;
            for (i, e) in v.iter().enumerate() {
                if i > 0 {
                    write!(f, " {op} ")?;
                }
                write!(f, "{e}")?;
            }
            f.write_str(")")
        };
        match self {
            Expr::Event {
                event,
                period: Some(p),
            } => write!(f, "{event}@{p}"),
            Expr::Event {
                event,
                period: None,
            } => write!(f, "{event}@U"),
            Expr::And(v) => list(f, "AND", v),
            Expr::Or(v) => list(f, "OR", v),
            Expr::Xor(v) => list(f, "XOR", v),
            Expr::One(v) => list(f, "ONE", v),
            Expr::Not(e) => write!(f, "NOT {e}"),
            Expr::Diff(a, rest) => {
                write!(f, "({a} DIFF ")?;
                list(f, "OR", rest)?;
                f.write_str(")")
            }
            Expr::AtLeast(n, v) => {
                write!(f, "AT LEAST {n} OF ")?;
                list(f, ",", v)
            }
        }
    }
}
