//! The guide (`docs/`, an mdBook: `docs/SUMMARY.md` lists the chapters) as
//! rustdoc: `build.rs` writes every chapter to `$OUT_DIR/guide/` with its
//! links rewritten for rustdoc, and a module per chapter that includes it
//! (`redis_patterns::guide::<chapter>`), so that the chapters reach docs.rs
//! and their Rust examples are doctests.
//!
//! A link to another chapter (`[cluster](cluster.md#slots)`) becomes an
//! intra-doc link to its module (`crate::guide::cluster#slots`), a link to
//! the README one to the crate root, and a link to any other file of the
//! repository (`../manifest.schema.json`) becomes its text with the path
//! in a code span (docs.rs has no repository to link to).

/// One chapter: its file under `docs/` and its module name.
#[derive(Debug, Clone, PartialEq)]
pub struct Chapter {
    /// The path under `docs/` (`patterns/lock.md`).
    pub file: String,
    /// The module (`lock`): the file's stem, `-` as `_`.
    pub module: String,
    /// The title in `SUMMARY.md`.
    pub title: String,
}

/// The chapters `SUMMARY.md` lists, in order (`[Title](file.md)` lines).
pub fn chapters(summary: &str) -> Vec<Chapter> {
    summary
        .lines()
        .filter_map(|line| {
            let (title, rest) = line.split_once("](")?;
            let title = title.rsplit('[').next()?.to_string();
            let file = rest.split(')').next()?.to_string();
            let stem = file.rsplit('/').next()?.strip_suffix(".md")?;
            Some(Chapter {
                module: stem.replace('-', "_"),
                file,
                title,
            })
        })
        .collect()
}

/// `path` (relative to the chapter `from`, as a link in it) normalised to
/// a path under `docs/`; `None` when it leaves `docs/`.
fn resolve(from: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for p in path.split('/') {
        match p {
            "." | "" => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The link target `target` of chapter `from` for rustdoc: `Ok(intra-doc
/// path)`, or `Err(repository path)` for a file that is not a chapter.
fn rustdoc_target(from: &str, target: &str, chapters: &[Chapter]) -> Result<String, String> {
    let (path, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, format!("#{f}")),
        None => (target, String::new()),
    };
    if path.is_empty() {
        return Ok(target.to_string());
    }
    match resolve(from, path) {
        Some(p) => match chapters.iter().find(|c| c.file == p) {
            Some(c) => Ok(format!("crate::guide::{}{fragment}", c.module)),
            None => Err(format!("docs/{p}")),
        },
        None if path.ends_with("README.md") => Ok(format!("crate{fragment}")),
        None => Err(path.trim_start_matches("../").to_string()),
    }
}

/// Chapter `from`'s text with its relative links rewritten for rustdoc
/// (outside code blocks; web links stay).
pub fn rustdoc_chapter(from: &str, text: &str, chapters: &[Chapter]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code || !line.contains("](") {
            out.push_str(line);
            continue;
        }
        out.push_str(&rewrite_links(from, line, chapters));
    }
    out
}

/// One line's `[text](target)` links rewritten.
fn rewrite_links(from: &str, line: &str, chapters: &[Chapter]) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let (before, after) = rest.split_at(at);
        let Some(close) = after.find(')') else {
            break;
        };
        let target = &after[2..close];
        if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
            out.push_str(before);
            out.push_str(&after[..=close]);
        } else {
            match rustdoc_target(from, target, chapters) {
                Ok(t) => {
                    out.push_str(before);
                    out.push_str(&format!("]({t})"));
                }
                Err(path) => {
                    // `[text](file)` -> `text (`file`)`: drop the `[`.
                    let open = before.rfind('[').unwrap_or(0);
                    out.push_str(&before[..open]);
                    let text = &before[(open + 1).min(before.len())..];
                    if text.trim_matches('`') == path {
                        out.push_str(&format!("`{path}`"));
                    } else {
                        out.push_str(&format!("{text} (`{path}`)"));
                    }
                }
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The Rust source of the guide's chapter modules: one `pub mod` per
/// chapter, whose docs are `$OUT_DIR/guide/<file>`.
pub fn modules(chapters: &[Chapter]) -> String {
    let mut out = String::new();
    for c in chapters {
        out.push_str(&format!(
            "#[doc = include_str!(concat!(env!(\"OUT_DIR\"), \"/guide/{}\"))]\npub mod {} {{}}\n",
            c.file, c.module
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> Vec<Chapter> {
        chapters(
            "# Summary\n\n- [Getting started](getting-started.md)\n- [Patterns]()\n  - [Locks](patterns/lock.md)\n- [Cluster](cluster.md)\n",
        )
    }

    #[test]
    fn summary_lines_are_chapters_with_module_names() {
        let c = book();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].module, "getting_started");
        assert_eq!(c[1].file, "patterns/lock.md");
        assert_eq!(c[1].module, "lock");
        assert_eq!(c[1].title, "Locks");
    }

    #[test]
    fn links_between_chapters_become_intra_doc_links() {
        let c = book();
        let text = "See [the cluster](../cluster.md#slots), [this](#here), [rust](https://rust-lang.org) and [the schema](../../manifest.schema.json).\n```console\n$ x [a](b.md)\n```\n[home](../../README.md)\n";
        let out = rustdoc_chapter("patterns/lock.md", text, &c);
        assert_eq!(
            out,
            "See [the cluster](crate::guide::cluster#slots), [this](#here), [rust](https://rust-lang.org) and the schema (`manifest.schema.json`).\n```console\n$ x [a](b.md)\n```\n[home](crate)\n"
        );
        let out = rustdoc_chapter("cluster.md", "[Locks](patterns/lock.md)", &c);
        assert_eq!(out, "[Locks](crate::guide::lock)");
        let out = rustdoc_chapter("cluster.md", "[`tests/lock.rs`](../tests/lock.rs)", &c);
        assert_eq!(out, "`tests/lock.rs`");
    }

    #[test]
    fn modules_include_the_rewritten_chapters() {
        let m = modules(&book()[..1]);
        assert_eq!(
            m,
            "#[doc = include_str!(concat!(env!(\"OUT_DIR\"), \"/guide/getting-started.md\"))]\npub mod getting_started {}\n"
        );
    }
}
