//! Which keys the generated checks call `TYPE` on: every key but an `any`
//! key, a fixed key whose type the body's own first command on it
//! checks before any write can run, and a variadic tail that the body
//! hands whole, as the sources, to a command that checks every source's
//! type before it writes (`BITOP`), before any write can run.

use super::analysis::{Access, Analysis};
use super::statement::unconditional;
use super::tokens::{Tok, Token};
use crate::header::Key;
use crate::types::KeyType;

/// Commands that check the type of every source key (every key argument
/// after the destination, which is their third argument) before they
/// write, and answer `WRONGTYPE` when one holds another type.
const SOURCES_CHECKED: &[(&str, KeyType)] = &[("BITOP", KeyType::String)];

/// The argument number (1-based, the command name being 1) of token `at`
/// inside the call whose `(` is at `open`, and whether that argument is the
/// call's last; `None` when `at` is not directly inside it.
fn argument_of(toks: &[Token], open: usize, at: usize) -> Option<(usize, bool)> {
    let (mut depth, mut arg, mut found) = (0usize, 1usize, None);
    for (j, t) in toks.iter().enumerate().skip(open) {
        if t.is_sym("(") || t.is_sym("{") || t.is_sym("[") {
            depth += 1;
        } else if t.is_sym(")") || t.is_sym("}") || t.is_sym("]") {
            depth -= 1;
            if depth == 0 {
                return found.map(|n| (n, n == arg));
            }
        } else if depth == 1 && t.is_sym(",") {
            arg += 1;
        }
        if j == at {
            // `unpack(` opens one level more than the call's arguments.
            found = (depth == 1).then_some(arg);
        }
    }
    None
}

/// Whether every access is safe, or comes after a safe access that runs
/// unconditionally.
fn verified(accesses: &[Access]) -> bool {
    accesses.iter().all(|a| {
        a.safe
            || accesses
                .iter()
                .any(|first| first.unconditional && first.place < a.place)
    })
}

impl Analysis<'_> {
    /// Whether the variadic tail from `KEYS[start]`, of the one type `t`,
    /// is checked by the body itself: its only use is `unpack(KEYS,
    /// start)` as the last argument (the sources, from the fourth) of a
    /// command that checks every source's type before it writes, a call of
    /// the body that runs whenever the body gets that far and that no
    /// write can precede; then every key of the tail reaches that check.
    fn tail_checked_by_body(&self, start: usize, t: KeyType) -> bool {
        let toks = &self.code().toks;
        let mut uses = (self.sites().keys.iter())
            .filter(|u| !u.length && !u.in_error_reply && u.index.is_none_or(|n| n >= start));
        let (Some(u), None) = (uses.next(), uses.next()) else {
            return false;
        };
        let at = u.at;
        let unpacked = at >= 2
            && toks[at - 2].is_name("unpack")
            && toks[at - 1].is_sym("(")
            && toks.get(at + 1).is_some_and(|t| t.is_sym(","))
            && matches!(toks.get(at + 2).map(|t| &t.tok), Some(Tok::Num(n)) if n.parse() == Ok(start))
            && toks.get(at + 3).is_some_and(|t| t.is_sym(")"));
        if !unpacked {
            return false;
        }
        self.calls().iter().any(|c| {
            c.via.is_none()
                && SOURCES_CHECKED.contains(&(c.command.name, t))
                && argument_of(toks, c.at + 3, at - 2) == Some((4, true))
                && !self.after_write(c)
                && unconditional(toks, &self.code().structure, c.at)
        })
    }

    /// For each of `keys`, whether the generated checks call `TYPE` on it
    /// (on every key of a variadic tail). A fixed key needs none when every
    /// access of it (other than reads that accept any type) either is safe
    /// — a command that checks the declared type, which no write can
    /// precede but writes that are such commands on the same key (a loop
    /// of them) — or comes after a safe access that runs unconditionally.
    /// A tail of one type needs none when the body hands it whole to a
    /// command that checks it first (`tail_checked_by_body`).
    pub(crate) fn type_checked(&self, keys: &[Key]) -> Vec<bool> {
        (keys.iter().enumerate())
            .map(|(i, key)| {
                if key.types.iter().all(|t| *t == KeyType::Any) {
                    false
                } else if key.variadic {
                    !matches!(key.types.as_slice(), [t] if self.tail_checked_by_body(i + 1, *t))
                } else {
                    !verified(&self.accesses(i + 1, key.types[0]))
                }
            })
            .collect()
    }
}
