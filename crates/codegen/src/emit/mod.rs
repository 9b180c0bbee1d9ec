//! What the generator writes from the parsed scripts: the shipped scripts
//! with their Lua checks ([`shipped`], [`checks`]), the Rust registry,
//! constants, wrappers and dispatcher ([`rust`]), the Redis Functions
//! library ([`functions`]), and the argument reasons all of them and the
//! manifest share ([`reason`]).

mod checks;
mod functions;
pub(crate) mod lua_literal;
mod reason;
mod rust;
mod shipped;
mod variadic_text;

pub use functions::{LIBRARY, library};
pub use rust::generate;
pub use shipped::sha1_hex;

pub(crate) use shipped::inline_all;
