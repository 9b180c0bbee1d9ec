//! An include's body is `local function <name>(<params>) ... end`
//! definitions and nothing else: reading them.

use super::structure::{BlockKind, Structure};
use super::tokens::{LineError, Tok, Token};
use crate::header::is_ident;
use crate::include::{Function, Include};

/// A function an include defines, with where it stands.
pub(crate) struct Defined {
    /// Its block (from `function` to `end`).
    pub block: usize,
    /// Token index of its parameter list's `)`.
    pub params_end: usize,
    pub f: Function,
}

const ONLY_FUNCTIONS: &str =
    "an include holds only `local function <name>(...) ... end` definitions";

/// The parameters of `fname` from token `j` (after `(`), and the index of `)`.
fn params(toks: &[Token], fname: &str, mut j: usize) -> Result<(Vec<String>, usize), LineError> {
    let mut params = Vec::new();
    while let Some(p) = toks.get(j) {
        match &p.tok {
            Tok::Sym(")") => break,
            Tok::Sym(",") => {}
            Tok::Name(n) if is_ident(n) => params.push(n.clone()),
            _ => {
                return Err((
                    p.line,
                    format!("`{fname}` takes named parameters (snake_case, no `...`)"),
                ));
            }
        }
        j += 1;
    }
    Ok((params, j))
}

/// The definition starting at the top-level token `i`; `defined` are those
/// before it, `nested` the includes it includes.
fn definition(
    toks: &[Token],
    structure: &Structure,
    i: usize,
    defined: &[Defined],
    nested: &[(&Include, usize)],
) -> Result<Defined, LineError> {
    let t = &toks[i];
    let (
        Some(f),
        Some(Token {
            tok: Tok::Name(fname),
            ..
        }),
    ) = (toks.get(i + 1), toks.get(i + 2))
    else {
        return Err((t.line, ONLY_FUNCTIONS.into()));
    };
    if !t.is_name("local") || !f.is_name("function") || !is_ident(fname) {
        return Err((t.line, ONLY_FUNCTIONS.into()));
    }
    let block = structure.inner[i + 1].expect("`function` opens a block");
    if defined.iter().any(|d| &d.f.name == fname) {
        return Err((t.line, format!("function `{fname}` is defined twice")));
    }
    if let Some((other, _)) = nested.iter().find(|(n, _)| n.function(fname).is_some()) {
        return Err((
            t.line,
            format!(
                "function `{fname}` is also defined by lua/{}",
                other.header.file
            ),
        ));
    }
    if !toks.get(i + 3).is_some_and(|t| t.is_sym("(")) {
        return Err((t.line, format!("`{fname}` needs a parameter list")));
    }
    let (params, params_end) = params(toks, fname, i + 4)?;
    Ok(Defined {
        block,
        params_end,
        f: Function {
            name: fname.clone(),
            line: t.line,
            escapes: vec![false; params.len()],
            table_reads: vec![Vec::new(); params.len()],
            entries_only: vec![true; params.len()],
            params,
            calls: Vec::new(),
            badarg: Vec::new(),
        },
    })
}

/// The top level of an include's body: its function definitions; refuses
/// anything else, and a function defined inside one.
pub(crate) fn definitions(
    toks: &[Token],
    structure: &Structure,
    nested: &[(&Include, usize)],
) -> Result<Vec<Defined>, LineError> {
    let mut out: Vec<Defined> = Vec::new();
    for i in 0..toks.len() {
        if structure.inner[i].is_none() {
            let d = definition(toks, structure, i, &out, nested)?;
            out.push(d);
        }
    }
    if let Some(b) =
        (structure.blocks.iter()).find(|b| b.kind == BlockKind::Function && b.parent.is_some())
    {
        return Err((
            toks[b.start].line,
            "an included function defines no function inside it".into(),
        ));
    }
    Ok(out)
}
