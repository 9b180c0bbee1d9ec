//! A problem the analyser finds: at a line of the script, or at a line of
//! one of its includes.

/// A problem in a script: at one of its lines, or (`include`, an index in
/// the script's `INCLUDE` list) at a line of one of its includes.
#[derive(Debug)]
pub(crate) struct Fault {
    pub line: usize,
    pub include: Option<usize>,
    pub message: String,
}

impl From<(usize, String)> for Fault {
    fn from((line, message): (usize, String)) -> Self {
        Self {
            line,
            include: None,
            message,
        }
    }
}

impl Fault {
    /// A problem at `line` of the script's include number `include`.
    pub(crate) fn in_include(include: usize, line: usize, message: String) -> Self {
        Self {
            line,
            include: Some(include),
            message,
        }
    }
}
