//! The script header: the grammar every `lua/<pattern>/<op>.lua` and
//! every `lua/includes/<name>.lua` opens with, and the declarations it
//! reads into. This page is the reference a contributor writing a script
//! reads; each kind of header line has its own parser in this module, with
//! its tests beside it.
//!
//! # A script's header
//!
//! ```text
//! #!lua                                   first line: a script that may write (EVALSHA)
//! #!lua flags=no-writes                   first line: a read-only script (EVALSHA_RO)
//! --- <summary>                           one line, required, right after the shebang
//! -- KEYS[1] <name> <type> <access>: <meaning>
//! -- KEYS[3..] <name> <type>[,<type>...] <access>: <meaning>   a variadic tail (last KEYS line)
//! -- ARGV[1] <name> <arg type>: <meaning>
//! -- ARGV[2..] <name> <arg type>: <meaning>                    a variadic tail (last ARGV line)
//! -- RETURNS <type>: <meaning>            integer | integers | bulk | bulks | status | array
//! -- WRITES <CMD> [<CMD> ...]             the write commands the body calls
//! -- READS <CMD> [<CMD> ...]              the other commands the body calls
//! -- ERRORS <CODE> [<CODE> ...]           domain error codes the body raises with redis.error_reply
//! -- IDEMPOTENT yes|no|if <arg>: <why>    whether a resend after an unknown outcome is safe
//! -- INCLUDE <name>                       inline lua/includes/<name>.lua (one line per include)
//! -- NEEDS <capability> [<capability> ...] server capabilities its commands need (hash_field_ttl)
//! --    <more text>                       (three or more spaces) continues the line above
//! ```
//!
//! After the summary, the header is the run of lines that start with `-- `
//! and an upper-case word of two or more letters (`KEYS[1]`, `WRITES`), or
//! that continue one. The first other line starts the body: code, a blank
//! line, or a comment such as `-- the counter first`. An upper-case word
//! that names no kind of line above is refused, so that a misspelt
//! `-- WRTIES` is not silently a comment. `RETURNS` is required; each other
//! kind but `KEYS`, `ARGV` and `INCLUDE` appears at most once.
//!
//! * Key `<type>`: `string` (bitmaps are strings) | `hash` | `set` | `zset`
//!   | `list` | `stream` | `any`; a variadic tail may list several, which
//!   its keys cycle through (`hash,list`: hash, list, hash, list, ...).
//!   `<access>`: `ro` (only read) or `rw` (written).
//! * `<arg type>`:
//!   * `integer <lo>..<hi>`: a canonical decimal integer (no sign on zero,
//!     no leading zeros, no `+`, spaces, exponent or hex) from `lo` to `hi`
//!     inclusive; a bound is a literal of magnitude below 2^53, or another
//!     (fixed, constant-bounded) integer argument, optionally `+`/`-` a
//!     literal: `first_slot integer 0..shards-1`;
//!   * `int64`: a canonical decimal integer of the full int64 range (kept
//!     as a string: Lua numbers are doubles);
//!   * `float`: a finite number;
//!   * `bool`: `0` or `1`;
//!   * `enum <A>|<B>|...`: one of the listed words;
//!   * `string [nonempty|tagged]` | `bytes [nonempty|tagged]`: anything
//!     (not empty with `nonempty`); a Rust `&str` or `&[u8]`. `tagged`: not
//!     empty and carrying the hash tag of `KEYS[1]`, so that it shares the
//!     call's cluster slot — the shard channel a script `SPUBLISH`es on
//!     (a channel command's channel must be declared so: on a cluster a
//!     script may publish only in its keys' slot).
//! * `WRITES` / `READS`: commands of the table in `crates/codegen/src/commands.rs`
//!   (add a command there before a script calls it), each in its own list.
//! * `IDEMPOTENT`: whether the call may be sent again when its outcome is
//!   unknown (the connection died after the request was written): `yes`
//!   when running it a second time right after the first leaves the data as
//!   one run does, `no` when it does not (or the second reply would mislead
//!   the caller), `if <arg>` when it is so exactly when that fixed
//!   `integer`, `string` or `bytes` argument is neither empty nor `0` (an
//!   optional request id). The meaning says why. Required in a writing
//!   script; a `no-writes` script is idempotent by construction and may
//!   only say `yes`.
//! * `NEEDS`: the capabilities of `crate::core::caps` (`hash_field_ttl`,
//!   `hash_getex`, ...) whose commands the body calls, for a script that
//!   exists only for servers that have them (a command the server lacks
//!   fails the call, and its ACL probe fails too). The registry and the
//!   manifest carry the list; a caller runs the script only where the
//!   server has every capability listed, and the tests that run every
//!   script skip it, saying so, on a server that lacks one. It loads
//!   everywhere (`SCRIPT LOAD` and `FUNCTION LOAD` do not resolve commands).
//!
//! Names are `snake_case`, no Rust keyword, not `keys` or `argv` (the
//! generated checks' names for arity problems), and unique within a script.
//!
//! # What the body must agree with
//!
//! The header is the whole truth about the shipped script, so the build
//! reads the body too (`analyse`) and refuses:
//!
//! * a literal `KEYS[n]` / `ARGV[n]` that is not declared, and a declared
//!   one that the body never uses. A use is a literal `ARGV[n]` in the
//!   body, or an entry an included function reads with a literal index
//!   (`argv[2]`) of the whole `ARGV` the body passes it (the entries such a
//!   function reads must be declared too). A variadic tail must be read
//!   with a computed index (`KEYS[i]`) or `#KEYS` (passing the whole table
//!   to an included function counts);
//! * an `error_reply("CODE ...")` code not listed in `ERRORS`, and a listed
//!   code that is never raised; a body's `BADARG` detail starts with a
//!   declared name (or `keys` / `argv`);
//! * a `redis.call('CMD', ...)` that does not name its command literally,
//!   or names one the table does not know, and `WRITES` / `READS` that do
//!   not list exactly the commands the body calls; a `no-writes` script has
//!   neither writes nor `rw` keys, any other script has both;
//! * a command whose first argument is a declared key but that does not
//!   work on the key's declared type (`GET` on a `hash` key);
//! * a write that can fail on the stored value (`INCR` on a string that is
//!   no integer, an overflow) where another write can precede it.
//!
//! # Includes
//!
//! Logic that several scripts share lives once, in `lua/includes/<name>.lua`
//! (BullMQ's `commands/includes/` in spirit): a header, then nothing but
//! `local function <name>(<params>) ... end` definitions.
//!
//! ```text
//! --- <summary>                      one line, required, the first (no shebang)
//! -- WRITES <CMD> [<CMD> ...]        the write commands its functions call
//! -- READS <CMD> [<CMD> ...]         the other commands its functions call
//! -- ERRORS <CODE> [<CODE> ...]      the error codes they raise with redis.error_reply
//! -- INCLUDE <name>                  an include whose functions its functions call
//! local function <name>(<param>, ...)
//!   ...
//! end
//! ```
//!
//! A script's `-- INCLUDE <name>` inlines the include's functions into the
//! shipped script, right after the generated checks, between the lines
//! `-- included from lua/includes/<name>.lua ...` and `-- end of
//! lua/includes/<name>.lua`; so the SHA1, the exported bundle, the Functions
//! library and the generated clients all carry the complete script.
//!
//! * An include declares what its functions call and raise, checked both
//!   ways against them like a script's lists; its functions read no `KEYS`
//!   or `ARGV` (the script passes them as arguments), define no function
//!   and call none of their own include. An include may itself say
//!   `-- INCLUDE <other>` to call that one's functions (its lists then
//!   cover the other's, and a script that includes it ships the other's
//!   functions too, each include once, before those that include it);
//!   includes form no cycle, and two define no function name twice.
//! * The including script's `WRITES`, `READS` and `ERRORS` list exactly what
//!   its body and its includes call and raise. A command or code of an
//!   include the script does not list is refused at the include's line, as
//!   `lua/includes/<name>.lua:<line> (included by lua/<pattern>/<op>.lua):
//!   ...`.
//! * An include that is not found, one the header lists but whose functions
//!   the body never calls, one that no script includes, and a call of an
//!   included function whose include the header does not list are refused.
//!   The body uses an included function only by calling it, and defines no
//!   name of its own that an include defines.
//! * An include's `BADARG` detail is a name every including script declares,
//!   or `'BADARG ' .. <param>`, the parameter a string literal naming a key
//!   or argument at every call.
//! * Every call of an included function in the body stands for the commands
//!   the function calls, at that place and in the function's order, their
//!   first argument the call's argument for that parameter (`KEYS[1]` in
//!   `bulk_len_refusal(KEYS[1], ...)`): the key types, the order of writes,
//!   the ACL checks and the `TYPE` checks see them as if the body made them
//!   there. A key passed for a parameter the function uses otherwise (than
//!   as a command's first argument or in an error reply) counts as an
//!   access the checker does not follow.
//!
//! Every problem fails the build as `lua/<file>:<line>: <message>`
//! ([`HeaderError`](crate::HeaderError)).

