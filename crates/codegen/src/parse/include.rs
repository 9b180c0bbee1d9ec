//! Parsing one include: its name, its header, its functions analysed.

use super::LuaFile;
use crate::analyse::analyse_include;
use crate::error::HeaderError;
use crate::header::{is_ident, read_include_header};
use crate::include::{Include, find_include};

/// The name of the include at `file` (`includes/<name>.lua`).
fn name_of(file: &str) -> Result<&str, String> {
    let name = file
        .strip_prefix("includes/")
        .and_then(|f| f.strip_suffix(".lua"))
        .filter(|n| !n.contains('/'))
        .ok_or("an include lives at lua/includes/<name>.lua")?;
    if !is_ident(name) {
        return Err("an include's name must be snake_case".into());
    }
    Ok(name)
}

/// Parses one include that includes none; `file` is its path relative to
/// `lua/` (`includes/<name>.lua`).
pub fn parse_include(file: &str, source: &str) -> Result<Include, HeaderError> {
    parse_include_with(file, source, &[])
}

/// Parses one include; `known` are the includes its own `-- INCLUDE` lines
/// may name (parsed before it).
pub fn parse_include_with(
    file: &str,
    source: &str,
    known: &[Include],
) -> Result<Include, HeaderError> {
    let f = LuaFile::new(file, source);
    let err = |e| f.error(e);
    let name = name_of(file).map_err(|m| err((0, m)))?;
    let header =
        read_include_header(&f.lines, |n| find_include(known, n).map(|_| ())).map_err(err)?;
    let nested: Vec<(&Include, usize)> = (header.includes.iter())
        .map(|(n, line)| {
            (
                find_include(known, n).expect("found while reading the header"),
                *line,
            )
        })
        .collect();
    let (body_offset, code) = f.body(header.end)?;
    let facts = analyse_include(&code, &header.lists, &nested).map_err(err)?;
    Ok(Include {
        name: name.to_string(),
        header: f.header(body_offset, header.summary, header.lists, header.includes),
        functions: facts.functions,
        command_lines: facts.command_lines,
        error_lines: facts.error_lines,
        called: facts.called,
    })
}
