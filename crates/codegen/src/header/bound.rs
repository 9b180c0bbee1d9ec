//! One end of an `integer <lo>..<hi>` range: a literal, or another
//! argument plus or minus a literal (`shards-1`).

use super::names::is_ident;

/// The largest magnitude of an integer bound: every integer up to it is
/// exact in a Lua number (a double).
pub const MAX_BOUND: i64 = (1 << 53) - 1;

/// One end of an integer range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bound {
    Value(i64),
    /// Another argument's value plus `offset`.
    Arg {
        name: String,
        offset: i64,
    },
}

impl Bound {
    /// Reads a bound as written: a canonical literal (`007` or `+5` would
    /// read ambiguously), `<arg>`, `<arg>-<n>` or `<arg>+<n>`.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        if let Ok(v) = s.parse::<i64>() {
            return (v.to_string() == s).then_some(Self::Value(v));
        }
        let split = s.find(['+', '-']).unwrap_or(s.len());
        let (name, rest) = s.split_at(split);
        if !is_ident(name) {
            return None;
        }
        let offset = match rest {
            "" => 0,
            _ => {
                let k: i64 = rest[1..].parse().ok()?;
                if k.to_string() != rest[1..] || k == 0 {
                    return None;
                }
                if rest.starts_with('-') { -k } else { k }
            }
        };
        Some(Self::Arg {
            name: name.to_string(),
            offset,
        })
    }

    /// As written in the header (`5`, `shards-1`).
    pub fn text(&self) -> String {
        match self {
            Self::Value(v) => v.to_string(),
            Self::Arg { name, offset: 0 } => name.clone(),
            Self::Arg { name, offset } if *offset > 0 => format!("{name}+{offset}"),
            Self::Arg { name, offset } => format!("{name}{offset}"),
        }
    }

    /// The literal, for a constant bound.
    pub(crate) fn value(&self) -> Option<i64> {
        match self {
            Self::Value(v) => Some(*v),
            Self::Arg { .. } => None,
        }
    }

    /// The argument named, for a bound that names one.
    pub(crate) fn arg(&self) -> Option<&str> {
        match self {
            Self::Arg { name, .. } => Some(name),
            Self::Value(_) => None,
        }
    }

    /// The literal part: the value, or the offset from the argument.
    pub(crate) fn magnitude(&self) -> i64 {
        match self {
            Self::Value(v) => *v,
            Self::Arg { offset, .. } => *offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(name: &str, offset: i64) -> Option<Bound> {
        Some(Bound::Arg {
            name: name.into(),
            offset,
        })
    }

    #[test]
    fn a_bound_is_a_canonical_literal_or_an_argument_with_an_offset() {
        assert_eq!(Bound::parse("0"), Some(Bound::Value(0)));
        assert_eq!(Bound::parse("-5"), Some(Bound::Value(-5)));
        assert_eq!(Bound::parse("shards"), arg("shards", 0));
        assert_eq!(Bound::parse("shards-1"), arg("shards", -1));
        assert_eq!(Bound::parse("max_burst+1"), arg("max_burst", 1));
        for bad in [
            "007",
            "+5",
            "-0",
            "Shards",
            "shards-",
            "shards-0",
            "shards+01",
            "a-b",
        ] {
            assert_eq!(Bound::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_bound_reads_back_as_written() {
        for text in ["5", "-3", "shards", "shards-1", "max_burst+1"] {
            assert_eq!(Bound::parse(text).expect(text).text(), text);
        }
    }
}
