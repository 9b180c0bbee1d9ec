//! The `NEEDS <capability> ...` line: the server capabilities a script's
//! commands need (`hash_field_ttl`), so that a server without them is
//! never asked to run it (its commands do not exist there).

use super::names::is_ident;

/// The capabilities a `-- NEEDS<rest>` line names, in order; refused when
/// it names none, one that is no `snake_case` name, or one twice.
pub(crate) fn needed(rest: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for name in rest.split_whitespace() {
        if !is_ident(name) {
            return Err(format!(
                "`{name}` is no capability name (snake_case, as `hash_field_ttl` of crate::core::caps)"
            ));
        }
        if out.iter().any(|n| n == name) {
            return Err(format!("capability `{name}` is listed twice"));
        }
        out.push(name.to_string());
    }
    if out.is_empty() {
        return Err("expected `-- NEEDS <capability> [<capability> ...]`".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::needed;

    #[test]
    fn a_needs_line_names_capabilities_once_each() {
        assert_eq!(
            needed(" hash_field_ttl hash_getex"),
            Ok(vec!["hash_field_ttl".into(), "hash_getex".into()])
        );
        assert!(needed("").unwrap_err().contains("expected"));
        assert!(
            needed(" HashTtl")
                .unwrap_err()
                .contains("no capability name")
        );
        assert!(needed(" a_b a_b").unwrap_err().contains("listed twice"));
    }
}
