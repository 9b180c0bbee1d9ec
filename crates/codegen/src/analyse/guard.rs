//! The conditions on `ARGV` under which a call runs: an `if` whose
//! condition compares literal `ARGV[n]` entries with string literals
//! (`if ARGV[3] ~= '0' then`, joined by `and`) decides, before the body
//! runs, whether the calls of its first arm can run at all. The generated
//! checks then probe a command only under the same condition: a call with
//! `place_ms` 0 is not refused for a command that only a queued place
//! would run. Sound because nothing in a body writes to `ARGV`
//! ([`argv_is_written`] turns the guards off otherwise).

use super::patterns::closing;
use super::structure::{BlockKind, Structure};
use super::tokens::{Tok, Token};
use crate::emit::lua_literal::lit;

/// One comparison `ARGV[n] == 'v'` (or `~=`), as Lua.
fn atom(toks: &[Token]) -> Option<String> {
    match toks {
        [
            t,
            open,
            Token {
                tok: Tok::Num(n), ..
            },
            close,
            op,
            Token {
                tok: Tok::Str(s), ..
            },
        ] if t.is_name("ARGV")
            && open.is_sym("[")
            && close.is_sym("]")
            && (op.is_sym("==") || op.is_sym("~=")) =>
        {
            let n: usize = n.parse().ok()?;
            let op = if op.is_sym("==") { "==" } else { "~=" };
            Some(format!("ARGV[{n}] {op} {}", lit(s)))
        }
        _ => None,
    }
}

/// The comparisons of a condition made only of them (joined by `and`),
/// else `None`.
fn atoms(toks: &[Token]) -> Option<Vec<String>> {
    toks.split(|t| t.is_name("and")).map(atom).collect()
}

/// Whether the body assigns to `ARGV` or an entry of it (or hands it to
/// `table.insert` / `table.remove` / `table.sort`).
pub(crate) fn argv_is_written(toks: &[Token]) -> bool {
    (0..toks.len()).any(|i| {
        let t = &toks[i];
        if t.is_name("ARGV") {
            let mut j = i + 1;
            if toks.get(j).is_some_and(|t| t.is_sym("[")) {
                let Some(close) = closing(toks, j) else {
                    return false;
                };
                j = close + 1;
            }
            return toks.get(j).is_some_and(|t| t.is_sym("="));
        }
        t.is_name("table")
            && toks
                .get(i + 2)
                .is_some_and(|m| m.is_name("insert") || m.is_name("remove") || m.is_name("sort"))
            && toks.get(i + 4).is_some_and(|a| a.is_name("ARGV"))
    })
}

/// The comparisons on `ARGV` that hold whenever the code at token `at`
/// runs: those of the first arm of each `if` around it, up to the
/// function around it (which may be called anywhere). Empty: none known.
pub(crate) fn guards_of(toks: &[Token], structure: &Structure, at: usize) -> Vec<String> {
    let mut out = Vec::new();
    for b in structure.enclosing(at) {
        let blk = &structure.blocks[b];
        match blk.kind {
            BlockKind::Function => break,
            BlockKind::Arm => {}
            _ => continue,
        }
        let Some(p) = blk.parent.map(|p| &structure.blocks[p]) else {
            continue;
        };
        let first_arm = p.kind == BlockKind::If
            && toks[p.start].is_name("if")
            && blk.start >= 1
            && toks[blk.start - 1].is_name("then");
        if !first_arm || p.start + 1 >= blk.start - 1 {
            continue;
        }
        if let Some(a) = atoms(&toks[p.start + 1..blk.start - 1]) {
            out.extend(a);
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::tokens::tokenize;

    fn guards(src: &str, call: &str) -> Vec<String> {
        let toks = tokenize(src, 1).expect("tokens");
        let s = Structure::of(&toks).expect("structure");
        let at = toks.iter().position(|t| t.is_name(call)).expect("the call");
        guards_of(&toks, &s, at)
    }

    #[test]
    fn a_first_arm_under_argv_comparisons_is_guarded() {
        let src = "if ARGV[3] ~= '0' and ARGV[4] == '1' then\n  if x then a() end\nend\n";
        assert_eq!(guards(src, "a"), ["ARGV[3] ~= '0'", "ARGV[4] == '1'"]);
        // Another arm, a condition that is not only comparisons, a function.
        assert!(guards("if ARGV[1] == '1' then x() else a() end", "a").is_empty());
        assert!(guards("if ARGV[1] == '1' then x() elseif y then a() end", "a").is_empty());
        assert!(guards("if ARGV[1] == '1' or z then a() end", "a").is_empty());
        assert!(guards("if ARGV[1] == '1' then local function f() a() end end", "a").is_empty());
    }

    #[test]
    fn writing_argv_is_seen() {
        let w = |src: &str| argv_is_written(&tokenize(src, 1).expect("tokens"));
        assert!(w("ARGV[1] = 'x'"));
        assert!(w("ARGV[i + 1] = 'x'"));
        assert!(w("table.insert(ARGV, 'x')"));
        assert!(!w("if ARGV[1] == 'x' then end local a = ARGV[2]"));
    }
}
