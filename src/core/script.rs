//! The script registry (what each script's header declares) and one
//! prepared script call.
//!
//! Every call goes out as `EVALSHA` (read-only scripts as `EVALSHA_RO`). When
//! the server answers `NOSCRIPT` (after `SCRIPT FLUSH`, a restart or a
//! failover), the driver loads the script with `SCRIPT LOAD`, checks the SHA
//! the server reports against ours, and sends the call once more (see
//! [`Batch`](crate::Batch)). There is no `EVAL` fallback: scripts loaded by
//! `EVAL` may be evicted by newer servers.

use std::marker::PhantomData;

use redis::{Cmd, FromRedisValue, Value};

use crate::error::{Error, ErrorKind, Result};

/// The type of one `ARGV` entry, as its header declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    /// A canonical decimal integer within [`ArgSpec::min`]..=[`ArgSpec::max`].
    Integer,
    /// A canonical decimal integer of the whole int64 range (kept as a
    /// string by the script).
    Int64,
    /// A finite number.
    Float,
    /// `0` or `1`.
    Bool,
    /// One of [`ArgSpec::values`].
    Enum,
    /// Text (not empty when [`ArgSpec::non_empty`]).
    String,
    /// Bytes (not empty when [`ArgSpec::non_empty`]).
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

/// The Redis type of a key, as its header declares it (bitmaps are strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    String,
    Hash,
    Set,
    Zset,
    List,
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

/// One end of an integer argument's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Value(i64),
    /// Another argument's value plus `offset` (rolling's `first_slot` is
    /// `0..shards-1`).
    Arg {
        name: &'static str,
        offset: i64,
    },
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::Value(v) => write!(f, "{v}"),
            Self::Arg { name, offset: 0 } => f.write_str(name),
            Self::Arg { name, offset } if offset > 0 => write!(f, "{name}+{offset}"),
            Self::Arg { name, offset } => write!(f, "{name}{offset}"),
        }
    }
}

/// One `KEYS` entry of a script header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    pub name: &'static str,
    pub doc: &'static str,
    /// The last entry may stand for any number of keys (`KEYS[n..]`).
    pub variadic: bool,
    /// The type the key must hold (or be missing); a variadic tail cycles
    /// through these (rolling's hash, list, hash, list, ...).
    pub types: &'static [KeyType],
    /// Whether the script may write the key (`rw` in the header).
    pub written: bool,
}

/// One `ARGV` entry of a script header, with the constraints the script
/// and its typed wrapper check before anything is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgSpec {
    pub name: &'static str,
    pub ty: ArgType,
    pub doc: &'static str,
    /// The last entry may stand for any number of arguments (`ARGV[n..]`);
    /// each of them is checked.
    pub variadic: bool,
    /// Smallest value of an [`ArgType::Integer`].
    pub min: Option<Bound>,
    /// Largest value of an [`ArgType::Integer`].
    pub max: Option<Bound>,
    /// A [`ArgType::String`] or [`ArgType::Bytes`] that must not be empty.
    pub non_empty: bool,
    /// A [`ArgType::String`] or [`ArgType::Bytes`] that must carry the hash
    /// tag of the first key (`tagged`: a shard channel in the call's slot).
    pub tagged: bool,
    /// The words of an [`ArgType::Enum`].
    pub values: &'static [&'static str],
    /// The reason of a refusal (`BADARG <name> <reason>`, and
    /// [`ErrorKind::InvalidArgument`]'s `reason` from the typed wrapper);
    /// empty when every value is accepted.
    pub reason: &'static str,
}

/// Whether a call of a script may be sent again when its outcome is unknown
/// (the connection died after the request was written): the header's
/// `IDEMPOTENT`. The connections resend only calls that are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotency {
    /// Running it a second time right after the first leaves the data as
    /// one run does.
    Always,
    /// A resend could apply twice, or mislead the caller.
    Never,
    /// Exactly when the argument `name` (at `ARGV` position `index`,
    /// 0-based) is neither empty nor `0`: an optional request id.
    IfArg { name: &'static str, index: usize },
}

