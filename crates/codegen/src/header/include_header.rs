//! An include's header: the summary on the first line, then `WRITES`,
//! `READS`, `ERRORS` and `INCLUDE` lines.

use super::lines::{Line, classify, read_lines};
use super::lists::Lists;
use super::summary::summary_of;

/// What an include's header declares, as read.
#[derive(Debug)]
pub(crate) struct IncludeHeader {
    pub summary: String,
    pub lists: Lists,
    /// The includes it includes, with their lines, in header order.
    pub includes: Vec<(String, usize)>,
    /// Index of the body's first line (the header's number of lines).
    pub end: usize,
}

/// Reads the header of an include whose lines are `lines`; `known` refuses
/// an `INCLUDE` name that names no include parsed before this one.
pub(crate) fn read_include_header(
    lines: &[&str],
    known: impl Fn(&str) -> Result<(), String>,
) -> Result<IncludeHeader, (usize, String)> {
    let summary = summary_of(lines.first().copied()).ok_or_else(|| {
        (
            1,
            "an include's first line is `--- <summary>` (no shebang: it is no script)".to_string(),
        )
    })?;
    let mut lists = Lists::default();
    let mut includes: Vec<(String, usize)> = Vec::new();
    let end = read_lines(lines, 1, |line, l| match l {
        Line::Entry {
            word: word @ ("WRITES" | "READS" | "ERRORS"),
            rest,
        } => lists.read(word, rest, line),
        Line::Entry {
            word: "INCLUDE",
            rest,
        } => {
            let name = rest.trim();
            if includes.iter().any(|(n, _)| n == name) {
                return Err(format!("include `{name}` is listed twice"));
            }
            known(name)?;
            includes.push((name.to_string(), line));
            Ok(())
        }
        Line::Entry { word, .. } => Err(format!(
            "unknown header line `{word}` in an include (WRITES | READS | ERRORS | INCLUDE)"
        )),
        Line::Continuation(_) => Err("an include's header lines have no continuation".into()),
        Line::Body => unreachable!("the body ends the header"),
    })?;
    Ok(IncludeHeader {
        summary,
        lists,
        includes,
        end,
    })
}

/// The names an include's `INCLUDE` lines give (to parse the includes it
/// includes first); a header line that does not read ends the list.
pub(crate) fn wanted_includes(source: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (idx, raw) in source.lines().enumerate().skip(1) {
        match classify(raw) {
            Ok(Line::Entry {
                word: "INCLUDE",
                rest,
            }) => out.push((rest.trim().to_string(), idx + 1)),
            Ok(Line::Entry { .. } | Line::Continuation(_)) => {}
            Ok(Line::Body) | Err(_) => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "--- Lease\n-- INCLUDE clock\n-- WRITES ZADD\n-- READS ZSCORE\n-- ERRORS BADARG\n-- the lease functions\nlocal function f() end\n";

    fn read(text: &str) -> Result<IncludeHeader, (usize, String)> {
        let known = |n: &str| match n {
            "clock" => Ok(()),
            _ => Err(format!("include `{n}` not found")),
        };
        read_include_header(&text.lines().collect::<Vec<_>>(), known)
    }

    #[test]
    fn an_include_header_lists_what_its_functions_call() {
        let h = read(HEAD).expect("valid");
        assert_eq!((h.summary.as_str(), h.end), ("Lease", 5));
        assert_eq!(h.includes, [("clock".to_string(), 2)]);
        assert_eq!(h.lists.writes, (vec!["ZADD".to_string()], 3));
        assert_eq!(wanted_includes(HEAD), [("clock".to_string(), 2)]);
    }

    #[test]
    fn an_include_header_is_refused_at_its_line() {
        let at = |text: &str| read(text).unwrap_err();
        assert_eq!(at("#!lua\n--- X\n").0, 1);
        assert_eq!(
            at("--- X\n-- INCLUDE nope\n"),
            (2, "include `nope` not found".into())
        );
        assert!(
            at("--- X\n-- INCLUDE clock\n-- INCLUDE clock\n")
                .1
                .contains("listed twice")
        );
        assert!(
            at("--- X\n-- KEYS[1] k string rw: x\n")
                .1
                .contains("unknown header line `KEYS` in an include")
        );
        assert!(
            at("--- X\n-- WRITES SET\n--    more\n")
                .1
                .contains("no continuation")
        );
    }
}
