//! An include's functions, analysed: the commands each calls (its own, and
//! those of the nested functions it calls, where it calls them), which
//! parameter each command's first argument is, which parameters escape
//! the analyser, and the error codes and `BADARG` details they raise.

use super::agreement::check_listed;
use super::code::Code;
use super::definitions::{Defined, definitions};
use super::patterns::{
    args_of_call, error_reply_spans, is_called, is_field, literal_index, string_literal,
    unpacked_sources,
};
use super::sites::{ErrorSite, Sites};
use super::statement::unconditional_in;
use super::tokens::{LineError, Tok, Token};
use crate::commands::Command;
use crate::header::Lists;
use crate::include::{Detail, FnCall, Function, Include};

/// What the analysis of an include finds.
pub(crate) struct IncludeFacts {
    pub functions: Vec<Function>,
    /// Each command called, with the line of its first call.
    pub command_lines: Vec<(&'static Command, usize)>,
    /// Each error code raised, with the line where it is first raised.
    pub error_lines: Vec<(String, usize)>,
    /// The other names called as functions, with their lines.
    pub called: Vec<(String, usize)>,
}

/// A command a function makes, at the token where it makes it.
struct Event {
    at: usize,
    function: usize,
    call: FnCall,
}

/// What the calls of nested functions add.
#[derive(Default)]
struct NestedCalls {
    /// Tokens that are a whole argument of a call of a nested function, and
    /// whether that function lets the parameter escape.
    passed: Vec<(usize, bool)>,
    /// (function, detail, line) of the `BADARG`s the nested functions raise.
    badargs: Vec<(usize, Detail, usize)>,
    /// The names called that are no nested function.
    called: Vec<(String, usize)>,
    /// (function, parameter, entries): a parameter passed whole to a
    /// nested function that reads those entries of it.
    tables: Vec<(usize, usize, Vec<usize>)>,
}

/// An include's body being analysed.
struct IncludeBody<'a> {
    code: &'a Code,
    sites: Sites,
    nested: &'a [(&'a Include, usize)],
    defined: Vec<Defined>,
}

/// Whether the command at `c.at` has a first argument of one token.
fn has_single_first(toks: &[Token], at: usize) -> bool {
    toks.get(at + 5).is_some_and(|t| t.is_sym(","))
        && toks
            .get(at + 7)
            .is_some_and(|t| t.is_sym(",") || t.is_sym(")"))
}

