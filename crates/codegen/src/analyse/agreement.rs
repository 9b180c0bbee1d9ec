//! The header and the body agree: what is declared is used, called or
//! raised, and what is used, called or raised is declared — `KEYS` and
//! `ARGV`, error codes, commands (the body's and its includes').

use super::fault::Fault;
use super::sites::{Sites, Use};
use crate::header::{ARITY_NAMES, ScriptHeader};
use crate::include::{Detail, Include};

/// A table's declared entries: (name, variadic, line).
type Declared<'a> = Vec<(&'a str, bool, usize)>;

/// Each entry of the header's `-- {list}` (`WRITES`, `READS` or `ERRORS`:
/// `names`, at `line`) is called (raised): the first that `used` denies is
/// refused.
pub(super) fn check_listed(
    list: &str,
    names: &[String],
    line: usize,
    used: impl Fn(&str) -> bool,
) -> Result<(), (usize, String)> {
    let Some(name) = names.iter().find(|n| !used(n)) else {
        return Ok(());
    };
    let message = if list == "ERRORS" {
        format!("error code `{name}` is listed in `-- ERRORS` but never raised")
    } else {
        format!("`{name}` is listed in `-- {list}` but never called")
    };
    Err((line, message))
}

/// Declared ↔ used for one table (`KEYS` or `ARGV`).
fn check_table(table: &str, uses: &[Use], names: &Declared) -> Result<(), (usize, String)> {
    let fixed = names.iter().filter(|p| !p.1).count();
    let variadic = names.last().filter(|p| p.1);
    for u in uses {
        if let Some(n) = u.index
            && (n == 0 || (n > fixed && variadic.is_none()))
        {
            return Err((
                u.line,
                format!("{table}[{n}] is used but not declared in the header"),
            ));
        }
    }
    let computed = uses.iter().find(|u| u.index.is_none());
    if let (Some(p), None) = (variadic, computed) {
        return Err((
            p.2,
            format!(
                "variadic {table}[{}..] is declared but never read with a computed index or `#{table}`",
                fixed + 1
            ),
        ));
    }
    if let (None, Some(u)) = (variadic, computed) {
        return Err((
            u.line,
            format!(
                "{table} is read with a computed index or `#{table}` but the header declares no variadic {table}[n..]"
            ),
        ));
    }
    for (i, p) in names.iter().enumerate().filter(|(_, p)| !p.1) {
        if !uses.iter().any(|u| u.index == Some(i + 1)) {
            return Err((
                p.2,
                format!("{table}[{}] `{}` is declared but never used", i + 1, p.0),
            ));
        }
    }
    Ok(())
}

/// Declared ↔ used for `KEYS` and `ARGV`.
pub(crate) fn check_uses(header: &ScriptHeader, sites: &Sites) -> Result<(), (usize, String)> {
    let keys: Declared = (header.keys.iter())
        .map(|k| (k.name.as_str(), k.variadic, k.line))
        .collect();
    let args: Declared = (header.args.iter())
        .map(|a| (a.name.as_str(), a.variadic, a.line))
        .collect();
    check_table("KEYS", &sites.keys, &keys)?;
    check_table("ARGV", &sites.argv, &args)
}

/// Whether `name` is one a `BADARG` detail may start with.
fn is_name(header: &ScriptHeader, name: &str) -> bool {
    ARITY_NAMES.contains(&name)
        || header.keys.iter().any(|k| k.name == name)
        || header.args.iter().any(|a| a.name == name)
}

/// The body's error codes are listed; its `BADARG` names what it refuses.
fn check_raised(header: &ScriptHeader, sites: &Sites) -> Result<(), Fault> {
    for e in &sites.error_codes {
        if !header.lists.errors.0.contains(&e.code) {
            return Err(Fault::from((
                e.line,
                format!(
                    "error code `{}` is raised but not listed in `-- ERRORS`",
                    e.code
                ),
            )));
        }
        if e.code == "BADARG" {
            let name = e.detail.as_deref().unwrap_or("");
            if !is_name(header, name) {
                return Err(Fault::from((
                    e.line,
                    format!(
                        "a BADARG detail starts with the name of a key or argument (or `keys` / `argv`), not `{name}`"
                    ),
                )));
            }
        }
    }
    Ok(())
}

