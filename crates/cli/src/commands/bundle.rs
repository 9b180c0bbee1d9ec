//! `redis-patterns list|export|load`: the script bundle for redis-cli and
//! other languages.

use std::path::Path;

use redis_patterns::scripts::ALL;
use serde::Serialize;

use crate::fail::{self, CliResult};
use crate::out::{self, outln};

/// One script, as `list --json` prints it.
#[derive(Serialize)]
struct Listed<'a> {
    name: &'a str,
    sha1: &'a str,
    read_only: bool,
    /// `idempotent`, `once` or `idempotent-if:<arg>`: whether a call may be
    /// sent again after a lost reply.
    resend: &'a str,
    keys: Vec<String>,
    args: Vec<String>,
}

pub fn list() -> CliResult {
    let width = ALL.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for s in ALL {
        let tail = |variadic: bool| if variadic { ".." } else { "" };
        let keys: Vec<String> = s
            .keys
            .iter()
            .map(|k| {
                let types: Vec<&str> = k.types.iter().map(|t| t.name()).collect();
                format!(
                    "{}{}:{}:{}",
                    k.name,
                    tail(k.variadic),
                    types.join(","),
                    if k.written { "rw" } else { "ro" }
                )
            })
            .collect();
        let args: Vec<String> = s
            .args
            .iter()
            .map(|a| {
                let constraint = match (a.min, a.max) {
                    (Some(lo), Some(hi)) => format!(":{lo}..{hi}"),
                    _ if !a.values.is_empty() => format!(":{}", a.values.join("|")),
                    _ if a.tagged => ":tagged".to_string(),
                    _ if a.non_empty => ":nonempty".to_string(),
                    _ => String::new(),
                };
                format!("{}{}:{}{constraint}", a.name, tail(a.variadic), a.ty.name())
            })
            .collect();
        let resend = match s.idempotent {
            redis_patterns::script::Idempotency::Always => "idempotent".to_string(),
            redis_patterns::script::Idempotency::Never => "once".to_string(),
            redis_patterns::script::Idempotency::IfArg { name, .. } => {
                format!("idempotent-if:{name}")
            }
        };
        if out::json() {
            out::json_line(&Listed {
                name: s.name,
                sha1: s.sha1,
                read_only: s.read_only,
                resend: &resend,
                keys,
                args,
            });
            continue;
        }
        outln!(
            "{:width$}  {}  {}  {}  keys [{}]  args [{}]",
            s.name,
            s.sha1,
            if s.read_only { "ro" } else { "rw" },
            resend,
            keys.join(" "),
            args.join(" "),
        );
    }
    Ok(())
}

pub fn export(dir: &Path) -> CliResult {
    for s in ALL {
        let path = dir.join(s.file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fail::file("create", parent, &e))?;
        }
        std::fs::write(&path, s.source()).map_err(|e| fail::file("write", &path, &e))?;
    }
    let path = dir.join("functions.lua");
    std::fs::write(&path, redis_patterns::functions::LIBRARY)
        .map_err(|e| fail::file("write", &path, &e))?;
    let manifest = redis_patterns::manifest::Manifest::bundled();
    let path = dir.join("manifest.json");
    let text =
        serde_json::to_string_pretty(&manifest).map_err(|e| fail::Failure::new(e.to_string()))?;
    std::fs::write(&path, text + "\n").map_err(|e| fail::file("write", &path, &e))?;
    out::emit(
        &serde_json::json!({"dir": dir.display().to_string(), "scripts": ALL.len()}),
        || {
            vec![format!(
                "wrote {} scripts, functions.lua and manifest.json to {}",
                ALL.len(),
                dir.display()
            )]
        },
    );
    Ok(())
}

/// `export --lang`: a generated client library.
pub fn export_client(lang: crate::clients::Lang, dir: &Path) -> CliResult {
    let n =
        crate::clients::write(lang, dir).map_err(|e| fail::file("write the client to", dir, &e))?;
    out::emit(
        &serde_json::json!({"dir": dir.display().to_string(), "lang": lang.name(), "files": n}),
        || {
            vec![format!(
                "wrote the {} client ({n} files) to {}",
                lang.name(),
                dir.display()
            )]
        },
    );
    Ok(())
}
