//! `redis-patterns login-log record|query|export`: the PHP login-log
//! recipe's monthly bitmaps (`loginLog_<YYYY-MM>_<type>_<uid>`), its seven
//! queries, and its sync rule (export this month, and last month before the
//! 8th; delete months past retention only after they were exported).

use std::io::Write;
use std::path::PathBuf;

use redis_patterns::Request;
use redis_patterns::chrono::{Datelike, NaiveDate};
use redis_patterns::keys::Prefix;
use redis_patterns::login_log::{Expiry, LoginLog, MonthLogins, month_of, sync_months};

use super::{DayArg, day, iso, month, today};
use crate::conn::{At, Open};
use crate::fail::{self, CliResult, Failure};
use crate::out;

/// The log's key prefix.
#[derive(clap::Args, Debug, Clone)]
pub struct LogArgs {
    /// Key prefix (keys PREFIX<YYYY-MM>_<type>_<uid>).
    #[arg(long, default_value = LoginLog::DEFAULT_PREFIX)]
    prefix: String,
}

impl Open for LogArgs {
    type Pattern = LoginLog;

    fn pattern(&self) -> CliResult<LoginLog> {
        Ok(LoginLog::builder()
            .prefix(Prefix::new(&self.prefix)?)
            .build()?)
    }
}

#[derive(clap::Subcommand)]
pub enum LoginLogCommand {
    /// (1) Record a login of UID of TYPE on the day (default today, UTC).
    Record {
        #[command(flatten)]
        user: User,
        #[command(flatten)]
        day: DayArg,
        #[command(flatten)]
        at: At<LogArgs>,
    },
    /// Queries (2) to (7).
    #[command(subcommand)]
    Query(Query),
    /// Write each user's login days of the months a sync covers (this
    /// month; also last month before the 8th) as CSV or JSON lines, record
    /// the export, and with --delete-expired delete months past retention
    /// that were exported after they ended.
    Export(ExportArgs),
}

#[derive(clap::Subcommand)]
pub enum Query {
    /// (2) Did UID log in on DAY?
    Day {
        #[command(flatten)]
        user: User,
        #[arg(value_parser = day)]
        day: NaiveDate,
        #[command(flatten)]
        at: At<LogArgs>,
    },
    /// (3) On how many days of MONTH (YYYY-MM) did UID log in?
    Month {
        #[command(flatten)]
        user: User,
        #[arg(value_parser = month)]
        month: NaiveDate,
        #[command(flatten)]
        at: At<LogArgs>,
    },
    /// (4) Did UID log in on any day from FROM to TO?
    Range(UserSpan),
    /// (5) The days from FROM to TO on which UID logged in.
    Days(UserSpan),
    /// (6) The users of TYPE who logged in from FROM to TO.
    Active {
        user_type: String,
        #[command(flatten)]
        span: Span,
        #[command(flatten)]
        at: At<LogArgs>,
    },
    /// (7) Every user, of every type, who logged in from FROM to TO.
    AllActive {
        #[command(flatten)]
        span: Span,
        #[command(flatten)]
        at: At<LogArgs>,
    },
}

/// `TYPE UID`: one user.
#[derive(clap::Args, Debug, Clone)]
pub struct User {
    user_type: String,
    uid: u64,
}

// One user's days from FROM to TO (queries 4 and 5).
#[derive(clap::Args, Debug, Clone)]
pub struct UserSpan {
    #[command(flatten)]
    user: User,
    #[command(flatten)]
    span: Span,
    #[command(flatten)]
    at: At<LogArgs>,
}

/// `FROM TO`: a range of days.
#[derive(clap::Args, Debug, Clone)]
pub struct Span {
    #[arg(value_parser = day)]
    from: NaiveDate,
    #[arg(value_parser = day)]
    to: NaiveDate,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
}

