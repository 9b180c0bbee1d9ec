//! Numeric `for` loops over the keys: `for i = S, #KEYS[, P] do ...
//! KEYS[i] ... end`, with a literal start and step and a loop variable the
//! loop never assigns. They tell which keys a computed `KEYS[i]` may be
//! (from `KEYS[S]` on, every `P`th), and which keys of a variadic tail a
//! loop reaches, every one of them.

use super::structure::{BlockKind, Structure};
use super::tokens::{Tok, Token};

/// A numeric `for` loop over the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeysLoop {
    /// Its block in the [`Structure`].
    pub block: usize,
    /// The literal start `S`.
    pub start: usize,
    /// The literal step `P` (1 when there is none).
    pub step: usize,
    /// The bound is `#KEYS`: the loop reaches every key from `S` on, every
    /// `P`th, unless it leaves early.
    pub to_end: bool,
}

/// The literal number at token `i`, a positive integer.
fn positive(toks: &[Token], i: usize) -> Option<usize> {
    match toks.get(i).map(|t| &t.tok) {
        Some(Tok::Num(n)) => n.parse().ok().filter(|&n| n > 0),
        _ => None,
    }
}

/// The header `for v = S, BOUND[, P] do` of the loop block `b` (its `for`
/// token first): the variable's name, `S`, `P` and whether `BOUND` is
/// `#KEYS`; `None` for another loop.
fn header(toks: &[Token], s: &Structure, b: usize) -> Option<(String, usize, usize, bool)> {
    let at = s.blocks[b].start;
    if !toks[at].is_name("for") || !toks.get(at + 2)?.is_sym("=") || !toks.get(at + 4)?.is_sym(",")
    {
        return None;
    }
    let Tok::Name(var) = &toks.get(at + 1)?.tok else {
        return None;
    };
    let start = positive(toks, at + 3)?;
    let to_end = toks.get(at + 5)?.is_sym("#")
        && toks.get(at + 6)?.is_name("KEYS")
        && toks
            .get(at + 7)
            .is_some_and(|t| t.is_sym(",") || t.is_name("do"));
    // The bound ends at the first `,` or `do` at the header's own depth.
    let mut depth = 0usize;
    let mut j = at + 5;
    loop {
        let t = toks.get(j)?;
        if t.is_sym("(") || t.is_sym("[") || t.is_sym("{") {
            depth += 1;
        } else if t.is_sym(")") || t.is_sym("]") || t.is_sym("}") {
            depth = depth.checked_sub(1)?;
        } else if depth == 0 && (t.is_sym(",") || t.is_name("do")) {
            break;
        }
        j += 1;
    }
    let step = if toks[j].is_sym(",") {
        toks.get(j + 2)?.is_name("do").then_some(())?;
        positive(toks, j + 1)?
    } else {
        1
    };
    Some((var.clone(), start, step, to_end))
}

/// Whether the loop block `b` assigns (or declares again) its variable
/// `var` anywhere after its header.
fn assigns(toks: &[Token], s: &Structure, b: usize, var: &str) -> bool {
    let blk = &s.blocks[b];
    let end = blk.end.min(toks.len());
    (blk.start + 2..end).any(|i| {
        toks[i].is_name(var)
            && (toks
                .get(i + 1)
                .is_some_and(|t| t.is_sym("=") || t.is_sym(","))
                || toks[i - 1].is_name("local")
                || toks[i - 1].is_name("for")
                || toks[i - 1].is_name("function"))
    })
}

/// The loop over the keys whose variable the `KEYS` at token `at` is
/// indexed with (`KEYS [ v ]`): the innermost enclosing loop that declares
/// `v`, when it is a [`KeysLoop`] that never assigns `v`.
pub(crate) fn keys_loop(toks: &[Token], s: &Structure, at: usize) -> Option<KeysLoop> {
    if !toks.get(at + 1)?.is_sym("[") || !toks.get(at + 3)?.is_sym("]") {
        return None;
    }
    let Tok::Name(v) = &toks.get(at + 2)?.tok else {
        return None;
    };
    let b = s.enclosing(at).find(|&b| {
        s.blocks[b].kind == BlockKind::Loop
            && toks[s.blocks[b].start].is_name("for")
            && toks
                .get(s.blocks[b].start + 1)
                .is_some_and(|t| t.is_name(v))
    })?;
    let (_, start, step, to_end) = header(toks, s, b)?;
    if assigns(toks, s, b, v) {
        return None;
    }
    Some(KeysLoop {
        block: b,
        start,
        step,
        to_end,
    })
}

/// Whether the loop block `b` may end before its last round: it holds a
/// `break`, `return` or `goto`.
pub(crate) fn may_leave_early(toks: &[Token], s: &Structure, b: usize) -> bool {
    let blk = &s.blocks[b];
    (blk.start..blk.end.min(toks.len()))
        .any(|i| toks[i].is_name("break") || toks[i].is_name("return") || toks[i].is_name("goto"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::tokens::tokenize;

    /// The loop of the first `KEYS[` in `src`.
    fn of(src: &str) -> Option<(usize, usize, bool)> {
        let toks = tokenize(src, 1).expect("tokens");
        let s = Structure::of(&toks).expect("balanced");
        let at = (toks.iter().enumerate())
            .position(|(i, t)| t.is_name("KEYS") && toks.get(i + 1).is_some_and(|t| t.is_sym("[")))
            .expect("a KEYS[");
        keys_loop(&toks, &s, at).map(|l| (l.start, l.step, l.to_end))
    }

    #[test]
    fn a_numeric_loop_over_the_keys_says_which_keys_it_reaches() {
        assert_eq!(
            of("for i = 2, #KEYS do redis.call('HLEN', KEYS[i]) end"),
            Some((2, 1, true))
        );
        assert_eq!(
            of("for i = 3, #KEYS, 2 do local x = KEYS[i] end"),
            Some((3, 2, true))
        );
        assert_eq!(
            of("for i = 2, n - 1 do local x = KEYS[i] end"),
            Some((2, 1, false))
        );
        assert_eq!(
            of("for i = 2, #KEYS do i = i + 1 local x = KEYS[i] end"),
            None
        );
        assert_eq!(of("for i = 0, #KEYS do local x = KEYS[i] end"), None);
        assert_eq!(of("for i = 2, #KEYS, s do local x = KEYS[i] end"), None);
        assert_eq!(of("for _, k in ipairs(x) do local y = KEYS[k] end"), None);
        assert_eq!(of("local i = 1\nlocal x = KEYS[i]"), None);
    }
}
