//! A script body's calls of included functions: each stands for the
//! commands the function calls, there, their first argument the call's
//! argument for that parameter.

use super::fault::Fault;
use super::patterns::{args_of_call, is_called, is_field, literal_entry, string_literal};
use super::sites::{CallSite, FirstArg, Sites, Use, Via};
use super::tokens::{Tok, Token};
use crate::include::{Detail, Function, Include};

/// Names the body defines itself (`local function f`, `local a, b`).
fn locals(toks: &[Token]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if !t.is_name("local") {
            continue;
        }
        let mut j = i + 1;
        if toks.get(j).is_some_and(|t| t.is_name("function")) {
            j += 1;
        }
        while let Some(Token {
            tok: Tok::Name(n), ..
        }) = toks.get(j)
        {
            out.push(n);
            if !toks.get(j + 1).is_some_and(|t| t.is_sym(",")) {
                break;
            }
            j += 2;
        }
    }
    out
}

/// One call of an included function: where the body makes it.
struct Call<'a> {
    toks: &'a [Token],
    /// Token index of the function's name.
    at: usize,
    line: usize,
    /// Index of its include in the script's `INCLUDE` list.
    include: usize,
    inc: &'a Include,
    f: &'a Function,
    args: Vec<(usize, usize)>,
}

impl Call<'_> {
    /// The literal `KEYS[n]` / `ARGV[n]` passed for parameter `p`, with the
    /// token index where it starts.
    fn entry(&self, p: usize) -> Option<((&'static str, usize), usize)> {
        self.args
            .get(p)
            .and_then(|&(from, to)| literal_entry(self.toks, from, to).map(|e| (e, from)))
    }

    /// The commands the function makes, as made here.
    fn call_sites(&self) -> impl Iterator<Item = CallSite> + '_ {
        self.f.calls.iter().map(move |fc| {
            let (first, key_at) = match fc.first.and_then(|p| self.entry(p)) {
                Some((("KEYS", n), at)) => (FirstArg::Key(n), Some(at)),
                Some((("ARGV", n), _)) if fc.command.channel => (FirstArg::Arg(n), None),
                _ => (FirstArg::Other, None),
            };
            let sources = (fc.sources)
                .filter(|&(p, _)| fc.at_top && self.f.entries_only[p])
                .and_then(|(p, from)| {
                    let &(a, b) = self.args.get(p)?;
                    (b == a + 1 && self.toks[a].is_name("KEYS")).then_some((a, from))
                });
            CallSite {
                at: self.at,
                line: self.line,
                command: fc.command,
                first,
                key_at,
                via: Some(Via {
                    include: self.include,
                    line: fc.line,
                    function: self.f.name.clone(),
                }),
                after_own_write: fc.after_own_write,
                unconditional_in_fn: fc.unconditional,
                sources,
            }
        })
    }

    /// The entries the function reads (`argv[2]`) of a whole `KEYS` or
    /// `ARGV` passed to it: uses of them, where the table is passed.
    fn table_uses(&self, sites: &mut Sites) {
        for (p, reads) in self.f.table_reads.iter().enumerate() {
            let Some(&(from, _)) = self.args.get(p).filter(|(a, b)| *b == a + 1) else {
                continue;
            };
            let uses = if self.toks[from].is_name("KEYS") {
                &mut sites.keys
            } else if self.toks[from].is_name("ARGV") {
                &mut sites.argv
            } else {
                continue;
            };
            if let Some(table) = uses.iter().find(|u| u.at == from).copied() {
                uses.extend(reads.iter().map(|&n| Use {
                    index: Some(n),
                    length: false,
                    ..table
                }));
            }
        }
    }

    /// A `BADARG` the function raises with a name the caller passes: a
    /// literal name, checked like the body's own.
    fn check_badarg_names(&self, names: &[&str]) -> Result<(), Fault> {
        let name = &self.f.name;
        for (detail, line) in &self.f.badarg {
            let Detail::Param(p) = detail else { continue };
            let literal = self
                .args
                .get(*p)
                .and_then(|&(from, to)| string_literal(self.toks, from, to));
            let Some(word) = literal else {
                return Err(Fault::from((
                    self.line,
                    format!(
                        "`{name}` raises BADARG with its `{}` (lua/{}:{line}): pass the name refused as a string literal",
                        self.f.params[*p], self.inc.header.file
                    ),
                )));
            };
            if !names.contains(&word) {
                return Err(Fault::from((
                    self.line,
                    format!(
                        "a BADARG detail starts with the name of a key or argument (or `keys` / `argv`), not `{word}` (the `{}` of `{name}`)",
                        self.f.params[*p]
                    ),
                )));
            }
        }
        Ok(())
    }
}