/// A bundled script as its header describes it. Generated by `build.rs`.
#[derive(Debug, PartialEq, Eq)]
pub struct ScriptInfo {
    /// `<pattern>.<op>`, e.g. `lock.acquire`.
    pub name: &'static str,
    /// Path below `lua/`, e.g. `lock/acquire.lua`.
    pub file: &'static str,
    /// Lowercase hex SHA1 of the shipped script ([`ScriptInfo::source`]):
    /// the `EVALSHA` handle.
    pub sha1: &'static str,
    /// The script's function in the Functions library
    /// ([`crate::functions`]): `<pattern>_<op>`, e.g. `lock_acquire`.
    pub function: &'static str,
    pub summary: &'static str,
    pub keys: &'static [KeySpec],
    pub args: &'static [ArgSpec],
    /// The reply type: integer, integers, bulk, bulks, status or array.
    pub returns: &'static str,
    pub returns_doc: &'static str,
    /// Domain error codes of the script: `BADARG` (the generated checks),
    /// then the ones its body raises with `redis.error_reply`.
    pub errors: &'static [&'static str],
    /// The write commands the script calls (its header's `WRITES`).
    pub writes: &'static [&'static str],
    /// The other commands the script's body calls (its header's `READS`;
    /// the generated checks may also call `TYPE`).
    pub reads: &'static [&'static str],
    /// Declared `#!lua flags=no-writes`; called with `EVALSHA_RO`.
    pub read_only: bool,
    /// Whether a resend after an unknown outcome is safe (its header's
    /// `IDEMPOTENT`).
    pub idempotent: Idempotency,
    /// Why (the header's meaning of `IDEMPOTENT`).
    pub idempotent_doc: &'static str,
}

impl ScriptInfo {
    /// The shipped script, byte for byte as `SCRIPT LOAD` gets it: the
    /// file's header, the checks generated from it, then the file's body.
    pub fn source(&self) -> &'static str {
        crate::scripts::LUA_DIR
            .get_file(self.file)
            .and_then(|f| f.contents_utf8())
            .unwrap_or_else(|| {
                panic!(
                    "build.rs registered lua/{} but it is not embedded",
                    self.file
                )
            })
    }

    /// The argument named `name`.
    pub fn arg(&self, name: &str) -> Option<&'static ArgSpec> {
        self.args.iter().find(|a| a.name == name)
    }

    /// Looks a script up by name (`lock.acquire`).
    pub fn by_name(name: &str) -> Option<&'static ScriptInfo> {
        crate::scripts::ALL.iter().copied().find(|s| s.name == name)
    }

    pub(crate) fn load_cmd(&self) -> Cmd {
        let mut cmd = redis::cmd("SCRIPT");
        cmd.arg("LOAD").arg(self.source());
        cmd
    }

    pub(crate) fn check_loaded(&self, reply: Value) -> Result<()> {
        let sha = String::from_redis_value(reply).map_err(redis::RedisError::from)?;
        if sha.eq_ignore_ascii_case(self.sha1) {
            Ok(())
        } else {
            Err(Error::from(ErrorKind::ShaMismatch {
                script: self.name,
                expected: self.sha1,
                server: sha,
            }))
        }
    }
}

/// Loads every script of the bundle (`SCRIPT LOAD`, on every primary of a
/// cluster) and checks each SHA the server reports against the registry.
/// Returns `(name, sha1)` pairs.
pub fn load_all() -> crate::Op<Vec<(&'static str, &'static str)>> {
    let mut batch = crate::Batch::new();
    for s in crate::scripts::ALL {
        batch.add_keyless(s.load_cmd());
    }
    crate::Op::send(batch, |replies| check_all_loaded(replies.into_values()))
}

fn check_all_loaded(replies: Vec<Value>) -> Result<Vec<(&'static str, &'static str)>> {
    let mut out = Vec::with_capacity(replies.len());
    for (s, reply) in crate::scripts::ALL.iter().zip(replies) {
        if let Value::ServerError(e) = reply {
            return Err(Error::from_redis(Some(s), e.into()));
        }
        s.check_loaded(reply)?;
        out.push((s.name, s.sha1));
    }
    Ok(out)
}

