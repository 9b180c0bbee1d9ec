//! Reading the server's configuration (`CONFIG GET`), shared by the
//! patterns that plan from live limits.

use std::collections::HashMap;

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
