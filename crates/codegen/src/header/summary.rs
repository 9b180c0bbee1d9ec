//! The `--- <summary>` line: right after a script's shebang, an include's
//! first line.

/// The summary of a `--- <summary>` line; `None` when `line` is none or
/// its text is empty.
pub(crate) fn summary_of(line: Option<&str>) -> Option<String> {
    let text = line?.strip_prefix("--- ")?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::summary_of;

    #[test]
    fn a_summary_is_three_dashes_a_space_and_some_text() {
        assert_eq!(
            summary_of(Some("--- Take the lock ")).as_deref(),
            Some("Take the lock")
        );
        for bad in [
            None,
            Some("---"),
            Some("---   "),
            Some("-- KEYS[1]"),
            Some("---x"),
        ] {
            assert_eq!(summary_of(bad), None, "{bad:?}");
        }
    }
}
