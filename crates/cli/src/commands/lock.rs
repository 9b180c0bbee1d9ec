//! `redis-patterns lock acquire|release`: the owner-token lock with fencing
//! tokens, for scripts and cron jobs (`lock status` plugs in here too).

use std::time::Duration;

use redis_patterns::Request;
use redis_patterns::keys::Prefix;
use redis_patterns::lock::{DEFAULT_PREFIX, Lock};

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
}

/// The lock's key prefix.
#[derive(clap::Args, Debug, Clone)]
pub struct PrefixArg {
    /// Key prefix (keys PREFIX{NAME} and PREFIX{NAME}:fence).
    #[arg(long, default_value = DEFAULT_PREFIX)]
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
                vec![if released {
                    "released".to_string()
                } else {
                    "not released: the token does not own the lock (it expired or another owner holds it)"
                        .to_string()
                }]
            });
            if released {
                Ok(())
            } else {
                Err(Failure::new(
                    "the lock was not released: its lease ran out or another owner holds it",
                ))
            }
        }
    }
}