/// One prepared call of a bundled script: its `EVALSHA` (or `EVALSHA_RO`)
/// command with keys and arguments already encoded. `R` is the Rust type of
/// the reply, fixed by the header's `RETURNS`.
///
/// Made by the generated wrappers in [`crate::scripts`] (which check every
/// argument against the script's header first) or by [`ScriptCall::raw`].
/// Run it with [`Request::run`](crate::Request::run) /
/// [`Request::run_async`](crate::Request::run_async), or add it to a
/// [`Batch`](crate::Batch).
#[derive(Debug)]
pub struct ScriptCall<R> {
    script: &'static ScriptInfo,
    cmd: Cmd,
    numkeys: usize,
    reply: PhantomData<fn() -> R>,
}

// Not derived: a derive would require `R: Clone`.
impl<R> Clone for ScriptCall<R> {
    fn clone(&self) -> Self {
        Self {
            script: self.script,
            cmd: self.cmd.clone(),
            numkeys: self.numkeys,
            reply: PhantomData,
        }
    }
}

/// `EVALSHA`/`EVALSHA_RO`, the SHA and the key count come before the keys.
const HEAD_ARGS: usize = 3;

impl<R: FromRedisValue> ScriptCall<R> {
    /// A call of `script` with exactly these keys and arguments, unchecked:
    /// as another language, or `redis-cli`, may send it. The script's own
    /// generated checks still refuse what its header does not allow (as
    /// [`ErrorKind::InvalidArgument`] with the script's name).
    pub fn raw(
        script: &'static ScriptInfo,
        keys: &[impl AsRef<[u8]>],
        args: &[impl AsRef<[u8]>],
    ) -> Self {
        let mut call = Self::new(script, keys.len());
        for k in keys {
            call.key(k.as_ref());
        }
        for a in args {
            call.arg(a.as_ref());
        }
        call
    }

    /// Starts the command; the generated wrapper then adds exactly `numkeys`
    /// keys and the arguments, in header order.
    pub(crate) fn new(script: &'static ScriptInfo, numkeys: usize) -> Self {
        let mut cmd = redis::cmd(if script.read_only {
            "EVALSHA_RO"
        } else {
            "EVALSHA"
        });
        cmd.arg(script.sha1).arg(numkeys);
        Self {
            script,
            cmd,
            numkeys,
            reply: PhantomData,
        }
    }
    pub(crate) fn key(&mut self, key: &[u8]) {
        self.cmd.arg(key);
    }
    pub(crate) fn arg(&mut self, arg: &[u8]) {
        self.cmd.arg(arg);
    }
    pub(crate) fn arg_int(&mut self, arg: i64) {
        self.cmd.arg(arg);
    }
    #[allow(dead_code)] // for wrappers of `float` arguments (no bundled script has one today)
    pub(crate) fn arg_float(&mut self, arg: f64) {
        self.cmd.arg(arg);
    }

    /// The script this call runs.
    pub fn script(&self) -> &'static ScriptInfo {
        self.script
    }

    /// Whether this call may be sent again when its outcome is unknown: its
    /// script's [`Idempotency`], for an `IfArg` script decided by this
    /// call's argument.
    pub fn is_idempotent(&self) -> bool {
        match self.script.idempotent {
            Idempotency::Always => true,
            Idempotency::Never => false,
            Idempotency::IfArg { index, .. } => self
                .simple_args()
                .nth(HEAD_ARGS + self.numkeys + index)
                .is_some_and(|a| !a.is_empty() && a != b"0"),
        }
    }

    fn simple_args(&self) -> impl Iterator<Item = &[u8]> {
        self.cmd.args_iter().filter_map(|a| match a {
            redis::Arg::Simple(bytes) => Some(bytes),
            _ => None,
        })
    }

    pub(crate) fn first_key(&self) -> Option<&[u8]> {
        (self.numkeys > 0)
            .then(|| self.simple_args().nth(HEAD_ARGS))
            .flatten()
    }

    /// The keys, in `KEYS` order.
    pub fn keys(&self) -> Vec<&[u8]> {
        self.simple_args()
            .skip(HEAD_ARGS)
            .take(self.numkeys)
            .collect()
    }

    /// The arguments, in `ARGV` order, as sent.
    pub fn args(&self) -> Vec<&[u8]> {
        self.simple_args().skip(HEAD_ARGS + self.numkeys).collect()
    }

    /// The `EVALSHA` (or `EVALSHA_RO`) command of this call.
    pub fn cmd(&self) -> &Cmd {
        &self.cmd
    }

    /// The command, by value.
    pub(crate) fn into_cmd(self) -> Cmd {
        self.cmd
    }
}
