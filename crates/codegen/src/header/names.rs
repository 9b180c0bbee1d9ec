//! The names a header gives: `snake_case`, no Rust keyword (a name becomes
//! a wrapper's parameter), not one of the names the generated checks use.

/// Whether `s` is a `snake_case` name: a lower-case letter, then lower-case
/// letters, digits and `_`.
pub(crate) fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// Names the generated checks use for arity problems (not argument names).
pub(crate) const ARITY_NAMES: &[&str] = &["keys", "argv"];

/// Refuses a name a `KEYS` or `ARGV` line may not give.
pub(crate) fn entry_name(name: &str) -> Result<(), String> {
    if !is_ident(name) || RUST_KEYWORDS.contains(&name) || ARITY_NAMES.contains(&name) {
        return Err(format!(
            "`{name}` is not a snake_case name (or is a Rust keyword, `keys` or `argv`)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_snake_case_and_free() {
        for ok in ["a", "lease_ms", "k2", "first_slot"] {
            assert!(entry_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "K", "2k", "lease-ms", "_a", "type", "fn", "keys", "argv",
        ] {
            assert!(entry_name(bad).is_err(), "{bad}");
        }
    }
}
