//! Reading the server's configuration (`CONFIG GET`), shared by the
//! patterns that plan from live limits.

use std::collections::HashMap;

use redis::ConnectionLike;

use crate::error::Result;

/// `CONFIG GET name...` as a map of parameter to value, or `None` when the
/// server refuses `CONFIG` (renamed away, denied by an ACL, a managed
/// service): the caller then falls back to the documented default.
/// Connection errors and replies of the wrong shape are returned as errors.
pub(crate) fn config_get(
    con: &mut dyn ConnectionLike,
    names: &[&str],
) -> Result<Option<HashMap<String, String>>> {
    let reply: redis::RedisResult<HashMap<String, String>> =
        redis::cmd("CONFIG").arg("GET").arg(names).query(con);
    match reply {
        Ok(map) => Ok(Some(map)),
        Err(e)
            if matches!(
                e.kind(),
                redis::ErrorKind::Server(_) | redis::ErrorKind::Extension
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}
