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
//! -- INCLUDE <name>                  an include whose functions its functions call
//! local function <name>(<param>, ...)
//!   ...
//! end
//! ```
//!
//! Its lists are checked against its functions both ways, as a script's
//! are (what a nested include calls and raises counts as called and raised
//! by it); what a function needs of `KEYS` and `ARGV` it takes as
//! parameters. The checker records, for each function, the commands it
//! calls (its own, and those of the nested functions it calls, where it
//! calls them) and which parameter each one's first argument is, so that a
//! script's call of the function is analysed as the calls it makes, there
//! and in that order.

use crate::commands::Command;
use crate::lua::{BlockKind, Tok, Token};
use crate::{
    Body, Header, HeaderError, Lists, body_below, error_reply_spans, find_include, is_ident,
    summary_of,
};

/// A parsed include.
#[derive(Debug, Clone)]
pub struct Include {
    /// `<name>` of `lua/includes/<name>.lua`: what `-- INCLUDE` names.
    pub name: String,
    /// Its file (`includes/<name>.lua`), summary, lists and text; its
    /// `INCLUDE` names are includes whose functions its own call (inlined
    /// before it).
    pub header: Header,
    /// The functions it defines, in file order.
    pub functions: Vec<Function>,
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
        let header = &self.header;
        let body = header.source[header.body_offset..].trim_start_matches('\n');
        let mut out = format!(
            "-- included from lua/{} (crates/codegen: INCLUDE {})\n",
            header.file, self.name
        );
        out.push_str(body);
        if !body.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("-- end of lua/{}\n", header.file));
        out
    }

    /// The function named `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// Parses one include that includes none; `file` is its path relative to
/// `lua/` (`includes/<name>.lua`).
pub fn parse_include(file: &str, source: &str) -> Result<Include, HeaderError> {
    parse_include_with(file, source, &[])
}

