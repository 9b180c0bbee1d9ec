//! The token patterns the analyser reads: a call's arguments, a literal
//! `KEYS[n]` / `ARGV[n]`, the inside of `error_reply(...)`, a field access.

use super::tokens::{Tok, Token};

/// For each token, whether it is inside the arguments of
/// `error_reply( ... )`.
pub(crate) fn error_reply_spans(toks: &[Token]) -> Vec<bool> {
    let mut in_reply = vec![false; toks.len()];
    for i in 0..toks.len() {
        if toks[i].is_name("error_reply") && toks.get(i + 1).is_some_and(|t| t.is_sym("(")) {
            let end = closing(toks, i + 1).unwrap_or(toks.len());
            in_reply[i + 1..end].fill(true);
        }
    }
    in_reply
}

/// The index of the bracket that closes the `(`, `[` or `{` at `open`
/// (counting only brackets of its kind), `None` when none does.
pub(crate) fn closing(toks: &[Token], open: usize) -> Option<usize> {
    let (opens, closes) = match &toks[open].tok {
        Tok::Sym("(") => ("(", ")"),
        Tok::Sym("[") => ("[", "]"),
        Tok::Sym("{") => ("{", "}"),
        other => panic!("no opening bracket: {other:?}"),
    };
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(open) {
        if t.is_sym(opens) {
            depth += 1;
        } else if t.is_sym(closes) {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

/// The literal `KEYS[n]` / `ARGV[n]` spanning exactly `toks[from..to]`.
pub(crate) fn literal_entry(
    toks: &[Token],
    from: usize,
    to: usize,
) -> Option<(&'static str, usize)> {
    match &toks[from..to] {
        [
            t,
            open,
            Token {
                tok: Tok::Num(n), ..
            },
            close,
        ] if open.is_sym("[") && close.is_sym("]") => {
            let table = if t.is_name("KEYS") {
                "KEYS"
            } else if t.is_name("ARGV") {
                "ARGV"
            } else {
                return None;
            };
            Some((table, n.parse().ok()?))
        }
        _ => None,
    }
}

/// The `n` of `[n]` (a number literal) right after token `i`.
pub(crate) fn literal_index(toks: &[Token], i: usize) -> Option<usize> {
    match (toks.get(i + 1), toks.get(i + 2), toks.get(i + 3)) {
        (
            Some(open),
            Some(Token {
                tok: Tok::Num(n), ..
            }),
            Some(close),
        ) if open.is_sym("[") && close.is_sym("]") => n.parse::<usize>().ok(),
        _ => None,
    }
}

/// The arguments of the call whose `(` is at `open`: token ranges, and the
/// index of the closing `)`.
pub(crate) fn call_args(toks: &[Token], open: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    let mut args = Vec::new();
    let mut depth = 0;
    let mut start = open + 1;
    for (j, t) in toks.iter().enumerate().skip(open + 1) {
        match &t.tok {
            Tok::Sym("(" | "[" | "{") => depth += 1,
            Tok::Sym(")") if depth == 0 => {
                if j > start {
                    args.push((start, j));
                }
                return Some((args, j));
            }
            Tok::Sym(")" | "]" | "}") => depth -= 1,
            Tok::Sym(",") if depth == 0 => {
                args.push((start, j));
                start = j + 1;
            }
            _ => {}
        }
    }
    None
}

/// The sources of the `redis.call` at token `at` (`redis`; not a
/// `redis.pcall`, which answers an error instead of stopping the script)
/// when its fourth and last argument is `unpack(t, S)` (after the command,
/// the destination and one more, as `BITOP`'s): the token of `t` and `S`.
pub(crate) fn unpacked_sources(toks: &[Token], at: usize) -> Option<(usize, usize)> {
    if !toks.get(at + 2)?.is_name("call") {
        return None;
    }
    let (args, _) = call_args(toks, at + 3)?;
    let &[_, _, _, (a, b)] = args.as_slice() else {
        return None;
    };
    let sym = |k: usize, s: &str| toks[a + k].is_sym(s);
    let shape =
        b == a + 6 && toks[a].is_name("unpack") && sym(1, "(") && sym(3, ",") && sym(5, ")");
    match (&toks[a + 2].tok, &toks.get(a + 4)?.tok) {
        (Tok::Name(_), Tok::Num(n)) if shape => Some((a + 2, n.parse().ok()?)),
        _ => None,
    }
}

/// The arguments of a call of the name at `i` (`name(...)`), if it is one.
pub(crate) fn args_of_call(toks: &[Token], i: usize) -> Option<Vec<(usize, usize)>> {
    toks.get(i + 1)
        .filter(|t| t.is_sym("("))
        .and_then(|_| call_args(toks, i + 1))
        .map(|(args, _)| args)
}

/// Whether the token at `i` is a field (`a.i`, `a:i`), not a name of its own.
pub(crate) fn is_field(toks: &[Token], i: usize) -> bool {
    i > 0 && (toks[i - 1].is_sym(".") || toks[i - 1].is_sym(":"))
}

/// Whether the name at `i` is called: `name(`.
pub(crate) fn is_called(toks: &[Token], i: usize) -> bool {
    toks.get(i + 1).is_some_and(|t| t.is_sym("("))
}

/// The string literal that is exactly `toks[from..to]`.
pub(crate) fn string_literal(toks: &[Token], from: usize, to: usize) -> Option<&str> {
    match &toks[from..to] {
        [
            Token {
                tok: Tok::Str(s), ..
            },
        ] => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::tokens::tokenize;

    #[test]
    fn calls_split_into_their_arguments() {
        let toks = tokenize("f(KEYS[1], g(a, b), {1, 2}, 'x')", 1).expect("tokens");
        let args = args_of_call(&toks, 0).expect("a call");
        assert_eq!(args.len(), 4);
        assert_eq!(
            literal_entry(&toks, args[0].0, args[0].1),
            Some(("KEYS", 1))
        );
        assert_eq!(literal_entry(&toks, args[1].0, args[1].1), None);
        assert_eq!(string_literal(&toks, args[3].0, args[3].1), Some("x"));
        assert_eq!(literal_index(&toks, 2), Some(1));
        assert!(is_called(&toks, 0) && !is_field(&toks, 0));
    }

    #[test]
    fn an_error_reply_spans_its_parentheses() {
        let toks = tokenize("x(redis.error_reply('A ' .. (b)), c)", 1).expect("tokens");
        let spans = error_reply_spans(&toks);
        let inside: Vec<bool> = (toks.iter().zip(&spans))
            .filter(|(t, _)| t.is_name("b") || t.is_name("c"))
            .map(|(_, s)| *s)
            .collect();
        assert_eq!(inside, [true, false]);
    }
}
