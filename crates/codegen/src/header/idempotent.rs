//! The `IDEMPOTENT yes|no|if <arg>: <why>` line, and the rule that a
//! writing script has one whose `if` names a fixed `integer`, `string` or
//! `bytes` argument.

use super::argv::Arg;
use crate::types::ArgType;

/// Whether a call may be sent again when its outcome is unknown (the
/// header's `IDEMPOTENT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Idempotency {
    /// Always: a second run right after the first leaves the data as one run does.
    Always,
    /// Never: a resend could apply twice (or mislead the caller).
    Never,
    /// When the named argument is neither empty nor `0` (an optional request id).
    IfArg(String),
}

/// An `IDEMPOTENT` line as read: the value, the reason, the line.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    pub value: Idempotency,
    pub doc: String,
    pub line: usize,
}

impl Idempotency {
    /// As written in the header: `yes`, `no`, `if <arg>`.
    pub fn text(&self) -> String {
        match self {
            Self::Always => "yes".into(),
            Self::Never => "no".into(),
            Self::IfArg(arg) => format!("if {arg}"),
        }
    }

    /// The line `-- IDEMPOTENT<rest>` at `line` of a script that is
    /// `read_only` or not.
    pub(crate) fn declared(rest: &str, read_only: bool, line: usize) -> Result<Declared, String> {
        let usage = "expected `IDEMPOTENT yes|no|if <arg>: <why>`";
        let (decl, doc) = rest.split_once(':').ok_or(usage)?;
        let words: Vec<&str> = decl.split_whitespace().collect();
        let value = match words.as_slice() {
            ["yes"] => Self::Always,
            ["no"] => Self::Never,
            ["if", arg] => Self::IfArg(arg.to_string()),
            _ => return Err(usage.into()),
        };
        if doc.trim().is_empty() {
            return Err("the meaning (why a resend is or is not safe) must not be empty".into());
        }
        if read_only && value != Self::Always {
            return Err(
                "a `no-writes` script is idempotent: it may only say `IDEMPOTENT yes`".into(),
            );
        }
        Ok(Declared {
            value,
            doc: doc.trim().to_string(),
            line,
        })
    }
}

/// The script's idempotency and its reason: the declared one (required in
/// a writing script, refused at `header_end` when missing), whose `if`
/// names a fixed `integer`, `string` or `bytes` argument of `args`.
pub(crate) fn resolve(
    declared: Option<&Declared>,
    args: &[Arg],
    read_only: bool,
    header_end: usize,
) -> Result<(Idempotency, String), (usize, String)> {
    let Some(Declared { value, doc, line }) = declared else {
        if read_only {
            return Ok((
                Idempotency::Always,
                "a no-writes script changes nothing".into(),
            ));
        }
        return Err((
            header_end,
            "a writing script declares `-- IDEMPOTENT yes|no|if <arg>: <why>`: whether a resend after an unknown outcome is safe".into(),
        ));
    };
    if let Idempotency::IfArg(name) = value {
        let arg = args.iter().find(|a| &a.name == name).ok_or_else(|| {
            (
                *line,
                format!("IDEMPOTENT if `{name}`: no argument has that name"),
            )
        })?;
        if arg.variadic || !matches!(arg.ty, ArgType::Integer | ArgType::String | ArgType::Bytes) {
            return Err((
                *line,
                format!(
                    "IDEMPOTENT if `{name}`: it must name a fixed integer, string or bytes argument"
                ),
            ));
        }
    }
    Ok((value.clone(), doc.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::entry::Entry;
    use crate::header::refusals::assert_refused;

    #[test]
    fn idempotent_says_yes_no_or_if_an_argument_and_why() {
        let value = |rest: &str| Idempotency::declared(rest, false, 7).expect(rest).value;
        assert_eq!(value(" yes: deleted already"), Idempotency::Always);
        assert_eq!(value(" no: counts twice"), Idempotency::Never);
        assert_eq!(
            value(" if id: with a request"),
            Idempotency::IfArg("id".into())
        );
        assert_refused(
            |rest| Idempotency::declared(rest, false, 7),
            &[
                (" maybe: x", "yes|no|if <arg>"),
                (" yes", "yes|no|if <arg>"),
                (" yes: ", "must not be empty"),
            ],
        );
        assert_refused(
            |rest| Idempotency::declared(rest, true, 7),
            &[(" no: x", "may only say `IDEMPOTENT yes`")],
        );
    }

    #[test]
    fn a_writing_script_says_it_and_if_names_a_fixed_scalar() {
        let args: Vec<Arg> = ["[1] id string: x", "[2] f float: x", "[3..] xs bytes: x"]
            .iter()
            .map(|r| Arg::declared(&Entry::parse("ARGV", r).expect(r), 3).expect(r))
            .collect();
        let said = |text: &str| Idempotency::declared(text, false, 9).expect(text);
        let resolved = |text: &str| resolve(Some(&said(text)), &args, false, 12);
        assert_eq!(
            resolved(" if id: x").expect("valid").0,
            Idempotency::IfArg("id".into())
        );
        assert!(
            resolved(" if nope: x")
                .unwrap_err()
                .1
                .contains("no argument has that name")
        );
        assert_eq!(
            resolved(" if f: x").unwrap_err(),
            (
                9,
                "IDEMPOTENT if `f`: it must name a fixed integer, string or bytes argument".into()
            )
        );
        assert!(resolved(" if xs: x").is_err());
        assert_eq!(resolve(None, &args, false, 12).unwrap_err().0, 12);
        assert_eq!(
            resolve(None, &args, true, 12).expect("read-only").0,
            Idempotency::Always
        );
    }
}
