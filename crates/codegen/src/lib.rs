//! The script header grammar and the code generator behind `build.rs`.
//!
//! A build-dependency of `redis-patterns`: its `build.rs` turns every
//! `lua/<pattern>/<op>.lua` into a registry entry, a typed wrapper and the
//! shipped script ("generated checks + included functions + the file's
//! body") with
//! [`parse_dir`], [`generate`] and [`ScriptSpec::shipped`]. The golden-file
//! tests in `tests/` run the generator on fixtures. Nothing here ships in
//! the library.
//!
//! # Header grammar
//!
//! A script starts with a header of comment lines; the first line that does
//! not start with `--` (after the shebang) ends it. Every line is one of:
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
//! --    <more text>                       (three or more spaces) continues the line above
//! ```
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
//!
//! * `IDEMPOTENT`: whether the call may be sent again when its outcome is
//!   unknown (the connection died after the request was written): `yes`
//!   when running it a second time right after the first leaves the data as
//!   one run does, `no` when it does not (or the second reply would mislead
//!   the caller), `if <arg>` when it is so exactly when that fixed
//!   `integer`, `string` or `bytes` argument is neither empty nor `0` (an
//!   optional request id). The meaning says why. Required in a writing
//!   script; a `no-writes` script is idempotent by construction and may
//!   only say `yes`.
//!
//! Names are `snake_case` and unique within a script. The checker also reads
//! the body:
//!
//! * every literal `KEYS[n]` / `ARGV[n]` must be declared and every declared
//!   one used; a variadic tail must be read with a computed index
//!   (`KEYS[i]`) or `#KEYS`;
//! * every `error_reply("CODE ...")` code must be listed in `ERRORS` and
//!   every listed code must appear in the body; a body's `BADARG` detail
//!   starts with a declared name (or `keys` / `argv`);
//! * every `redis.call('CMD', ...)` must name its command literally, the
//!   command must be known (`commands.rs`), and `WRITES` / `READS` must
//!   list exactly the commands the body calls; a `no-writes` script has
//!   neither writes nor `rw` keys, any other script has both;
//! * a command whose first argument is a declared key must work on the
//!   key's declared type (`GET` on a `hash` key is refused);
//! * a write that can fail on the stored value (`INCR` on a string that is
//!   no integer, an overflow) must be one that no other write can precede.
//!
//! # Includes
//!
//! Logic that several scripts share lives once, in `lua/includes/<name>.lua`
//! (BullMQ's `commands/includes/` in spirit): a header of `--- <summary>`
//! then `WRITES`, `READS` and `ERRORS` lines, and nothing but `local function
//! <name>(<params>) ... end` definitions ([`Include`], [`parse_include`]).
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
//!   its body and its includes call and raise (so the header stays the whole
//!   truth about the shipped script). A command or code of an include the
//!   script does not list is refused at the include's line, as
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
//!   the ACL checks and the `TYPE` checks below see them as if the body made
//!   them there. A key passed for a parameter the function uses otherwise
//!   (than as a command's first argument or in an error reply) counts as
//!   an access the checker does not follow.
//!
//! # Generated checks
//!
//! The shipped script is the file with generated checks (and then its
//! includes' functions) inserted between the header and the body
//! ([`ScriptSpec::shipped`]); its SHA1 is the `EVALSHA` handle. Before the body runs they refuse, writing nothing:
//!
//! * a wrong number of keys or arguments (`BADARG keys ...`, `BADARG
//!   <name> missing`, `BADARG argv ...`);
//! * every argument outside its declared type and range, variadic tails
//!   element by element (`BADARG <name> <reason>`, the reason the typed Rust
//!   wrapper gives too);
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

mod checks;
mod commands;
mod functions;
mod include;
mod lua;
mod rust;
mod types;

use std::path::{Path, PathBuf};

pub use commands::{COMMANDS, Command};
pub use functions::{LIBRARY, library};
pub use include::{Function, Include, parse_include, parse_include_with};
pub use rust::generate;
pub use types::{ArgType, KeyType};

/// The source of [`KeyType`] and [`ArgType`]: `build.rs` writes it to
/// `$OUT_DIR/header_types.rs`, which the library's `src/core/script.rs`
/// includes, so that the generator and the library share one definition.
pub const HEADER_TYPES: &str = include_str!("types.rs");

use lua::{Structure, Tok, Token};

impl KeyType {
    const ALL: [KeyType; 7] = [
        Self::String,
        Self::Hash,
        Self::Set,
        Self::Zset,
        Self::List,
        Self::Stream,
        Self::Any,
    ];
    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }
    /// The variant's name in the generated Rust (`KeyType::Zset`).
    fn variant(self) -> String {
        format!("{self:?}")
    }
}

impl ArgType {
    const ALL: [ArgType; 7] = [
        Self::Integer,
        Self::Int64,
        Self::Float,
        Self::Bool,
        Self::Enum,
        Self::String,
        Self::Bytes,
    ];
    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }
    /// The variant's name in the generated Rust (`ArgType::Int64`).
    fn variant(self) -> String {
        format!("{self:?}")
    }
}

const TYPES_HELP: &str =
    "integer <lo>..<hi> | int64 | float | bool | enum <a>|<b> | string | bytes";

/// The largest magnitude of an integer bound: every integer up to it is
/// exact in a Lua number (a double).
pub const MAX_BOUND: i64 = (1 << 53) - 1;

/// One end of an integer range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bound {
    Value(i64),
    /// Another argument's value plus `offset`.
    Arg {
        name: String,
        offset: i64,
    },
}

impl Bound {
    fn parse(s: &str) -> Option<Self> {
        if let Ok(v) = s.parse::<i64>() {
            // Canonical literals only: `007` or `+5` would read ambiguously.
            return (v.to_string() == s).then_some(Self::Value(v));
        }
        let split = s.find(['+', '-']).unwrap_or(s.len());
        let (name, rest) = s.split_at(split);
        if !is_ident(name) {
            return None;
        }
        let offset = match rest {
            "" => 0,
            _ => {
                let k: i64 = rest[1..].parse().ok()?;
                if k.to_string() != rest[1..] || k == 0 {
                    return None;
                }
                if rest.starts_with('-') { -k } else { k }
            }
        };
        Some(Self::Arg {
            name: name.to_string(),
            offset,
        })
    }
    /// As written in the header (`5`, `shards-1`).
    pub fn text(&self) -> String {
        match self {
            Self::Value(v) => v.to_string(),
            Self::Arg { name, offset: 0 } => name.clone(),
            Self::Arg { name, offset } if *offset > 0 => format!("{name}+{offset}"),
            Self::Arg { name, offset } => format!("{name}{offset}"),
        }
    }
    fn value(&self) -> Option<i64> {
        match self {
            Self::Value(v) => Some(*v),
            Self::Arg { .. } => None,
        }
    }
    fn arg(&self) -> Option<&str> {
        match self {
            Self::Arg { name, .. } => Some(name),
            Self::Value(_) => None,
        }
    }
}

/// One `KEYS` entry of a header.
#[derive(Debug, Clone)]
pub struct Key {
    pub name: String,
    pub doc: String,
    pub variadic: bool,
    /// The declared type; a variadic tail cycles through several.
    pub types: Vec<KeyType>,
    /// Declared `rw`.
    pub written: bool,
    /// Line of the declaration in the script.
    pub line: usize,
}

/// One `ARGV` entry of a header.
#[derive(Debug, Clone)]
pub struct Arg {
    pub name: String,
    pub ty: ArgType,
    pub doc: String,
    pub variadic: bool,
    /// Inclusive range of an `integer`.
    pub min: Option<Bound>,
    pub max: Option<Bound>,
    /// `string nonempty` / `bytes nonempty` (and `tagged`).
    pub non_empty: bool,
    /// `string tagged` / `bytes tagged`: a name that carries the hash tag of
    /// `KEYS[1]` (so it shares the call's slot), such as the shard channel a
    /// script publishes on; never empty.
    pub tagged: bool,
    /// The words of an `enum`.
    pub values: Vec<String>,
    /// Line of the declaration in the script.
    pub line: usize,
}

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

    /// The names of the arguments this one's range refers to.
    fn refs(&self) -> impl Iterator<Item = &str> {
        self.min.iter().chain(&self.max).filter_map(Bound::arg)
    }
}

/// The reply type of a script, and the Rust type its wrapper decodes it to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnType {
    Integer,
    Integers,
    Bulk,
    Bulks,
    Status,
    Array,
}

impl ReturnType {
    const ALL: [ReturnType; 6] = [
        Self::Integer,
        Self::Integers,
        Self::Bulk,
        Self::Bulks,
        Self::Status,
        Self::Array,
    ];
    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }
    pub fn name(self) -> &'static str {
        match self {
            Self::Integer => "integer",
            Self::Integers => "integers",
            Self::Bulk => "bulk",
            Self::Bulks => "bulks",
            Self::Status => "status",
            Self::Array => "array",
        }
    }
    fn rust(self) -> &'static str {
        match self {
            Self::Integer => "i64",
            Self::Integers => "Vec<i64>",
            Self::Bulk => "Option<Vec<u8>>",
            Self::Bulks => "Vec<Option<Vec<u8>>>",
            Self::Status => "String",
            Self::Array => "redis::Value",
        }
    }
}