mod argv;
mod bound;
mod entry;
mod idempotent;
mod include_header;
mod include_line;
mod keys;
mod lines;
mod lists;
mod names;
mod needs;
mod returns;
mod script_header;
mod shebang;
mod summary;

pub use argv::Arg;
pub use bound::{Bound, MAX_BOUND};
pub use idempotent::Idempotency;
pub use keys::Key;
pub use returns::ReturnType;

pub(crate) use idempotent::resolve as resolve_idempotency;
pub(crate) use include_header::{read_include_header, wanted_includes};
pub(crate) use lists::Lists;
pub(crate) use names::{ARITY_NAMES, is_ident};
pub(crate) use script_header::{ScriptHeader, read_script_header};

/// What the parsers' tests share: a refusal test is a table of inputs, each
/// with a part of the message it is refused with.
#[cfg(test)]
mod refusals {
    use std::fmt::Debug;

    /// `parse` refuses each input of `cases` with a message that holds the
    /// case's part.
    pub(super) fn assert_refused<T: Debug>(
        parse: impl Fn(&str) -> Result<T, String>,
        cases: &[(&str, &str)],
    ) {
        for &(input, part) in cases {
            let message = parse(input).expect_err(input);
            assert!(message.contains(part), "{input}: {message}");
        }
    }
}

