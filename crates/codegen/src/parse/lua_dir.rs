//! The `lua/` folder: finding the scripts (`<pattern>/<op>.lua`) and the
//! includes (`includes/<name>.lua`), and parsing them all, each include
//! after the includes it includes.

use std::path::{Path, PathBuf};

use super::include::parse_include_with;
use super::script::parse_script_with;
use crate::error::HeaderError;
use crate::header::wanted_includes;
use crate::include::{INCLUDES, Include};
use crate::script::ScriptSpec;

/// The entries of the folder `dir`, sorted by name.
fn sorted_entries(dir: &Path) -> Result<Vec<std::fs::DirEntry>, HeaderError> {
    let io = |e: std::io::Error| HeaderError {
        file: dir.display().to_string(),
        line: 0,
        message: e.to_string(),
        included_by: None,
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    entries.sort_by_key(|d| d.file_name());
    Ok(entries)
}

/// Lists `<pattern>/<op>.lua` files under `root` (not the includes under
/// `root/includes`), sorted, as relative paths.
pub fn list_scripts(root: &Path) -> Result<Vec<(String, PathBuf)>, HeaderError> {
    let mut out = Vec::new();
    for dir in sorted_entries(root)? {
        let path = dir.path();
        if dir.file_name() == INCLUDES {
            continue;
        }
        if path.is_file() {
            if path.extension().is_some_and(|e| e == "lua") {
                return Err(HeaderError {
                    file: path.display().to_string(),
                    line: 0,
                    message: "a script lives at lua/<pattern>/<op>.lua".into(),
                    included_by: None,
                });
            }
            continue;
        }
        for f in sorted_entries(&path)? {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "lua") {
                let rel = format!(
                    "{}/{}",
                    dir.file_name().to_string_lossy(),
                    f.file_name().to_string_lossy()
                );
                out.push((rel, p));
            }
        }
    }
    Ok(out)
}

/// The text of `path` (`lua/<rel>`).
fn read_lua(path: &Path, rel: &str) -> Result<String, HeaderError> {
    std::fs::read_to_string(path)
        .map_err(|e| HeaderError::in_lua(rel, 0, format!("not readable as UTF-8 text: {e}")))
}

/// The include files under `dir` (`lua/includes`): (path relative to
/// `lua/`, text), sorted.
fn include_files(dir: &Path) -> Result<Vec<(String, String)>, HeaderError> {
    let io = |e: std::io::Error| HeaderError::in_lua(INCLUDES, 0, e.to_string());
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    files.sort_by_key(|f| f.file_name());
    let mut out = Vec::new();
    for f in files {
        let rel = format!("{INCLUDES}/{}", f.file_name().to_string_lossy());
        let source = read_lua(&f.path(), &rel)?;
        out.push((rel, source));
    }
    Ok(out)
}

/// Parses `pending` (path, text) each after the includes it includes;
/// refuses a cycle.
fn parse_in_order(mut pending: Vec<(String, String)>) -> Result<Vec<Include>, HeaderError> {
    let stem = |rel: &str| {
        rel.trim_start_matches("includes/")
            .trim_end_matches(".lua")
            .to_string()
    };
    let mut includes: Vec<Include> = Vec::new();
    while !pending.is_empty() {
        let ready = pending.iter().position(|(_, src)| {
            wanted_includes(src)
                .iter()
                .all(|(n, _)| includes.iter().any(|i| &i.name == n))
        });
        // None ready: a cycle, or an include that names a missing one (the
        // first pending is refused for it when parsed).
        let k = ready.unwrap_or(0);
        if ready.is_none() {
            let (rel, src) = &pending[0];
            if let Some((n, line)) = wanted_includes(src)
                .into_iter()
                .find(|(n, _)| pending.iter().any(|(r, _)| stem(r) == *n))
            {
                return Err(HeaderError::in_lua(
                    rel,
                    line,
                    format!("include `{n}` includes this one again: includes form no cycle"),
                ));
            }
        }
        let (rel, src) = pending.remove(k);
        let inc = parse_include_with(&rel, &src, &includes)?;
        includes.push(inc);
    }
    includes.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(includes)
}

/// Refuses two includes that define one function name, and an include
/// that calls another's function without including it.
fn check_function_names(includes: &[Include]) -> Result<(), HeaderError> {
    for (i, inc) in includes.iter().enumerate() {
        let at =
            |line: usize, message: String| HeaderError::in_lua(&inc.header.file, line, message);
        for f in &inc.functions {
            if let Some(other) = includes[..i].iter().find(|o| o.function(&f.name).is_some()) {
                return Err(at(
                    f.line,
                    format!(
                        "function `{}` is also defined by lua/{}",
                        f.name, other.header.file
                    ),
                ));
            }
        }
        for (name, line) in &inc.called {
            if let Some(other) = includes.iter().find(|o| o.function(name).is_some()) {
                return Err(at(
                    *line,
                    format!(
                        "`{name}` is a function of lua/{}: add `-- INCLUDE {}` to this include's header",
                        other.header.file, other.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Parses every include under `root/includes` (none when there is no such
/// folder), sorted by name; refuses two that define one function name and
/// an include that calls another's function.
pub fn parse_includes(root: &Path) -> Result<Vec<Include>, HeaderError> {
    let dir = root.join(INCLUDES);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let includes = parse_in_order(include_files(&dir)?)?;
    check_function_names(&includes)?;
    Ok(includes)
}

/// Refuses an include that no script includes (nor an include that is).
fn check_all_included(specs: &[ScriptSpec], includes: &[Include]) -> Result<(), HeaderError> {
    let mut used: Vec<&str> = specs
        .iter()
        .flat_map(|s| s.header.includes.iter().map(String::as_str))
        .collect();
    let mut k = 0;
    while k < used.len() {
        if let Some(inc) = includes.iter().find(|i| i.name == used[k]) {
            used.extend(inc.header.includes.iter().map(String::as_str));
        }
        k += 1;
    }
    if let Some(unused) = includes.iter().find(|i| !used.contains(&i.name.as_str())) {
        return Err(HeaderError::in_lua(
            &unused.header.file,
            1,
            format!(
                "no script includes it: add `-- INCLUDE {}` to a header, or delete the file",
                unused.name
            ),
        ));
    }
    Ok(())
}

/// Parses every script under `root`, sorted by name, with the includes
/// under `root/includes`; refuses an include that no script names.
pub fn parse_dir(root: &Path) -> Result<Vec<ScriptSpec>, HeaderError> {
    let includes = parse_includes(root)?;
    let mut specs = Vec::new();
    for (rel, path) in list_scripts(root)? {
        let source = read_lua(&path, &rel)?;
        specs.push(parse_script_with(&rel, &source, &includes)?);
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    check_all_included(&specs, &includes)?;
    Ok(specs)
}