/// Parses one include; `known` are the includes its own `-- INCLUDE` lines
/// may name (parsed before it).
pub fn parse_include_with(
    file: &str,
    source: &str,
    known: &[Include],
) -> Result<Include, HeaderError> {
    let err = |line: usize, message: String| HeaderError::in_lua(file, line, message);
    let name = file
        .strip_prefix("includes/")
        .and_then(|f| f.strip_suffix(".lua"))
        .filter(|n| !n.contains('/'))
        .ok_or_else(|| err(0, "an include lives at lua/includes/<name>.lua".into()))?;
    if !is_ident(name) {
        return Err(err(0, "an include's name must be snake_case".into()));
    }
    let lines: Vec<&str> = source.lines().collect();
    let summary = summary_of(lines.first().copied()).ok_or_else(|| {
        err(
            1,
            "an include's first line is `--- <summary>` (no shebang: it is no script)".into(),
        )
    })?;
    let mut lists = Lists::default();
    let mut nested: Vec<(&Include, usize)> = Vec::new();
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
        match word {
            "WRITES" | "READS" | "ERRORS" => {
                lists.read(word, rest, lineno).map_err(|m| err(lineno, m))?;
            }
            "INCLUDE" => {
                let n = rest.trim();
                if nested.iter().any(|(i, _)| i.name == n) {
                    return Err(err(lineno, format!("include `{n}` is listed twice")));
                }
                let inc = find_include(known, n).map_err(|m| err(lineno, m))?;
                nested.push((inc, lineno));
            }
            other => {
                return Err(err(
                    lineno,
                    format!(
                        "unknown header line `{other}` in an include (WRITES | READS | ERRORS | INCLUDE)"
                    ),
                ));
            }
        }
    }
    let Lists {
        writes: (writes, writes_line),
        reads: (reads, reads_line),
        errors: (errors, errors_line),
    } = lists;

    let (body_offset, toks, structure) =
        body_below(source, &lines, header_end).map_err(|(l, m)| err(l, m))?;
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
    let only_functions = "an include holds only `local function <name>(...) ... end` definitions";
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
            return Err(err(t.line, only_functions.into()));
        };
        if !t.is_name("local") || !f.is_name("function") || !is_ident(fname) {
            return Err(err(t.line, only_functions.into()));
        }
        let block = structure.inner[i + 1].expect("`function` opens a block");
        if functions.iter().any(|(_, _, g)| &g.name == fname) {
            return Err(err(t.line, format!("function `{fname}` is defined twice")));
        }
        if let Some((other, _)) = nested.iter().find(|(n, _)| n.function(fname).is_some()) {
            return Err(err(
                t.line,
                format!(
                    "function `{fname}` is also defined by lua/{}",
                    other.header.file
                ),
            ));
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
    // The parameter of function `fi` that the tokens `from..to` are exactly.
    let param_at = |fi: usize, from: usize, to: usize| match &toks[from..to] {
        [
            Token {
                tok: Tok::Name(n), ..
            },
        ] => functions[fi].2.params.iter().position(|p| p == n),
        _ => None,
    };

    // What each function calls: its own commands, and at each call of a
    // function of a nested include, the commands that one makes (its first
    // argument this function's parameter when the call passes one).
    struct Event {
        at: usize,
        function: usize,
        call: FnCall,
    }
    let mut events: Vec<Event> = Vec::new();
    // Tokens that are a whole argument of a call of a nested function, and
    // whether that function lets the parameter escape.
    let mut passed: Vec<(usize, bool)> = Vec::new();
    let mut badargs: Vec<(usize, Detail, usize)> = Vec::new();
    let mut used = vec![false; nested.len()];
    for c in &body.calls {
        let fi = function_of(c.at);
        let literal_first = toks.get(c.at + 5).is_some_and(|t| t.is_sym(","))
            && toks
                .get(c.at + 7)
                .is_some_and(|t| t.is_sym(",") || t.is_sym(")"));
        events.push(Event {
            at: c.at,
            function: fi,
            call: FnCall {
                command: c.command,
                first: literal_first
                    .then(|| param_at(fi, c.at + 6, c.at + 7))
                    .flatten(),
                line: c.line,
                after_own_write: false,
                unconditional: true,
            },
        });
    }
    let mut called = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let Tok::Name(n) = &t.tok else { continue };
        let field = i > 0 && (toks[i - 1].is_sym(".") || toks[i - 1].is_sym(":"));
        let definition = i > 0 && toks[i - 1].is_name("function");
        if field || definition {
            continue;
        }
        if functions.iter().any(|(_, _, f)| &f.name == n)
            && toks.get(i + 1).is_some_and(|t| t.is_sym("("))
        {
            return Err(err(
                t.line,
                format!("`{n}` is called inside the include: its functions call none of its own"),
            ));
        }
        let found = nested
            .iter()
            .enumerate()
            .find_map(|(k, (inc, _))| inc.function(n).map(|g| (k, g)));
        let Some((k, g)) = found else {
            if toks.get(i + 1).is_some_and(|t| t.is_sym("(")) {
                called.push((n.clone(), t.line));
            }
            continue;
        };
        let args = toks
            .get(i + 1)
            .filter(|t| t.is_sym("("))
            .and_then(|_| crate::call_args(&toks, i + 1));
        let Some((args, _)) = args else {
            return Err(err(
                t.line,
                format!(
                    "`{n}` (lua/{}) is only ever called, by name: `{n}(...)`",
                    nested[k].0.header.file
                ),
            ));
        };
        if args.len() > g.params.len() {
            return Err(err(
                t.line,
                format!(
                    "`{n}` takes {} arguments, not {}",
                    g.params.len(),
                    args.len()
                ),
            ));
        }
        used[k] = true;
        let fi = function_of(i);
        let param = |q: usize| args.get(q).and_then(|&(a, b)| param_at(fi, a, b));
        for fc in &g.calls {
            events.push(Event {
                at: i,
                function: fi,
                call: FnCall {
                    first: fc.first.and_then(param),
                    line: t.line,
                    ..fc.clone()
                },
            });
        }
        for (q, &(a, b)) in args.iter().enumerate() {
            if b == a + 1 {
                passed.push((a, g.escapes.get(q).copied().unwrap_or(true)));
            }
        }
        for (detail, _) in &g.badarg {
            let detail = match detail {
                Detail::Name(w) => Detail::Name(w.clone()),
                Detail::Param(q) => match args.get(*q).map(|&(a, b)| &toks[a..b]) {
                    Some(
                        [
                            Token {
                                tok: Tok::Str(s), ..
                            },
                        ],
                    ) => Detail::Name(s.split(' ').next().unwrap_or_default().to_string()),
                    _ => param(*q).map(Detail::Param).ok_or_else(|| {
                        err(
                            t.line,
                            format!(
                                "`{n}` raises BADARG with its `{}`: pass a string literal or a parameter",
                                g.params[*q]
                            ),
                        )
                    })?,
                },
            };
            badargs.push((fi, detail, t.line));
        }
    }
    if let Some(k) = used.iter().position(|u| !u) {
        return Err(err(
            nested[k].1,
            format!(
                "include `{}` is listed but none of its functions is called",
                nested[k].0.name
            ),
        ));
    }
    events.sort_by_key(|e| e.at);
    let mut command_lines: Vec<(&'static Command, usize)> = Vec::new();
    for e in &events {
        let (block, _, _) = &functions[e.function];
        let after_own_write = e.call.after_own_write
            || events.iter().any(|w| {
                w.call.command.write
                    && w.function == e.function
                    && structure.may_follow_within(w.at, e.at)
            });
        let returns_before = toks[structure.blocks[*block].start..e.at]
            .iter()
            .any(|t| t.is_name("return"));
        let unconditional = e.call.unconditional
            && !returns_before
            && crate::unconditional_in(&toks, &structure, e.at, Some(*block));
        functions[e.function].2.calls.push(FnCall {
            after_own_write,
            unconditional,
            ..e.call.clone()
        });
        if !command_lines
            .iter()
            .any(|(x, _)| x.name == e.call.command.name)
        {
            command_lines.push((e.call.command, e.call.line));
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

    // Parameters: a use other than a command's first argument, an argument
    // a nested function does not let escape, or inside an error reply
    // escapes the checker.
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
        let inert = in_reply[i]
            || firsts.contains(&i)
            || passed.iter().any(|&(at, escapes)| at == i && !escapes);
        if i > *params_end && !inert {
            f.escapes[p] = true;
        }
    }

    // Error codes (its own and its nested includes'), and what each BADARG
    // names.
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
    for (fi, detail, line) in badargs {
        functions[fi].2.badarg.push((detail, line));
    }
    for (inc, line) in &nested {
        for (code, _) in &inc.error_lines {
            if !errors.contains(code) {
                return Err(err(
                    *line,
                    format!(
                        "error code `{code}` (raised by include `{}`) is not listed in `-- ERRORS`",
                        inc.name
                    ),
                ));
            }
            if !error_lines.iter().any(|(c, _)| c == code) {
                error_lines.push((code.clone(), *line));
            }
        }
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

    let mut writes = writes;
    let mut reads = reads;
    writes.sort();
    reads.sort();
    Ok(Include {
        name: name.to_string(),
        header: Header {
            file: file.to_string(),
            summary,
            errors,
            writes,
            reads,
            includes: nested.iter().map(|(i, _)| i.name.clone()).collect(),
            source: source.to_string(),
            body_offset,
        },
        functions: functions.into_iter().map(|(_, _, f)| f).collect(),
        command_lines,
        error_lines,
        called,
    })
}