/// What the includes raise counts as raised by the script: listed, and
/// their `BADARG` names the script's.
fn check_raised_by_includes(header: &ScriptHeader, includes: &[&Include]) -> Result<(), Fault> {
    for (k, inc) in includes.iter().enumerate() {
        for (code, line) in &inc.error_lines {
            if !header.lists.errors.0.contains(code) {
                return Err(Fault::in_include(
                    k,
                    *line,
                    format!(
                        "error code `{code}` is raised here but not listed in the including script's `-- ERRORS`"
                    ),
                ));
            }
        }
        for f in &inc.functions {
            for (detail, line) in &f.badarg {
                if let Detail::Name(name) = detail
                    && !is_name(header, name)
                {
                    return Err(Fault::in_include(
                        k,
                        *line,
                        format!(
                            "a BADARG detail starts with the name of a key or argument of the including script (or `keys` / `argv`), not `{name}`"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The body's own commands and its includes' are listed.
fn check_called(header: &ScriptHeader, sites: &Sites, includes: &[&Include]) -> Result<(), Fault> {
    for c in sites.calls.iter().filter(|c| c.via.is_none()) {
        let (list, found) = header.lists.lists(c.command);
        if found {
            continue;
        }
        if c.command.write && header.read_only {
            return Err(c.fault(format!(
                "`{}` writes, but the script is `no-writes`",
                c.command.name
            )));
        }
        return Err(c.fault(format!(
            "`{}` is called but not listed in `-- {list}`",
            c.command.name
        )));
    }
    for (k, inc) in includes.iter().enumerate() {
        for (command, line) in &inc.command_lines {
            let (list, found) = header.lists.lists(command);
            if found {
                continue;
            }
            let message = if command.write && header.read_only {
                format!(
                    "`{}` writes, but the including script is `no-writes`",
                    command.name
                )
            } else {
                format!(
                    "`{}` is called here but not listed in the including script's `-- {list}`",
                    command.name
                )
            };
            return Err(Fault::in_include(k, *line, message));
        }
    }
    Ok(())
}

/// Declared ↔ raised for error codes (a body's `BADARG` names an
/// argument), declared ↔ called for commands (the body's and its
/// includes'), and the script's writing flag.
pub(crate) fn check_lists(
    header: &ScriptHeader,
    sites: &Sites,
    includes: &[&Include],
) -> Result<(), Fault> {
    check_raised(header, sites)?;
    check_raised_by_includes(header, includes)?;
    let raised = |code: &str| {
        sites.error_codes.iter().any(|e| e.code == code)
            || includes
                .iter()
                .any(|i| i.header.errors.iter().any(|c| c == code))
    };
    let (errors, errors_line) = &header.lists.errors;
    check_listed("ERRORS", errors, *errors_line, raised)?;
    check_called(header, sites, includes)?;
    let called = |name: &str| {
        sites.calls.iter().any(|c| c.command.name == name)
            || includes
                .iter()
                .any(|i| i.command_lines.iter().any(|(c, _)| c.name == name))
    };
    for (list, names, line) in header.lists.commands() {
        check_listed(list, names, line, called)?;
    }
    check_writing(header)
}

/// A writing script calls a write command and declares an `rw` key.
fn check_writing(header: &ScriptHeader) -> Result<(), Fault> {
    let writes_line = header.lists.writes.1;
    if !header.read_only && header.lists.writes.0.is_empty() {
        return Err(Fault::from((
            1,
            "a script that calls no write command is `#!lua flags=no-writes`".into(),
        )));
    }
    if !header.read_only && !header.keys.iter().any(|k| k.written) {
        return Err(Fault::from((
            writes_line,
            "a writing script declares at least one `rw` key".into(),
        )));
    }
    Ok(())
}
