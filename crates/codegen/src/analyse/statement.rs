//! Whether a call is the first thing its statement evaluates, in a
//! statement that runs whenever its block gets that far (so a check it
//! makes covers what follows).

use super::structure::Structure;
use super::tokens::{Tok, Token};

/// Whether the call at token `at` is the first thing its statement
/// evaluates, in a statement that runs whenever the body gets that far.
pub(crate) fn unconditional(toks: &[Token], structure: &Structure, at: usize) -> bool {
    unconditional_in(toks, structure, at, None)
}

/// [`unconditional`] within the block `top` (`None`: the body; an
/// included function's block: whenever the function runs that far).
pub(crate) fn unconditional_in(
    toks: &[Token],
    structure: &Structure,
    at: usize,
    top: Option<usize>,
) -> bool {
    if !structure.at_top_of(at, top) {
        return false;
    }
    let prev = |k: usize| at.checked_sub(k).map(|i| &toks[i]);
    // `tonumber(redis.call(...))`: the argument is evaluated first, so the
    // call runs whenever a statement starting with `tonumber` does.
    if prev(1).is_some_and(|t| t.is_sym("(")) && prev(2).is_some_and(|t| t.is_name("tonumber")) {
        return unconditional_in(toks, structure, at - 2, top);
    }
    match prev(1) {
        None => true,
        // `if redis.call(...)`, `if not redis.call(...)`, `return redis.call(...)`
        Some(t) if t.is_name("if") || t.is_name("return") => true,
        Some(t) if t.is_name("not") => prev(2).is_some_and(|t| t.is_name("if")),
        // `local a, b = redis.call(...)`
        Some(t) if t.is_sym("=") => {
            let mut k = 2;
            loop {
                match prev(k) {
                    Some(t) if t.is_name("local") => return true,
                    Some(Token {
                        tok: Tok::Name(n), ..
                    }) if !is_keyword(n) => k += 1,
                    Some(t) if t.is_sym(",") => k += 1,
                    _ => return false,
                }
            }
        }
        // A bare call after a complete statement, or first in a loop's
        // body (`for ... do redis.call(...)`: at the top of `top` only
        // when `top` is that loop, see `at_top_of`).
        Some(t) => match &t.tok {
            Tok::Name(n) => n == "end" || n == "do" || !is_keyword(n),
            Tok::Str(_) | Tok::Num(_) => true,
            Tok::Sym(s) => matches!(*s, ")" | "]" | "}" | ";"),
        },
    }
}

fn is_keyword(n: &str) -> bool {
    matches!(
        n,
        "and"
            | "break"
            | "do"
            | "else"
            | "elseif"
            | "end"
            | "false"
            | "for"
            | "function"
            | "if"
            | "in"
            | "local"
            | "nil"
            | "not"
            | "or"
            | "repeat"
            | "return"
            | "then"
            | "true"
            | "until"
            | "while"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::tokens::tokenize;

    /// Whether the first `redis` of `src` is unconditional.
    fn first_call(src: &str) -> bool {
        let toks = tokenize(src, 1).expect("tokens");
        let s = Structure::of(&toks).expect("balanced");
        let at = toks
            .iter()
            .position(|t| t.is_name("redis"))
            .expect("a call");
        unconditional(&toks, &s, at)
    }

    #[test]
    fn a_call_that_starts_its_statement_runs_whenever_the_body_gets_there() {
        assert!(first_call("redis.call('GET', KEYS[1])"));
        assert!(first_call("local a, b = redis.call('GET', KEYS[1])"));
        assert!(first_call("if not redis.call('EXISTS', KEYS[1]) then end"));
        assert!(first_call("x = 1\nredis.call('GET', KEYS[1])"));
        assert!(!first_call("local m = c and redis.call('GET', KEYS[1])"));
        assert!(first_call("local v = tonumber(redis.call('GET', KEYS[1]))"));
        assert!(!first_call(
            "local v = c and tonumber(redis.call('GET', KEYS[1]))"
        ));
        assert!(!first_call(
            "local v = m.tonumber(redis.call('GET', KEYS[1]))"
        ));
        assert!(!first_call("if c then redis.call('GET', KEYS[1]) end"));
        assert!(!first_call(
            "for i = 1, 2 do redis.call('GET', KEYS[1]) end"
        ));
        assert!(!first_call("do redis.call('GET', KEYS[1]) end"));
    }
}