/// Whether a call may be sent again when its outcome is unknown (the
/// header's `IDEMPOTENT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Idempotency {
    /// Always: a second run right after the first leaves the data as one run does.
    Always,
    /// Never: a resend could apply twice (or mislead the caller).
    Never,
    /// When the named argument is neither empty nor `0` (an optional request id).
    IfArg(String),
}

impl Idempotency {
    /// As written in the header: `yes`, `no`, `if <arg>`.
    pub fn text(&self) -> String {
        match self {
            Self::Always => "yes".into(),
            Self::Never => "no".into(),
            Self::IfArg(arg) => format!("if {arg}"),
        }
    }
}

/// A command the generated checks test with `redis.acl_check_cmd`.
#[derive(Debug, Clone)]
pub struct AclCheck {
    pub command: &'static Command,
    /// The key the probe names (a Lua expression, `KEYS[2]`).
    pub key: String,
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

/// A parsed script: its place in the bundle, its header and what the
/// generated checks test.
#[derive(Debug, Clone)]
pub struct ScriptSpec {
    /// `<pattern>.<op>`
    pub name: String,
    pub pattern: String,
    pub op: String,
    /// Its file, summary, lists and text.
    pub header: Header,
    pub keys: Vec<Key>,
    pub args: Vec<Arg>,
    pub returns: ReturnType,
    pub returns_doc: String,
    pub read_only: bool,
    /// The header's `IDEMPOTENT` (`Always` for a `no-writes` script that
    /// does not say).
    pub idempotent: Idempotency,
    /// The header's reason for [`ScriptSpec::idempotent`].
    pub idempotent_doc: String,
    /// For each key, whether the generated checks call `TYPE` on it (for a
    /// variadic tail: on every key of it). `false` for an `any` key and for
    /// a key whose type the body's own first command on it checks before
    /// any write can run.
    pub type_checked: Vec<bool>,
    /// The commands the generated checks test with `redis.acl_check_cmd`:
    /// in a writing script every write command, and every other command
    /// that may run after a write.
    pub acl_checks: Vec<AclCheck>,
    /// What [`ScriptSpec::shipped`] inserts after the generated checks: the
    /// body of each include, between marker lines ([`Include::inlined`]).
    pub inlined: String,
    /// Lowercase hex SHA1 of [`ScriptSpec::shipped`]: the `EVALSHA` handle.
    pub sha1_hex: String,
}

impl ScriptSpec {
    /// The script as shipped: the file's header, the generated checks, the
    /// functions of its includes, then the file's body (so line 1 stays
    /// the shebang).
    pub fn shipped(&self) -> String {
        let source = &self.header.source;
        let (head, body) = source.split_at(self.header.body_offset);
        let mut out = String::with_capacity(source.len() + self.inlined.len() + 2048);
        out.push_str(head);
        if !head.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&checks::lua_checks(self));
        out.push_str(&self.inlined);
        out.push_str(body);
        out
    }

    /// The error codes a call may answer with as domain errors: `BADARG`
    /// (the generated checks), then the header's other `ERRORS`.
    pub fn errors(&self) -> Vec<String> {
        let listed = self.header.errors.iter().filter(|c| *c != "BADARG");
        std::iter::once("BADARG".to_string())
            .chain(listed.cloned())
            .collect()
    }

    /// The generated checks alone (what [`ScriptSpec::shipped`] inserts).
    pub fn checks(&self) -> String {
        checks::lua_checks(self)
    }

    fn fixed_keys(&self) -> usize {
        self.keys.iter().filter(|k| !k.variadic).count()
    }

    fn fixed_args(&self) -> usize {
        self.args.iter().filter(|a| !a.variadic).count()
    }

    /// The argument checks in the order both sides run them: arguments
    /// whose range names no other argument first, in header order, then the
    /// others (which refer to arguments checked already).
    pub fn check_order(&self) -> Vec<usize> {
        let (plain, refs): (Vec<usize>, Vec<usize>) =
            (0..self.args.len()).partition(|&i| self.args[i].refs().next().is_none());
        plain.into_iter().chain(refs).collect()
    }

    /// Whether some other argument's range refers to argument `i`.
    fn is_referenced(&self, i: usize) -> bool {
        let name = &self.args[i].name;
        self.args.iter().any(|a| a.refs().any(|r| r == name))
    }
}

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

/// A problem in a script: at one of its lines, or (`include`, an index in
/// [`Header::includes`]) at a line of one of its includes.
#[derive(Debug)]
struct Fault {
    line: usize,
    include: Option<usize>,
    message: String,
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

/// A header entry as lists and indexes show it: `text`, or `text..` for a
/// variadic tail (`members..`, `KEYS[3..]`).
pub(crate) fn tail(text: impl std::fmt::Display, variadic: bool) -> String {
    if variadic {
        format!("{text}..")
    } else {
        text.to_string()
    }
}

pub(crate) fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// Names the generated checks use for arity problems (not argument names).
const ARITY_NAMES: &[&str] = &["keys", "argv"];

/// Parses `[n]` or `[n..]` right after `KEYS`/`ARGV`; returns (n, variadic, rest).
fn parse_index(s: &str) -> Option<(usize, bool, &str)> {
    let s = s.strip_prefix('[')?;
    let close = s.find(']')?;
    let (inner, rest) = (&s[..close], &s[close + 1..]);
    let (num, variadic) = match inner.strip_suffix("..") {
        Some(n) => (n, true),
        None => (inner, false),
    };
    let n: usize = num.parse().ok()?;
    Some((n, variadic, rest))
}

/// A header line's list of upper-case words (`ERRORS`, `WRITES`, `READS`).
pub(crate) fn upper_words<'a>(rest: &'a str, what: &str) -> Result<Vec<&'a str>, String> {
    let mut out = Vec::new();
    for word in rest.split_whitespace() {
        let word = word.trim_end_matches(',');
        if word.is_empty()
            || !word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
        {
            return Err(format!("{what} `{word}` must be UPPER_CASE"));
        }
        if out.contains(&word) {
            return Err(format!("{what} `{word}` is listed twice"));
        }
        out.push(word);
    }
    if out.is_empty() {
        return Err(format!("lists no {what}"));
    }
    Ok(out)
}

/// An `ERRORS` list: upper-case codes, as listed.
pub(crate) fn error_list(rest: &str) -> Result<Vec<String>, String> {
    Ok(upper_words(rest, "error code")
        .map_err(|m| format!("ERRORS {m}"))?
        .into_iter()
        .map(String::from)
        .collect())
}

/// The summary of a `--- <summary>` line; `None` when `line` is none or
/// its text is empty.
pub(crate) fn summary_of(line: Option<&str>) -> Option<String> {
    let text = line?.strip_prefix("--- ")?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The body below a header of `header_end` lines (of `lines`, the lines of
/// `source`): its byte offset in `source`, its tokens (numbered from line
/// `header_end + 1`) and their block structure.
pub(crate) fn body_below(
    source: &str,
    lines: &[&str],
    header_end: usize,
) -> Result<(usize, Vec<Token>, Structure), (usize, String)> {
    let body_offset = lines[..header_end]
        .iter()
        .map(|l| l.len() + 1)
        .sum::<usize>()
        .min(source.len());
    let toks = lua::tokenize(&source[body_offset..], header_end + 1)?;
    let structure = Structure::of(&toks)?;
    Ok((body_offset, toks, structure))
}

/// The `WRITES`, `READS` and `ERRORS` lines of a header (a script's or an
/// include's) as read so far: each list with the line that gave it (0: none
/// did).
#[derive(Default)]
pub(crate) struct Lists {
    pub writes: (Vec<String>, usize),
    pub reads: (Vec<String>, usize),
    pub errors: (Vec<String>, usize),
}

impl Lists {
    /// Reads the list of a `WRITES`, `READS` or `ERRORS` (`word`) line
    /// given at `line`.
    pub(crate) fn read(&mut self, word: &str, rest: &str, line: usize) -> Result<(), String> {
        let slot = match word {
            "WRITES" => &mut self.writes,
            "READS" => &mut self.reads,
            "ERRORS" => &mut self.errors,
            other => unreachable!("`{other}` is no list line"),
        };
        if slot.1 != 0 {
            return Err(format!("{word} given twice"));
        }
        let list = if word == "ERRORS" {
            error_list(rest)?
        } else {
            command_list(word, rest)?
        };
        *slot = (list, line);
        Ok(())
    }
}

/// The include `-- INCLUDE <name>` names, among those `known`.
pub(crate) fn find_include<'a>(known: &'a [Include], name: &str) -> Result<&'a Include, String> {
    known
        .iter()
        .find(|i| i.name == name)
        .ok_or_else(|| format!("include `{name}` not found: there is no lua/includes/{name}.lua"))
}