#[derive(clap::Args)]
pub struct ExportArgs {
    /// Export this month (YYYY-MM) instead of the sync window.
    #[arg(long, value_parser = month, conflicts_with = "since")]
    month: Option<NaiveDate>,
    /// Export every month from this one (YYYY-MM) to the current one.
    #[arg(long, value_parser = month)]
    since: Option<NaiveDate>,
    /// The day the sync runs as of (default today, UTC).
    #[arg(long, value_parser = day)]
    today: Option<NaiveDate>,
    /// csv (month,user_type,uid,days with days space-separated) or json
    /// (JSON lines); default csv, json with --json.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Write to this file instead of stdout.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Then delete months that ended more than DAYS days ago (at least 32)
    /// and were exported after they ended.
    #[arg(long)]
    delete_expired: Option<u32>,
    #[command(flatten)]
    at: At<LogArgs>,
}

pub fn run(command: LoginLogCommand) -> CliResult {
    match command {
        LoginLogCommand::Record {
            user: User { user_type, uid },
            day,
            at,
        } => {
            let (log, mut con) = at.open()?;
            let day = day.get();
            let first = log.record(&user_type, uid, day).run(&mut con)?;
            out::emit(
                &serde_json::json!({"user_type": user_type, "uid": uid, "day": iso(day), "first_of_day": first}),
                || {
                    vec![match first {
                        Some(true) => format!("recorded {user_type} {uid} on {}", iso(day)),
                        Some(false) => {
                            format!("{user_type} {uid} was already recorded on {}", iso(day))
                        }
                        None => format!(
                            "recorded {user_type} {uid} on {} (whether it was the first of the day is not known: the call was sent again after its reply was lost)",
                            iso(day)
                        ),
                    }]
                },
            );
            Ok(())
        }
        LoginLogCommand::Query(query) => query_run(query),
        LoginLogCommand::Export(args) => export(args),
    }
}

fn yes(b: bool) -> Vec<String> {
    vec![if b { "yes" } else { "no" }.to_string()]
}

fn query_run(query: Query) -> CliResult {
    let at = match &query {
        Query::Day { at, .. }
        | Query::Month { at, .. }
        | Query::Range(UserSpan { at, .. })
        | Query::Days(UserSpan { at, .. })
        | Query::Active { at, .. }
        | Query::AllActive { at, .. } => at,
    };
    let (log, mut con) = at.open()?;
    let con = &mut con;
    match query {
        Query::Day {
            user: User { user_type, uid },
            day,
            ..
        } => {
            let b = log.logged_in_on(&user_type, uid, day).run(con)?;
            out::emit(&serde_json::json!({"logged_in": b}), || yes(b));
        }
        Query::Month {
            user: User { user_type, uid },
            month,
            ..
        } => {
            let n = log
                .days_in_month(&user_type, uid, month.year(), month.month())
                .run(con)?;
            out::emit(
                &serde_json::json!({"month": month.format("%Y-%m").to_string(), "days": n, "logged_in": n > 0}),
                || vec![n.to_string()],
            );
        }
        Query::Range(UserSpan {
            user: User { user_type, uid },
            span: Span { from, to },
            ..
        }) => {
            let b = log.logged_in_between(&user_type, uid, from, to).run(con)?;
            out::emit(&serde_json::json!({"logged_in": b}), || yes(b));
        }
        Query::Days(UserSpan {
            user: User { user_type, uid },
            span: Span { from, to },
            ..
        }) => {
            let days: Vec<String> = log
                .login_days(&user_type, uid, from, to)
                .run(con)?
                .into_iter()
                .map(iso)
                .collect();
            out::emit(&days, || days.clone());
        }
        Query::Active {
            user_type,
            span: Span { from, to },
            ..
        } => {
            let uids = log.active_users(&user_type, from, to).run(con)?;
            out::emit(&uids, || uids.iter().map(u64::to_string).collect());
        }
        Query::AllActive {
            span: Span { from, to },
            ..
        } => {
            let users = log.all_active_users(from, to).run(con)?;
            out::emit(&users, || {
                users
                    .iter()
                    .map(|u| format!("{}\t{}", u.user_type, u.uid))
                    .collect()
            });
        }
    }
    Ok(())
}

/// Users per `month_logins` batch.
const USERS_PER_BATCH: usize = 5000;

fn row(m: &MonthLogins, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string(m).unwrap_or_default(),
        Format::Csv => {
            let days: Vec<String> = m.days.iter().map(u32::to_string).collect();
            format!("{},{},{},{}", m.month, m.user_type, m.uid, days.join(" "))
        }
    }
}