/// The call of an included function at token `i` (named `name`, of the
/// script's include number `k`), refused when it is a definition or no call.
fn call_at<'a>(
    toks: &'a [Token],
    i: usize,
    (k, inc, f): (usize, &'a Include, &'a Function),
    locals: &[&str],
) -> Result<Call<'a>, Fault> {
    let (name, line) = (&f.name, toks[i].line);
    if locals.contains(&name.as_str()) || (i > 0 && toks[i - 1].is_name("function")) {
        return Err(Fault::from((
            line,
            format!(
                "`{name}` is defined here and by lua/{} (INCLUDE {}): rename one",
                inc.header.file, inc.name
            ),
        )));
    }
    let Some(args) = args_of_call(toks, i) else {
        return Err(Fault::from((
            line,
            format!(
                "`{name}` (lua/{}) is only ever called, by name: `{name}(...)`",
                inc.header.file
            ),
        )));
    };
    if args.len() > f.params.len() {
        return Err(Fault::from((
            line,
            format!(
                "`{name}` takes {} arguments ({}), not {}",
                f.params.len(),
                f.params.join(", "),
                args.len()
            ),
        )));
    }
    Ok(Call {
        toks,
        at: i,
        line,
        include: k,
        inc,
        f,
        args,
    })
}

/// Refuses a call of a function of an include the header does not list.
fn check_unlisted(
    toks: &[Token],
    i: usize,
    name: &str,
    locals: &[&str],
    known: &[Include],
) -> Result<(), Fault> {
    if is_called(toks, i)
        && !locals.contains(&name)
        && let Some(inc) = known.iter().find(|inc| inc.function(name).is_some())
    {
        return Err(Fault::from((
            toks[i].line,
            format!(
                "`{name}` is a function of lua/{}: add `-- INCLUDE {}` to the header",
                inc.header.file, inc.name
            ),
        )));
    }
    Ok(())
}

/// Refuses a listed include none of whose functions the body calls.
fn check_used(
    used: &[bool],
    includes: &[&Include],
    listed: &[(String, usize)],
) -> Result<(), Fault> {
    let Some(k) = used.iter().position(|u| !u) else {
        return Ok(());
    };
    let (name, line) = listed
        .iter()
        .find(|(n, _)| *n == includes[k].name)
        .expect("listed");
    let fns: Vec<String> = includes[k]
        .functions
        .iter()
        .map(|f| format!("`{}`", f.name))
        .collect();
    Err(Fault::from((
        *line,
        format!(
            "include `{name}` is listed but none of its functions ({}) is called",
            fns.join(", ")
        ),
    )))
}

impl Sites {
    /// Adds the body's calls of included functions: each is the commands
    /// the function calls, there (their first argument the call's
    /// argument for that parameter). Refuses a function of an include the
    /// header does not list, a listed include none of whose functions is
    /// called, and uses of an included function other than calls. `names`
    /// are the names a `BADARG` detail may start with.
    pub(crate) fn add_included_calls(
        &mut self,
        toks: &[Token],
        includes: &[&Include],
        listed: &[(String, usize)],
        known: &[Include],
        names: &[&str],
    ) -> Result<(), Fault> {
        let locals = locals(toks);
        let mut used = vec![false; includes.len()];
        for (i, t) in toks.iter().enumerate() {
            let Tok::Name(name) = &t.tok else { continue };
            if is_field(toks, i) {
                continue;
            }
            let found = (includes.iter().enumerate())
                .find_map(|(k, inc)| inc.function(name).map(|f| (k, *inc, f)));
            let Some(found) = found else {
                check_unlisted(toks, i, name, &locals, known)?;
                continue;
            };
            let call = call_at(toks, i, found, &locals)?;
            used[call.include] = true;
            self.calls.extend(call.call_sites());
            for (p, &escapes) in call.f.escapes.iter().enumerate() {
                if let Some((_, at)) = call.entry(p)
                    && let Some(u) = self.keys.iter_mut().find(|u| u.at == at)
                {
                    u.include_arg = Some(escapes);
                }
            }
            call.table_uses(self);
            call.check_badarg_names(names)?;
        }
        self.calls.sort_by_key(|c| c.at);
        self.keys.sort_by_key(|u| u.at);
        self.argv.sort_by_key(|u| u.at);
        check_used(&used, includes, listed)
    }
}
