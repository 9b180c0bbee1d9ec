//! `redis-patterns signin mark|count|streak`: daily sign-in bitmaps (the
//! PHP daily sign-in recipe's `SETBIT <date> <uid> 1` with `--bare`).

use redis_patterns::Request;
use redis_patterns::chrono::NaiveDate;
use redis_patterns::keys::Prefix;
use redis_patterns::signin::SignIn;

use super::{DayArg, day, iso};
use crate::conn::{At, Open};
use crate::fail::CliResult;
use crate::out;

/// Where the day bitmaps are.
#[derive(clap::Args, Debug, Clone)]
pub struct KeysArg {
    /// Key prefix (keys PREFIX<YYYYMMDD>).
    #[arg(long, default_value = SignIn::DEFAULT_PREFIX, conflicts_with = "bare")]
    prefix: String,
    /// Bare-date keys (20220320), as the PHP daily sign-in recipe writes them.
    #[arg(long)]
    bare: bool,
    /// Put every day in one cluster slot: keys PREFIX{TAG}:<YYYYMMDD>.
    #[arg(long)]
    tag: Option<String>,
}

impl Open for KeysArg {
    type Pattern = SignIn;

    fn pattern(&self) -> CliResult<SignIn> {
        let prefix = if self.bare {
            Prefix::none()
        } else {
            Prefix::new(&self.prefix)?
        };
        let mut b = SignIn::builder().prefix(prefix);
        if let Some(t) = &self.tag {
            b = b.tag(t);
        }
        Ok(b.build()?)
    }
}

#[derive(clap::Subcommand)]
pub enum SigninCommand {
    /// Record that UID signed in on the day (default today, UTC).
    Mark {
        uid: u64,
        #[command(flatten)]
        day: DayArg,
        #[command(flatten)]
        at: At<KeysArg>,
    },
    /// How many users signed in on the day.
    Count {
        #[command(flatten)]
        day: DayArg,
        #[command(flatten)]
        at: At<KeysArg>,
    },
    /// UID's longest and current run of consecutive days from FROM to TO.
    Streak {
        uid: u64,
        #[arg(long, value_parser = day)]
        from: NaiveDate,
        #[arg(long, value_parser = day)]
        to: NaiveDate,
        #[command(flatten)]
        at: At<KeysArg>,
    },
}

pub fn run(command: SigninCommand) -> CliResult {
    match command {
        SigninCommand::Mark { uid, day, at } => {
            let (s, mut con) = at.open()?;
            let day = day.get();
            let first = s.sign_in(uid, day).run(&mut con)?;
            out::emit(
                &serde_json::json!({"uid": uid, "day": iso(day), "first": first}),
                || {
                    vec![match first {
                        Some(true) => format!("{uid} signed in on {}", iso(day)),
                        Some(false) => format!("{uid} had already signed in on {}", iso(day)),
                        None => format!(
                            "{uid} signed in on {} (whether it was the first that day is not known: the call was sent again after its reply was lost)",
                            iso(day)
                        ),
                    }]
                },
            );
        }
        SigninCommand::Count { day, at } => {
            let (s, mut con) = at.open()?;
            let day = day.get();
            let n = s.count(day).run(&mut con)?;
            out::emit(&serde_json::json!({"day": iso(day), "count": n}), || {
                vec![n.to_string()]
            });
        }
        SigninCommand::Streak { uid, from, to, at } => {
            let (s, mut con) = at.open()?;
            let streak = s.streak(uid, from, to).run(&mut con)?;
            out::emit(&streak, || {
                vec![
                    format!("longest {}", streak.longest),
                    format!(
                        "longest_ends {}",
                        streak.longest_ends.map(iso).unwrap_or_else(|| "-".into())
                    ),
                    format!("current {}", streak.current),
                ]
            });
        }
    }
    Ok(())
}
