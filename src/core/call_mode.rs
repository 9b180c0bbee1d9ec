//! How a connection sends script calls: [`CallMode::Evalsha`] (the
//! default) or [`CallMode::Functions`], and what each mode does when the
//! server does not have the script.
//!
//! A [`ScriptCall`](crate::ScriptCall) is built once, as `EVALSHA`; a
//! connection in functions mode sends it as `FCALL` (`FCALL_RO`) of the
//! script's function in the library ([`crate::functions`]), with the same
//! keys and arguments. The exchange protocol is the same in both modes
//! (see [`Batch`](crate::Batch)): a call the server answers "not loaded"
//! did not run, the missing code is loaded in front of the calls that are
//! sent again — `SCRIPT LOAD` of the script, or `FUNCTION LOAD REPLACE` of
//! the whole library — each call runs once and in order.

use redis::{Cmd, Value};

use crate::error::{Error, Result};
use crate::script::ScriptInfo;

/// How script calls go out. Set on a connection with
/// [`Connection::with_call_mode`](crate::Connection::with_call_mode) (or
/// the async twin); parsed from `"evalsha"` / `"functions"` by
/// [`str::parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CallMode {
    /// `EVALSHA` (`EVALSHA_RO` for read-only scripts) by the script's SHA1.
    /// A server that answers `NOSCRIPT` (after `SCRIPT FLUSH`, a restart or
    /// a failover: the script cache is not persisted) gets the script with
    /// `SCRIPT LOAD`, its SHA1 checked, and the call again.
    #[default]
    Evalsha,
    /// `FCALL` (`FCALL_RO`) of the script's function in the
    /// [library](crate::functions) (`lock_acquire` for `lock.acquire`). The
    /// library persists with the data (RDB, AOF) and replicates to
    /// replicas; a server that answers "Function not found" gets the whole
    /// library with `FUNCTION LOAD REPLACE` and the call again.
    Functions,
}

impl CallMode {
    /// `"evalsha"` or `"functions"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Evalsha => "evalsha",
            Self::Functions => "functions",
        }
    }

    /// The command a call of `script` goes out as: `cmd` itself (its
    /// `EVALSHA`) or the same keys and arguments as `FCALL <function>`.
    pub(crate) fn command(self, script: &ScriptInfo, cmd: &Cmd) -> Cmd {
        match self {
            Self::Evalsha => cmd.clone(),
            Self::Functions => {
                let mut fcall = redis::cmd(if script.read_only {
                    "FCALL_RO"
                } else {
                    "FCALL"
                });
                fcall.arg(script.function);
                // `EVALSHA <sha1>` is replaced; `numkeys`, the keys and the
                // arguments follow as they are.
                for arg in cmd.args_iter().skip(2) {
                    if let redis::Arg::Simple(bytes) = arg {
                        fcall.arg(bytes);
                    }
                }
                fcall
            }
        }
    }

    /// Whether `reply` to a script call says the server lacks the script
    /// (so the call did not run): `NOSCRIPT`, or "Function not found".
    pub(crate) fn not_loaded(self, reply: &Value) -> bool {
        let Value::ServerError(e) = reply else {
            return false;
        };
        match self {
            Self::Evalsha => e.code() == "NOSCRIPT",
            Self::Functions => {
                e.code() == "ERR"
                    && e.details()
                        .is_some_and(|d| d.starts_with("Function not found"))
            }
        }
    }

    /// What loads `script` in this mode: its `SCRIPT LOAD`, or the
    /// library's `FUNCTION LOAD REPLACE` (which loads every script at once).
    pub(crate) fn load_cmd(self, script: &ScriptInfo) -> Cmd {
        match self {
            Self::Evalsha => script.load_cmd(),
            Self::Functions => crate::core::library::load_cmd(),
        }
    }

    /// Whether one load covers every script (the library does).
    pub(crate) fn loads_everything(self) -> bool {
        self == Self::Functions
    }

    /// Checks the reply to [`CallMode::load_cmd`]: the SHA1 the server
    /// computed, or the library's name; an error reply is the load's error.
    pub(crate) fn check_loaded(self, script: &'static ScriptInfo, reply: Value) -> Result<()> {
        if let Value::ServerError(e) = reply {
            return Err(Error::from_redis(Some(script), e.into()));
        }
        match self {
            Self::Evalsha => script.check_loaded(reply),
            Self::Functions => crate::core::library::check_loaded(reply),
        }
    }
}

impl std::fmt::Display for CallMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for CallMode {
    type Err = Error;

    /// `evalsha` or `functions` (any case).
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "evalsha" => Ok(Self::Evalsha),
            "functions" => Ok(Self::Functions),
            _ => Err(Error::invalid(
                "call mode",
                format!("{s:?} is neither \"evalsha\" nor \"functions\""),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts;

    fn args(cmd: &Cmd) -> Vec<Vec<u8>> {
        cmd.args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => b.to_vec(),
                _ => b"<not simple>".to_vec(),
            })
            .collect()
    }

    #[test]
    fn a_call_keeps_its_keys_and_arguments_in_either_mode() {
        let call = scripts::lock::acquire(
            "l{a}",
            "l{a}:fence",
            "l{a}:queue",
            "l{a}:places",
            "t",
            5_000,
            0,
            false,
            &[],
        )
        .unwrap();
        let as_fcall = CallMode::Functions.command(call.script(), call.cmd());
        assert_eq!(
            args(&as_fcall),
            [
                b"FCALL".to_vec(),
                b"lock_acquire".to_vec(),
                b"4".to_vec(),
                b"l{a}".to_vec(),
                b"l{a}:fence".to_vec(),
                b"l{a}:queue".to_vec(),
                b"l{a}:places".to_vec(),
                b"t".to_vec(),
                b"5000".to_vec(),
                b"0".to_vec(),
                b"0".to_vec()
            ]
        );
        assert_eq!(
            args(&CallMode::Evalsha.command(call.script(), call.cmd())),
            args(call.cmd())
        );
        let ro = scripts::lock::owned("l{a}", "t").unwrap();
        let ro = CallMode::Functions.command(ro.script(), ro.cmd());
        assert_eq!(
            args(&ro)[..3],
            [b"FCALL_RO".to_vec(), b"lock_owned".to_vec(), b"1".to_vec()]
        );
    }

    #[test]
    fn modes_parse_and_recognize_their_own_not_loaded_reply() {
        assert_eq!(
            "functions".parse::<CallMode>().unwrap(),
            CallMode::Functions
        );
        assert_eq!("EVALSHA".parse::<CallMode>().unwrap(), CallMode::Evalsha);
        assert!("fcall".parse::<CallMode>().unwrap_err().is_invalid_input());
        assert_eq!(CallMode::default(), CallMode::Evalsha);
        let reply = |wire: &[u8]| redis::parse_redis_value(wire).expect("a RESP error reply");
        let noscript = reply(b"-NOSCRIPT No matching script. Please use EVAL.\r\n");
        let missing = reply(b"-ERR Function not found\r\n");
        let other = reply(b"-ERR unknown command 'FCALL'\r\n");
        assert!(CallMode::Evalsha.not_loaded(&noscript));
        assert!(!CallMode::Evalsha.not_loaded(&missing));
        assert!(CallMode::Functions.not_loaded(&missing));
        assert!(!CallMode::Functions.not_loaded(&noscript));
        assert!(!CallMode::Functions.not_loaded(&other));
        assert!(!CallMode::Functions.not_loaded(&Value::Int(1)));
    }
}
