//! What a body uses, calls and raises, and where: each use of `KEYS` and
//! `ARGV`, each `redis.call` / `redis.pcall`, each `redis.error_reply`.

use super::fault::Fault;
use super::patterns::{error_reply_spans, is_field, literal_entry, literal_index};
use super::tokens::{LineError, Tok, Token};
use crate::commands::{self, Command};

/// What the first argument of a `redis.call` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FirstArg {
    /// A literal `KEYS[n]` (1-based).
    Key(usize),
    /// A literal `ARGV[n]` (1-based): a channel command's channel.
    Arg(usize),
    Other,
}

/// Where a command an included function calls comes from.
#[derive(Debug, Clone)]
pub(crate) struct Via {
    /// Index in the script's `INCLUDE` list.
    pub include: usize,
    /// Line of the command in the include.
    pub line: usize,
    pub function: String,
}

/// One `redis.call('CMD', ...)` or `redis.pcall` of the body; or one
/// command of an included function, at the body's call of the function.
#[derive(Debug, Clone)]
pub(crate) struct CallSite {
    /// Token index of `redis` (of the function's name for an included one).
    pub at: usize,
    pub line: usize,
    pub command: &'static Command,
    pub first: FirstArg,
    /// Token index of the `KEYS` of a [`FirstArg::Key`].
    pub key_at: Option<usize>,
    /// `Some` for a command of an included function.
    pub via: Option<Via>,
    /// Within its included function, a write of that function may run
    /// before it.
    pub after_own_write: bool,
    /// Within its included function, it runs whenever the function does
    /// (always `true` in the body itself).
    pub unconditional_in_fn: bool,
    /// For a command of an included function at the function's top level
    /// (a `return` before it may end the function first) whose sources are
    /// `unpack(p, S)` of a parameter `p` that the function reads nowhere
    /// else but at literal entries: the token of the whole `KEYS` the body
    /// passes for `p`, and `S`.
    pub sources: Option<(usize, usize)>,
}

impl CallSite {
    /// A problem with this command: at its line, or at its line in the
    /// include (naming the function and where the body calls it).
    pub(crate) fn fault(&self, message: String) -> Fault {
        match &self.via {
            None => Fault::from((self.line, message)),
            Some(v) => Fault::in_include(
                v.include,
                v.line,
                format!(
                    "{message} (in `{}`, called at line {})",
                    v.function, self.line
                ),
            ),
        }
    }
}

/// A use of `KEYS` or `ARGV` in the body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Use {
    pub at: usize,
    pub line: usize,
    /// `Some(n)` for a literal index, `None` for a computed one or the
    /// whole table.
    pub index: Option<usize>,
    /// `#KEYS`: the table's length, not an entry.
    pub length: bool,
    /// Inside the arguments of `redis.error_reply(...)`.
    pub in_error_reply: bool,
    /// The whole argument (`KEYS[n]`) of a call of an included function:
    /// `Some(escapes)`, whether the function uses that parameter otherwise
    /// than as a command's first argument or in an error reply.
    pub include_arg: Option<bool>,
}

/// One `redis.error_reply('CODE ...')`.
#[derive(Debug, Clone)]
pub(crate) struct ErrorSite {
    pub code: String,
    /// The detail's first word.
    pub detail: Option<String>,
    pub line: usize,
    /// Token index of `error_reply`.
    pub at: usize,
}

/// What the checker reads from a body.
#[derive(Debug, Default)]
pub(crate) struct Sites {
    pub keys: Vec<Use>,
    pub argv: Vec<Use>,
    pub calls: Vec<CallSite>,
    pub error_codes: Vec<ErrorSite>,
}

/// Every `error_reply('CODE ...')` with a literal first argument.
fn error_sites(toks: &[Token]) -> Vec<ErrorSite> {
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.is_name("error_reply")
            && toks.get(i + 1).is_some_and(|t| t.is_sym("("))
            && let Some(Tok::Str(s)) = toks.get(i + 2).map(|t| &t.tok)
        {
            let mut words = s.split(' ');
            out.push(ErrorSite {
                code: words.next().unwrap_or("").to_string(),
                detail: words.next().map(String::from),
                line: t.line,
                at: i,
            });
        }
    }
    out
}

/// Every use of the table `table` (`KEYS` or `ARGV`), not as a field.
fn table_uses(toks: &[Token], table: &str, in_reply: &[bool]) -> Vec<Use> {
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if !t.is_name(table) || is_field(toks, i) {
            continue;
        }
        let index = literal_index(toks, i);
        out.push(Use {
            at: i,
            line: t.line,
            index,
            // `#KEYS[1]` is the length of one entry.
            length: i > 0 && toks[i - 1].is_sym("#") && index.is_none(),
            in_error_reply: in_reply[i],
            include_arg: None,
        });
    }
    out
}

