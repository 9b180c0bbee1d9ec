//! The analyser's knowledge of one script body, as a type to query: every
//! command it calls (its own and, at each call of an included function,
//! the function's), every use of `KEYS` and `ARGV`, every error it raises,
//! and which code may run after which.

use super::code::Code;
use super::fault::Fault;
use super::keys_loop::keys_loop;
use super::sites::{CallSite, FirstArg, Sites};
use super::statement::unconditional;
use crate::header::{ARITY_NAMES, ScriptHeader};
use crate::include::Include;
use crate::types::KeyType;

/// A script body, analysed.
pub(crate) struct Analysis<'a> {
    code: &'a Code,
    sites: Sites,
}

/// One access of a fixed key, as the `TYPE` check decision sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Access {
    /// Where: the token of its `KEYS[n]`, then its order among the
    /// commands an included function makes with that key.
    pub place: (usize, usize),
    /// A command that checks the key's declared type, which no write can
    /// precede but writes that are such commands on the same key.
    pub safe: bool,
    /// Safe, and run whenever the body gets that far.
    pub unconditional: bool,
}

impl<'a> Analysis<'a> {
    /// Reads the body `code` of the script `header`, whose `INCLUDE` lines
    /// (`header.includes`) name `includes` (of the `known` ones).
    pub(crate) fn of_script(
        code: &'a Code,
        header: &ScriptHeader,
        includes: &[&Include],
        known: &[Include],
    ) -> Result<Self, Fault> {
        let mut sites = Sites::scan(&code.toks).map_err(Fault::from)?;
        let names: Vec<&str> = (header.keys.iter().map(|k| k.name.as_str()))
            .chain(header.args.iter().map(|a| a.name.as_str()))
            .chain(ARITY_NAMES.iter().copied())
            .collect();
        sites.add_included_calls(&code.toks, includes, &header.includes, known, &names)?;
        Ok(Self { code, sites })
    }

    /// The body's tokens and block structure.
    pub(crate) fn code(&self) -> &Code {
        self.code
    }

    /// What the body uses, calls and raises.
    pub(crate) fn sites(&self) -> &Sites {
        &self.sites
    }

    /// Every command the body calls, in order (an included function's at
    /// its call, in the function's order).
    pub(crate) fn calls(&self) -> &[CallSite] {
        &self.sites.calls
    }

    /// The write commands among [`Analysis::calls`].
    pub(crate) fn writes(&self) -> impl Iterator<Item = &CallSite> {
        self.calls().iter().filter(|c| c.command.write)
    }

    /// Whether a write may run before `c`.
    pub(crate) fn after_write(&self, c: &CallSite) -> bool {
        c.after_own_write
            || self
                .writes()
                .any(|w| self.code.structure.may_follow(w.at, c.at))
    }

    /// The accesses of the fixed key `KEYS[n]` declared `declared`, by
    /// place: each literal `KEYS[n]` outside an error reply (the commands
    /// made with it, or a use the analyser does not follow), and each
    /// computed `KEYS[...]` (which may be any key, but a loop's over keys
    /// past `n`). Reads that accept any
    /// type are left out: they can neither fail nor write.
    pub(crate) fn accesses(&self, n: usize, declared: KeyType) -> Vec<Access> {
        let checks_key =
            |c: &CallSite| c.first == FirstArg::Key(n) && c.command.checks == Some(declared);
        let unfollowed = |at| Access {
            place: at,
            safe: false,
            unconditional: false,
        };
        let mut out = Vec::new();
        let literal = (self.sites.keys.iter()).filter(|u| u.index == Some(n) && !u.in_error_reply);
        for u in literal {
            let made: Vec<&CallSite> = (self.calls().iter())
                .filter(|c| c.first == FirstArg::Key(n) && c.key_at == Some(u.at))
                .collect();
            if u.include_arg == Some(true) || (made.is_empty() && u.include_arg.is_none()) {
                out.push(unfollowed((u.at, 0)));
            }
            for (order, c) in made.into_iter().enumerate() {
                let place = (u.at, order);
                if checks_key(c) {
                    let safe = !c.after_own_write
                        && self
                            .writes()
                            .all(|w| checks_key(w) || !self.code.structure.may_follow(w.at, c.at));
                    let top = safe
                        && c.unconditional_in_fn
                        && unconditional(&self.code.toks, &self.code.structure, c.at);
                    out.push(Access {
                        place,
                        safe,
                        unconditional: top,
                    });
                } else if c.command.write || c.command.checks.is_some() {
                    out.push(unfollowed(place));
                }
            }
        }
        // A computed `KEYS[i]`, `i` the variable of a loop over the keys
        // from past `n`, is never `KEYS[n]`.
        let past =
            |at| keys_loop(&self.code.toks, &self.code.structure, at).is_some_and(|l| l.start > n);
        let computed = (self.sites.keys.iter())
            .filter(|u| u.index.is_none() && !u.length && !u.in_error_reply && !past(u.at));
        out.extend(computed.map(|u| unfollowed((u.at, 0))));
        out
    }
}
