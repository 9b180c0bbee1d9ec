//! The first line of a script: `#!lua` (it may write) or
//! `#!lua flags=no-writes` (read-only).

/// Whether the script is read-only, from its first line.
pub(crate) fn read_only(first: Option<&str>) -> Result<bool, String> {
    match first.map(str::trim_end) {
        Some("#!lua") => Ok(false),
        Some("#!lua flags=no-writes") => Ok(true),
        _ => Err("first line must be `#!lua` or `#!lua flags=no-writes`".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::read_only;

    #[test]
    fn the_shebang_says_whether_the_script_writes() {
        assert_eq!(read_only(Some("#!lua")), Ok(false));
        assert_eq!(read_only(Some("#!lua ")), Ok(false));
        assert_eq!(read_only(Some("#!lua flags=no-writes")), Ok(true));
        for bad in [
            None,
            Some(""),
            Some("--- summary"),
            Some("#!lua flags=allow-oom"),
        ] {
            assert!(read_only(bad).is_err(), "{bad:?}");
        }
    }
}