impl IncludeBody<'_> {
    fn toks(&self) -> &[Token] {
        &self.code.toks
    }

    /// The function around token `i` (every token of the body is in one).
    fn function_of(&self, i: usize) -> usize {
        let outer = self
            .code
            .structure
            .enclosing(i)
            .last()
            .expect("inside a function");
        (self.defined.iter())
            .position(|d| d.block == outer)
            .expect("a top-level function")
    }

    /// The parameter of function `fi` that the tokens `from..to` are exactly.
    fn param_at(&self, fi: usize, from: usize, to: usize) -> Option<usize> {
        match &self.toks()[from..to] {
            [
                Token {
                    tok: Tok::Name(n), ..
                },
            ] => self.defined[fi].f.params.iter().position(|p| p == n),
            _ => None,
        }
    }

    /// The functions' own commands.
    fn own_events(&self) -> Vec<Event> {
        (self.sites.calls.iter())
            .map(|c| {
                let fi = self.function_of(c.at);
                let first = has_single_first(self.toks(), c.at)
                    .then(|| self.param_at(fi, c.at + 6, c.at + 7))
                    .flatten();
                Event {
                    at: c.at,
                    function: fi,
                    call: FnCall {
                        command: c.command,
                        first,
                        line: c.line,
                        after_own_write: false,
                        unconditional: true,
                        at_top: true,
                        sources: self.sources_of(fi, c.at).map(|(s, _)| s),
                    },
                }
            })
            .collect()
    }

    /// The parameter of function `fi` whose entries from `S` are the
    /// sources of the command at `at` ([`unpacked_sources`], `S` positive),
    /// with `S` and the token of that parameter.
    fn sources_of(&self, fi: usize, at: usize) -> Option<((usize, usize), usize)> {
        let (p, from) = unpacked_sources(self.toks(), at).filter(|&(_, from)| from > 0)?;
        Some(((self.param_at(fi, p, p + 1)?, from), p))
    }

    /// The `BADARG` detail `detail` of the nested function `g`, called at
    /// token `i` of function `fi` with `args`.
    fn passed_detail(
        &self,
        detail: &Detail,
        (fi, i): (usize, usize),
        g: &Function,
        args: &[(usize, usize)],
    ) -> Result<Detail, LineError> {
        let q = match detail {
            Detail::Name(w) => return Ok(Detail::Name(w.clone())),
            Detail::Param(q) => *q,
        };
        let arg = args.get(q);
        if let Some(s) = arg.and_then(|&(a, b)| string_literal(self.toks(), a, b)) {
            return Ok(Detail::Name(
                s.split(' ').next().unwrap_or_default().to_string(),
            ));
        }
        let (line, n) = (self.toks()[i].line, &g.name);
        arg.and_then(|&(a, b)| self.param_at(fi, a, b))
            .map(Detail::Param)
            .ok_or_else(|| {
                (
                    line,
                    format!(
                        "`{n}` raises BADARG with its `{}`: pass a string literal or a parameter",
                        g.params[q]
                    ),
                )
            })
    }

    /// The call of the nested function `g` at token `i`: the commands it
    /// makes there, the arguments it is passed, the details it raises.
    fn nested_call(
        &self,
        i: usize,
        (k, g): (usize, &Function),
        events: &mut Vec<Event>,
        out: &mut NestedCalls,
    ) -> Result<(), LineError> {
        let (t, n) = (&self.toks()[i], &g.name);
        let args = args_of_call(self.toks(), i).ok_or_else(|| {
            (
                t.line,
                format!(
                    "`{n}` (lua/{}) is only ever called, by name: `{n}(...)`",
                    self.nested[k].0.header.file
                ),
            )
        })?;
        if args.len() > g.params.len() {
            return Err((
                t.line,
                format!(
                    "`{n}` takes {} arguments, not {}",
                    g.params.len(),
                    args.len()
                ),
            ));
        }
        let fi = self.function_of(i);
        let param = |q: usize| args.get(q).and_then(|&(a, b)| self.param_at(fi, a, b));
        for fc in &g.calls {
            events.push(Event {
                at: i,
                function: fi,
                call: FnCall {
                    first: fc.first.and_then(param),
                    line: t.line,
                    sources: None,
                    ..fc.clone()
                },
            });
        }
        for (q, &(a, b)) in args.iter().enumerate() {
            if b == a + 1 {
                out.passed
                    .push((a, g.escapes.get(q).copied().unwrap_or(true)));
            }
            if let Some(p) = self.param_at(fi, a, b)
                && let Some(reads) = g.table_reads.get(q).filter(|r| !r.is_empty())
            {
                out.tables.push((fi, p, reads.clone()));
            }
        }
        for (detail, _) in &g.badarg {
            let detail = self.passed_detail(detail, (fi, i), g, &args)?;
            out.badargs.push((fi, detail, t.line));
        }
        Ok(())
    }

    /// The calls of nested functions (each made as the commands that one
    /// makes); refuses a call of the include's own functions and a nested
    /// include none of whose functions is called.
    fn nested_calls(&self, events: &mut Vec<Event>) -> Result<NestedCalls, LineError> {
        let toks = self.toks();
        let mut out = NestedCalls::default();
        let mut used = vec![false; self.nested.len()];
        for (i, t) in toks.iter().enumerate() {
            let Tok::Name(n) = &t.tok else { continue };
            if is_field(toks, i) || (i > 0 && toks[i - 1].is_name("function")) {
                continue;
            }
            if self.defined.iter().any(|d| &d.f.name == n) && is_called(toks, i) {
                return Err((
                    t.line,
                    format!(
                        "`{n}` is called inside the include: its functions call none of its own"
                    ),
                ));
            }
            let found = (self.nested.iter().enumerate())
                .find_map(|(k, (inc, _))| inc.function(n).map(|g| (k, g)));
            let Some((k, g)) = found else {
                if is_called(toks, i) {
                    out.called.push((n.clone(), t.line));
                }
                continue;
            };
            self.nested_call(i, (k, g), events, &mut out)?;
            used[k] = true;
        }
        if let Some(k) = used.iter().position(|u| !u) {
            let (inc, line) = self.nested[k];
            return Err((
                line,
                format!(
                    "include `{}` is listed but none of its functions is called",
                    inc.name
                ),
            ));
        }
        Ok(out)
    }

    /// Places the events in their functions (whether a write of the same
    /// function may precede each, whether each runs whenever the function
    /// does); returns each command with the line of its first call.
    fn place(&mut self, mut events: Vec<Event>) -> Vec<(&'static Command, usize)> {
        events.sort_by_key(|e| e.at);
        let structure = &self.code.structure;
        let mut command_lines: Vec<(&'static Command, usize)> = Vec::new();
        for e in &events {
            let block = self.defined[e.function].block;
            let after_own_write = e.call.after_own_write
                || events.iter().any(|w| {
                    w.call.command.write
                        && w.function == e.function
                        && structure.may_follow_within(w.at, e.at)
                });
            let returns_before = self.code.toks[structure.blocks[block].start..e.at]
                .iter()
                .any(|t| t.is_name("return"));
            let at_top =
                e.call.at_top && unconditional_in(&self.code.toks, structure, e.at, Some(block));
            let unconditional = e.call.unconditional && !returns_before && at_top;
            self.defined[e.function].f.calls.push(FnCall {
                after_own_write,
                unconditional,
                at_top,
                ..e.call.clone()
            });
            if !command_lines
                .iter()
                .any(|(x, _)| x.name == e.call.command.name)
            {
                command_lines.push((e.call.command, e.call.line));
            }
        }
        command_lines
    }

    /// Marks the parameters that escape the analyser: used otherwise than
    /// as a command's first argument, an argument a nested function does
    /// not let escape, or inside an error reply. And those used otherwise
    /// than as `#p`, `p[n]` with a literal `n`, or the `p` of a command's
    /// sources `unpack(p, S)` ([`IncludeBody::sources_of`]): not
    /// [`Function::entries_only`].
    fn mark_escapes(&mut self, passed: &[(usize, bool)]) {
        let toks = &self.code.toks;
        let in_reply = error_reply_spans(toks);
        let firsts: Vec<usize> = (self.sites.calls.iter())
            .filter(|c| has_single_first(toks, c.at))
            .map(|c| c.at + 6)
            .collect();
        let unpacked: Vec<usize> = (self.sites.calls.iter())
            .filter_map(|c| self.sources_of(self.function_of(c.at), c.at))
            .map(|(_, at)| at)
            .collect();
        for (i, t) in toks.iter().enumerate() {
            let Tok::Name(n) = &t.tok else { continue };
            if is_field(toks, i) || self.code.structure.inner[i].is_none() {
                continue;
            }
            let fi = self.function_of(i);
            let d = &mut self.defined[fi];
            let Some(p) = d.f.params.iter().position(|x| x == n) else {
                continue;
            };
            if i <= d.params_end {
                continue;
            }
            let inert = in_reply[i]
                || firsts.contains(&i)
                || passed.iter().any(|&(at, escapes)| at == i && !escapes);
            d.f.escapes[p] |= !inert;
            let entry = toks[i - 1].is_sym("#")
                || literal_index(toks, i).is_some()
                || unpacked.contains(&i);
            d.f.entries_only[p] &= entry;
        }
    }

    /// Records the entries each parameter is read at with a literal index
    /// (`argv[2]`), by the function itself or, passed whole (`tables`), by
    /// a nested function.
    fn mark_table_reads(&mut self, tables: Vec<(usize, usize, Vec<usize>)>) {
        let toks = &self.code.toks;
        for (i, t) in toks.iter().enumerate() {
            let Tok::Name(n) = &t.tok else { continue };
            if is_field(toks, i) || self.code.structure.inner[i].is_none() {
                continue;
            }
            let Some(index) = literal_index(toks, i) else {
                continue;
            };
            let fi = self.function_of(i);
            let d = &mut self.defined[fi];
            if let Some(p) = d.f.params.iter().position(|x| x == n)
                && i > d.params_end
            {
                d.f.table_reads[p].push(index);
            }
        }
        for (fi, p, reads) in tables {
            self.defined[fi].f.table_reads[p].extend(reads);
        }
        for d in &mut self.defined {
            for reads in &mut d.f.table_reads {
                reads.sort_unstable();
                reads.dedup();
            }
        }
    }

    /// What a `BADARG` at `e` names: a literal name, or the parameter
    /// concatenated right after `'BADARG '`.
    fn badarg_detail(&self, e: &ErrorSite, fi: usize) -> Result<Detail, LineError> {
        let toks = self.toks();
        let detail = match e.detail.as_deref() {
            Some(word) if !word.is_empty() => Some(Detail::Name(word.to_string())),
            _ => match (toks.get(e.at + 3), toks.get(e.at + 4), toks.get(e.at + 5)) {
                (
                    Some(cat),
                    Some(Token {
                        tok: Tok::Name(n), ..
                    }),
                    Some(after),
                ) if cat.is_sym("..") && (after.is_sym("..") || after.is_sym(")")) => self.defined
                    [fi]
                    .f
                    .params
                    .iter()
                    .position(|p| p == n)
                    .map(Detail::Param),
                _ => None,
            },
        };
        detail.ok_or_else(|| {
            (
                e.line,
                "a BADARG detail starts with a name, or with a parameter that the caller passes the name in: `'BADARG ' .. name`".into(),
            )
        })
    }

    /// The error codes raised (the functions' own, then the nested
    /// includes'), each checked against `ERRORS` both ways; records each
    /// function's `BADARG` details (its own, then its nested calls').
    fn errors(
        &mut self,
        (errors, errors_line): &(Vec<String>, usize),
        badargs: Vec<(usize, Detail, usize)>,
    ) -> Result<Vec<(String, usize)>, LineError> {
        let mut error_lines: Vec<(String, usize)> = Vec::new();
        for e in &self.sites.error_codes {
            if !errors.contains(&e.code) {
                return Err((
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
            if e.code == "BADARG" {
                let fi = self.function_of(e.at);
                let detail = self.badarg_detail(e, fi)?;
                self.defined[fi].f.badarg.push((detail, e.line));
            }
        }
        for (fi, detail, line) in badargs {
            self.defined[fi].f.badarg.push((detail, line));
        }
        for (inc, line) in self.nested {
            for (code, _) in &inc.error_lines {
                if !errors.contains(code) {
                    return Err((
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
        let raised = |code: &str| error_lines.iter().any(|(e, _)| e == code);
        check_listed("ERRORS", errors, *errors_line, raised)?;
        Ok(error_lines)
    }
}

/// The commands called are listed in `WRITES` / `READS`, and what these
/// list is called.
fn check_command_lists(
    command_lines: &[(&'static Command, usize)],
    lists: &Lists,
) -> Result<(), LineError> {
    for (c, line) in command_lines {
        let (word, found) = lists.lists(c);
        if !found {
            return Err((
                *line,
                format!("`{}` is called but not listed in `-- {word}`", c.name),
            ));
        }
    }
    let called = |name: &str| command_lines.iter().any(|(c, _)| c.name == name);
    for (word, list, line) in lists.commands() {
        check_listed(word, list, line, called)?;
    }
    Ok(())
}

/// Analyses the body `code` of an include whose header lists `lists` and
/// includes `nested` (each with its `INCLUDE` line).
pub(crate) fn analyse_include(
    code: &Code,
    lists: &Lists,
    nested: &[(&Include, usize)],
) -> Result<IncludeFacts, LineError> {
    let sites = Sites::scan(&code.toks)?;
    if let Some(u) = sites.keys.iter().chain(&sites.argv).next() {
        return Err((
            u.line,
            "an include reads no KEYS or ARGV: the script passes what a function needs as arguments".into(),
        ));
    }
    let defined = definitions(&code.toks, &code.structure, nested)?;
    let mut body = IncludeBody {
        code,
        sites,
        nested,
        defined,
    };
    let mut events = body.own_events();
    let calls = body.nested_calls(&mut events)?;
    let command_lines = body.place(events);
    check_command_lists(&command_lines, lists)?;
    body.mark_escapes(&calls.passed);
    body.mark_table_reads(calls.tables);
    let error_lines = body.errors(&lists.errors, calls.badargs)?;
    Ok(IncludeFacts {
        functions: body.defined.into_iter().map(|d| d.f).collect(),
        command_lines,
        error_lines,
        called: calls.called,
    })
}
