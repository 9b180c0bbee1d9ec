//! A problem with a script or an include, as the build reports it.

/// A header or layout problem, reported as `file:line: message`, or as
/// `lua/includes/<name>.lua:line (included by lua/<pattern>/<op>.lua):
/// message` for a problem of a script with what one of its includes does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderError {
    pub file: String,
    pub line: usize,
    pub message: String,
    /// The script (`lua/<pattern>/<op>.lua`) whose include `file` is, when
    /// the problem is the script's use of it.
    pub included_by: Option<String>,
}

impl HeaderError {
    /// A problem at `line` of `lua/<file>` (`file` relative to `lua/`).
    pub(crate) fn in_lua(file: &str, line: usize, message: String) -> Self {
        Self {
            file: format!("lua/{file}"),
            line,
            message,
            included_by: None,
        }
    }
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.included_by {
            Some(by) => write!(
                f,
                "{}:{} (included by {by}): {}",
                self.file, self.line, self.message
            ),
            None => write!(f, "{}:{}: {}", self.file, self.line, self.message),
        }
    }
}
