//! `redis-patterns visits add|count|contains|distinct`: exact daily unique
//! visitors in sharded intsets; each day stores its shard count.

use redis_patterns::chrono::{NaiveDate, Utc};
use redis_patterns::keys::Prefix;
use redis_patterns::visits::{ShardPlan, VisitCounter};
use redis_patterns::{Connection, ErrorKind, Request};
use serde::Serialize;

use super::{day, iso, today};
use crate::conn::UrlArg;
use crate::fail::{CliResult, Failure};
use crate::out;

/// The counter: its name, key prefix and (for data without a stored layout) shard count.
#[derive(clap::Args, Debug, Clone)]
pub struct CounterArgs {
    /// The counter's name (keys PREFIX{NAME:YYYY-MM-DD}:...).
    name: String,
    /// Key prefix.
    #[arg(long, default_value = VisitCounter::DEFAULT_PREFIX)]
    prefix: String,
    /// Shard sets per day: for a new day, or one written without a stored
    /// layout; refused when the day stores another.
    #[arg(long)]
    shards: Option<u32>,
}

#[derive(clap::Subcommand)]
pub enum VisitsCommand {
    /// Count visits of integer members on a day (default today, UTC).
    Add {
        #[command(flatten)]
        counter: CounterArgs,
        #[arg(required = true, allow_negative_numbers = true)]
        members: Vec<String>,
        #[arg(long, value_parser = day)]
        day: Option<NaiveDate>,
        /// Plan the shard count of a new day for this many daily uniques.
        #[arg(long, conflicts_with = "shards")]
        expected: Option<u64>,
        #[command(flatten)]
        url: UrlArg,
    },
    /// The day's distinct count.
    Count {
        #[command(flatten)]
        counter: CounterArgs,
        #[arg(long, value_parser = day)]
        day: Option<NaiveDate>,
        #[command(flatten)]
        url: UrlArg,
    },
    /// Whether a member was counted on the day.
    Contains {
        #[command(flatten)]
        counter: CounterArgs,
        #[arg(allow_negative_numbers = true)]
        member: String,
        #[arg(long, value_parser = day)]
        day: Option<NaiveDate>,
        #[command(flatten)]
        url: UrlArg,
    },
    /// The exact number of distinct members from FROM to TO inclusive.
    Distinct {
        #[command(flatten)]
        counter: CounterArgs,
        #[arg(long, value_parser = day)]
        from: NaiveDate,
        #[arg(long, value_parser = day)]
        to: NaiveDate,
        #[command(flatten)]
        url: UrlArg,
    },
}

/// The counter with the shard count stored for the days `from..=to`, or
/// the one `--shards` names for days without one (another stored one is
/// refused); `None` when neither is known.
fn counter(
    con: &mut Connection,
    args: &CounterArgs,
    from: NaiveDate,
    to: NaiveDate,
) -> CliResult<Option<VisitCounter<Utc>>> {
    let base = VisitCounter::builder(&args.name, Utc, args.shards.unwrap_or(1))
        .prefix(Prefix::new(&args.prefix)?)
        .build()?;
    let stored = base.stored_shards_between(from, to).run(con).map_err(|e| {
        if matches!(e.kind(), ErrorKind::LayoutMismatch { .. }) {
            Failure::new(format!(
                "{}: the days have different shard counts, count them separately",
                crate::fail::describe(&e)
            ))
        } else {
            e.into()
        }
    })?;
    match (stored, args.shards) {
        (Some(n), Some(asked)) if n != asked => Err(Failure::new(format!(
            "refused: {} holds data laid out as shards={n}, not as shards={asked}: drop --shards to use the stored layout",
            base.meta_key(from)
        ))),
        (Some(n), _) => Ok(Some(base.with_shards(n)?)),
        (None, Some(_)) => Ok(Some(base)),
        (None, None) => Ok(None),
    }
}

fn no_layout(args: &CounterArgs, day: NaiveDate) -> Failure {
    Failure::new(format!(
        "{} stores no layout for {} (no visits, or written by other code): name it with --shards N",
        args.name,
        iso(day)
    ))
}

#[derive(Serialize)]
struct Added {
    day: String,
    shards: u32,
    count: u64,
    new: Vec<Option<bool>>,
    /// How `--expected` planned a new day's shards (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<ShardPlan>,
}

pub fn run(command: VisitsCommand) -> CliResult {
    match command {
        VisitsCommand::Add {
            counter: args,
            members,
            day,
            expected,
            url,
        } => add(args, members, day, expected, url),
        VisitsCommand::Count {
            counter: args,
            day,
            url,
        } => count(args, day, url),
        VisitsCommand::Contains {
            counter: args,
            member,
            day,
            url,
        } => contains(args, member, day, url),
        VisitsCommand::Distinct {
            counter: args,
            from,
            to,
            url,
        } => distinct(args, from, to, url),
    }
}

