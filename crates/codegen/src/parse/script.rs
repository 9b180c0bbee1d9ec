//! Parsing one script: its place, its header, its body analysed with its
//! includes, then its idempotency and the SHA1 of what ships.

use super::LuaFile;
use crate::analyse::{Fault, analyse_script};
use crate::emit::{inline_all, sha1_hex};
use crate::error::HeaderError;
use crate::header::{is_ident, read_script_header, resolve_idempotency};
use crate::include::{INCLUDES, Include, find_include};
use crate::script::ScriptSpec;

/// The pattern and op of the script at `file` (`<pattern>/<op>.lua`).
fn place(file: &str) -> Result<(String, String), String> {
    let parts: Vec<&str> = file.trim_end_matches(".lua").split('/').collect();
    if parts.len() != 2 || !file.ends_with(".lua") {
        return Err("a script lives at lua/<pattern>/<op>.lua".into());
    }
    let (pattern, op) = (parts[0].to_string(), parts[1].to_string());
    if !is_ident(&pattern) || !is_ident(&op) {
        return Err("pattern and op names must be snake_case".into());
    }
    if pattern == INCLUDES {
        return Err("lua/includes/ holds includes (shared functions), not scripts".into());
    }
    Ok((pattern, op))
}

/// Parses one script file that includes nothing. `file` is its path
/// relative to `lua/`.
pub fn parse_script(file: &str, source: &str) -> Result<ScriptSpec, HeaderError> {
    parse_script_with(file, source, &[])
}

/// Parses one script file; `known` are the includes (`lua/includes/`) its
/// `-- INCLUDE` lines may name. `file` is its path relative to `lua/`.
pub fn parse_script_with(
    file: &str,
    source: &str,
    known: &[Include],
) -> Result<ScriptSpec, HeaderError> {
    let f = LuaFile::new(file, source);
    let err = |e| f.error(e);
    let (pattern, op) = place(file).map_err(|m| err((0, m)))?;
    let header = read_script_header(&f.lines).map_err(err)?;
    let (body_offset, code) = f.body(header.end)?;
    let mut resolved: Vec<&Include> = Vec::with_capacity(header.includes.len());
    for (name, line) in &header.includes {
        resolved.push(find_include(known, name).map_err(|m| err((*line, m)))?);
    }
    let fault = |f: Fault| match f.include {
        None => err((f.line, f.message)),
        Some(k) => HeaderError {
            included_by: Some(format!("lua/{file}")),
            ..HeaderError::in_lua(&resolved[k].header.file, f.line, f.message)
        },
    };
    let verdicts = analyse_script(&header, &code, &resolved, known).map_err(fault)?;
    let (idempotent, idempotent_doc) = resolve_idempotency(
        header.idempotent.as_ref(),
        &header.args,
        header.read_only,
        header.end + 1,
    )
    .map_err(err)?;
    let mut spec = ScriptSpec {
        name: format!("{pattern}.{op}"),
        pattern,
        op,
        header: f.header(body_offset, header.summary, header.lists, header.includes),
        keys: header.keys,
        args: header.args,
        returns: header.returns,
        returns_doc: header.returns_doc,
        read_only: header.read_only,
        idempotent,
        idempotent_doc,
        needs: header.needs,
        type_checked: verdicts.type_checked,
        tail_type_checked: verdicts.tail_type_checked,
        acl_checks: verdicts.acl_checks,
        inlined: inline_all(&resolved, known),
        sha1_hex: String::new(),
    };
    spec.sha1_hex = sha1_hex(spec.shipped().as_bytes());
    Ok(spec)
}
