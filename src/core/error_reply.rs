//! How a server's error reply becomes a typed [`Error`]: a domain code
//! the script declares by the one table of codes (`error_codes`), a
//! server error code its [`ServerErrorKind`] (an ACL refusal named by the
//! script line it hit), anything else a client library error.

use super::error::{Error, ErrorKind, ServerErrorKind};
use super::error_codes::from_script;
use super::library::LIBRARY;

impl Error {
    /// Maps an error of one call of `script` (or of a plain command when
    /// `None`): a domain code the script declares becomes its typed kind, a
    /// server error code its [`ServerErrorKind`], anything else stays a
    /// client library error.
    pub(crate) fn from_redis(
        script: Option<&'static crate::ScriptInfo>,
        err: redis::RedisError,
    ) -> Self {
        match err.code() {
            Some(code) => Self::from_code(script, code, err.detail().unwrap_or("")),
            None => ErrorKind::Redis(err).into(),
        }
    }

    /// The error for a reply `-<code> <detail>` to a call of `script`.
    pub(crate) fn from_code(
        script: Option<&'static crate::ScriptInfo>,
        code: &str,
        detail: &str,
    ) -> Self {
        if let Some(s) = script.filter(|s| s.errors.contains(&code)) {
            return from_script(s.name, code, detail).into();
        }
        // Redis 7.0 answers a command its ACL denies inside a script with a
        // plain `ERR` (`The user executing the script can't run this
        // command or subcommand`), Valkey with `ERR ACL failure in script`,
        // not `NOPERM`: the same refusal.
        let kind = match ServerErrorKind::of_code(code) {
            _ if crate::core::retry::demotion_code(code, detail) => ServerErrorKind::Demoted,
            ServerErrorKind::Other
                if code == "ERR"
                    && (detail.contains("can't run this command")
                        || detail.contains("can't publish to the channel")
                        || detail.contains("can't access at least one of the keys")
                        || detail.starts_with("ACL failure in script")) =>
            {
                ServerErrorKind::NoPermission
            }
            kind => kind,
        };
        let mut message = strip_script_location(detail).to_string();
        if let Some(what) = script
            .filter(|_| kind == ServerErrorKind::NoPermission)
            .and_then(|s| denied_call(s, detail))
        {
            message = format!("{message} ({what})");
        }
        ErrorKind::Server {
            kind,
            code: code.to_string(),
            message,
            script: script.map(|s| s.name),
        }
        .into()
    }
}

/// What a script's call that its user's ACL denied was: Redis names the
/// line (`on @user_script:<n>.`, `@user_function:<n>` in the Functions
/// library) but not always the command, and never the channel or key; the
/// line's call ([`ScriptInfo::call_on_line`](crate::ScriptInfo::call_on_line))
/// names both. `None` when the line holds no call.
fn denied_call(s: &crate::ScriptInfo, detail: &str) -> Option<String> {
    let (source, at) = if let Some(at) = detail.find("@user_script:") {
        (s.source(), at + "@user_script:".len())
    } else {
        let at = detail.find("@user_function:")?;
        (LIBRARY, at + "@user_function:".len())
    };
    let digits: String = detail[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let line = source
        .lines()
        .nth(digits.parse::<usize>().ok()?.checked_sub(1)?)?;
    let what = s.call_on_line(line)?;
    Some(format!("denied: {what}, line {digits} of {}", s.name))
}

impl crate::ScriptInfo {
    /// The `redis.call` / `redis.pcall` on `line` of this script's source
    /// (or of its function in the Functions library), in words: `GET on
    /// KEYS[1] (lock)`, `SPUBLISH to the channel ARGV[2] (channel)`, or the
    /// bare command when its first argument is not a key or argument the
    /// header names. `None` when the line holds no call. This is how an
    /// ACL refusal, which Redis reports by line, names the refused call;
    /// the exported clients carry the same words per line
    /// ([`ScriptInfo::calls`](crate::ScriptInfo::calls)).
    pub fn call_on_line(&self, line: &str) -> Option<String> {
        let call = line
            .find("redis.call(")
            .map(|i| i + "redis.call(".len())
            .or_else(|| line.find("redis.pcall(").map(|i| i + "redis.pcall(".len()))?;
        let rest = line[call..].trim_start();
        let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
        let (command, after) = rest[1..].split_once(quote)?;
        let command = command.to_ascii_uppercase();
        let first = after
            .trim_start_matches([',', ' '])
            .split([',', ')'])
            .next()
            .unwrap_or("")
            .trim();
        let role = self.named(first);
        let channel = matches!(command.as_str(), "PUBLISH" | "SPUBLISH");
        Some(match (role, channel) {
            (Some(role), true) => format!("{command} to the channel {first} ({role})"),
            (Some(role), false) => format!("{command} on {first} ({role})"),
            (None, _) => command,
        })
    }

    /// Every call of the shipped script ([`ScriptInfo::source`](crate::script::ScriptInfo::source)) by its
    /// 1-based line, in words ([`ScriptInfo::call_on_line`](crate::script::ScriptInfo::call_on_line)).
    pub fn calls(&self) -> Vec<(usize, String)> {
        self.source()
            .lines()
            .enumerate()
            .filter_map(|(i, line)| Some((i + 1, self.call_on_line(line)?)))
            .collect()
    }

    /// The header's name of `KEYS[n]` or `ARGV[n]`.
    fn named(&self, reference: &str) -> Option<&'static str> {
        let (list, n) = reference.strip_suffix(']')?.split_once('[')?;
        let n = n.parse::<usize>().ok()?.checked_sub(1)?;
        match list {
            "KEYS" => self.keys.get(n).map(|k| k.name),
            "ARGV" => self.args.get(n).map(|a| a.name),
            _ => None,
        }
    }
}

/// Redis appends `script: <sha>, on @user_script:<line>.` to errors raised
/// inside a script; the error names the script instead.
fn strip_script_location(detail: &str) -> &str {
    match detail.find(" script: ") {
        Some(at) => detail[..at].trim_end(),
        None => detail,
    }
}
