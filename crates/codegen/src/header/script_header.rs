//! A script's header, read line by line: the shebang, the summary, then
//! each entry handed to the parser of its kind.

use super::argv::{Arg, check_refs};
use super::entry::Entry;
use super::idempotent::{Declared, Idempotency};
use super::include_line::included;
use super::keys::Key;
use super::lines::{Line, read_lines};
use super::lists::Lists;
use super::needs::needed;
use super::returns::ReturnType;
use super::shebang;
use super::summary::summary_of;

/// What a script's header declares, as read (before the body is checked
/// against it).
#[derive(Debug)]
pub(crate) struct ScriptHeader {
    pub read_only: bool,
    pub summary: String,
    pub keys: Vec<Key>,
    pub args: Vec<Arg>,
    pub returns: ReturnType,
    pub returns_doc: String,
    pub lists: Lists,
    pub idempotent: Option<Declared>,
    /// The `INCLUDE` names with their lines, in header order.
    pub includes: Vec<(String, usize)>,
    /// The `NEEDS` capabilities, in header order (empty without the line).
    pub needs: Vec<String>,
    /// Index of the body's first line (the header's number of lines).
    pub end: usize,
}

/// Which meaning a continuation line extends.
#[derive(Clone, Copy)]
enum Last {
    None,
    Key,
    Arg,
    Returns,
    Idempotent,
}

/// The header as read so far.
struct Reading {
    read_only: bool,
    keys: Vec<Key>,
    args: Vec<Arg>,
    returns: Option<(ReturnType, String)>,
    lists: Lists,
    idempotent: Option<Declared>,
    includes: Vec<(String, usize)>,
    needs: Option<Vec<String>>,
    last: Last,
}

impl Reading {
    fn new(read_only: bool) -> Self {
        Self {
            read_only,
            keys: Vec::new(),
            args: Vec::new(),
            returns: None,
            lists: Lists::default(),
            idempotent: None,
            includes: Vec::new(),
            needs: None,
            last: Last::None,
        }
    }

    fn line(&mut self, line: usize, l: Line) -> Result<(), String> {
        match l {
            Line::Continuation(more) => self.continuation(more),
            Line::Entry { word, rest } => {
                self.last = self.entry(word, rest, line)?;
                Ok(())
            }
            Line::Body => unreachable!("the body ends the header"),
        }
    }

    fn continuation(&mut self, more: &str) -> Result<(), String> {
        let doc = match self.last {
            Last::None => return Err("continuation line with nothing to continue".into()),
            Last::Key => &mut self.keys.last_mut().expect("key exists").doc,
            Last::Arg => &mut self.args.last_mut().expect("arg exists").doc,
            Last::Returns => &mut self.returns.as_mut().expect("returns exists").1,
            Last::Idempotent => &mut self.idempotent.as_mut().expect("idempotent exists").doc,
        };
        doc.push(' ');
        doc.push_str(more);
        Ok(())
    }

    /// Reads one entry; returns what a continuation line below extends.
    fn entry(&mut self, word: &str, rest: &str, line: usize) -> Result<Last, String> {
        match word {
            "KEYS" | "ARGV" => self.table_entry(&Entry::parse(word, rest)?, line),
            "RETURNS" => {
                if self.returns.is_some() {
                    return Err("RETURNS given twice".into());
                }
                self.returns = Some(ReturnType::declared(rest)?);
                Ok(Last::Returns)
            }
            "IDEMPOTENT" => {
                if self.idempotent.is_some() {
                    return Err("IDEMPOTENT given twice".into());
                }
                self.idempotent = Some(Idempotency::declared(rest, self.read_only, line)?);
                Ok(Last::Idempotent)
            }
            "WRITES" | "READS" | "ERRORS" => {
                self.lists.read(word, rest, line)?;
                Ok(Last::None)
            }
            "INCLUDE" => {
                let name = included(rest, &self.includes)?;
                self.includes.push((name.to_string(), line));
                Ok(Last::None)
            }
            "NEEDS" => {
                if self.needs.is_some() {
                    return Err("NEEDS given twice".into());
                }
                self.needs = Some(needed(rest)?);
                Ok(Last::None)
            }
            other => Err(format!(
                "unknown header line `{other}` (KEYS | ARGV | RETURNS | WRITES | READS | ERRORS | IDEMPOTENT | INCLUDE | NEEDS; a comment that starts the body begins with no upper-case word)"
            )),
        }
    }