/// `visits add`: count members on a day, planning the shards of a new counter from `--expected`.
fn add(
    args: CounterArgs,
    members: Vec<String>,
    day: Option<NaiveDate>,
    expected: Option<u64>,
    url: UrlArg,
) -> CliResult {
    let members = members
        .iter()
        .map(|m| VisitCounter::parse_member(m))
        .collect::<redis_patterns::Result<Vec<i64>>>()?;
    let day = day.unwrap_or_else(today);
    let mut con = url.connect()?;
    let mut plan = None;
    let c = match counter(&mut con, &args, day, day)? {
        Some(c) => c,
        None => match expected {
            Some(n) => {
                let planned = plan.insert(ShardPlan::planned_shards(n).run(&mut con)?);
                VisitCounter::builder(&args.name, Utc, planned.shards)
                    .prefix(Prefix::new(&args.prefix)?)
                    .build()?
            }
            None => {
                return Err(Failure::new(format!(
                    "{} has no visits on {} yet: pass --shards N or --expected N for its layout",
                    args.name,
                    iso(day)
                )));
            }
        },
    };
    let b = c.add_batch(day, &members).run(&mut con)?;
    let added = Added {
        day: iso(day),
        shards: c.shards(),
        count: b.count,
        new: b.new.clone(),
        plan,
    };
    out::emit(&added, || {
        let mut lines = Vec::new();
        if let (Some(p), Some(n)) = (&added.plan, expected) {
            lines.push(format!(
                "planned {} shards for {n} daily uniques against set-max-intset-entries {} ({})",
                p.shards, p.max_intset_entries, p.limits_source
            ));
        }
        let new = b.new.iter().filter(|&&n| n == Some(true)).count();
        // Sent again after a lost reply: the first attempt may
        // have counted them.
        let unknown = b.new.iter().filter(|n| n.is_none()).count();
        let new = match unknown {
            0 => new.to_string(),
            u => format!("{new} (and {u} not known: the call was sent again)"),
        };
        lines.push(format!(
            "{new} new of {} members; {} distinct on {}",
            members.len(),
            b.count,
            iso(day)
        ));
        lines
    });
    Ok(())
}

/// `visits count`: a day's distinct count.
fn count(args: CounterArgs, day: Option<NaiveDate>, url: UrlArg) -> CliResult {
    let day = day.unwrap_or_else(today);
    let mut con = url.connect()?;
    let c = VisitCounter::builder(&args.name, Utc, args.shards.unwrap_or(1))
        .prefix(Prefix::new(&args.prefix)?)
        .build()?;
    let count = c.count(day).run(&mut con)?;
    out::emit(
        &serde_json::json!({"day": iso(day), "count": count}),
        || vec![count.to_string()],
    );
    Ok(())
}

/// `visits contains`: whether a member was counted on a day.
fn contains(args: CounterArgs, member: String, day: Option<NaiveDate>, url: UrlArg) -> CliResult {
    let m = VisitCounter::parse_member(&member)?;
    let day = day.unwrap_or_else(today);
    let mut con = url.connect()?;
    let c = counter(&mut con, &args, day, day)?.ok_or_else(|| no_layout(&args, day))?;
    let counted = c.contains(day, m).run(&mut con)?;
    out::emit(
        &serde_json::json!({"day": iso(day), "member": m, "counted": counted}),
        || vec![if counted { "counted" } else { "not counted" }.to_string()],
    );
    Ok(())
}

/// `visits distinct`: the exact distinct count over a range of days.
fn distinct(args: CounterArgs, from: NaiveDate, to: NaiveDate, url: UrlArg) -> CliResult {
    let mut con = url.connect()?;
    let distinct = match counter(&mut con, &args, from, to)? {
        Some(c) => c.distinct_between(from, to).run(&mut con)?,
        // No day of the range stores a layout: no visits at all,
        // or visits written by other code (name their shard count).
        None => {
            let c = VisitCounter::builder(&args.name, Utc, 1)
                .prefix(Prefix::new(&args.prefix)?)
                .build()?;
            let days: Vec<NaiveDate> = from.iter_days().take_while(|d| *d <= to).collect();
            let counts = redis_patterns::Op::join(days.iter().map(|&d| c.count(d)).collect())
                .run(&mut con)?;
            if let Some(i) = counts.iter().position(|&n| n > 0) {
                return Err(no_layout(&args, days[i]));
            }
            0
        }
    };
    out::emit(
        &serde_json::json!({"from": iso(from), "to": iso(to), "distinct": distinct}),
        || vec![distinct.to_string()],
    );
    Ok(())
}
