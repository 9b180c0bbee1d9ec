//! What a `KEYS` and an `ARGV` line share: `[n]` or `[n..]`, a name, the
//! table's own declaration, then `: <meaning>`.

use super::names::entry_name;

/// A `KEYS` or `ARGV` line, read up to its table's own declaration.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Entry<'a> {
    /// `KEYS` or `ARGV`.
    pub table: &'a str,
    /// The 1-based index.
    pub n: usize,
    /// `[n..]`: a variadic tail.
    pub variadic: bool,
    pub name: &'a str,
    /// The words between the name and `:` (`string rw`, `integer 0..9`).
    pub decl: Vec<&'a str>,
    /// The meaning, trimmed.
    pub doc: &'a str,
}

/// Parses `[n]` or `[n..]` right after `KEYS`/`ARGV`; returns (n, variadic, rest).
fn parse_index(s: &str) -> Option<(usize, bool, &str)> {
    let s = s.strip_prefix('[')?;
    let close = s.find(']')?;
    let (inner, rest) = (&s[..close], &s[close + 1..]);
    let (num, variadic) = match inner.strip_suffix("..") {
        Some(n) => (n, true),
        None => (inner, false),
    };
    let n: usize = num.parse().ok()?;
    Some((n, variadic, rest))
}

impl<'a> Entry<'a> {
    /// Reads the line `-- <table><rest>`.
    pub(crate) fn parse(table: &'a str, rest: &'a str) -> Result<Self, String> {
        let (n, variadic, rest) =
            parse_index(rest).ok_or_else(|| format!("expected `{table}[n]` or `{table}[n..]`"))?;
        let (decl, doc) = rest
            .split_once(':')
            .ok_or("expected `: <meaning>` after the name")?;
        let doc = doc.trim();
        if doc.is_empty() {
            return Err("the meaning must not be empty".into());
        }
        let mut decl = decl.split_whitespace();
        let name = decl.next().ok_or("missing name")?;
        entry_name(name)?;
        Ok(Self {
            table,
            n,
            variadic,
            name,
            decl: decl.collect(),
            doc,
        })
    }

    /// Refuses the entry where it stands: after a variadic tail of its
    /// table (`tail_open`), with another index than the next one (`count`
    /// entries come before it), or with a name `taken` already.
    pub(crate) fn check_place(
        &self,
        count: usize,
        tail_open: bool,
        taken: bool,
    ) -> Result<(), String> {
        let table = self.table;
        if tail_open {
            return Err(format!("nothing may follow the variadic {table} entry"));
        }
        if self.n != count + 1 {
            return Err(format!(
                "expected {table}[{}], found {table}[{}]",
                count + 1,
                self.n
            ));
        }
        if taken {
            return Err(format!("duplicate name `{}`", self.name));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::refusals::assert_refused;

    #[test]
    fn an_entry_has_an_index_a_name_and_a_meaning() {
        let e = Entry::parse("KEYS", "[3..] slots hash,list rw: the ring").expect("valid");
        assert_eq!(
            e,
            Entry {
                table: "KEYS",
                n: 3,
                variadic: true,
                name: "slots",
                decl: vec!["hash,list", "rw"],
                doc: "the ring"
            }
        );
        assert_refused(
            |rest| Entry::parse("ARGV", rest).map(|_| ()),
            &[
                ("1 n integer 0..9: x", "`ARGV[n]` or `ARGV[n..]`"),
                ("[x] n integer 0..9: x", "`ARGV[n]`"),
                ("[1] n integer 0..9 x", "`: <meaning>`"),
                ("[1] n integer 0..9:  ", "must not be empty"),
                ("[1] : x", "missing name"),
                ("[1] Name bool: x", "snake_case"),
            ],
        );
    }

    #[test]
    fn entries_come_in_order_once_each() {
        let e = Entry::parse("KEYS", "[2] k string ro: a key").expect("valid");
        assert!(e.check_place(1, false, false).is_ok());
        assert!(
            e.check_place(0, false, false)
                .unwrap_err()
                .contains("expected KEYS[1], found KEYS[2]")
        );
        assert!(
            e.check_place(1, true, false)
                .unwrap_err()
                .contains("nothing may follow")
        );
        assert!(
            e.check_place(1, false, true)
                .unwrap_err()
                .contains("duplicate name `k`")
        );
    }
}
