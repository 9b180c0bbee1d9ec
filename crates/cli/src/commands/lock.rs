//! `redis-patterns lock acquire|release|status`: the owner-token lock with
//! fencing tokens, for scripts and cron jobs. `status` shows whether a lock
//! is held, the holder's remaining lease and the fencing counter (one round
//! trip), never the holder's token: whoever knows it can release the lock.

use std::time::Duration;

use redis_patterns::Request;
use redis_patterns::keys::Prefix;
use redis_patterns::lock::{Lock, LockStatus};

use crate::conn::UrlArg;
use crate::fail::{CliResult, Failure};
use crate::out;

#[derive(clap::Subcommand)]
pub enum LockCommand {
    /// Take the lock NAME; prints the owner token (pass it to release) and the fencing token.
    Acquire {
        name: String,
        /// The lease in milliseconds: the lock frees itself after it.
        #[arg(long, default_value_t = 30_000)]
        lease_ms: u64,
        /// Wait up to this many milliseconds for a busy lock (default: fail at once).
        #[arg(long, default_value_t = 0)]
        wait_ms: u64,
        #[command(flatten)]
        prefix: PrefixArg,
        #[command(flatten)]
        url: UrlArg,
    },
    /// Release the lock NAME if TOKEN still owns it.
    Release {
        name: String,
        /// The owner token acquire printed.
        token: String,
        #[command(flatten)]
        prefix: PrefixArg,
        #[command(flatten)]
        url: UrlArg,
    },
    /// Show whether the lock NAME is held, the holder's remaining lease and the fencing counter.
    Status {
        name: String,
        #[command(flatten)]
        prefix: PrefixArg,
        #[command(flatten)]
        url: UrlArg,
    },
}

/// The lock's key prefix.
#[derive(clap::Args, Debug, Clone)]
pub struct PrefixArg {
    /// Key prefix (keys PREFIX{NAME} and PREFIX{NAME}:fence).
    #[arg(long, default_value = Lock::DEFAULT_PREFIX)]
    pub prefix: String,
}

fn lock(name: &str, prefix: &PrefixArg, lease: Duration) -> CliResult<Lock> {
    Ok(Lock::builder(name)
        .prefix(Prefix::new(&prefix.prefix)?)
        .lease(lease)
        .build()?)
}

pub fn run(command: LockCommand) -> CliResult {
    match command {
        LockCommand::Acquire {
            name,
            lease_ms,
            wait_ms,
            prefix,
            url,
        } => {
            let lock = lock(&name, &prefix, Duration::from_millis(lease_ms))?;
            let mut con = url.connect()?;
            let op = if wait_ms == 0 {
                lock.try_acquire()
            } else {
                lock.acquire(Duration::from_millis(wait_ms))
            };
            let lease = op.run(&mut con).map_err(|e| {
                if e.is_busy() {
                    Failure::new(format!(
                        "{}: try again later, or wait for it with --wait-ms",
                        crate::fail::describe(&e)
                    ))
                } else {
                    Failure::from(e)
                }
            })?;
            out::emit(&lease, || {
                vec![
                    format!("token {}", lease.token),
                    format!("fence {}", lease.fence),
                ]
            });
            Ok(())
        }
        LockCommand::Release {
            name,
            token,
            prefix,
            url,
        } => {
            let lock = lock(&name, &prefix, Duration::from_secs(1))?;
            let mut con = url.connect()?;
            let released = lock.release(&token).run(&mut con)?;
            out::emit(&serde_json::json!({"released": released}), || {
                vec![match released {
                    Some(true) => "released".to_string(),
                    Some(false) => "not released: the token does not own the lock (it expired or another owner holds it)"
                        .to_string(),
                    None => "released or expired before: the release was sent again after its reply was lost and found the lock free of the token"
                        .to_string(),
                }]
            });
            if released != Some(false) {
                Ok(())
            } else {
                Err(Failure::new(
                    "the lock was not released: its lease ran out or another owner holds it",
                ))
            }
        }
        LockCommand::Status { name, prefix, url } => {
            let lock = lock(&name, &prefix, Duration::from_secs(1))?;
            let mut con = url.connect()?;
            let status = lock.status().run(&mut con)?;
            out::emit(&status, || vec![describe(&status)]);
            Ok(())
        }
    }
}

/// One sentence about a lock's state.
fn describe(s: &LockStatus) -> String {
    let fence = match s.fence {
        0 => "no fencing token handed out yet".to_string(),
        n => format!("fencing counter {n}"),
    };
    match (s.held, s.remaining_lease_ms) {
        (false, _) => format!(
            "lock {} is free; {fence} (the next acquire gets {})",
            s.key,
            s.fence + 1
        ),
        (true, Some(ms)) => format!(
            "lock {} is held, {ms} ms of lease left; {fence} (the holder's)",
            s.key
        ),
        (true, None) => format!(
            "lock {} is held without a lease (no TTL: only its owner or an operator frees it); {fence}",
            s.key
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences() {
        let free = LockStatus {
            key: "redis:lock:{job}".into(),
            held: false,
            remaining_lease_ms: None,
            fence: 0,
        };
        assert_eq!(
            describe(&free),
            "lock redis:lock:{job} is free; no fencing token handed out yet (the next acquire gets 1)"
        );
        let held = LockStatus {
            held: true,
            remaining_lease_ms: Some(1500),
            fence: 7,
            ..free
        };
        assert_eq!(
            describe(&held),
            "lock redis:lock:{job} is held, 1500 ms of lease left; fencing counter 7 (the holder's)"
        );
    }
}
