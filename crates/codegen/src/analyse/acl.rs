//! Which commands the generated checks test with `redis.acl_check_cmd`: in
//! a writing script every write command, and every other command that may
//! run after a write (so that a denied command refuses the call before
//! anything is written, not halfway), once per distinct command and key
//! (an ACL selector may allow a command on one key and not another), not
//! per call site. A read after a write needs none when the same command on
//! the same key runs before, unconditionally, with no write before it: a
//! denial stops the body there, before any write. A probe whose every call
//! runs only under comparisons of `ARGV` entries with literals (an `if
//! ARGV[3] ~= '0' then` around it) runs under the same condition
//! ([`super::guard`]).

use super::analysis::Analysis;
use super::fault::Fault;
use super::guard::{argv_is_written, guards_of};
use super::sites::{CallSite, FirstArg};
use super::statement::unconditional;
use crate::commands::Command;

/// A command the generated checks test with `redis.acl_check_cmd`.
#[derive(Debug, Clone)]
pub struct AclCheck {
    pub command: &'static Command,
    /// The key the probe names (a Lua expression, `KEYS[2]`).
    pub key: String,
    /// The Lua condition under which the probe runs (`None`: always):
    /// the comparisons of `ARGV` that hold whenever one of its calls runs,
    /// one conjunction per call, joined by `or`.
    pub guard: Option<String>,
}

impl Analysis<'_> {
    /// The key or channel the probe of `c`'s command names: the first
    /// argument of the command's first call on a literal key or channel,
    /// else `KEYS[1]`; refused for a channel command with no literal
    /// channel.
    fn probed(&self, c: &CallSite) -> Result<String, Fault> {
        let first_site = self.calls().iter().find(|x| {
            x.command.name == c.command.name
                && matches!(x.first, FirstArg::Key(_) | FirstArg::Arg(_))
        });
        match first_site.map(|x| x.first) {
            Some(FirstArg::Key(n)) => Ok(format!("KEYS[{n}]")),
            Some(FirstArg::Arg(n)) => Ok(format!("ARGV[{n}]")),
            _ if c.command.channel => Err(c.fault(format!(
                "`{}` publishes to a channel: pass it as a literal `ARGV[n]`, so that the ACL check names it",
                c.command.name
            ))),
            _ => Ok("KEYS[1]".to_string()),
        }
    }

    /// Whether the read `c` (after a write) is implied: the same command
    /// on the same literal key or channel runs before it in the body,
    /// unconditionally, with no write before it.
    fn implied(&self, c: &CallSite) -> bool {
        let code = self.code();
        !c.command.write
            && matches!(c.first, FirstArg::Key(_) | FirstArg::Arg(_))
            && self.calls().iter().any(|e| {
                e.at < c.at
                    && e.via.is_none()
                    && e.command.name == c.command.name
                    && e.first == c.first
                    && !self.after_write(e)
                    && unconditional(&code.toks, &code.structure, e.at)
            })
    }

    /// The ACL checks of a script that is `read_only` or not (none), sorted
    /// by command and key.
    pub(crate) fn acl_checks(&self, read_only: bool) -> Result<Vec<AclCheck>, Fault> {
        let mut acl: Vec<(AclCheck, Vec<Vec<String>>)> = Vec::new();
        if read_only {
            return Ok(Vec::new());
        }
        let code = self.code();
        let guarded = !argv_is_written(&code.toks);
        for c in self.calls() {
            if !(c.command.write || self.after_write(c)) || self.implied(c) {
                continue;
            }
            let key = match c.first {
                FirstArg::Key(n) => format!("KEYS[{n}]"),
                FirstArg::Arg(n) => format!("ARGV[{n}]"),
                FirstArg::Other => self.probed(c)?,
            };
            let guard = match guarded {
                true => guards_of(&code.toks, &code.structure, c.at),
                false => Vec::new(),
            };
            match (acl.iter_mut()).find(|(a, _)| a.command.name == c.command.name && a.key == key) {
                Some((_, guards)) => guards.push(guard),
                None => acl.push((
                    AclCheck {
                        command: c.command,
                        key,
                        guard: None,
                    },
                    vec![guard],
                )),
            }
        }
        let mut acl: Vec<AclCheck> = acl
            .into_iter()
            .map(|(mut a, guards)| {
                a.guard = condition(guards);
                a
            })
            .collect();
        acl.sort_by(|a, b| (a.command.name, &a.key).cmp(&(b.command.name, &b.key)));
        Ok(acl)
    }
}

/// The Lua condition that one of the calls' `guards` (each a conjunction)
/// holds; `None` when a call has none (it may always run).
fn condition(mut guards: Vec<Vec<String>>) -> Option<String> {
    if guards.iter().any(Vec::is_empty) {
        return None;
    }
    guards.sort();
    guards.dedup();
    let one = guards.len() == 1;
    let terms: Vec<String> = guards
        .into_iter()
        .map(|g| match (one, g.len()) {
            (false, n) if n > 1 => format!("({})", g.join(" and ")),
            _ => g.join(" and "),
        })
        .collect();
    Some(terms.join(" or "))
}
