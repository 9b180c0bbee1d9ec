//! The `INCLUDE <name>` line: one include, named once.

use super::names::is_ident;

/// The include an `-- INCLUDE<rest>` line names, refused when it is no
/// `snake_case` name or one of `listed` already.
pub(crate) fn included<'a>(rest: &'a str, listed: &[(String, usize)]) -> Result<&'a str, String> {
    let name = rest.trim();
    if !is_ident(name) {
        return Err(
            "expected `-- INCLUDE <name>` (one snake_case name: lua/includes/<name>.lua)".into(),
        );
    }
    if listed.iter().any(|(n, _)| n == name) {
        return Err(format!("include `{name}` is listed twice"));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::included;

    #[test]
    fn an_include_is_named_once() {
        assert_eq!(included(" memory ", &[]), Ok("memory"));
        assert!(
            included(" two names", &[])
                .unwrap_err()
                .contains("one snake_case name")
        );
        assert!(included("", &[]).is_err());
        let listed = [("memory".to_string(), 3)];
        assert!(
            included(" memory", &listed)
                .unwrap_err()
                .contains("listed twice")
        );
    }
}
