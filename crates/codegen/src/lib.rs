//! The script header grammar and the code generator behind `build.rs`.
//!
//! A build-dependency of `redis-patterns`: its `build.rs` turns every
//! `lua/<pattern>/<op>.lua` into a registry entry, a typed wrapper and the
//! shipped script ("generated checks + included functions + the file's
//! body") with [`parse_dir`], [`generate`] and [`ScriptSpec::shipped`], and
//! all of them into one Redis Functions library with [`library`]. The
//! golden-file tests in `tests/` run the generator on fixtures. Nothing
//! here ships in the library.
//!
//! The grammar of a header, and what the body must agree with, is
//! [`header`]: the reference for whoever writes a script.
//!
//! # How it is built
//!
//! * `header`: one parser per kind of header line, into the declarations
//!   ([`Key`], [`Arg`], [`Bound`], [`ReturnType`], [`Idempotency`]);
//! * `analyse`: the Lua body analyser — the body's uses, calls and errors
//!   checked against the header, and what the generated checks test
//!   ([`ScriptSpec::type_checked`], [`ScriptSpec::acl_checks`]);
//! * `emit`: the Lua checks and the shipped scripts, the Rust registry,
//!   constants, wrappers and dispatcher, the Functions library;
//! * `parse`: the pipeline from `lua/` to [`ScriptSpec`]s and
//!   [`Include`]s, each include parsed after those it includes.
//!
//! # Generated checks
//!
//! The shipped script is the file with generated checks (and then its
//! includes' functions) inserted between the header and the body
//! ([`ScriptSpec::shipped`]); its SHA1 is the `EVALSHA` handle. Before the
//! body runs they refuse, writing nothing:
//!
//! * a wrong number of keys or arguments (`BADARG keys ...`, `BADARG
//!   <name> missing`, `BADARG argv ...`);
//! * every argument outside its declared type and range, variadic tails
//!   element by element (`BADARG <name> <reason>`, the reason the typed Rust
//!   wrapper gives too: [`Arg::reason`]);
//! * in a writing script, a user whose ACL denies a write command, or a
//!   command that may run after a write (`NOPERM`, via
//!   `redis.acl_check_cmd`);
//! * a key that holds another type than declared (`WRONGTYPE`, via
//!   `TYPE`) — unless the body's own first command on that key, which runs
//!   before any write, already checks its type (proved from the body's
//!   structure: see [`ScriptSpec::type_checked`]).
//!
//! # The Functions library
//!
//! [`library`] turns the same shipped scripts into one Redis Functions
//! library ([`LIBRARY`]) with one function per script named
//! `<pattern>_<op>` ([`ScriptSpec::function_name`]): the shipped script
//! without its shebang line, as the body of a callback whose parameters are
//! `KEYS` and `ARGV`, registered with the `no-writes` flag when the shebang
//! says `flags=no-writes`. The checks and the body are the same bytes, so
//! an `FCALL` answers exactly as an `EVALSHA` of the script.

pub mod header;

mod analyse;
mod commands;
mod emit;
mod error;
pub mod guide;
mod include;
mod parse;
mod script;
mod types;

pub use analyse::AclCheck;
pub use commands::{COMMANDS, Command};
pub use emit::{LIBRARY, generate, library, sha1_hex};
pub use error::HeaderError;
pub use header::{Arg, Bound, Header, Idempotency, Key, MAX_BOUND, ReturnType};
pub use include::{Function, INCLUDES, Include};
pub use parse::{
    list_scripts, parse_dir, parse_include, parse_include_with, parse_includes, parse_script,
    parse_script_with,
};
pub use script::ScriptSpec;
pub use types::{ArgType, KeyType};

/// The source of [`KeyType`] and [`ArgType`]: `build.rs` writes it to
/// `$OUT_DIR/header_types.rs`, which the library's `src/core/script.rs`
/// includes, so that the generator and the library share one definition.
pub const HEADER_TYPES: &str = include_str!("types.rs");
