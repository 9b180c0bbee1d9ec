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
