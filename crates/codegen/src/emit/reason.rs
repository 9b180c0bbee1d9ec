//! The reason a value outside an argument's declaration is refused with
//! (`BADARG <name> <reason>`): one text for the Lua checks, the Rust
//! wrappers and the registry (whose `reason` the manifest carries).

use crate::header::Arg;
use crate::types::ArgType;

impl Arg {
    /// The `BADARG <name> <reason>` reason of a value outside the
    /// declaration, shared by the Lua and the Rust checks; `None` when every
    /// value is accepted.
    pub fn reason(&self) -> Option<String> {
        Some(match self.ty {
            ArgType::Integer => format!(
                "must be an integer from {} to {}",
                self.min.as_ref().expect("integers have ranges").text(),
                self.max.as_ref().expect("integers have ranges").text()
            ),
            ArgType::Int64 => "must be a canonical decimal int64".into(),
            ArgType::Float => "must be a finite number".into(),
            ArgType::Bool => "must be 0 or 1".into(),
            ArgType::Enum => match self.values.as_slice() {
                [a, b] => format!("must be {a} or {b}"),
                values => format!("must be one of {}", values.join(", ")),
            },
            ArgType::String | ArgType::Bytes if self.tagged => {
                "must carry the hash tag of the first key".into()
            }
            ArgType::String | ArgType::Bytes if self.non_empty => "must not be empty".into(),
            ArgType::String | ArgType::Bytes => return None,
        })
    }
}