/// A `WRITES` (`word`) or `READS` list: known commands of that kind, sorted.
pub(crate) fn command_list(word: &str, rest: &str) -> Result<Vec<String>, String> {
    let write = word == "WRITES";
    let mut list = Vec::new();
    for cmd in upper_words(rest, "command").map_err(|m| format!("{word} {m}"))? {
        let c = commands::lookup(cmd).ok_or_else(|| {
            format!("unknown command `{cmd}` (add it to crates/codegen/src/commands.rs)")
        })?;
        if c.write != write {
            return Err(format!(
                "`{cmd}` is {} command: list it in {}",
                if c.write { "a write" } else { "no write" },
                if c.write { "WRITES" } else { "READS" }
            ));
        }
        list.push(cmd.to_string());
    }
    list.sort();
    Ok(list)
}

/// What an `ARGV` line declares after the name.
struct ArgDecl {
    ty: ArgType,
    min: Option<Bound>,
    max: Option<Bound>,
    non_empty: bool,
    tagged: bool,
    values: Vec<String>,
}

/// Parses the declaration of an argument after its name.
fn parse_arg_decl(decl: &[&str]) -> Result<ArgDecl, String> {
    let t = decl
        .first()
        .ok_or_else(|| format!("missing type ({TYPES_HELP})"))?;
    let ty = ArgType::parse(t).ok_or_else(|| format!("unknown type `{t}` ({TYPES_HELP})"))?;
    let rest = &decl[1..];
    let (mut min, mut max, mut non_empty, mut values) = (None, None, false, Vec::new());
    let mut tagged = false;
    match ty {
        ArgType::Integer => {
            let range = rest
                .first()
                .ok_or("an integer needs a range `<lo>..<hi>` (e.g. `0..999999999999999`)")?;
            let (lo, hi) = range
                .split_once("..")
                .ok_or_else(|| format!("expected a range `<lo>..<hi>`, found `{range}`"))?;
            let parse = |s: &str| {
                Bound::parse(s).ok_or_else(|| {
                    format!(
                        "bound `{s}` is neither an integer nor `<arg>`, `<arg>-<n>`, `<arg>+<n>`"
                    )
                })
            };
            let (lo, hi) = (parse(lo)?, parse(hi)?);
            for b in [&lo, &hi] {
                let magnitude = match b {
                    Bound::Value(v) => *v,
                    Bound::Arg { offset, .. } => *offset,
                };
                if magnitude.unsigned_abs() > MAX_BOUND as u64 {
                    return Err(format!(
                        "bound `{}` is beyond 2^53-1, where Lua numbers stop being exact",
                        b.text()
                    ));
                }
            }
            if let (Some(a), Some(b)) = (lo.value(), hi.value())
                && a > b
            {
                return Err(format!("empty range {a}..{b}"));
            }
            min = Some(lo);
            max = Some(hi);
            if let Some(extra) = rest.get(1) {
                return Err(format!("unexpected `{extra}` after the range"));
            }
        }
        ArgType::Enum => {
            let list = rest
                .first()
                .ok_or("an enum lists its words: `enum <a>|<b>`")?;
            for v in list.split('|') {
                if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(format!("enum word `{v}` must be letters, digits or `_`"));
                }
                if values.iter().any(|x| x == v) {
                    return Err(format!("enum word `{v}` is listed twice"));
                }
                values.push(v.to_string());
            }
            if values.len() < 2 {
                return Err("an enum lists at least two words".into());
            }
            if let Some(extra) = rest.get(1) {
                return Err(format!("unexpected `{extra}` after the enum words"));
            }
        }
        ArgType::String | ArgType::Bytes => match rest {
            [] => {}
            ["nonempty"] => non_empty = true,
            ["tagged"] => (non_empty, tagged) = (true, true),
            [other, ..] => {
                return Err(format!(
                    "unexpected `{other}` (only `nonempty` or `tagged` may follow `{t}`)"
                ));
            }
        },
        ArgType::Int64 | ArgType::Float | ArgType::Bool => {
            if let Some(extra) = rest.first() {
                return Err(format!("unexpected `{extra}` after `{t}`"));
            }
        }
    }
    Ok(ArgDecl {
        ty,
        min,
        max,
        non_empty,
        tagged,
        values,
    })
}

/// Parses one script file that includes nothing. `file` is its path
/// relative to `lua/`.
pub fn parse_script(file: &str, source: &str) -> Result<ScriptSpec, HeaderError> {
    parse_script_with(file, source, &[])
}

