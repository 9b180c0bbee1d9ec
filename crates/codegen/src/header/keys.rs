//! The `KEYS[n] <name> <type>[,<type>...] <ro|rw>: <meaning>` line.

use super::entry::Entry;
use crate::types::KeyType;

/// One `KEYS` entry of a header.
#[derive(Debug, Clone)]
pub struct Key {
    pub name: String,
    pub doc: String,
    pub variadic: bool,
    /// The declared type; a variadic tail cycles through several.
    pub types: Vec<KeyType>,
    /// Declared `rw`.
    pub written: bool,
    /// Line of the declaration in the script.
    pub line: usize,
}

const KEY_TYPES_HELP: &str = "string | hash | set | zset | list | stream | any";

impl KeyType {
    const ALL: [KeyType; 7] = [
        Self::String,
        Self::Hash,
        Self::Set,
        Self::Zset,
        Self::List,
        Self::Stream,
        Self::Any,
    ];

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }
}

impl Key {
    /// The key a `KEYS` line at `line` declares, in a script that is
    /// `read_only` or not.
    pub(crate) fn declared(entry: &Entry, read_only: bool, line: usize) -> Result<Self, String> {
        let (types, access) = match entry.decl[..] {
            [types, access] => (types, access),
            [] | [_] => {
                return Err(format!(
                    "expected `KEYS[n] <name> <type> <ro|rw>: <meaning>` (type: {KEY_TYPES_HELP})"
                ));
            }
            [_, _, extra, ..] => return Err(format!("unexpected `{extra}` before `:`")),
        };
        let types: Vec<KeyType> = types
            .split(',')
            .map(|t| {
                KeyType::parse(t)
                    .ok_or_else(|| format!("unknown key type `{t}` ({KEY_TYPES_HELP})"))
            })
            .collect::<Result<_, _>>()?;
        if types.len() > 1 && !entry.variadic {
            return Err("only a variadic tail may cycle through several types".into());
        }
        let written = match access {
            "rw" => true,
            "ro" => false,
            other => return Err(format!("access must be `ro` or `rw`, found `{other}`")),
        };
        if written && read_only {
            return Err(format!(
                "key `{}` is `rw` in a `no-writes` script",
                entry.name
            ));
        }
        Ok(Key {
            name: entry.name.to_string(),
            doc: entry.doc.to_string(),
            variadic: entry.variadic,
            types,
            written,
            line,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::refusals::assert_refused;

    fn key(rest: &str, read_only: bool) -> Result<Key, String> {
        Key::declared(&Entry::parse("KEYS", rest).expect("an entry"), read_only, 3)
    }

    #[test]
    fn a_key_has_a_type_and_an_access() {
        let k = key("[1] lock string rw: the lock", false).expect("valid");
        assert_eq!(
            (k.types.as_slice(), k.written, k.line),
            (&[KeyType::String][..], true, 3)
        );
        let tail = key("[2..] slots hash,list rw: the ring", false).expect("valid");
        assert_eq!(tail.types, [KeyType::Hash, KeyType::List]);
        assert!(tail.variadic);
        assert!(!key("[1] k any ro: x", true).expect("valid").written);
    }

    #[test]
    fn a_key_declaration_is_refused_with_its_reason() {
        assert_refused(
            |rest| key(rest, false),
            &[
                ("[1] k: x", "<ro|rw>"),
                ("[1] k string: x", "<ro|rw>"),
                ("[1] k string rw extra: x", "unexpected `extra`"),
                ("[1] k bitmap rw: x", "unknown key type `bitmap`"),
                ("[1] k hash,list rw: x", "only a variadic tail"),
                ("[1] k string w: x", "`ro` or `rw`, found `w`"),
            ],
        );
        assert_refused(
            |rest| key(rest, true),
            &[("[1] k string rw: x", "`rw` in a `no-writes` script")],
        );
    }
}
