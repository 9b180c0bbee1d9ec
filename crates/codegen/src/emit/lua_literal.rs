//! Lua string literals in what the generator writes.

/// A Lua string literal.
pub(crate) fn lit(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::lit;

    #[test]
    fn a_literal_escapes_quotes_backslashes_and_newlines() {
        assert_eq!(lit("a'b\\c\nd"), "'a\\'b\\\\c\\nd'");
    }
}
