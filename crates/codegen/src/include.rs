//! Shared pieces of Lua: `lua/includes/<name>.lua`, inlined at build time
//! into every script whose header says `-- INCLUDE <name>` (see the grammar
//! in the crate's documentation).
//!
//! An include is a header and `local function` definitions, nothing else:
//!
//! ```text
//! --- <summary>                      one line, required, the first
//! -- WRITES <CMD> [<CMD> ...]        the write commands its functions call
//! -- READS <CMD> [<CMD> ...]         the other commands its functions call
//! -- ERRORS <CODE> [<CODE> ...]      the error codes they raise with redis.error_reply
//! local function <name>(<param>, ...)
//!   ...
//! end
//! ```
//!
//! Its lists are checked against its functions both ways, as a script's
//! are; what a function needs of `KEYS` and `ARGV` it takes as parameters.
//! The checker records, for each function, the commands it calls and
//! which parameter each one's first argument is, so that a script's call of
//! the function is analysed as the calls it makes, there and in that order.

use crate::commands::Command;
use crate::lua::{self, BlockKind, Structure, Tok, Token};
use crate::{Body, HeaderError, command_list, error_reply_spans, is_ident, upper_words};

/// A parsed include.
#[derive(Debug, Clone)]
pub struct Include {
    /// `<name>` of `lua/includes/<name>.lua`: what `-- INCLUDE` names.
    pub name: String,
    /// Path relative to `lua/`: `includes/<name>.lua`.
    pub file: String,
    pub summary: String,
    /// The header's `WRITES`, sorted.
    pub writes: Vec<String>,
    /// The header's `READS`, sorted.
    pub reads: Vec<String>,
    /// The header's `ERRORS`, as listed.
    pub errors: Vec<String>,
    /// The functions it defines, in file order.
    pub functions: Vec<Function>,
    /// The file's text.
    pub source: String,
    /// Byte offset of the body (the first line after the header) in `source`.
    pub body_offset: usize,
    /// Each command it calls, with the line of its first call.
    pub(crate) command_lines: Vec<(&'static Command, usize)>,
    /// Each error code it raises, with the line where it is first raised.
    pub(crate) error_lines: Vec<(String, usize)>,
    /// The names it calls as functions (`name(`), with their lines.
    pub(crate) called: Vec<(String, usize)>,
}

/// One `local function` of an include.
#[derive(Debug, Clone)]
pub struct Function {
    pub name: String,
    /// Line of `local function` in the include.
    pub line: usize,
    pub params: Vec<String>,
    /// For each parameter: whether the function uses it otherwise than as
    /// the first argument of a command or inside `redis.error_reply(...)`
    /// (a key passed there may be read in ways the checker does not follow).
    pub(crate) escapes: Vec<bool>,
    /// The commands it calls, in text order.
    pub(crate) calls: Vec<FnCall>,
    /// The detail of each `BADARG` it raises: a name, or a parameter the
    /// caller passes the name in.
    pub(crate) badarg: Vec<(Detail, usize)>,
}

/// A command an included function calls.
#[derive(Debug, Clone)]
pub(crate) struct FnCall {
    pub command: &'static Command,
    /// The parameter that is the command's first argument, if one is.
    pub first: Option<usize>,
    /// Line in the include.
    pub line: usize,
    /// Whether a write of the same function may run before it.
    pub after_own_write: bool,
    /// Whether it runs whenever the function does (at the function's top
    /// level, before any `return`).
    pub unconditional: bool,
}

/// What follows `BADARG ` in an include's error reply.
#[derive(Debug, Clone)]
pub(crate) enum Detail {
    /// A literal name: a key or argument every including script declares.
    Name(String),
    /// `'BADARG ' .. <param>`: the caller passes the name.
    Param(usize),
}

impl Include {
    /// The text a script that includes it ships after its generated
    /// checks: the include's body between two marker lines.
    pub fn inlined(&self) -> String {
        let body = self.source[self.body_offset..].trim_start_matches('\n');
        let mut out = format!(
            "-- included from lua/{} (crates/codegen, for the header's INCLUDE {})\n",
            self.file, self.name
        );
        out.push_str(body);
        if !body.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("-- end of lua/{}\n", self.file));
        out
    }

