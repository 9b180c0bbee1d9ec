//! `redis-patterns lock status NAME`: whether a lock is held, the holder's
//! remaining lease and the fencing counter (one round trip: `PTTL` and
//! `GET`), as text or JSON. Never the holder's token: whoever knows it can
//! release the lock.

use clap::{Args, Subcommand};
use redis_patterns::keys::Prefix;
use redis_patterns::lock::{DEFAULT_PREFIX, Lock, LockStatus};
use redis_patterns::{Connection, Request};

/// Owner-token locks.
#[derive(Subcommand)]
pub enum LockCommand {
    /// Show whether lock NAME is held, the holder's remaining lease and the
    /// fencing counter.
    Status(StatusArgs),
}

#[derive(Args)]
pub struct StatusArgs {
    /// The lock's name (keys PREFIX{NAME} and PREFIX{NAME}:fence).
    name: String,
    /// Redis URL, e.g. redis://127.0.0.1:6379/ (a Redis Cluster node is followed to its cluster).
    #[arg(long, env = "REDIS_URL")]
    url: String,
    /// The key prefix ("" for none).
    #[arg(long, default_value = DEFAULT_PREFIX)]
    prefix: String,
    /// Print one JSON object instead of a sentence.
    #[arg(long)]
    json: bool,
}

pub fn run(command: LockCommand) -> Result<(), Box<dyn std::error::Error>> {
    let LockCommand::Status(args) = command;
    let prefix = match args.prefix.as_str() {
        "" => Prefix::none(),
        p => Prefix::new(p)?,
    };
    let lock = Lock::builder(&args.name).prefix(prefix).build()?;
    let mut con = Connection::open(args.url.as_str())?;
    let status = lock.status().run(&mut con)?;
    if args.json {
        println!("{}", serde_json::to_string(&status)?);
    } else {
        println!("{}", describe(&status));
    }
    Ok(())
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
