// The types a script header declares for its keys and its arguments, in
// one definition: the generator compiles this file (crates/codegen/src/
// types.rs) and exports its text as `HEADER_TYPES`, which build.rs writes
// to $OUT_DIR/header_types.rs for the library's src/core/script.rs to
// include. Plain items only (no inner attributes, no links into either
// crate), so that it compiles and documents the same in both.

/// The Redis type of a key, as its header declares it (bitmaps are strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// A string (a bitmap too).
    String,
    /// A hash.
    Hash,
    /// A set.
    Set,
    /// A sorted set.
    Zset,
    /// A list.
    List,
    /// A stream.
    Stream,
    /// Any type: not checked.
    Any,
}

impl KeyType {
    /// The name used in headers, in the manifest and by `TYPE`.
    pub fn name(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Hash => "hash",
            Self::Set => "set",
            Self::Zset => "zset",
            Self::List => "list",
            Self::Stream => "stream",
            Self::Any => "any",
        }
    }
}

/// The type of one `ARGV` entry, as its header declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    /// A canonical decimal integer within the declared range (`min` to
    /// `max`, inclusive).
    Integer,
    /// A canonical decimal integer of the whole int64 range (kept as a
    /// string by the script).
    Int64,
    /// A finite number.
    Float,
    /// `0` or `1`.
    Bool,
    /// One of the declared words (`values`).
    Enum,
    /// Text (not empty when declared `nonempty`).
    String,
    /// Bytes (not empty when declared `nonempty`).
    Bytes,
}

impl ArgType {
    /// The name used in headers and in the manifest.
    pub fn name(self) -> &'static str {
        match self {
            Self::Integer => "integer",
            Self::Int64 => "int64",
            Self::Float => "float",
            Self::Bool => "bool",
            Self::Enum => "enum",
            Self::String => "string",
            Self::Bytes => "bytes",
        }
    }
}
