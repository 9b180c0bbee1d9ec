//! A module's rustdoc (its `//!` lines) as Markdown for the book: the one
//! hand-written text of a pattern's reference, shown in its chapter by the
//! generator. Intra-doc links become their text, headings go one level down
//! (under the chapter's title), and Rust examples are left out (the chapter
//! has its own, which run).

/// The `//!` text of the file at `path` (relative to the repository root).
pub fn module_docs(path: &str) -> String {
    let source = std::fs::read_to_string(super::pages::root().join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = String::new();
    for line in source.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            if line.starts_with("#!") || line.trim().is_empty() {
                continue;
            }
            break;
        };
        out.push_str(doc.strip_prefix(' ').unwrap_or(doc));
        out.push('\n');
    }
    out
}

/// `doc` as Markdown for a chapter (see the module docs), its headings
/// `down` levels lower; `rust_examples` keeps Rust code blocks.
pub fn to_markdown(doc: &str, down: usize, rust_examples: bool) -> String {
    let mut out = String::new();
    let mut prose = String::new();
    let mut lines = doc.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let fence = line.trim_start();
        if !fence.starts_with("```") {
            prose.push_str(line);
            continue;
        }
        out.push_str(&prose_to_markdown(&prose, down));
        prose.clear();
        let info = fence.trim_start_matches('`').trim();
        let keep = rust_examples || info == "text" || info == "console" || info == "sh";
        let mut block = String::from(line);
        for l in lines.by_ref() {
            block.push_str(l);
            if l.trim_start().starts_with("```") {
                break;
            }
        }
        if keep {
            out.push_str(&block);
        }
    }
    out.push_str(&prose_to_markdown(&prose, down));
    out = without_empty_sections(&out);
    // Two blank lines where an example was left out: one.
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    format!("{}\n", out.trim_end())
}

/// `text` without the headings whose section is empty (an example's, once
/// the example was left out).
fn without_empty_sections(text: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let level = |l: &str| {
        l.starts_with('#')
            .then(|| l.chars().take_while(|c| *c == '#').count())
    };
    let mut out = String::new();
    let mut in_code = false;
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && let Some(n) = level(line) {
            let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
            if next.is_none_or(|l| level(l).is_some_and(|m| m <= n)) {
                continue;
            }
        }
        out.push_str(line);
    }
    out
}

/// Prose (no code blocks): headings `down` levels lower, links as their
/// text.
fn prose_to_markdown(prose: &str, down: usize) -> String {
    let demoted: String = prose
        .split_inclusive('\n')
        .map(|l| {
            if l.starts_with('#') {
                format!("{}{l}", "#".repeat(down))
            } else {
                l.to_string()
            }
        })
        .collect();
    unlink(&demoted)
}

/// Every `[text](target)` and `[`code`]` link as its text, outside code
/// spans; web links stay.
pub fn unlink(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'`' => {
                let end = code_span_end(text, i);
                out.push_str(&text[i..end]);
                i = end;
            }
            b'[' => match link_at(text, i) {
                Some((label, target, end)) => {
                    if target.is_some_and(|t| t.starts_with("http")) {
                        out.push_str(&text[i..end]);
                    } else {
                        out.push_str(label);
                    }
                    i = end;
                }
                None => {
                    out.push('[');
                    i += 1;
                }
            },
            _ => {
                let c = text[i..].chars().next().expect("a char");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// The end of the code span that starts at `start` (a run of backticks),
/// or just after the run when it is not closed.
fn code_span_end(text: &str, start: usize) -> usize {
    let run = text[start..].bytes().take_while(|c| *c == b'`').count();
    let ticks = &text[start..start + run];
    match text[start + run..].find(ticks) {
        Some(at) => start + run + at + run,
        None => start + run,
    }
}

/// A link at `start` (`[`): its label, its target (`None` for a shortcut
/// `[`code`]`) and where it ends. `None` when it is no link.
fn link_at(text: &str, start: usize) -> Option<(&str, Option<&str>, usize)> {
    let b = text.as_bytes();
    let mut i = start + 1;
    while i < b.len() && b[i] != b']' {
        if b[i] == b'`' {
            i = code_span_end(text, i);
        } else {
            i += 1;
        }
    }
    if i >= b.len() {
        return None;
    }
    let label = &text[start + 1..i];
    if text[i + 1..].starts_with('(') {
        let close = text[i + 1..].find(')')? + i + 1;
        return Some((label, Some(&text[i + 2..close]), close + 1));
    }
    // A shortcut intra-doc link: `[`Lock`]`, `[Lock]` (a path).
    let path_like = label.starts_with('`') && label.ends_with('`')
        || (!label.is_empty()
            && label
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == ':'));
    path_like.then_some((label, None, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_become_their_text_and_code_spans_stay() {
        assert_eq!(
            unlink(
                "see [`Lock`], [`x`](crate::x), [the docs](self#a), [web](https://a.b) and `KEYS[1]`"
            ),
            "see `Lock`, `x`, the docs, [web](https://a.b) and `KEYS[1]`"
        );
        assert_eq!(
            unlink("across\n[`Lock::acquire`](\ncrate::Lock)."),
            "across\n[`Lock::acquire`](\ncrate::Lock)."
                .replace("[`Lock::acquire`](\ncrate::Lock)", "`Lock::acquire`")
        );
        assert_eq!(unlink("a [b c] d"), "a [b c] d");
    }

    #[test]
    fn examples_go_headings_go_down() {
        let doc = "Text.\n\n# Keys\n\n```no_run\nlet x = 1;\n```\n\n```text\nkept\n```\n\n# Example\n\n```\nx\n```\n";
        assert_eq!(
            to_markdown(doc, 1, false),
            "Text.\n\n## Keys\n\n```text\nkept\n```\n"
        );
    }
}