fn export(args: ExportArgs) -> CliResult {
    if let Some(days) = args.delete_expired
        && days < LoginLog::MIN_RETENTION_DAYS
    {
        return Err(Failure::new(format!(
            "--delete-expired must be at least {} days: a month may only go once a later sync exported all of it",
            LoginLog::MIN_RETENTION_DAYS
        )));
    }
    let log = args.at.pattern.pattern()?;
    let format = args.format.unwrap_or(if out::json() {
        Format::Json
    } else {
        Format::Csv
    });
    let today = args.today.unwrap_or_else(today);
    let months = export_months(&args, today);
    let mut sink: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).map_err(|e| fail::file("create", path, &e))?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    let write_err = |e: std::io::Error| -> Failure {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        match &args.output {
            Some(p) => fail::file("write", p, &e),
            None => Failure::new(format!("cannot write to stdout: {}", fail::io_text(&e))),
        }
    };
    let mut con = args.at.url.connect()?;
    if format == Format::Csv {
        writeln!(sink, "month,user_type,uid,days").map_err(write_err)?;
    }
    let mut report = Vec::new();
    for m in &months {
        let users = log.month_users(*m).run(&mut con)?;
        for chunk in users.chunks(USERS_PER_BATCH) {
            for row_ in log.month_logins(*m, chunk).run(&mut con)? {
                writeln!(sink, "{}", row(&row_, format)).map_err(write_err)?;
            }
        }
        // Recorded only once the month's rows are written out.
        sink.flush().map_err(write_err)?;
        log.mark_exported(*m, today).run(&mut con)?;
        report.push(
            serde_json::json!({"month": m.format("%Y-%m").to_string(), "users": users.len()}),
        );
    }
    drop(sink);
    let mut expired = Vec::new();
    if let Some(keep) = args.delete_expired {
        for (m, _) in log.exports().run(&mut con)? {
            if months.contains(&m) {
                continue;
            }
            expired.push(log.expire_month(m, keep, today).run(&mut con)?);
        }
    }
    print_export(&args, today, &report, &expired);
    Ok(())
}

/// The months `login-log export` writes: `--month`, the months from
/// `--since` to today's, else those a sync exports.
fn export_months(args: &ExportArgs, today: NaiveDate) -> Vec<NaiveDate> {
    match (args.month, args.since) {
        (Some(m), _) => vec![m],
        (None, Some(since)) => {
            let mut v = Vec::new();
            let mut m = month_of(since);
            while m <= month_of(today) {
                v.push(m);
                m = m + redis_patterns::chrono::Months::new(1);
            }
            v
        }
        (None, None) => sync_months(today),
    }
}

/// What an export did: JSON with `--json` and `--output`, else lines on
/// stderr (the rows go to stdout or the file).
fn print_export(
    args: &ExportArgs,
    today: NaiveDate,
    report: &[serde_json::Value],
    expired: &[Expiry],
) {
    let summary = serde_json::json!({"today": iso(today), "exported": report, "expiry": expired});
    if out::json() && args.output.is_some() {
        out::json_line(&summary);
    } else {
        for r in report {
            eprintln!(
                "exported {} ({} users)",
                r["month"].as_str().unwrap_or(""),
                r["users"]
            );
        }
        for e in expired {
            eprintln!("{}", expiry_text(e));
        }
    }
}

/// One line of what `--delete-expired` did with a month.
fn expiry_text(e: &Expiry) -> String {
    match e {
        Expiry::Deleted {
            month,
            keys: Some(keys),
        } => format!("deleted {month} ({keys} keys)"),
        Expiry::Deleted { month, keys: None } => format!(
            "deleted {month} (how many keys is not known: a delete was sent again after its reply was lost)"
        ),
        Expiry::Kept { month } => format!("kept {month}: not past retention yet"),
        Expiry::NotExported { month, last_export } => format!(
            "kept {month}: past retention but {}: export it again with --month {month}",
            match last_export {
                Some(d) => format!("last exported on {d}, before the month ended"),
                None => "never exported".to_string(),
            }
        ),
    }
}