    fn table_entry(&mut self, entry: &Entry, line: usize) -> Result<Last, String> {
        let taken = self.keys.iter().any(|k| k.name == entry.name)
            || self.args.iter().any(|a| a.name == entry.name);
        if entry.table == "KEYS" {
            let tail_open = self.keys.last().is_some_and(|k| k.variadic);
            entry.check_place(self.keys.len(), tail_open, taken)?;
            self.keys.push(Key::declared(entry, self.read_only, line)?);
            Ok(Last::Key)
        } else {
            let tail_open = self.args.last().is_some_and(|a| a.variadic);
            entry.check_place(self.args.len(), tail_open, taken)?;
            self.args.push(Arg::declared(entry, line)?);
            Ok(Last::Arg)
        }
    }
}

/// Reads the header of a script whose lines are `lines`.
pub(crate) fn read_script_header(lines: &[&str]) -> Result<ScriptHeader, (usize, String)> {
    let read_only = shebang::read_only(lines.first().copied()).map_err(|m| (1, m))?;
    let summary = summary_of(lines.get(1).copied())
        .ok_or_else(|| (2, "second line must be `--- <summary>`".to_string()))?;
    let mut r = Reading::new(read_only);
    let end = read_lines(lines, 2, |line, l| r.line(line, l))?;
    let (returns, returns_doc) = r.returns.ok_or_else(|| {
        (
            end + 1,
            "header has no `-- RETURNS <type>: <meaning>` line".to_string(),
        )
    })?;
    check_refs(&r.args)?;
    Ok(ScriptHeader {
        read_only,
        summary,
        keys: r.keys,
        args: r.args,
        returns,
        returns_doc,
        lists: r.lists,
        idempotent: r.idempotent,
        includes: r.includes,
        needs: r.needs.unwrap_or_default(),
        end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<ScriptHeader, (usize, String)> {
        read_script_header(&text.lines().collect::<Vec<_>>())
    }

    #[test]
    fn a_header_hands_each_line_to_its_parser_and_continues_meanings() {
        let h = read(
            "#!lua\n--- Put\n-- KEYS[1] k string rw: a key\n--    more\n-- ARGV[1] n integer 0..9: n\n-- RETURNS integer: x\n--    and y\n-- WRITES SET\n-- IDEMPOTENT no: twice\n--    counts\n-- INCLUDE memory\n-- NEEDS hash_getex\n-- the body's first comment\nreturn 1\n",
        )
        .expect("valid");
        assert_eq!(
            (h.keys[0].doc.as_str(), h.returns_doc.as_str()),
            ("a key more", "x and y")
        );
        assert_eq!(h.idempotent.map(|d| d.doc), Some("twice counts".into()));
        assert_eq!(
            (h.includes, h.end, h.lists.writes.1),
            (vec![("memory".into(), 11)], 12, 8)
        );
        assert_eq!(h.needs, ["hash_getex"]);
    }

    #[test]
    fn a_header_is_refused_at_its_line() {
        let at = |text: &str| read(text).unwrap_err();
        assert_eq!(at("--- no shebang\n").0, 1);
        assert_eq!(at("#!lua\n-- KEYS[1] k: x\n").0, 2);
        assert_eq!(
            at("#!lua\n--- S\n--    orphan\n").1,
            "continuation line with nothing to continue"
        );
        assert!(
            at("#!lua\n--- S\n-- WRITES SET\n--    list\n")
                .1
                .contains("nothing to continue")
        );
        assert!(
            at("#!lua\n--- S\n-- TODO later\n")
                .1
                .contains("unknown header line `TODO`")
        );
        assert_eq!(
            at("#!lua\n--- S\n-- RETURNS integer: a\n-- RETURNS integer: b\n").0,
            4
        );
        assert_eq!(
            at("#!lua\n--- S\n-- KEYS[1] k string ro: a\n\nreturn 1\n"),
            (
                4,
                "header has no `-- RETURNS <type>: <meaning>` line".into()
            )
        );
        assert_eq!(
            at("#!lua\n--- S\n-- ARGV[1] a integer 0..b: x\n-- RETURNS integer: y\n").0,
            3
        );
        assert!(
            at("#!lua\n--- S\n-- KEYS[1] k string ro: a\n-- ARGV[1] k bool: b\n")
                .1
                .contains("duplicate name")
        );
    }
}