/// Parses one script file; `known` are the includes (`lua/includes/`) its
/// `-- INCLUDE` lines may name. `file` is its path relative to `lua/`.
pub fn parse_script_with(
    file: &str,
    source: &str,
    known: &[Include],
) -> Result<ScriptSpec, HeaderError> {
    let err = |line: usize, message: String| HeaderError::in_lua(file, line, message);
    let parts: Vec<&str> = file.trim_end_matches(".lua").split('/').collect();
    if parts.len() != 2 || !file.ends_with(".lua") {
        return Err(err(0, "a script lives at lua/<pattern>/<op>.lua".into()));
    }
    let (pattern, op) = (parts[0].to_string(), parts[1].to_string());
    if !is_ident(&pattern) || !is_ident(&op) {
        return Err(err(0, "pattern and op names must be snake_case".into()));
    }
    if pattern == INCLUDES {
        return Err(err(
            0,
            "lua/includes/ holds includes (shared functions), not scripts".into(),
        ));
    }
    let lines: Vec<&str> = source.lines().collect();
    let read_only = match lines.first().map(|l| l.trim_end()) {
        Some("#!lua") => false,
        Some("#!lua flags=no-writes") => true,
        _ => {
            return Err(err(
                1,
                "first line must be `#!lua` or `#!lua flags=no-writes`".into(),
            ));
        }
    };
    let summary = summary_of(lines.get(1).copied())
        .ok_or_else(|| err(2, "second line must be `--- <summary>`".into()))?;

    let mut keys: Vec<Key> = Vec::new();
    let mut args: Vec<Arg> = Vec::new();
    let mut returns: Option<(ReturnType, String)> = None;
    let mut lists = Lists::default();
    let mut idempotent: Option<(Idempotency, String, usize)> = None;
    let mut includes: Vec<(String, usize)> = Vec::new();
    // Which doc string a continuation line extends.
    #[derive(Clone, Copy)]
    enum Last {
        None,
        Key,
        Arg,
        Returns,
        Idempotent,
    }
    let mut last = Last::None;
    let mut header_end = lines.len();
    for (idx, raw) in lines.iter().enumerate().skip(2) {
        let lineno = idx + 1;
        let Some(text) = raw.strip_prefix("--") else {
            header_end = idx;
            break;
        };
        if text.starts_with("   ") {
            let more = text.trim();
            let doc = match last {
                Last::None => {
                    return Err(err(
                        lineno,
                        "continuation line with nothing to continue".into(),
                    ));
                }
                Last::Key => &mut keys.last_mut().expect("key exists").doc,
                Last::Arg => &mut args.last_mut().expect("arg exists").doc,
                Last::Returns => &mut returns.as_mut().expect("returns exists").1,
                Last::Idempotent => &mut idempotent.as_mut().expect("idempotent exists").1,
            };
            doc.push(' ');
            doc.push_str(more);
            continue;
        }
        let text = text
            .strip_prefix(' ')
            .ok_or_else(|| err(lineno, "header lines start with `-- `".into()))?;
        let (word, rest) = text.split_at(text.find(['[', ' ']).unwrap_or(text.len()));
        match word {
            "KEYS" | "ARGV" => {
                let is_key = word == "KEYS";
                let (n, variadic, rest) = parse_index(rest)
                    .ok_or_else(|| err(lineno, format!("expected `{word}[n]` or `{word}[n..]`")))?;
                let (decl, doc) = rest
                    .split_once(':')
                    .ok_or_else(|| err(lineno, "expected `: <meaning>` after the name".into()))?;
                let doc = doc.trim();
                if doc.is_empty() {
                    return Err(err(lineno, "the meaning must not be empty".into()));
                }
                let decl: Vec<&str> = decl.split_whitespace().collect();
                let name = *decl
                    .first()
                    .ok_or_else(|| err(lineno, "missing name".into()))?;
                if !is_ident(name) || RUST_KEYWORDS.contains(&name) || ARITY_NAMES.contains(&name) {
                    return Err(err(
                        lineno,
                        format!(
                            "`{name}` is not a snake_case name (or is a Rust keyword, `keys` or `argv`)"
                        ),
                    ));
                }
                let count = if is_key { keys.len() } else { args.len() };
                let tail_open = if is_key {
                    keys.last().is_some_and(|k| k.variadic)
                } else {
                    args.last().is_some_and(|a| a.variadic)
                };
                if tail_open {
                    return Err(err(
                        lineno,
                        format!("nothing may follow the variadic {word} entry"),
                    ));
                }
                if n != count + 1 {
                    return Err(err(
                        lineno,
                        format!("expected {word}[{}], found {word}[{n}]", count + 1),
                    ));
                }
                if keys.iter().any(|k| k.name == name) || args.iter().any(|a| a.name == name) {
                    return Err(err(lineno, format!("duplicate name `{name}`")));
                }
                if is_key {
                    let (types, access) = match decl[1..] {
                        [types, access] => (types, access),
                        [] | [_] => {
                            return Err(err(
                                lineno,
                                "expected `KEYS[n] <name> <type> <ro|rw>: <meaning>` (type: string | hash | set | zset | list | stream | any)".into(),
                            ));
                        }
                        [_, _, extra, ..] => {
                            return Err(err(lineno, format!("unexpected `{extra}` before `:`")));
                        }
                    };
                    let types: Vec<KeyType> = types
                        .split(',')
                        .map(|t| {
                            KeyType::parse(t).ok_or_else(|| {
                                err(lineno, format!("unknown key type `{t}` (string | hash | set | zset | list | stream | any)"))
                            })
                        })
                        .collect::<Result<_, _>>()?;
                    if types.len() > 1 && !variadic {
                        return Err(err(
                            lineno,
                            "only a variadic tail may cycle through several types".into(),
                        ));
                    }
                    let written = match access {
                        "rw" => true,
                        "ro" => false,
                        other => {
                            return Err(err(
                                lineno,
                                format!("access must be `ro` or `rw`, found `{other}`"),
                            ));
                        }
                    };
                    if written && read_only {
                        return Err(err(
                            lineno,
                            format!("key `{name}` is `rw` in a `no-writes` script"),
                        ));
                    }
                    keys.push(Key {
                        name: name.to_string(),
                        doc: doc.to_string(),
                        variadic,
                        types,
                        written,
                        line: lineno,
                    });
                    last = Last::Key;
                } else {
                    let d = parse_arg_decl(&decl[1..]).map_err(|m| err(lineno, m))?;
                    args.push(Arg {
                        name: name.to_string(),
                        ty: d.ty,
                        doc: doc.to_string(),
                        variadic,
                        min: d.min,
                        max: d.max,
                        non_empty: d.non_empty,
                        tagged: d.tagged,
                        values: d.values,
                        line: lineno,
                    });
                    last = Last::Arg;
                }
            }
            "RETURNS" => {
                if returns.is_some() {
                    return Err(err(lineno, "RETURNS given twice".into()));
                }
                let (ty, doc) = rest
                    .split_once(':')
                    .ok_or_else(|| err(lineno, "expected `RETURNS <type>: <meaning>`".into()))?;
                let ty = ReturnType::parse(ty.trim()).ok_or_else(|| {
                    err(lineno, format!("unknown return type `{}` (integer | integers | bulk | bulks | status | array)", ty.trim()))
                })?;
                if doc.trim().is_empty() {
                    return Err(err(lineno, "the meaning must not be empty".into()));
                }
                returns = Some((ty, doc.trim().to_string()));
                last = Last::Returns;
            }
            "IDEMPOTENT" => {
                if idempotent.is_some() {
                    return Err(err(lineno, "IDEMPOTENT given twice".into()));
                }
                let usage = "expected `IDEMPOTENT yes|no|if <arg>: <why>`";
                let (decl, doc) = rest
                    .split_once(':')
                    .ok_or_else(|| err(lineno, usage.into()))?;
                let words: Vec<&str> = decl.split_whitespace().collect();
                let value = match words.as_slice() {
                    ["yes"] => Idempotency::Always,
                    ["no"] => Idempotency::Never,
                    ["if", arg] => Idempotency::IfArg(arg.to_string()),
                    _ => return Err(err(lineno, usage.into())),
                };
                if doc.trim().is_empty() {
                    return Err(err(
                        lineno,
                        "the meaning (why a resend is or is not safe) must not be empty".into(),
                    ));
                }
                if read_only && value != Idempotency::Always {
                    return Err(err(
                        lineno,
                        "a `no-writes` script is idempotent: it may only say `IDEMPOTENT yes`"
                            .into(),
                    ));
                }
                idempotent = Some((value, doc.trim().to_string(), lineno));
                last = Last::Idempotent;
            }
            "WRITES" | "READS" | "ERRORS" => {
                lists.read(word, rest, lineno).map_err(|m| err(lineno, m))?;
                last = Last::None;
            }
            "INCLUDE" => {
                let name = rest.trim();
                if !is_ident(name) {
                    return Err(err(
                        lineno,
                        "expected `-- INCLUDE <name>` (one snake_case name: lua/includes/<name>.lua)"
                            .into(),
                    ));
                }
                if includes.iter().any(|(n, _)| n == name) {
                    return Err(err(lineno, format!("include `{name}` is listed twice")));
                }
                includes.push((name.to_string(), lineno));
                last = Last::None;
            }
            other => {
                return Err(err(
                    lineno,
                    format!(
                        "unknown header line `{other}` (KEYS | ARGV | RETURNS | WRITES | READS | ERRORS | IDEMPOTENT | INCLUDE)"
                    ),
                ));
            }
        }
    }
    let (returns, returns_doc) = returns.ok_or_else(|| {
        err(
            header_end + 1,
            "header has no `-- RETURNS <type>: <meaning>` line".into(),
        )
    })?;
    // Ranges that name another argument: a fixed integer with constant bounds.
    for a in &args {
        for r in a.refs() {
            let target = args.iter().find(|b| b.name == r).ok_or_else(|| {
                err(
                    a.line,
                    format!("range of `{}` names `{r}`, which is no argument", a.name),
                )
            })?;
            if target.ty != ArgType::Integer
                || target.variadic
                || target.refs().next().is_some()
                || target.name == a.name
            {
                return Err(err(
                    a.line,
                    format!(
                        "range of `{}` may only name a fixed integer argument with a constant range, not `{r}`",
                        a.name
                    ),
                ));
            }
        }
    }

    let (body_offset, toks, structure) =
        body_below(source, &lines, header_end).map_err(|(l, m)| err(l, m))?;
    let mut spec = ScriptSpec {
        name: format!("{pattern}.{op}"),
        pattern,
        op,
        header: Header {
            file: file.to_string(),
            summary,
            errors: Vec::new(),
            writes: Vec::new(),
            reads: Vec::new(),
            includes: includes.iter().map(|(n, _)| n.clone()).collect(),
            source: source.to_string(),
            body_offset,
        },
        keys,
        args,
        returns,
        returns_doc,
        read_only,
        idempotent: Idempotency::Always,
        idempotent_doc: String::new(),
        type_checked: Vec::new(),
        acl_checks: Vec::new(),
        inlined: String::new(),
        sha1_hex: String::new(),
    };
    let mut resolved: Vec<&Include> = Vec::with_capacity(includes.len());
    for (name, line) in &includes {
        resolved.push(find_include(known, name).map_err(|m| err(*line, m))?);
    }
    spec.inlined = inline_all(&resolved, known);
    let fault = |f: Fault| match f.include {
        None => err(f.line, f.message),
        Some(k) => HeaderError {
            included_by: Some(format!("lua/{file}")),
            ..HeaderError::in_lua(&resolved[k].header.file, f.line, f.message)
        },
    };
    let mut body = Body::scan(&toks).map_err(|(l, m)| err(l, m))?;
    let names: Vec<&str> = (spec.keys.iter().map(|k| k.name.as_str()))
        .chain(spec.args.iter().map(|a| a.name.as_str()))
        .chain(ARITY_NAMES.iter().copied())
        .collect();
    body.scan_includes(&toks, &resolved, &includes, known, &names)
        .map_err(fault)?;
    check_uses(&spec, &body).map_err(|(l, m)| err(l, m))?;
    let Lists {
        writes: (writes, writes_line),
        reads: (reads, reads_line),
        errors: (errors, errors_line),
    } = lists;
    check_errors(&spec, &body, &resolved, &errors, errors_line).map_err(fault)?;
    check_commands(
        &spec,
        &body,
        &resolved,
        (&writes, writes_line),
        (&reads, reads_line),
    )
    .map_err(fault)?;
    spec.header.writes = writes;
    spec.header.reads = reads;
    spec.header.errors = errors;
    analyse(&mut spec, &body, &toks, &structure).map_err(fault)?;
    (spec.idempotent, spec.idempotent_doc) =
        check_idempotent(&spec, idempotent, header_end + 1).map_err(|(l, m)| err(l, m))?;
    spec.sha1_hex = sha1_hex(spec.shipped().as_bytes());
    Ok(spec)
}

/// The functions of `listed` and of the includes they include, each once,
/// an include after those it includes.
fn inline_all(listed: &[&Include], known: &[Include]) -> String {
    fn visit<'a>(
        inc: &'a Include,
        known: &'a [Include],
        done: &mut Vec<&'a str>,
        out: &mut String,
    ) {
        if done.contains(&inc.name.as_str()) {
            return;
        }
        for name in &inc.header.includes {
            let dep = known
                .iter()
                .find(|i| &i.name == name)
                .expect("an include's includes were resolved when it was parsed");
            visit(dep, known, done, out);
        }
        done.push(&inc.name);
        out.push_str(&inc.inlined());
    }
    let mut done = Vec::new();
    let mut out = String::new();
    for inc in listed {
        visit(inc, known, &mut done, &mut out);
    }
    out
}

