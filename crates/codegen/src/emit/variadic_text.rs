//! How a header entry reads in lists and indexes: a variadic tail is
//! marked with a trailing `..` (`members..`, `KEYS[3..]`).

/// A header entry as lists and indexes show it: `text`, or `text..` for a
/// variadic tail (`members..`, `KEYS[3..]`).
pub(crate) fn variadic_text(text: impl std::fmt::Display, variadic: bool) -> String {
    if variadic {
        format!("{text}..")
    } else {
        text.to_string()
    }
}
