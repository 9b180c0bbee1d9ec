//! What the generator knows of a script (`lua/<pattern>/<op>.lua`): its
//! place in the bundle, its header, what the generated checks test, and
//! the SHA1 of what ships.

use crate::analyse::AclCheck;
use crate::header::{Arg, Header, Idempotency, Key, ReturnType};

/// A parsed script: its place in the bundle, its header and what the
/// generated checks test.
#[derive(Debug, Clone)]
pub struct ScriptSpec {
    /// `<pattern>.<op>`
    pub name: String,
    pub pattern: String,
    pub op: String,
    /// Its file, summary, lists and text.
    pub header: Header,
    pub keys: Vec<Key>,
    pub args: Vec<Arg>,
    pub returns: ReturnType,
    pub returns_doc: String,
    pub read_only: bool,
    /// The header's `IDEMPOTENT` (`Always` for a `no-writes` script that
    /// does not say).
    pub idempotent: Idempotency,
    /// The header's reason for [`ScriptSpec::idempotent`].
    pub idempotent_doc: String,
    /// The header's `NEEDS`: the server capabilities the script's commands
    /// need (empty: every server runs it).
    pub needs: Vec<String>,
    /// For each key, whether the generated checks call `TYPE` on it (for a
    /// variadic tail: on every key of it). `false` for an `any` key and for
    /// a key whose type the body's own first command on it checks before
    /// any write can run.
    pub type_checked: Vec<bool>,
    /// For a variadic tail, for each type of its cycle, whether the
    /// generated checks call `TYPE` on the tail's keys of that place:
    /// `false` for an `any` place and for a place whose every key the body
    /// reads first, before any write, in a loop over the keys with a
    /// command that checks the type (empty without a tail).
    pub tail_type_checked: Vec<bool>,
    /// The commands the generated checks test with `redis.acl_check_cmd`:
    /// in a writing script every write command, and every other command
    /// that may run after a write.
    pub acl_checks: Vec<AclCheck>,
    /// What [`ScriptSpec::shipped`] inserts after the generated checks: the
    /// body of each include, between marker lines ([`Include::inlined`](crate::Include::inlined)).
    pub inlined: String,
    /// Lowercase hex SHA1 of [`ScriptSpec::shipped`]: the `EVALSHA` handle.
    pub sha1_hex: String,
}

impl ScriptSpec {
    /// The error codes a call may answer with as domain errors: `BADARG`
    /// (the generated checks), then the header's other `ERRORS`.
    pub fn errors(&self) -> Vec<String> {
        let listed = self.header.errors.iter().filter(|c| *c != "BADARG");
        std::iter::once("BADARG".to_string())
            .chain(listed.cloned())
            .collect()
    }

    pub(crate) fn fixed_keys(&self) -> usize {
        self.keys.iter().filter(|k| !k.variadic).count()
    }

    pub(crate) fn fixed_args(&self) -> usize {
        self.args.iter().filter(|a| !a.variadic).count()
    }

    /// The argument checks in the order both sides run them: arguments
    /// whose range names no other argument first, in header order, then the
    /// others (which refer to arguments checked already).
    pub fn check_order(&self) -> Vec<usize> {
        let (plain, refs): (Vec<usize>, Vec<usize>) =
            (0..self.args.len()).partition(|&i| self.args[i].refs().next().is_none());
        plain.into_iter().chain(refs).collect()
    }
}