/// The header's `IDEMPOTENT`: required in a writing script; `if <arg>`
/// names a fixed `integer`, `string` or `bytes` argument.
fn check_idempotent(
    spec: &ScriptSpec,
    declared: Option<(Idempotency, String, usize)>,
    header_end: usize,
) -> Result<(Idempotency, String), (usize, String)> {
    let Some((value, doc, line)) = declared else {
        if spec.read_only {
            return Ok((
                Idempotency::Always,
                "a no-writes script changes nothing".into(),
            ));
        }
        return Err((
            header_end,
            "a writing script declares `-- IDEMPOTENT yes|no|if <arg>: <why>`: whether a resend after an unknown outcome is safe".into(),
        ));
    };
    if let Idempotency::IfArg(name) = &value {
        let arg = spec.args.iter().find(|a| &a.name == name).ok_or_else(|| {
            (
                line,
                format!("IDEMPOTENT if `{name}`: no argument has that name"),
            )
        })?;
        if arg.variadic || !matches!(arg.ty, ArgType::Integer | ArgType::String | ArgType::Bytes) {
            return Err((
                line,
                format!(
                    "IDEMPOTENT if `{name}`: it must name a fixed integer, string or bytes argument"
                ),
            ));
        }
    }
    Ok((value, doc))
}

/// What the first argument of a `redis.call` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FirstArg {
    /// A literal `KEYS[n]` (1-based).
    Key(usize),
    /// A literal `ARGV[n]` (1-based): a channel command's channel.
    Arg(usize),
    Other,
}

/// Where a command an included function calls comes from.
#[derive(Debug, Clone)]
struct Via {
    /// Index in [`Header::includes`] (of the script).
    include: usize,
    /// Line of the command in the include.
    line: usize,
    function: String,
}

/// One `redis.call('CMD', ...)` or `redis.pcall` of the body; or one
/// command of an included function, at the body's call of the function.
#[derive(Debug, Clone)]
struct CallSite {
    /// Token index of `redis` (of the function's name for an included one).
    at: usize,
    line: usize,
    command: &'static Command,
    first: FirstArg,
    /// Token index of the `KEYS` of a [`FirstArg::Key`].
    key_at: Option<usize>,
    /// `Some` for a command of an included function.
    via: Option<Via>,
    /// Within its included function, a write of that function may run
    /// before it.
    after_own_write: bool,
    /// Within its included function, it runs whenever the function does
    /// (always `true` in the body itself).
    unconditional_in_fn: bool,
}

impl CallSite {
    /// A problem with this command: at its line, or at its line in the
    /// include (naming the function and where the body calls it).
    fn fault(&self, message: String) -> Fault {
        match &self.via {
            None => Fault {
                line: self.line,
                include: None,
                message,
            },
            Some(v) => Fault {
                line: v.line,
                include: Some(v.include),
                message: format!(
                    "{message} (in `{}`, called at line {})",
                    v.function, self.line
                ),
            },
        }
    }
}

/// A use of `KEYS` or `ARGV` in the body.
#[derive(Debug, Clone, Copy)]
struct Use {
    at: usize,
    line: usize,
    /// `Some(n)` for a literal index, `None` for a computed one or the
    /// whole table.
    index: Option<usize>,
    /// `#KEYS`: the table's length, not an entry.
    length: bool,
    /// Inside the arguments of `redis.error_reply(...)`.
    in_error_reply: bool,
    /// The whole argument (`KEYS[n]`) of a call of an included function:
    /// `Some(escapes)`, whether the function uses that parameter otherwise
    /// than as a command's first argument or in an error reply.
    include_arg: Option<bool>,
}

/// One `redis.error_reply('CODE ...')`.
#[derive(Debug, Clone)]
pub(crate) struct ErrorSite {
    pub code: String,
    /// The detail's first word.
    pub detail: Option<String>,
    pub line: usize,
    /// Token index of `error_reply`.
    pub at: usize,
}

/// What the checker reads from a body.
#[derive(Debug, Default)]
pub(crate) struct Body {
    pub keys: Vec<Use>,
    pub argv: Vec<Use>,
    pub calls: Vec<CallSite>,
    pub error_codes: Vec<ErrorSite>,
}

