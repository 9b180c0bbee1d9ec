//! Which keys the generated checks call `TYPE` on: every key but an `any`
//! key, a fixed key whose type the body's own first command on it
//! checks before any write can run, and a variadic tail that the body
//! hands whole, as the sources, to a command that checks every source's
//! type before it writes (`BITOP`), before any write can run — itself, or
//! through an included function that it passes `KEYS` to.

use super::analysis::{Access, Analysis};
use super::keys_loop::{KeysLoop, keys_loop, may_leave_early};
use super::patterns::unpacked_sources;
use super::sites::{CallSite, FirstArg};
use super::statement::{unconditional, unconditional_in};
use super::structure::BlockKind;
use crate::header::Key;
use crate::types::KeyType;

/// Commands that check the type of every source key (every key argument
/// after the destination, which is their third argument) before they
/// write, and answer `WRONGTYPE` when one holds another type.
const SOURCES_CHECKED: &[(&str, KeyType)] = &[("BITOP", KeyType::String)];

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
    /// start)` as the last argument (the sources, from the fourth:
    /// [`unpacked_sources`]) of a command that checks every source's type
    /// before it writes, a `redis.call` of the body (not a `pcall`, which
    /// answers the error and lets the script go on) that runs whenever the
    /// body gets that far and that no write can precede; then every key of
    /// the tail reaches that check.
    ///
    /// The same command in an included function counts the same: the only
    /// use of the tail is `KEYS` passed whole to the function, which reads
    /// that parameter only at literal entries before `start` and as the
    /// command's sources `unpack(p, start)`, the command at the function's
    /// top level and the call of the function at the body's, no write
    /// before it (the body's or the function's own). A refusal the
    /// function returns before the command, like one the body returns
    /// before its own, leaves the tail untouched: nothing else reads it.
    fn tail_checked_by_body(&self, start: usize, t: KeyType) -> bool {
        let toks = &self.code().toks;
        let mut uses = (self.sites().keys.iter())
            .filter(|u| !u.length && !u.in_error_reply && u.index.is_none_or(|n| n >= start));
        let (Some(u), None) = (uses.next(), uses.next()) else {
            return false;
        };
        let at = u.at;
        let structure = &self.code().structure;
        self.calls().iter().any(|c| {
            let sources = match c.via {
                None => unpacked_sources(toks, c.at),
                // Through an included function that `KEYS` is passed to.
                Some(_) => c.sources,
            };
            sources == Some((at, start))
                && SOURCES_CHECKED.contains(&(c.command.name, t))
                && !self.after_write(c)
                && unconditional(toks, structure, c.at)
        })
    }

    /// Whether the body may return, other than with an error reply, before
    /// token `at`: a `return` of its own (not of a function it defines)
    /// earlier in the text that does not return `redis.error_reply(...)`.
    fn may_return_before(&self, at: usize) -> bool {
        let code = self.code();
        let toks = &code.toks;
        (0..at).any(|i| {
            toks[i].is_name("return")
                && !(code.structure.enclosing(i))
                    .any(|b| code.structure.blocks[b].kind == BlockKind::Function)
                && !(toks.get(i + 1).is_some_and(|t| t.is_name("redis"))
                    && toks.get(i + 2).is_some_and(|t| t.is_sym("."))
                    && toks.get(i + 3).is_some_and(|t| t.is_name("error_reply")))
        })
    }

    /// The loop over the keys that `c` reads every key of, first: `c` is a
    /// `redis.call` of the body (not a `pcall`, which answers errors) on
    /// `KEYS[i]`, `i` the variable of a [`KeysLoop`] to `#KEYS` at the top
    /// of the body, that nothing can leave early, `c` running whenever the
    /// loop's round does (a statement of the loop's own, or the condition
    /// of an `if` of the loop's own: `if redis.call(...) == 1 then`), no
    /// write able to run before it and no return but an error's before
    /// the loop.
    fn loop_read(&self, c: &CallSite) -> Option<KeysLoop> {
        let code = self.code();
        let (toks, s) = (&code.toks, &code.structure);
        if c.via.is_some() || c.first != FirstArg::Other || !toks[c.at + 2].is_name("call") {
            return None;
        }
        let arg_ends = toks.get(c.at + 5).is_some_and(|t| t.is_sym(","))
            && toks
                .get(c.at + 10)
                .is_some_and(|t| t.is_sym(",") || t.is_sym(")"));
        let l =
            keys_loop(toks, s, c.at + 6).filter(|_| arg_ends && toks[c.at + 6].is_name("KEYS"))?;
        let top = s.blocks[l.block].parent.is_none();
        let ok = l.to_end
            && top
            && s.at_top_of(c.at, Some(l.block))
            && unconditional_in(toks, s, c.at, Some(l.block))
            && !may_leave_early(toks, s, l.block)
            && !self.after_write(c)
            && !self.may_return_before(s.blocks[l.block].start);
        ok.then_some(l)
    }

    /// For each type of the cycle `types` of a tail from `KEYS[start]`,
    /// whether a loop read ([`Analysis::loop_read`]) checks it on every key
    /// of that place: a loop from the place's first key, stepping by the
    /// cycle's length, with a command that checks that type.
    fn tail_read_by_loops(&self, start: usize, types: &[KeyType]) -> Vec<bool> {
        (types.iter().enumerate())
            .map(|(j, t)| {
                self.calls().iter().any(|c| {
                    c.command.checks == Some(*t)
                        && self
                            .loop_read(c)
                            .is_some_and(|l| l.start == start + j && l.step == types.len())
                })
            })
            .collect()
    }

    /// For each of `keys`, whether the generated checks call `TYPE` on it
    /// (on any key of a variadic tail), and for the tail's cycle, on which
    /// of its places. A fixed key needs none when every access of it
    /// (other than reads that accept any type) either is safe — a command
    /// that checks the declared type, which no write can precede but
    /// writes that are such commands on the same key (a loop of them) — or
    /// comes after a safe access that runs unconditionally. A tail of one
    /// type needs none when the body hands it whole to a command that
    /// checks it first (`tail_checked_by_body`); a place of the tail needs
    /// none when it is `any` or a loop reads it all first
    /// (`tail_read_by_loops`).
    pub(crate) fn type_checked(&self, keys: &[Key]) -> (Vec<bool>, Vec<bool>) {
        let mut tail = Vec::new();
        let each = (keys.iter().enumerate())
            .map(|(i, key)| {
                if key.types.iter().all(|t| *t == KeyType::Any) {
                    false
                } else if key.variadic {
                    if matches!(key.types.as_slice(), [t] if self.tail_checked_by_body(i + 1, *t)) {
                        tail = vec![false; key.types.len()];
                        return false;
                    }
                    let read = self.tail_read_by_loops(i + 1, &key.types);
                    tail = (key.types.iter().zip(read))
                        .map(|(t, r)| *t != KeyType::Any && !r)
                        .collect();
                    tail.iter().any(|c| *c)
                } else {
                    !verified(&self.accesses(i + 1, key.types[0]))
                }
            })
            .collect();
        (each, tail)
    }
}
