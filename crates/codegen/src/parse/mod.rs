//! The pipeline from a file to what the generator emits: the path gives a
//! script's place, [`header`](crate::header) reads its header,
//! [`analyse`](crate::analyse) reads its body against it, and the SHA1 of
//! the shipped text is taken; the includes first, in the order they
//! include each other.

mod include;
mod lua_dir;
mod script;

pub use include::{parse_include, parse_include_with};
pub use lua_dir::{list_scripts, parse_dir, parse_includes};
pub use script::{parse_script, parse_script_with};

use crate::analyse::Code;
use crate::error::HeaderError;
use crate::header::{Header, Lists};

/// A file of `lua/` as both parsers read it: its path relative to `lua/`,
/// its text and its lines.
struct LuaFile<'a> {
    file: &'a str,
    source: &'a str,
    lines: Vec<&'a str>,
}

impl<'a> LuaFile<'a> {
    fn new(file: &'a str, source: &'a str) -> Self {
        let lines = source.lines().collect();
        Self {
            file,
            source,
            lines,
        }
    }

    /// The problem `message` at `line` of the file (0: the file itself).
    fn error(&self, (line, message): (usize, String)) -> HeaderError {
        HeaderError::in_lua(self.file, line, message)
    }

    /// The body below a header of `end` lines: its byte offset, its code.
    fn body(&self, end: usize) -> Result<(usize, Code), HeaderError> {
        Code::below(self.source, &self.lines, end).map_err(|e| self.error(e))
    }

    /// The file's [`Header`], its body at `body_offset`, from what its
    /// header declares: its summary, lists and `INCLUDE` lines.
    fn header(
        &self,
        body_offset: usize,
        summary: String,
        lists: Lists,
        includes: Vec<(String, usize)>,
    ) -> Header {
        Header::of(
            self.file,
            self.source,
            body_offset,
            summary,
            lists,
            includes,
        )
    }
}