/// For each token, whether it is inside the arguments of
/// `error_reply( ... )`.
pub(crate) fn error_reply_spans(toks: &[Token]) -> Vec<bool> {
    let mut in_reply = vec![false; toks.len()];
    for i in 0..toks.len() {
        if toks[i].is_name("error_reply") && toks.get(i + 1).is_some_and(|t| t.is_sym("(")) {
            let mut depth = 0;
            let mut j = i + 1;
            while j < toks.len() {
                if toks[j].is_sym("(") {
                    depth += 1;
                } else if toks[j].is_sym(")") {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                in_reply[j] = true;
                j += 1;
            }
        }
    }
    in_reply
}

/// The literal `KEYS[n]` / `ARGV[n]` spanning exactly `toks[from..to]`.
fn literal_entry(toks: &[Token], from: usize, to: usize) -> Option<(&'static str, usize)> {
    match &toks[from..to] {
        [
            t,
            open,
            Token {
                tok: Tok::Num(n), ..
            },
            close,
        ] if open.is_sym("[") && close.is_sym("]") => {
            let table = if t.is_name("KEYS") {
                "KEYS"
            } else if t.is_name("ARGV") {
                "ARGV"
            } else {
                return None;
            };
            Some((table, n.parse().ok()?))
        }
        _ => None,
    }
}

/// The arguments of the call whose `(` is at `open`: token ranges, and the
/// index of the closing `)`.
pub(crate) fn call_args(toks: &[Token], open: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    let mut args = Vec::new();
    let mut depth = 0;
    let mut start = open + 1;
    for (j, t) in toks.iter().enumerate().skip(open + 1) {
        match &t.tok {
            Tok::Sym("(" | "[" | "{") => depth += 1,
            Tok::Sym(")") if depth == 0 => {
                if j > start {
                    args.push((start, j));
                }
                return Some((args, j));
            }
            Tok::Sym(")" | "]" | "}") => depth -= 1,
            Tok::Sym(",") if depth == 0 => {
                args.push((start, j));
                start = j + 1;
            }
            _ => {}
        }
    }
    None
}

impl Body {
    pub(crate) fn scan(toks: &[Token]) -> Result<Self, (usize, String)> {
        let mut body = Body::default();
        let in_reply = error_reply_spans(toks);
        for (i, t) in toks.iter().enumerate() {
            if t.is_name("error_reply")
                && toks.get(i + 1).is_some_and(|t| t.is_sym("("))
                && let Some(Tok::Str(s)) = toks.get(i + 2).map(|t| &t.tok)
            {
                let mut words = s.split(' ');
                body.error_codes.push(ErrorSite {
                    code: words.next().unwrap_or("").to_string(),
                    detail: words.next().map(String::from),
                    line: t.line,
                    at: i,
                });
            }
        }
        for (i, t) in toks.iter().enumerate() {
            let field = i > 0 && (toks[i - 1].is_sym(".") || toks[i - 1].is_sym(":"));
            for (table, list) in [("KEYS", &mut body.keys), ("ARGV", &mut body.argv)] {
                if !t.is_name(table) || field {
                    continue;
                }
                let length = i > 0 && toks[i - 1].is_sym("#");
                let index = match (toks.get(i + 1), toks.get(i + 2), toks.get(i + 3)) {
                    (
                        Some(open),
                        Some(Token {
                            tok: Tok::Num(n), ..
                        }),
                        Some(close),
                    ) if open.is_sym("[") && close.is_sym("]") => n.parse::<usize>().ok(),
                    _ => None,
                };
                // `#KEYS[1]` is the length of one entry.
                let length = length && index.is_none();
                list.push(Use {
                    at: i,
                    line: t.line,
                    index,
                    length,
                    in_error_reply: in_reply[i],
                    include_arg: None,
                });
            }
            if t.is_name("redis")
                && toks.get(i + 1).is_some_and(|t| t.is_sym("."))
                && toks
                    .get(i + 2)
                    .is_some_and(|t| t.is_name("call") || t.is_name("pcall"))
                && toks.get(i + 3).is_some_and(|t| t.is_sym("("))
            {
                let Some(Tok::Str(cmd)) = toks.get(i + 4).map(|t| &t.tok) else {
                    return Err((
                        t.line,
                        "`redis.call` must name its command as a string literal (the header lists the commands a script calls)".into(),
                    ));
                };
                let upper = cmd.to_ascii_uppercase();
                let command = commands::lookup(&upper).ok_or_else(|| {
                    (
                        t.line,
                        format!(
                            "unknown command `{upper}` (add it to crates/codegen/src/commands.rs)"
                        ),
                    )
                })?;
                let literal = toks
                    .get(i + 5)
                    .filter(|c| c.is_sym(","))
                    .and_then(|_| toks.get(i + 10))
                    .filter(|after| after.is_sym(",") || after.is_sym(")"))
                    .and_then(|_| literal_entry(toks, i + 6, i + 10));
                let first = match literal {
                    Some(("KEYS", n)) => FirstArg::Key(n),
                    Some(("ARGV", n)) if command.channel => FirstArg::Arg(n),
                    _ => FirstArg::Other,
                };
                body.calls.push(CallSite {
                    at: i,
                    line: t.line,
                    command,
                    first,
                    key_at: matches!(first, FirstArg::Key(_)).then_some(i + 6),
                    via: None,
                    after_own_write: false,
                    unconditional_in_fn: true,
                });
            }
        }
        Ok(body)
    }

    /// Adds the body's calls of included functions: each is the commands
    /// the function calls, there (their first argument the call's
    /// argument for that parameter). Refuses a function of an include the
    /// header does not list, a listed include none of whose functions is
    /// called, and uses of an included function other than calls.
    fn scan_includes(
        &mut self,
        toks: &[Token],
        includes: &[&Include],
        listed: &[(String, usize)],
        known: &[Include],
        names: &[&str],
    ) -> Result<(), Fault> {
        // Names the body defines itself (`local function f`, `local a, b`).
        let mut locals: Vec<&str> = Vec::new();
        for (i, t) in toks.iter().enumerate() {
            if !t.is_name("local") {
                continue;
            }
            let mut j = i + 1;
            if toks.get(j).is_some_and(|t| t.is_name("function")) {
                j += 1;
            }
            while let Some(Token {
                tok: Tok::Name(n), ..
            }) = toks.get(j)
            {
                locals.push(n);
                if !toks.get(j + 1).is_some_and(|t| t.is_sym(",")) {
                    break;
                }
                j += 2;
            }
        }
        let mut used = vec![false; includes.len()];
        for (i, t) in toks.iter().enumerate() {
            let Tok::Name(name) = &t.tok else { continue };
            if i > 0 && (toks[i - 1].is_sym(".") || toks[i - 1].is_sym(":")) {
                continue;
            }
            let found = includes
                .iter()
                .enumerate()
                .find_map(|(k, inc)| inc.function(name).map(|f| (k, f)));
            let Some((k, f)) = found else {
                if toks.get(i + 1).is_some_and(|t| t.is_sym("("))
                    && !locals.contains(&name.as_str())
                    && let Some(inc) = known.iter().find(|inc| inc.function(name).is_some())
                {
                    return Err(Fault::from((
                        t.line,
                        format!(
                            "`{name}` is a function of lua/{}: add `-- INCLUDE {}` to the header",
                            inc.header.file, inc.name
                        ),
                    )));
                }
                continue;
            };
            let inc = includes[k];
            if locals.contains(&name.as_str()) || (i > 0 && toks[i - 1].is_name("function")) {
                return Err(Fault::from((
                    t.line,
                    format!(
                        "`{name}` is defined here and by lua/{} (INCLUDE {}): rename one",
                        inc.header.file, inc.name
                    ),
                )));
            }
            let args = toks
                .get(i + 1)
                .filter(|t| t.is_sym("("))
                .and_then(|_| call_args(toks, i + 1));
            let Some((args, _)) = args else {
                return Err(Fault::from((
                    t.line,
                    format!(
                        "`{name}` (lua/{}) is only ever called, by name: `{name}(...)`",
                        inc.header.file
                    ),
                )));
            };
            if args.len() > f.params.len() {
                return Err(Fault::from((
                    t.line,
                    format!(
                        "`{name}` takes {} arguments ({}), not {}",
                        f.params.len(),
                        f.params.join(", "),
                        args.len()
                    ),
                )));
            }
            used[k] = true;
            let entry = |p: usize| {
                args.get(p)
                    .and_then(|&(from, to)| literal_entry(toks, from, to).map(|e| (e, from)))
            };
            for fc in &f.calls {
                let (first, key_at) = match fc.first.and_then(entry) {
                    Some((("KEYS", n), at)) => (FirstArg::Key(n), Some(at)),
                    Some((("ARGV", n), _)) if fc.command.channel => (FirstArg::Arg(n), None),
                    _ => (FirstArg::Other, None),
                };
                self.calls.push(CallSite {
                    at: i,
                    line: t.line,
                    command: fc.command,
                    first,
                    key_at,
                    via: Some(Via {
                        include: k,
                        line: fc.line,
                        function: f.name.clone(),
                    }),
                    after_own_write: fc.after_own_write,
                    unconditional_in_fn: fc.unconditional,
                });
            }
            for (p, &escapes) in f.escapes.iter().enumerate() {
                if let Some((_, at)) = entry(p)
                    && let Some(u) = self.keys.iter_mut().find(|u| u.at == at)
                {
                    u.include_arg = Some(escapes);
                }
            }
            // A BADARG the function raises with a name the caller passes:
            // a literal name, checked like the body's own.
            for (detail, line) in &f.badarg {
                if let include::Detail::Param(p) = detail {
                    let literal = args.get(*p).and_then(|&(from, to)| match &toks[from..to] {
                        [
                            Token {
                                tok: Tok::Str(s), ..
                            },
                        ] => Some(s.clone()),
                        _ => None,
                    });
                    let Some(word) = literal else {
                        return Err(Fault::from((
                            t.line,
                            format!(
                                "`{name}` raises BADARG with its `{}` (lua/{}:{line}): pass the name refused as a string literal",
                                f.params[*p], inc.header.file
                            ),
                        )));
                    };
                    if !names.contains(&word.as_str()) {
                        return Err(Fault::from((
                            t.line,
                            format!(
                                "a BADARG detail starts with the name of a key or argument (or `keys` / `argv`), not `{word}` (the `{}` of `{name}`)",
                                f.params[*p]
                            ),
                        )));
                    }
                }
            }
        }
        self.calls.sort_by_key(|c| c.at);
        if let Some(k) = used.iter().position(|u| !u) {
            let (name, line) = listed
                .iter()
                .find(|(n, _)| *n == includes[k].name)
                .expect("listed");
            let fns: Vec<String> = includes[k]
                .functions
                .iter()
                .map(|f| format!("`{}`", f.name))
                .collect();
            return Err(Fault::from((
                *line,
                format!(
                    "include `{name}` is listed but none of its functions ({}) is called",
                    fns.join(", ")
                ),
            )));
        }
        Ok(())
    }
}

/// Declared ↔ used for `KEYS` and `ARGV`.
fn check_uses(spec: &ScriptSpec, body: &Body) -> Result<(), (usize, String)> {
    for (table, uses, names) in [
        (
            "KEYS",
            &body.keys,
            spec.keys
                .iter()
                .map(|k| (k.name.as_str(), k.variadic, k.line))
                .collect::<Vec<_>>(),
        ),
        (
            "ARGV",
            &body.argv,
            spec.args
                .iter()
                .map(|a| (a.name.as_str(), a.variadic, a.line))
                .collect(),
        ),
    ] {
        let fixed = names.iter().filter(|p| !p.1).count();
        let variadic = names.last().filter(|p| p.1);
        for u in uses {
            if let Some(n) = u.index
                && (n == 0 || (n > fixed && variadic.is_none()))
            {
                return Err((
                    u.line,
                    format!("{table}[{n}] is used but not declared in the header"),
                ));
            }
        }
        let computed = uses.iter().find(|u| u.index.is_none());
        if let (Some(p), None) = (variadic, computed) {
            return Err((
                p.2,
                format!(
                    "variadic {table}[{}..] is declared but never read with a computed index or `#{table}`",
                    fixed + 1
                ),
            ));
        }
        if let (None, Some(u)) = (variadic, computed) {
            return Err((
                u.line,
                format!(
                    "{table} is read with a computed index or `#{table}` but the header declares no variadic {table}[n..]"
                ),
            ));
        }
        for (i, p) in names.iter().enumerate().filter(|(_, p)| !p.1) {
            if !uses.iter().any(|u| u.index == Some(i + 1)) {
                return Err((
                    p.2,
                    format!("{table}[{}] `{}` is declared but never used", i + 1, p.0),
                ));
            }
        }
    }
    Ok(())
}

/// Declared ↔ raised for error codes; a body's `BADARG` names an argument.
fn check_errors(
    spec: &ScriptSpec,
    body: &Body,
    includes: &[&Include],
    errors: &[String],
    errors_line: usize,
) -> Result<(), Fault> {
    let is_name = |name: &str| {
        ARITY_NAMES.contains(&name)
            || spec.keys.iter().any(|k| k.name == name)
            || spec.args.iter().any(|a| a.name == name)
    };
    for e in &body.error_codes {
        if !errors.contains(&e.code) {
            return Err(Fault::from((
                e.line,
                format!(
                    "error code `{}` is raised but not listed in `-- ERRORS`",
                    e.code
                ),
            )));
        }
        if e.code == "BADARG" {
            let name = e.detail.as_deref().unwrap_or("");
            if !is_name(name) {
                return Err(Fault::from((
                    e.line,
                    format!(
                        "a BADARG detail starts with the name of a key or argument (or `keys` / `argv`), not `{name}`"
                    ),
                )));
            }
        }
    }
    // What the includes raise counts as raised by the script.
    for (k, inc) in includes.iter().enumerate() {
        let at = |line: usize, message: String| Fault {
            line,
            include: Some(k),
            message,
        };
        for (code, line) in &inc.error_lines {
            if !errors.contains(code) {
                return Err(at(
                    *line,
                    format!(
                        "error code `{code}` is raised here but not listed in the including script's `-- ERRORS`"
                    ),
                ));
            }
        }
        for f in &inc.functions {
            for (detail, line) in &f.badarg {
                if let include::Detail::Name(name) = detail
                    && !is_name(name)
                {
                    return Err(at(
                        *line,
                        format!(
                            "a BADARG detail starts with the name of a key or argument of the including script (or `keys` / `argv`), not `{name}`"
                        ),
                    ));
                }
            }
        }
    }
    for code in errors {
        let raised = body.error_codes.iter().any(|e| &e.code == code)
            || includes.iter().any(|i| i.header.errors.contains(code));
        if !raised {
            return Err(Fault::from((
                errors_line,
                format!("error code `{code}` is listed in `-- ERRORS` but never raised"),
            )));
        }
    }
    Ok(())
}

/// Declared ↔ called for commands (the body's and its includes'), and the
/// script's writing flag.
fn check_commands(
    spec: &ScriptSpec,
    body: &Body,
    includes: &[&Include],
    (writes, writes_line): (&[String], usize),
    (reads, reads_line): (&[String], usize),
) -> Result<(), Fault> {
    let listed = |c: &Command| {
        let (list, names) = if c.write {
            ("WRITES", writes)
        } else {
            ("READS", reads)
        };
        (list, names.iter().any(|x| x == c.name))
    };
    for c in body.calls.iter().filter(|c| c.via.is_none()) {
        let (list, found) = listed(c.command);
        if !found {
            if c.command.write && spec.read_only {
                return Err(c.fault(format!(
                    "`{}` writes, but the script is `no-writes`",
                    c.command.name
                )));
            }
            return Err(c.fault(format!(
                "`{}` is called but not listed in `-- {list}`",
                c.command.name
            )));
        }
    }
    for (k, inc) in includes.iter().enumerate() {
        for (command, line) in &inc.command_lines {
            let (list, found) = listed(command);
            if found {
                continue;
            }
            let message = if command.write && spec.read_only {
                format!(
                    "`{}` writes, but the including script is `no-writes`",
                    command.name
                )
            } else {
                format!(
                    "`{}` is called here but not listed in the including script's `-- {list}`",
                    command.name
                )
            };
            return Err(Fault {
                line: *line,
                include: Some(k),
                message,
            });
        }
    }
    for (list, names, line) in [
        ("WRITES", writes, writes_line),
        ("READS", reads, reads_line),
    ] {
        for name in names {
            let called = body.calls.iter().any(|c| c.command.name == name)
                || includes
                    .iter()
                    .any(|i| i.command_lines.iter().any(|(c, _)| c.name == name));
            if !called {
                return Err(Fault::from((
                    line,
                    format!("`{name}` is listed in `-- {list}` but never called"),
                )));
            }
        }
    }
    if !spec.read_only && writes.is_empty() {
        return Err(Fault::from((
            1,
            "a script that calls no write command is `#!lua flags=no-writes`".into(),
        )));
    }
    if !spec.read_only && !spec.keys.iter().any(|k| k.written) {
        return Err(Fault::from((
            writes_line,
            "a writing script declares at least one `rw` key".into(),
        )));
    }
    Ok(())
}

/// Whether the call at token `at` is the first thing its statement
/// evaluates, in a statement that runs whenever the body gets that far.
fn unconditional(toks: &[Token], structure: &Structure, at: usize) -> bool {
    unconditional_in(toks, structure, at, None)
}

/// [`unconditional`] within the block `top` (`None`: the body; an
/// included function's block: whenever the function runs that far).
pub(crate) fn unconditional_in(
    toks: &[Token],
    structure: &Structure,
    at: usize,
    top: Option<usize>,
) -> bool {
    if !structure.at_top_of(at, top) {
        return false;
    }
    let prev = |k: usize| at.checked_sub(k).map(|i| &toks[i]);
    match prev(1) {
        None => true,
        // `if redis.call(...)`, `if not redis.call(...)`, `return redis.call(...)`
        Some(t) if t.is_name("if") || t.is_name("return") => true,
        Some(t) if t.is_name("not") => prev(2).is_some_and(|t| t.is_name("if")),
        // `local a, b = redis.call(...)`
        Some(t) if t.is_sym("=") => {
            let mut k = 2;
            loop {
                match prev(k) {
                    Some(t) if t.is_name("local") => return true,
                    Some(Token {
                        tok: Tok::Name(n), ..
                    }) if !is_keyword(n) => k += 1,
                    Some(t) if t.is_sym(",") => k += 1,
                    _ => return false,
                }
            }
        }
        // A bare call after a complete statement.
        Some(t) => match &t.tok {
            Tok::Name(n) => n == "end" || !is_keyword(n),
            Tok::Str(_) | Tok::Num(_) => true,
            Tok::Sym(s) => matches!(*s, ")" | "]" | "}" | ";"),
        },
    }
}

fn is_keyword(n: &str) -> bool {
    matches!(
        n,
        "and"
            | "break"
            | "do"
            | "else"
            | "elseif"
            | "end"
            | "false"
            | "for"
            | "function"
            | "if"
            | "in"
            | "local"
            | "nil"
            | "not"
            | "or"
            | "repeat"
            | "return"
            | "then"
            | "true"
            | "until"
            | "while"
    )
}

/// Which keys need a generated `TYPE` call and which commands an ACL check,
/// from the body's structure; refuses writes that can fail on the stored
/// value after another write, and commands on keys of another type.
fn analyse(
    spec: &mut ScriptSpec,
    body: &Body,
    toks: &[Token],
    structure: &Structure,
) -> Result<(), Fault> {
    let writes: Vec<&CallSite> = body.calls.iter().filter(|c| c.command.write).collect();
    let after_write =
        |c: &CallSite| c.after_own_write || writes.iter().any(|w| structure.may_follow(w.at, c.at));

    for c in &body.calls {
        if let FirstArg::Key(n) = c.first
            && let Some(key) = spec.keys.get(n - 1).filter(|k| !k.variadic)
            && let (Some(want), [declared]) = (c.command.checks, key.types.as_slice())
            && *declared != KeyType::Any
            && *declared != want
        {
            return Err(c.fault(format!(
                "KEYS[{n}] `{}` is declared {} but `{}` works on a {}",
                key.name,
                declared.name(),
                c.command.name,
                want.name()
            )));
        }
        if c.command.value_can_fail && after_write(c) {
            return Err(c.fault(format!(
                "`{}` can fail on the stored value (not an integer, an overflow) after an earlier write: make it a write no other write can precede",
                c.command.name
            )));
        }
    }

    // A tagged argument names something in KEYS[1]'s slot; a channel
    // command publishes only on one (else, on a cluster, it fails after the
    // writes before it).
    if let Some(a) = spec.args.iter().find(|a| a.tagged)
        && spec.keys.first().is_none_or(|k| k.variadic)
    {
        return Err(Fault::from((
            a.line,
            format!(
                "`{}` is `tagged` (carries KEYS[1]'s hash tag) but the script has no fixed KEYS[1]",
                a.name
            ),
        )));
    }
    for c in body.calls.iter().filter(|c| c.command.channel) {
        if let FirstArg::Arg(n) = c.first
            && let Some(a) = spec.args.get(n - 1).filter(|a| !a.tagged && !a.variadic)
        {
            return Err(c.fault(format!(
                "`{}` publishes on ARGV[{n}] `{}`: declare it `string tagged`, a channel with KEYS[1]'s hash tag (on a cluster a script may publish only in its keys' slot)",
                c.command.name, a.name
            )));
        }
    }

    // ACL checks: in a writing script every write command, and every other
    // command that may run after a write.
    let mut acl: Vec<AclCheck> = Vec::new();
    if !spec.read_only {
        for c in &body.calls {
            if (c.command.write || after_write(c))
                && !acl.iter().any(|a| a.command.name == c.command.name)
            {
                let first_site = body.calls.iter().find(|x| {
                    x.command.name == c.command.name
                        && matches!(x.first, FirstArg::Key(_) | FirstArg::Arg(_))
                });
                let key = match first_site.map(|x| x.first) {
                    Some(FirstArg::Key(n)) => format!("KEYS[{n}]"),
                    Some(FirstArg::Arg(n)) => format!("ARGV[{n}]"),
                    _ if c.command.channel => {
                        return Err(c.fault(format!(
                            "`{}` publishes to a channel: pass it as a literal `ARGV[n]`, so that the ACL check names it",
                            c.command.name
                        )));
                    }
                    _ => "KEYS[1]".to_string(),
                };
                acl.push(AclCheck {
                    command: c.command,
                    key,
                });
            }
        }
        acl.sort_by_key(|a| a.command.name);
    }
    spec.acl_checks = acl;

    // TYPE checks. A fixed key needs none when every access of it (other
    // than reads that accept any type) either is safe — a command that
    // checks the declared type, which no write can precede but writes that
    // are such commands on the same key (a loop of them) — or comes after a
    // safe access that runs unconditionally. An access is placed by its
    // `KEYS` token and, for the commands of an included function called
    // with it, by their order in the function.
    let computed: Vec<(usize, usize)> = body
        .keys
        .iter()
        .filter(|u| u.index.is_none() && !u.length && !u.in_error_reply)
        .map(|u| (u.at, 0))
        .collect();
    let mut type_checked = Vec::with_capacity(spec.keys.len());
    for (ki, key) in spec.keys.iter().enumerate() {
        if key.types.iter().all(|t| *t == KeyType::Any) {
            type_checked.push(false);
            continue;
        }
        if key.variadic {
            type_checked.push(true);
            continue;
        }
        let n = ki + 1;
        let declared = key.types[0];
        let checks_key =
            |c: &CallSite| c.first == FirstArg::Key(n) && c.command.checks == Some(declared);
        // (place, safe, safe and unconditional)
        let mut accesses: Vec<((usize, usize), bool, bool)> = Vec::new();
        for u in body
            .keys
            .iter()
            .filter(|u| u.index == Some(n) && !u.in_error_reply)
        {
            let calls: Vec<(usize, &CallSite)> = body
                .calls
                .iter()
                .filter(|c| c.first == FirstArg::Key(n) && c.key_at == Some(u.at))
                .enumerate()
                .collect();
            if u.include_arg == Some(true) || (calls.is_empty() && u.include_arg.is_none()) {
                // Used where the checker does not follow it.
                accesses.push(((u.at, 0), false, false));
            }
            for (order, c) in calls {
                let place = (u.at, order);
                if checks_key(c) {
                    let safe = !c.after_own_write
                        && writes
                            .iter()
                            .all(|w| checks_key(w) || !structure.may_follow(w.at, c.at));
                    let top = safe && c.unconditional_in_fn && unconditional(toks, structure, c.at);
                    accesses.push((place, safe, top));
                } else if c.command.write || c.command.checks.is_some() {
                    accesses.push((place, false, false));
                }
                // (A read that accepts any type can neither fail nor write.)
            }
        }
        accesses.extend(computed.iter().map(|&at| (at, false, false)));
        let verified = accesses.iter().all(|&(at, safe, _)| {
            safe || accesses.iter().any(|&(first, _, top)| top && first < at)
        });
        type_checked.push(!verified);
    }
    spec.type_checked = type_checked;
    Ok(())
}

/// The folder of the includes under `lua/` (no pattern has that name).
pub const INCLUDES: &str = "includes";

/// Lists `<pattern>/<op>.lua` files under `root` (not the includes under
/// `root/includes`), sorted, as relative paths.
pub fn list_scripts(root: &Path) -> Result<Vec<(String, PathBuf)>, HeaderError> {
    let io = |p: &Path, e: std::io::Error| HeaderError {
        file: p.display().to_string(),
        line: 0,
        message: e.to_string(),
        included_by: None,
    };
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .map_err(|e| io(root, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| io(root, e))?;
    dirs.sort_by_key(|d| d.file_name());
    for dir in dirs {
        let path = dir.path();
        if dir.file_name() == INCLUDES {
            continue;
        }
        if path.is_file() {
            if path.extension().is_some_and(|e| e == "lua") {
                return Err(HeaderError {
                    file: path.display().to_string(),
                    line: 0,
                    message: "a script lives at lua/<pattern>/<op>.lua".into(),
                    included_by: None,
                });
            }
            continue;
        }
        let mut files: Vec<_> = std::fs::read_dir(&path)
            .map_err(|e| io(&path, e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| io(&path, e))?;
        files.sort_by_key(|d| d.file_name());
        for f in files {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "lua") {
                let rel = format!(
                    "{}/{}",
                    dir.file_name().to_string_lossy(),
                    f.file_name().to_string_lossy()
                );
                out.push((rel, p));
            }
        }
    }
    Ok(out)
}

/// Lowercase hex SHA1 of `bytes`: the `EVALSHA` handle of a script.
pub fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

/// The text of `path` (`lua/<rel>`).
fn read_lua(path: &Path, rel: &str) -> Result<String, HeaderError> {
    std::fs::read_to_string(path)
        .map_err(|e| HeaderError::in_lua(rel, 0, format!("not readable as UTF-8 text: {e}")))
}

/// Parses every include under `root/includes` (none when there is no such
/// folder), sorted by name; refuses two that define one function name and
/// an include that calls another's function.
pub fn parse_includes(root: &Path) -> Result<Vec<Include>, HeaderError> {
    let dir = root.join(INCLUDES);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let io = |e: std::io::Error| HeaderError::in_lua(INCLUDES, 0, e.to_string());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map_err(io)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    files.sort_by_key(|f| f.file_name());
    let mut pending: Vec<(String, String)> = Vec::new();
    for f in files {
        let rel = format!("{INCLUDES}/{}", f.file_name().to_string_lossy());
        let source = read_lua(&f.path(), &rel)?;
        pending.push((rel, source));
    }
    // An include's own INCLUDE lines: (name, line).
    let wants = |source: &str| -> Vec<(String, usize)> {
        source
            .lines()
            .enumerate()
            .take_while(|(_, l)| l.starts_with("--"))
            .filter_map(|(i, l)| Some((l.strip_prefix("-- INCLUDE ")?.trim().to_string(), i + 1)))
            .collect()
    };
    let stem = |rel: &str| {
        rel.trim_start_matches("includes/")
            .trim_end_matches(".lua")
            .to_string()
    };
    // Parsed after the includes they include.
    let mut includes: Vec<Include> = Vec::new();
    while !pending.is_empty() {
        let ready = pending.iter().position(|(_, src)| {
            wants(src)
                .iter()
                .all(|(n, _)| includes.iter().any(|i| &i.name == n))
        });
        let Some(k) = ready else {
            let (rel, src) = &pending[0];
            if let Some((n, line)) = wants(src)
                .into_iter()
                .find(|(n, _)| pending.iter().any(|(r, _)| stem(r) == *n))
            {
                return Err(HeaderError::in_lua(
                    rel,
                    line,
                    format!("include `{n}` includes this one again: includes form no cycle"),
                ));
            }
            // (Refused: an include it names is missing.)
            let inc = parse_include_with(rel, src, &includes)?;
            includes.push(inc);
            pending.remove(0);
            continue;
        };
        let (rel, src) = pending.remove(k);
        let inc = parse_include_with(&rel, &src, &includes)?;
        includes.push(inc);
    }
    includes.sort_by(|a, b| a.name.cmp(&b.name));
    for (i, inc) in includes.iter().enumerate() {
        let at =
            |line: usize, message: String| HeaderError::in_lua(&inc.header.file, line, message);
        for f in &inc.functions {
            if let Some(other) = includes[..i].iter().find(|o| o.function(&f.name).is_some()) {
                return Err(at(
                    f.line,
                    format!(
                        "function `{}` is also defined by lua/{}",
                        f.name, other.header.file
                    ),
                ));
            }
        }
        for (name, line) in &inc.called {
            if let Some(other) = includes.iter().find(|o| o.function(name).is_some()) {
                return Err(at(
                    *line,
                    format!(
                        "`{name}` is a function of lua/{}: add `-- INCLUDE {}` to this include's header",
                        other.header.file, other.name
                    ),
                ));
            }
        }
    }
    Ok(includes)
}

/// Parses every script under `root`, sorted by name, with the includes
/// under `root/includes`; refuses an include that no script names.
pub fn parse_dir(root: &Path) -> Result<Vec<ScriptSpec>, HeaderError> {
    let includes = parse_includes(root)?;
    let mut specs = Vec::new();
    for (rel, path) in list_scripts(root)? {
        let source = read_lua(&path, &rel)?;
        specs.push(parse_script_with(&rel, &source, &includes)?);
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    // Included by a script, or by an include that is.
    let mut used: Vec<&str> = specs
        .iter()
        .flat_map(|s| s.header.includes.iter().map(String::as_str))
        .collect();
    let mut k = 0;
    while k < used.len() {
        if let Some(inc) = includes.iter().find(|i| i.name == used[k]) {
            used.extend(inc.header.includes.iter().map(String::as_str));
        }
        k += 1;
    }
    if let Some(unused) = includes.iter().find(|i| !used.contains(&i.name.as_str())) {
        return Err(HeaderError::in_lua(
            &unused.header.file,
            1,
            format!(
                "no script includes it: add `-- INCLUDE {}` to a header, or delete the file",
                unused.name
            ),
        ));
    }
    Ok(specs)
}
