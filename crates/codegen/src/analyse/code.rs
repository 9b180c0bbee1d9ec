//! A body as code: its tokens and their block structure.

use super::structure::Structure;
use super::tokens::{LineError, Token, tokenize};

/// The tokens of a body (numbered from its first line) and their blocks.
#[derive(Debug)]
pub(crate) struct Code {
    pub toks: Vec<Token>,
    pub structure: Structure,
}

impl Code {
    /// The body below a header of `header_end` lines (of `lines`, the lines
    /// of `source`): its byte offset in `source`, and its code.
    pub(crate) fn below(
        source: &str,
        lines: &[&str],
        header_end: usize,
    ) -> Result<(usize, Self), LineError> {
        let body_offset = lines[..header_end]
            .iter()
            .map(|l| l.len() + 1)
            .sum::<usize>()
            .min(source.len());
        let toks = tokenize(&source[body_offset..], header_end + 1)?;
        let structure = Structure::of(&toks)?;
        Ok((body_offset, Self { toks, structure }))
    }
}
