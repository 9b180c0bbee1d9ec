//! What the generator knows of an include (`lua/includes/<name>.lua`): its
//! header, and for each of its functions what the function calls and
//! raises, so that a script's call of it is analysed as the calls it makes.

use crate::commands::Command;
use crate::header::Header;

/// The folder of the includes under `lua/` (no pattern has that name).
pub const INCLUDES: &str = "includes";

/// A parsed include.
#[derive(Debug, Clone)]
pub struct Include {
    /// `<name>` of `lua/includes/<name>.lua`: what `-- INCLUDE` names.
    pub name: String,
    /// Its file (`includes/<name>.lua`), summary, lists and text; its
    /// `INCLUDE` names are includes whose functions its own call (inlined
    /// before it).
    pub header: Header,
    /// The functions it defines, in file order.
    pub functions: Vec<Function>,
    /// Each command it calls, with the line of its first call.
    pub(crate) command_lines: Vec<(&'static Command, usize)>,
    /// Each error code it raises, with the line where it is first raised.
    pub(crate) error_lines: Vec<(String, usize)>,
    /// The names it calls as functions (`name(`), with their lines.
    pub(crate) called: Vec<(String, usize)>,
}

/// One `local function` of an include.
#[derive(Debug, Clone)]
pub struct Function {
    pub name: String,
    /// Line of `local function` in the include.
    pub line: usize,
    pub params: Vec<String>,
    /// For each parameter: whether the function uses it otherwise than as
    /// the first argument of a command or inside `redis.error_reply(...)`
    /// (a key passed there may be read in ways the checker does not follow).
    pub(crate) escapes: Vec<bool>,
    /// For each parameter: the entries it is read at with a literal index
    /// (`argv[2]`: 2), by the function or by a nested function it passes
    /// the parameter to whole. A script that passes its `KEYS` or `ARGV`
    /// there uses those entries.
    pub(crate) table_reads: Vec<Vec<usize>>,
    /// For each parameter: whether the function uses it only as `#p`, as
    /// `p[n]` with a literal `n` (its `table_reads`) and as the `p` of the
    /// sources `unpack(p, S)` of one of its own commands
    /// ([`FnCall::sources`]): a script's `KEYS` passed there is read
    /// nowhere else.
    pub(crate) entries_only: Vec<bool>,
    /// The commands it calls, in text order.
    pub(crate) calls: Vec<FnCall>,
    /// The detail of each `BADARG` it raises: a name, or a parameter the
    /// caller passes the name in.
    pub(crate) badarg: Vec<(Detail, usize)>,
}

/// A command an included function calls.
#[derive(Debug, Clone)]
pub(crate) struct FnCall {
    pub command: &'static Command,
    /// The parameter that is the command's first argument, if one is.
    pub first: Option<usize>,
    /// Line in the include.
    pub line: usize,
    /// Whether a write of the same function may run before it.
    pub after_own_write: bool,
    /// Whether it runs whenever the function does (at the function's top
    /// level, before any `return`).
    pub unconditional: bool,
    /// Whether it stands at the function's top level (it runs whenever the
    /// function gets that far; a `return` before it may end the function
    /// first).
    pub at_top: bool,
    /// The parameter its sources are the entries of, and from where: its
    /// fourth and last argument is `unpack(p, S)` (a call of the function
    /// itself, not of a nested one).
    pub sources: Option<(usize, usize)>,
}

/// What follows `BADARG ` in an include's error reply.
#[derive(Debug, Clone)]
pub(crate) enum Detail {
    /// A literal name: a key or argument every including script declares.
    Name(String),
    /// `'BADARG ' .. <param>`: the caller passes the name.
    Param(usize),
}

impl Include {
    /// The function named `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// The include `-- INCLUDE <name>` names, among those `known`.
pub(crate) fn find_include<'a>(known: &'a [Include], name: &str) -> Result<&'a Include, String> {
    known
        .iter()
        .find(|i| i.name == name)
        .ok_or_else(|| format!("include `{name}` not found: there is no lua/includes/{name}.lua"))
}
