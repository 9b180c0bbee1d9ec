//! What the body's commands must respect: the declared key types, the
//! order of writes that can fail on the stored value, and the cluster slot
//! of a channel.

use super::analysis::Analysis;
use super::fault::Fault;
use super::sites::{CallSite, FirstArg};
use crate::header::{Arg, Key, ScriptHeader};
use crate::types::KeyType;

/// A command whose first argument is a fixed declared key works on the
/// key's declared type.
fn check_key_type(c: &CallSite, keys: &[Key]) -> Result<(), Fault> {
    if let FirstArg::Key(n) = c.first
        && let Some(key) = keys.get(n - 1).filter(|k| !k.variadic)
        && let (Some(want), [declared]) = (c.command.checks, key.types.as_slice())
        && *declared != KeyType::Any
        && *declared != want
    {
        return Err(c.fault(format!(
            "KEYS[{n}] `{}` is declared {} but `{}` works on a {}",
            key.name,
            declared.name(),
            c.command.name,
            want.name()
        )));
    }
    Ok(())
}

/// A tagged argument names something in `KEYS[1]`'s slot; a channel command
/// publishes only on one (else, on a cluster, it fails after the writes
/// before it).
fn check_channels(calls: &[CallSite], keys: &[Key], args: &[Arg]) -> Result<(), Fault> {
    if let Some(a) = args.iter().find(|a| a.tagged)
        && keys.first().is_none_or(|k| k.variadic)
    {
        return Err(Fault::from((
            a.line,
            format!(
                "`{}` is `tagged` (carries KEYS[1]'s hash tag) but the script has no fixed KEYS[1]",
                a.name
            ),
        )));
    }
    for c in calls.iter().filter(|c| c.command.channel) {
        if let FirstArg::Arg(n) = c.first
            && let Some(a) = args.get(n - 1).filter(|a| !a.tagged && !a.variadic)
        {
            return Err(c.fault(format!(
                "`{}` publishes on ARGV[{n}] `{}`: declare it `string tagged`, a channel with KEYS[1]'s hash tag (on a cluster a script may publish only in its keys' slot)",
                c.command.name, a.name
            )));
        }
    }
    Ok(())
}

impl Analysis<'_> {
    /// Refuses commands on keys of another type, writes that can fail on
    /// the stored value after another write, and channels outside the
    /// call's slot.
    pub(crate) fn check_rules(&self, header: &ScriptHeader) -> Result<(), Fault> {
        for c in self.calls() {
            check_key_type(c, &header.keys)?;
            if c.command.value_can_fail && self.after_write(c) {
                return Err(c.fault(format!(
                    "`{}` can fail on the stored value (not an integer, an overflow) after an earlier write: make it a write no other write can precede",
                    c.command.name
                )));
            }
        }
        check_channels(self.calls(), &header.keys, &header.args)
    }
}
