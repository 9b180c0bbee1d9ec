//! The `WRITES`, `READS` and `ERRORS` lines: lists of upper-case words,
//! the commands each of the command table's kind.

use crate::commands::{self, Command};

/// The `WRITES`, `READS` and `ERRORS` lines of a header (a script's or an
/// include's) as read so far: each list with the line that gave it (0: none
/// did).
#[derive(Debug, Default)]
pub(crate) struct Lists {
    pub writes: (Vec<String>, usize),
    pub reads: (Vec<String>, usize),
    pub errors: (Vec<String>, usize),
}

impl Lists {
    /// Reads the list of a `WRITES`, `READS` or `ERRORS` (`word`) line
    /// given at `line`.
    pub(crate) fn read(&mut self, word: &str, rest: &str, line: usize) -> Result<(), String> {
        let slot = match word {
            "WRITES" => &mut self.writes,
            "READS" => &mut self.reads,
            "ERRORS" => &mut self.errors,
            other => unreachable!("`{other}` is no list line"),
        };
        if slot.1 != 0 {
            return Err(format!("{word} given twice"));
        }
        let list = if word == "ERRORS" {
            error_list(rest)?
        } else {
            command_list(word, rest)?
        };
        *slot = (list, line);
        Ok(())
    }

    /// The list `WRITES` or `READS` (`write` or not) that would hold `c`,
    /// and whether it does.
    pub(crate) fn lists(&self, c: &Command) -> (&'static str, bool) {
        let (list, names) = if c.write {
            ("WRITES", &self.writes.0)
        } else {
            ("READS", &self.reads.0)
        };
        (list, names.iter().any(|x| x == c.name))
    }

    /// `WRITES` and `READS`, each with its list and its line.
    pub(crate) fn commands(&self) -> [(&'static str, &[String], usize); 2] {
        [
            ("WRITES", &self.writes.0, self.writes.1),
            ("READS", &self.reads.0, self.reads.1),
        ]
    }
}

/// A header line's list of upper-case words (`ERRORS`, `WRITES`, `READS`).
fn upper_words<'a>(rest: &'a str, what: &str) -> Result<Vec<&'a str>, String> {
    let mut out = Vec::new();
    for word in rest.split_whitespace() {
        let word = word.trim_end_matches(',');
        if word.is_empty()
            || !word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
        {
            return Err(format!("{what} `{word}` must be UPPER_CASE"));
        }
        if out.contains(&word) {
            return Err(format!("{what} `{word}` is listed twice"));
        }
        out.push(word);
    }
    if out.is_empty() {
        return Err(format!("lists no {what}"));
    }
    Ok(out)
}

/// An `ERRORS` list: upper-case codes, as listed.
fn error_list(rest: &str) -> Result<Vec<String>, String> {
    Ok(upper_words(rest, "error code")
        .map_err(|m| format!("ERRORS {m}"))?
        .into_iter()
        .map(String::from)
        .collect())
}

/// A `WRITES` (`word`) or `READS` list: known commands of that kind, sorted.
fn command_list(word: &str, rest: &str) -> Result<Vec<String>, String> {
    let write = word == "WRITES";
    let mut list = Vec::new();
    for cmd in upper_words(rest, "command").map_err(|m| format!("{word} {m}"))? {
        let c = commands::lookup(cmd).ok_or_else(|| {
            format!("unknown command `{cmd}` (add it to crates/codegen/src/commands.rs)")
        })?;
        if c.write != write {
            return Err(format!(
                "`{cmd}` is {} command: list it in {}",
                if c.write { "a write" } else { "no write" },
                if c.write { "WRITES" } else { "READS" }
            ));
        }
        list.push(cmd.to_string());
    }
    list.sort();
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_hold_upper_case_words_once_each() {
        let mut lists = Lists::default();
        lists.read("ERRORS", " BADARG NOFILTER", 5).expect("valid");
        assert_eq!(lists.errors, (vec!["BADARG".into(), "NOFILTER".into()], 5));
        lists.read("WRITES", " SET, INCR", 6).expect("valid");
        assert_eq!(lists.writes.0, ["INCR", "SET"], "sorted");
        lists.read("READS", " GET", 7).expect("valid");
        let get = commands::lookup("GET").expect("GET");
        assert_eq!(lists.lists(get), ("READS", true));
        assert!(
            lists
                .read("READS", " PTTL", 8)
                .unwrap_err()
                .contains("READS given twice")
        );
        let refused = |word: &str, rest: &str| Lists::default().read(word, rest, 3).unwrap_err();
        assert!(
            refused("ERRORS", " bad_code")
                .contains("ERRORS error code `bad_code` must be UPPER_CASE")
        );
        assert!(refused("ERRORS", " A A").contains("listed twice"));
        assert!(refused("ERRORS", "").contains("lists no error code"));
        assert!(refused("WRITES", "").contains("WRITES lists no command"));
    }

    #[test]
    fn command_lists_hold_known_commands_of_their_kind() {
        let refused = |word: &str, rest: &str| Lists::default().read(word, rest, 3).unwrap_err();
        assert!(refused("WRITES", " FLUSHALL").contains("unknown command `FLUSHALL`"));
        assert!(refused("READS", " SET").contains("list it in WRITES"));
        assert!(refused("WRITES", " GET").contains("list it in READS"));
    }
}