/// The `redis.call('CMD', ...)` or `redis.pcall` at token `i`, if there is
/// one; refused when it does not name a known command literally.
fn redis_call(toks: &[Token], i: usize) -> Result<Option<CallSite>, LineError> {
    let t = &toks[i];
    let is_call = t.is_name("redis")
        && toks.get(i + 1).is_some_and(|t| t.is_sym("."))
        && toks
            .get(i + 2)
            .is_some_and(|t| t.is_name("call") || t.is_name("pcall"))
        && toks.get(i + 3).is_some_and(|t| t.is_sym("("));
    if !is_call {
        return Ok(None);
    }
    let Some(Tok::Str(cmd)) = toks.get(i + 4).map(|t| &t.tok) else {
        return Err((
            t.line,
            "`redis.call` must name its command as a string literal (the header lists the commands a script calls)".into(),
        ));
    };
    let upper = cmd.to_ascii_uppercase();
    let command = commands::lookup(&upper).ok_or_else(|| {
        (
            t.line,
            format!("unknown command `{upper}` (add it to crates/codegen/src/commands.rs)"),
        )
    })?;
    let literal = toks
        .get(i + 5)
        .filter(|c| c.is_sym(","))
        .and_then(|_| toks.get(i + 10))
        .filter(|after| after.is_sym(",") || after.is_sym(")"))
        .and_then(|_| literal_entry(toks, i + 6, i + 10));
    let first = match literal {
        Some(("KEYS", n)) => FirstArg::Key(n),
        Some(("ARGV", n)) if command.channel => FirstArg::Arg(n),
        _ => FirstArg::Other,
    };
    Ok(Some(CallSite {
        at: i,
        line: t.line,
        command,
        first,
        key_at: matches!(first, FirstArg::Key(_)).then_some(i + 6),
        via: None,
        after_own_write: false,
        unconditional_in_fn: true,
        sources: None,
    }))
}

impl Sites {
    /// Reads the sites of a body (or of an include's functions).
    pub(crate) fn scan(toks: &[Token]) -> Result<Self, LineError> {
        let in_reply = error_reply_spans(toks);
        let mut calls = Vec::new();
        for i in 0..toks.len() {
            calls.extend(redis_call(toks, i)?);
        }
        Ok(Sites {
            keys: table_uses(toks, "KEYS", &in_reply),
            argv: table_uses(toks, "ARGV", &in_reply),
            calls,
            error_codes: error_sites(toks),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::tokens::tokenize;

    fn sites(src: &str) -> Result<Sites, LineError> {
        Sites::scan(&tokenize(src, 1).expect("tokens"))
    }

    #[test]
    fn a_body_reads_as_its_uses_calls_and_errors() {
        let s = sites(
            "local n = #KEYS + #ARGV[1]\nredis.call('set', KEYS[2], ARGV[1])\nredis.pcall('SPUBLISH', ARGV[2], 'x')\nreturn redis.error_reply('BADARG n ' .. KEYS[1])\n",
        )
        .expect("valid");
        let keys: Vec<(Option<usize>, bool, bool)> = s
            .keys
            .iter()
            .map(|u| (u.index, u.length, u.in_error_reply))
            .collect();
        assert_eq!(
            keys,
            [
                (None, true, false),
                (Some(2), false, false),
                (Some(1), false, true)
            ]
        );
        assert_eq!(s.argv[0].index, Some(1));
        assert!(!s.argv[0].length, "#ARGV[1] is an entry's length");
        let calls: Vec<(&str, FirstArg)> =
            s.calls.iter().map(|c| (c.command.name, c.first)).collect();
        assert_eq!(
            calls,
            [("SET", FirstArg::Key(2)), ("SPUBLISH", FirstArg::Arg(2))]
        );
        assert_eq!(s.calls[0].line, 2);
        let e = &s.error_codes[0];
        assert_eq!(
            (e.code.as_str(), e.detail.as_deref(), e.line),
            ("BADARG", Some("n"), 4)
        );
    }

    #[test]
    fn a_call_names_a_known_command_literally() {
        assert!(
            sites("local c = 'GET'\nredis.call(c, KEYS[1])")
                .unwrap_err()
                .1
                .contains("string literal")
        );
        assert_eq!(sites("\nredis.call('NOPE')").unwrap_err().0, 2);
        let s =
            sites("redis.call('GET', KEYS[1] .. 'x')\nredis.call('GET', ARGV[1])").expect("valid");
        assert!(s.calls.iter().all(|c| c.first == FirstArg::Other));
    }
}
