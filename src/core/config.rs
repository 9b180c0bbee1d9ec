//! Reading the server's configuration (`CONFIG GET`), shared by the
//! patterns that plan from live limits, and saying where a limit came from
//! ([`LimitsSource`]) when the server would not tell.

use std::collections::HashMap;

use serde::Serialize;

/// Where the limits a plan was made against came from. A least-privilege
/// user is usually denied `CONFIG`: the planners then assume Redis's
/// documented defaults and say so here, instead of silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum LimitsSource {
    /// The server answered `CONFIG GET`.
    Server,
    /// The server refused `CONFIG GET` (an ACL denies it, it is renamed
    /// away, a managed service): Redis's defaults were assumed.
    DefaultBecauseDenied,
    /// The server answered but did not report the parameter (an older or
    /// another server): Redis's defaults were assumed.
    DefaultBecauseUnreported,
    /// The caller gave the limits.
    Given,
}

/// What a report says: `the server's`, `the default (CONFIG GET refused)`,
/// `the default (not reported)`, `given`.
impl std::fmt::Display for LimitsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Server => "the server's",
            Self::DefaultBecauseDenied => "the default (CONFIG GET refused)",
            Self::DefaultBecauseUnreported => "the default (not reported)",
            Self::Given => "given",
        })
    }
}

/// `CONFIG GET name...` as an operation: a map of parameter to value, or
/// `None` when the server refuses `CONFIG` (renamed away, denied by an ACL,
/// a managed service), so the caller can fall back to the documented
/// default and say so. Connection errors are returned as errors. On a
/// cluster it asks one node.
pub fn get(names: &[&str]) -> crate::Op<Option<HashMap<String, String>>> {
    let mut cmd = redis::cmd("CONFIG");
    cmd.arg("GET").arg(names);
    let mut batch = crate::Batch::new();
    batch.add_keyless(cmd);
    crate::Op::send(batch, |mut replies| {
        let value = replies.take_value()?;
        if matches!(value, redis::Value::ServerError(_)) {
            return Ok(None);
        }
        let map: HashMap<String, String> = redis::FromRedisValue::from_redis_value(value)
            .map_err(|e| crate::Error::from(redis::RedisError::from(e)))?;
        Ok(Some(map))
    })
}

/// Reads limits with `CONFIG GET names`, parsed by `parse` (`None`: not all
/// reported), falling back to `default` and saying why.
pub(crate) fn limits<T: Send + 'static>(
    names: &'static [&'static str],
    parse: impl FnOnce(&HashMap<String, String>) -> Option<T> + Send + 'static,
    default: T,
) -> crate::Op<(T, LimitsSource)> {
    get(names).map(move |map| match map {
        None => (default, LimitsSource::DefaultBecauseDenied),
        Some(map) => match parse(&map) {
            Some(v) => (v, LimitsSource::Server),
            None => (default, LimitsSource::DefaultBecauseUnreported),
        },
    })
}