/// What the header of a script and that of an include both declare, with
/// the file they head.
#[derive(Debug, Clone)]
pub struct Header {
    /// Path relative to `lua/`, with `/` separators.
    pub file: String,
    pub summary: String,
    /// The header's `ERRORS`, as listed.
    pub errors: Vec<String>,
    /// The header's `WRITES`, sorted.
    pub writes: Vec<String>,
    /// The header's `READS`, sorted.
    pub reads: Vec<String>,
    /// The header's `INCLUDE` names, in header order.
    pub includes: Vec<String>,
    /// The file's text.
    pub source: String,
    /// Byte offset of the body (the first line after the header) in `source`.
    pub body_offset: usize,
}

impl Header {
    /// The header of `file` (its `source`, whose body starts at
    /// `body_offset`) as read: its summary, lists and `INCLUDE` names.
    pub(crate) fn of(
        file: &str,
        source: &str,
        body_offset: usize,
        summary: String,
        lists: Lists,
        includes: Vec<(String, usize)>,
    ) -> Self {
        Self {
            file: file.to_string(),
            summary,
            errors: lists.errors.0,
            writes: lists.writes.0,
            reads: lists.reads.0,
            includes: includes.into_iter().map(|(n, _)| n).collect(),
            source: source.to_string(),
            body_offset,
        }
    }
}
