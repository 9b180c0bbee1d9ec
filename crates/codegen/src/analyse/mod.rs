//! The Lua body analyser: what a script's body (and an include's
//! functions) uses, calls and raises, checked against its header, and the
//! decisions the generated checks follow from it.
//!
//! Just enough of Lua 5.1 is read for that: the tokens ([`tokens`]), the
//! block structure that tells which code may run after which
//! ([`structure`]), and the sites of the body — each use of `KEYS` and
//! `ARGV`, each `redis.call`, each `redis.error_reply` ([`sites`]). A call of
//! an included function stands for the commands the function makes, at that
//! place ([`included_calls`]; an include's own functions are read by
//! [`include_body`]).
//!
//! [`Analysis`] is the body as a type to query: its commands in order,
//! its writes, whether a write may run before a command, the accesses of
//! each key. From it come the refusals ([`agreement`]: header ↔ body;
//! [`rules`]: key types, write order, channels) and the decisions
//! ([`acl`]: which commands the generated checks probe with
//! `redis.acl_check_cmd`; [`type_checks`]: which keys get a `TYPE` check).
//! The rules themselves are listed, for a contributor, with the header
//! grammar in [`crate::header`].

mod acl;
mod agreement;
mod analysis;
mod code;
mod definitions;
mod fault;
mod guard;
mod include_body;
mod included_calls;
mod keys_loop;
mod patterns;
mod rules;
mod sites;
mod statement;
mod structure;
mod tokens;
mod type_checks;

pub use acl::AclCheck;
pub(crate) use analysis::Analysis;
pub(crate) use code::Code;
pub(crate) use fault::Fault;
pub(crate) use include_body::analyse_include;

use crate::header::ScriptHeader;
use crate::include::Include;

/// What the generated checks of a script test, as the analysis decided.
pub(crate) struct Verdicts {
    /// For each key, whether the checks call `TYPE` on it.
    pub type_checked: Vec<bool>,
    /// For each type of the variadic tail's cycle, whether the checks call
    /// `TYPE` on the tail's keys of that place (empty without a tail).
    pub tail_type_checked: Vec<bool>,
    /// The commands the checks probe with `redis.acl_check_cmd`.
    pub acl_checks: Vec<AclCheck>,
}

/// Analyses the body `code` of the script `header` with the `includes` its
/// header names (of the `known` ones): refuses what disagrees with the
/// header or breaks a rule, and decides the ACL and `TYPE` checks.
pub(crate) fn analyse_script(
    header: &ScriptHeader,
    code: &Code,
    includes: &[&Include],
    known: &[Include],
) -> Result<Verdicts, Fault> {
    let analysis = Analysis::of_script(code, header, includes, known)?;
    agreement::check_uses(header, analysis.sites()).map_err(Fault::from)?;
    agreement::check_lists(header, analysis.sites(), includes)?;
    analysis.check_rules(header)?;
    let acl_checks = analysis.acl_checks(header.read_only)?;
    let (type_checked, tail_type_checked) = analysis.type_checked(&header.keys);
    Ok(Verdicts {
        type_checked,
        tail_type_checked,
        acl_checks,
    })
}