    /// The function named `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// Parses one include; `file` is its path relative to `lua/`
/// (`includes/<name>.lua`).
pub fn parse_include(file: &str, source: &str) -> Result<Include, HeaderError> {
    let err = |line: usize, message: String| HeaderError {
        file: format!("lua/{file}"),
        line,
        message,
        included_by: None,
    };
    let name = file
        .strip_prefix("includes/")
        .and_then(|f| f.strip_suffix(".lua"))
        .filter(|n| !n.contains('/'))
        .ok_or_else(|| err(0, "an include lives at lua/includes/<name>.lua".into()))?;
    if !is_ident(name) {
        return Err(err(0, "an include's name must be snake_case".into()));
    }
    let lines: Vec<&str> = source.lines().collect();
    let summary = match lines.first().and_then(|l| l.strip_prefix("--- ")) {
        Some(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => {
            return Err(err(
                1,
                "an include's first line is `--- <summary>` (no shebang: it is no script)".into(),
            ));
        }
    };
    let (mut writes, mut reads, mut errors) = (None, None, None);
    let mut header_end = lines.len();
    for (idx, raw) in lines.iter().enumerate().skip(1) {
        let lineno = idx + 1;
        let Some(text) = raw.strip_prefix("-- ") else {
            if raw.starts_with("--") {
                return Err(err(lineno, "header lines start with `-- `".into()));
            }
            header_end = idx;
            break;
        };
        let (word, rest) = text.split_at(text.find(' ').unwrap_or(text.len()));
        let slot = match word {
            "WRITES" => &mut writes,
            "READS" => &mut reads,
            "ERRORS" => &mut errors,
            other => {
                return Err(err(
                    lineno,
                    format!(
                        "unknown header line `{other}` in an include (WRITES | READS | ERRORS; an include includes nothing)"
                    ),
                ));
            }
        };
        if slot.is_some() {
            return Err(err(lineno, format!("{word} given twice")));
        }
        let list = if word == "ERRORS" {
            upper_words(rest, "error code")
                .map_err(|m| err(lineno, format!("ERRORS {m}")))?
                .into_iter()
                .map(String::from)
                .collect()
        } else {
            command_list(word, rest).map_err(|m| err(lineno, m))?
        };
        *slot = Some((list, lineno));
    }
    let (writes, writes_line) = writes.unwrap_or_default();
    let (reads, reads_line) = reads.unwrap_or_default();
    let (errors, errors_line) = errors.unwrap_or_default();

    let body_offset = lines[..header_end]
        .iter()
        .map(|l| l.len() + 1)
        .sum::<usize>()
        .min(source.len());
    let toks = lua::tokenize(&source[body_offset..], header_end + 1).map_err(|(l, m)| err(l, m))?;
    let structure = Structure::of(&toks).map_err(|(l, m)| err(l, m))?;
    let body = Body::scan(&toks).map_err(|(l, m)| err(l, m))?;
    if let Some(u) = body.keys.iter().chain(&body.argv).next() {
        return Err(err(
            u.line,
            "an include reads no KEYS or ARGV: the script passes what a function needs as arguments"
                .into(),
        ));
    }

    // The top level: `local function <name>(<params>) ... end`, nothing else.
    // (its block, the token index of its parameter list's `)`, the function)
    let mut functions: Vec<(usize, usize, Function)> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if structure.inner[i].is_some() {
            continue;
        }
        let (
            Some(f),
            Some(Token {
                tok: Tok::Name(fname),
                ..
            }),
        ) = (toks.get(i + 1), toks.get(i + 2))
        else {
            return Err(err(
                t.line,
                "an include holds only `local function <name>(...) ... end` definitions".into(),
            ));
        };
        if !t.is_name("local") || !f.is_name("function") || !is_ident(fname) {
            return Err(err(
                t.line,
                "an include holds only `local function <name>(...) ... end` definitions".into(),
            ));
        }
        let block = structure.inner[i + 1].expect("`function` opens a block");
        if functions.iter().any(|(_, _, g)| &g.name == fname) {
            return Err(err(t.line, format!("function `{fname}` is defined twice")));
        }
        let mut params = Vec::new();
        let mut j = i + 4;
        if !toks.get(i + 3).is_some_and(|t| t.is_sym("(")) {
            return Err(err(t.line, format!("`{fname}` needs a parameter list")));
        }
        while let Some(p) = toks.get(j) {
            match &p.tok {
                Tok::Sym(")") => break,
                Tok::Sym(",") => {}
                Tok::Name(n) if is_ident(n) => params.push(n.clone()),
                _ => {
                    return Err(err(
                        p.line,
                        format!("`{fname}` takes named parameters (snake_case, no `...`)"),
                    ));
                }
            }
            j += 1;
        }
        functions.push((
            block,
            j,
            Function {
                name: fname.clone(),
                line: t.line,
                escapes: vec![false; params.len()],
                params,
                calls: Vec::new(),
                badarg: Vec::new(),
            },
        ));
    }
    if let Some(b) = structure
        .blocks
        .iter()
        .find(|b| b.kind == BlockKind::Function && b.parent.is_some())
    {
        return Err(err(
            toks[b.start].line,
            "an included function defines no function inside it".into(),
        ));
    }
    // The function around token `i` (every token of the body is in one).
    let blocks: Vec<usize> = functions.iter().map(|(b, _, _)| *b).collect();
    let function_of = |i: usize| {
        let outer = structure.enclosing(i).last().expect("inside a function");
        blocks
            .iter()
            .position(|b| *b == outer)
            .expect("a top-level function")
    };

    // Commands: what each function calls, where, and with which parameter first.
    let mut command_lines: Vec<(&'static Command, usize)> = Vec::new();
    for c in &body.calls {
        let fi = function_of(c.at);
        let (block, _, f) = &functions[fi];
        let first = match (toks.get(c.at + 5), toks.get(c.at + 6), toks.get(c.at + 7)) {
            (
                Some(comma),
                Some(Token {
                    tok: Tok::Name(n), ..
                }),
                Some(after),
            ) if comma.is_sym(",") && (after.is_sym(",") || after.is_sym(")")) => {
                f.params.iter().position(|p| p == n)
            }
            _ => None,
        };
        let after_own_write = body.calls.iter().any(|w| {
            w.command.write && function_of(w.at) == fi && structure.may_follow_within(w.at, c.at)
        });
        let returns_before = toks[structure.blocks[*block].start..c.at]
            .iter()
            .any(|t| t.is_name("return"));
        let unconditional =
            !returns_before && crate::unconditional_in(&toks, &structure, c.at, Some(*block));
        functions[fi].2.calls.push(FnCall {
            command: c.command,
            first,
            line: c.line,
            after_own_write,
            unconditional,
        });
        if !command_lines.iter().any(|(x, _)| x.name == c.command.name) {
            command_lines.push((c.command, c.line));
        }
    }
    for (c, line) in &command_lines {
        let (list, word) = if c.write {
            (&writes, "WRITES")
        } else {
            (&reads, "READS")
        };
        if !list.iter().any(|x| x == c.name) {
            return Err(err(
                *line,
                format!("`{}` is called but not listed in `-- {word}`", c.name),
            ));
        }
    }
    for (list, word, line) in [
        (&writes, "WRITES", writes_line),
        (&reads, "READS", reads_line),
    ] {
        if let Some(name) = list
            .iter()
            .find(|n| !command_lines.iter().any(|(c, _)| c.name == n.as_str()))
        {
            return Err(err(
                line,
                format!("`{name}` is listed in `-- {word}` but never called"),
            ));
        }
    }

    // Parameters: a use other than a command's first argument or inside an
    // error reply escapes the checker.
    let in_reply = error_reply_spans(&toks);
    let firsts: Vec<usize> = body
        .calls
        .iter()
        .filter(|c| {
            toks.get(c.at + 5).is_some_and(|t| t.is_sym(","))
                && toks
                    .get(c.at + 7)
                    .is_some_and(|t| t.is_sym(",") || t.is_sym(")"))
        })
        .map(|c| c.at + 6)
        .collect();
    for (i, t) in toks.iter().enumerate() {
        let Tok::Name(n) = &t.tok else { continue };
        let field = i > 0 && (toks[i - 1].is_sym(".") || toks[i - 1].is_sym(":"));
        if field || structure.inner[i].is_none() {
            continue;
        }
        let fi = function_of(i);
        let (_, params_end, f) = &mut functions[fi];
        let Some(p) = f.params.iter().position(|x| x == n) else {
            continue;
        };
        if i > *params_end && !in_reply[i] && !firsts.contains(&i) {
            f.escapes[p] = true;
        }
    }

    // Error codes, and what each BADARG names.
    let mut error_lines: Vec<(String, usize)> = Vec::new();
    for e in &body.error_codes {
        if !errors.contains(&e.code) {
            return Err(err(
                e.line,
                format!(
                    "error code `{}` is raised but not listed in `-- ERRORS`",
                    e.code
                ),
            ));
        }
        if !error_lines.iter().any(|(c, _)| *c == e.code) {
            error_lines.push((e.code.clone(), e.line));
        }
        if e.code != "BADARG" {
            continue;
        }
        let fi = function_of(e.at);
        let f = &mut functions[fi].2;
        let detail = match e.detail.as_deref() {
            Some(word) if !word.is_empty() => Some(Detail::Name(word.to_string())),
            _ => match (toks.get(e.at + 3), toks.get(e.at + 4), toks.get(e.at + 5)) {
                (
                    Some(cat),
                    Some(Token {
                        tok: Tok::Name(n), ..
                    }),
                    Some(after),
                ) if cat.is_sym("..") && (after.is_sym("..") || after.is_sym(")")) => {
                    f.params.iter().position(|p| p == n).map(Detail::Param)
                }
                _ => None,
            },
        };
        let detail = detail.ok_or_else(|| {
            err(
                e.line,
                "a BADARG detail starts with a name, or with a parameter that the caller passes the name in: `'BADARG ' .. name`".into(),
            )
        })?;
        f.badarg.push((detail, e.line));
    }
    if let Some(code) = errors
        .iter()
        .find(|c| !error_lines.iter().any(|(e, _)| e == *c))
    {
        return Err(err(
            errors_line,
            format!("error code `{code}` is listed in `-- ERRORS` but never raised"),
        ));
    }

    // The names it calls: its own functions call none of them (each is
    // analysed where the script calls it), nor themselves.
    let mut called = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let Tok::Name(n) = &t.tok else { continue };
        let field = i > 0 && (toks[i - 1].is_sym(".") || toks[i - 1].is_sym(":"));
        let definition = i > 0 && toks[i - 1].is_name("function");
        if field || definition || !toks.get(i + 1).is_some_and(|t| t.is_sym("(")) {
            continue;
        }
        if functions.iter().any(|(_, _, f)| &f.name == n) {
            return Err(err(
                t.line,
                format!(
                    "`{n}` is called inside the include: its functions call no included function"
                ),
            ));
        }
        called.push((n.clone(), t.line));
    }

    let mut writes = writes;
    let mut reads = reads;
    writes.sort();
    reads.sort();
    Ok(Include {
        name: name.to_string(),
        file: file.to_string(),
        summary,
        writes,
        reads,
        errors,
        functions: functions.into_iter().map(|(_, _, f)| f).collect(),
        source: source.to_string(),
        body_offset,
        command_lines,
        error_lines,
        called,
    })
}
