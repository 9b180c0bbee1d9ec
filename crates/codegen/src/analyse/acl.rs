//! Which commands the generated checks test with `redis.acl_check_cmd`: in
//! a writing script every write command, and every other command that may
//! run after a write (so that a denied command refuses the call before
//! anything is written, not halfway).

use super::analysis::Analysis;
use super::fault::Fault;
use super::sites::{CallSite, FirstArg};
use crate::commands::Command;

/// A command the generated checks test with `redis.acl_check_cmd`.
#[derive(Debug, Clone)]
pub struct AclCheck {
    pub command: &'static Command,
    /// The key the probe names (a Lua expression, `KEYS[2]`).
    pub key: String,
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

    /// The ACL checks of a script that is `read_only` or not (none), sorted
    /// by command.
    pub(crate) fn acl_checks(&self, read_only: bool) -> Result<Vec<AclCheck>, Fault> {
        let mut acl: Vec<AclCheck> = Vec::new();
        if read_only {
            return Ok(acl);
        }
        for c in self.calls() {
            if (c.command.write || self.after_write(c))
                && !acl.iter().any(|a| a.command.name == c.command.name)
            {
                acl.push(AclCheck {
                    command: c.command,
                    key: self.probed(c)?,
                });
            }
        }
        acl.sort_by_key(|a| a.command.name);
        Ok(acl)
    }
}
