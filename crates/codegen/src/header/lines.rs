//! Where a header ends: each line after the summary is a header entry, a
//! continuation of one, or the first line of the body.

/// One line below the summary, as the header reader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// `-- WORD rest`: a header entry (`word` ends at the first `[` or space).
    Entry { word: &'a str, rest: &'a str },
    /// `--   more`: text that continues the entry above (trimmed).
    Continuation(&'a str),
    /// The first line of the body: code, a blank line, or a comment that
    /// does not start with an upper-case word.
    Body,
}

/// Whether `word` reads as a header keyword: two or more upper-case
/// letters, digits or `_`, starting with a letter (`KEYS`, `WRITES`; not
/// `A` or `The`).
fn is_keyword(word: &str) -> bool {
    word.len() >= 2
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `text` split after its first word (up to the first `[` or space).
fn first_word(text: &str) -> (&str, &str) {
    text.split_at(text.find(['[', ' ']).unwrap_or(text.len()))
}

/// Reads one line below the summary; refuses `--KEYS[1] ...` (a header
/// entry without the space after `--`).
pub(crate) fn classify(raw: &str) -> Result<Line<'_>, String> {
    let Some(text) = raw.strip_prefix("--") else {
        return Ok(Line::Body);
    };
    if text.starts_with("   ") {
        return Ok(Line::Continuation(text.trim()));
    }
    match text.strip_prefix(' ') {
        Some(entry) => {
            let (word, rest) = first_word(entry);
            Ok(if is_keyword(word) {
                Line::Entry { word, rest }
            } else {
                Line::Body
            })
        }
        None if is_keyword(first_word(text).0) => Err("header lines start with `-- `".into()),
        None => Ok(Line::Body),
    }
}

/// Reads the header's lines from line index `first` (below the summary),
/// handing each entry and continuation with its 1-based line number to
/// `each`, up to the first line of the body; returns the index of that line
/// (`lines.len()` when the file is all header). A refusal names its line.
pub(crate) fn read_lines<'a>(
    lines: &[&'a str],
    first: usize,
    mut each: impl FnMut(usize, Line<'a>) -> Result<(), String>,
) -> Result<usize, (usize, String)> {
    for (idx, raw) in lines.iter().enumerate().skip(first) {
        let line = idx + 1;
        match classify(raw).map_err(|m| (line, m))? {
            Line::Body => return Ok(idx),
            entry => each(line, entry).map_err(|m| (line, m))?,
        }
    }
    Ok(lines.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_an_upper_case_word_after_two_dashes_and_a_space() {
        assert_eq!(
            classify("-- KEYS[1] lock string rw: the lock"),
            Ok(Line::Entry {
                word: "KEYS",
                rest: "[1] lock string rw: the lock"
            })
        );
        assert_eq!(
            classify("-- WRITES SET"),
            Ok(Line::Entry {
                word: "WRITES",
                rest: " SET"
            })
        );
        assert_eq!(
            classify("-- BOGUS x"),
            Ok(Line::Entry {
                word: "BOGUS",
                rest: " x"
            })
        );
        assert_eq!(
            classify("--    more text "),
            Ok(Line::Continuation("more text"))
        );
    }

    #[test]
    fn a_comment_right_after_the_header_starts_the_body() {
        for body in [
            "",
            "local x = 1",
            "-- the counter first",
            "-- A note",
            "-- `tag` is",
            "--[[ long",
            "--",
            "-- ",
        ] {
            assert_eq!(classify(body), Ok(Line::Body), "{body:?}");
        }
        assert!(classify("--KEYS[1] k string ro: x").is_err());
        let lines = [
            "#!lua",
            "--- S",
            "-- READS GET",
            "-- why: GET first",
            "return 1",
        ];
        let mut entries = Vec::new();
        let end = read_lines(&lines, 2, |line, l| {
            entries.push((line, l));
            Ok(())
        });
        assert_eq!(end, Ok(3));
        assert_eq!(
            entries,
            [(
                3,
                Line::Entry {
                    word: "READS",
                    rest: " GET"
                }
            )]
        );
        let refused = read_lines(&["--- S", "-- READS GET", "--READS GET"], 1, |_, _| Ok(()));
        assert_eq!(refused, Err((3, "header lines start with `-- `".into())));
    }
}
