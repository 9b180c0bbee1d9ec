//! `redis-patterns analytics mark|count|query|cohort|streak|active`:
//! bitmapist-style event bitmaps per hour / day / ISO week / month / year
//! (UTC), set expressions given as JSON, cohort tables, one id's streak and
//! the ids active in n of the last m periods, each one script call; with
//! `--hll` / `mark --strings`, HyperLogLogs for approximate uniques
//! (`count --uniques`).

use redis_patterns::analytics::{Analytics, Cohort, Expr, Granularity, Page, Period, Query};
use redis_patterns::chrono::{DateTime, SecondsFormat, Utc};
use redis_patterns::keys::Prefix;
use redis_patterns::{Connection, Request};
use serde_json::json;

use crate::conn::{At, Open};
use crate::fail::{CliResult, Failure};
use crate::out;

/// Where the bitmaps are and what a mark sets.
#[derive(clap::Args, Debug, Clone)]
pub struct KeysArg {
    /// Key prefix (keys PREFIX{EVENT}:<period>, or PREFIX{TAG}:EVENT:<period>).
    #[arg(long, default_value = Analytics::DEFAULT_PREFIX)]
    prefix: String,
    /// Put every event in one cluster slot: keys PREFIX{TAG}:EVENT:<period>
    /// (expressions over several events then run on the server on a cluster too).
    #[arg(long)]
    tag: Option<String>,
    /// The largest id accepted (a bitmap grows to MAX_ID / 8 bytes).
    #[arg(long)]
    max_id: Option<u64>,
    /// The periods a mark sets, comma-separated from hour, day, week, month,
    /// year [default: day,week,month].
    #[arg(long, value_delimiter = ',', value_parser = granularity)]
    granularities: Vec<Granularity>,
    /// Also add each marked id to the event's HyperLogLog of the finest
    /// period, in the same script (`count --uniques` answers from it).
    #[arg(long)]
    hll: bool,
}

fn granularity(s: &str) -> Result<Granularity, String> {
    Granularity::parse(s).map_err(|e| e.to_string())
}

fn period(s: &str) -> Result<Period, String> {
    s.parse::<Period>().map_err(|e| e.to_string())
}

/// `--at`: an RFC 3339 time (2024-03-04T10:00:00Z) or unix seconds.
fn instant(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(secs) = s.parse::<i64>() {
        return DateTime::from_timestamp(secs, 0)
            .ok_or_else(|| format!("{s} is outside the unix time range"));
    }
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            format!("{s} is not a time: write it as 2024-03-04T10:00:00Z or as unix seconds")
        })
}

fn expression(s: &str) -> Result<Expr, String> {
    let v: serde_json::Value = serde_json::from_str(s).map_err(|e| {
        format!("the expression is not JSON ({e}): write it as {{\"and\": [{{\"event\": \"active\", \"period\": \"D:2024-03-04\"}}, ...]}}")
    })?;
    Expr::from_json(&v).map_err(|e| e.to_string())
}

impl Open for KeysArg {
    type Pattern = Analytics;

    fn pattern(&self) -> CliResult<Analytics> {
        let mut b = Analytics::builder().prefix(Prefix::new(&self.prefix)?);
        if let Some(t) = &self.tag {
            b = b.tag(t);
        }
        if let Some(m) = self.max_id {
            b = b.max_id(m);
        }
        if !self.granularities.is_empty() {
            b = b.granularities(&self.granularities);
        }
        Ok(b.hll(self.hll).build()?)
    }
}

/// What `query` answers (default: the count).
#[derive(clap::Args, Debug, Clone)]
#[group(multiple = false)]
pub struct AnswerArg {
    /// Whether the expression holds ID.
    #[arg(long, value_name = "ID")]
    contains: Option<u64>,
    /// A page of the expression's ids, ascending, from --from on.
    #[arg(long)]
    members: bool,
}

/// Which page of ids `--members` answers.
#[derive(clap::Args, Debug, Clone)]
pub struct PageArg {
    /// With --members: the first id of the page.
    #[arg(long, default_value_t = 0, requires = "members")]
    from: u64,
    /// With --members: the most ids of the page.
    #[arg(long, default_value_t = 1000, requires = "members")]
    limit: usize,
}

#[derive(clap::Subcommand)]
pub enum AnalyticsCommand {
    /// Mark IDs as having done EVENT at --at (default now): every configured
    /// period's bitmap in one script (or, with --unique, the event's one
    /// bitmap without time; with --strings, the finest period's HyperLogLog
    /// only, or with --unique --strings the unique event's).
    Mark {
        event: String,
        #[arg(required = true)]
        ids: Vec<String>,
        /// When: 2024-03-04T10:00:00Z or unix seconds [default: now].
        #[arg(long, value_parser = instant, conflicts_with = "unique")]
        at: Option<DateTime<Utc>>,
        /// A unique event: one bitmap, no time (period label U).
        #[arg(long)]
        unique: bool,
        /// The IDS are any strings (e-mail addresses, UUIDs), not dense
        /// integers: added to the finest period's HyperLogLog (with
        /// --unique: the unique event's), no bitmap (`count --uniques`
        /// answers, 0.81 % standard error).
        #[arg(long)]
        strings: bool,
        #[command(flatten)]
        keys: At<KeysArg>,
    },
    /// How many ids EVENT marked in PERIOD (H:2024-03-04T10, D:2024-03-04,
    /// W:2024-W10, M:2024-03, Y:2024, or U for a unique event).
    ///
    /// With --uniques: about how many distinct ids, from the HyperLogLogs
    /// (--hll or mark --strings; 0.81 % standard error), over PERIOD to
    /// --to (a union of the finest periods, one PFCOUNT); PERIOD U: the
    /// unique event's HyperLogLog (mark --unique with --hll, or --strings).
    Count {
        event: String,
        period: String,
        /// Answer from the HyperLogLogs (approximate).
        #[arg(long)]
        uniques: bool,
        /// With --uniques: the last period of the range [default: PERIOD].
        #[arg(long, value_parser = period, requires = "uniques")]
        to: Option<Period>,
        #[command(flatten)]
        keys: At<KeysArg>,
    },
    /// Answer a set expression given as JSON, e.g.
    /// '{"and": [{"event": "active", "period": "D:2024-03-04"}, {"not": {"event": "bought", "period": "D:2024-03-04"}}]}'
    /// (operators and, or, xor, one, diff, not inside and, at_least/of): its
    /// count, --contains ID or --members, in one script call.
    Query {
        #[arg(value_parser = expression)]
        expr: Expr,
        #[command(flatten)]
        answer: AnswerArg,
        #[command(flatten)]
        page: PageArg,
        /// Keep the result under <base>:cache:NAME for --ttl-ms and answer from it while it lives.
        #[arg(long, value_name = "NAME")]
        cache: Option<String>,
        #[arg(long, default_value_t = 60_000, requires = "cache")]
        ttl_ms: u64,
        #[command(flatten)]
        keys: At<KeysArg>,
    },
    /// The cohort table of COHORT_EVENT and RETURN_EVENT: --rows periods from
    /// FIRST on (its granularity), --columns periods each, in one script call.
    Cohort {
        cohort_event: String,
        return_event: String,
        #[arg(value_parser = period)]
        first: Period,
        #[arg(long, default_value_t = 7)]
        rows: usize,
        #[arg(long, default_value_t = 7)]
        columns: usize,
        #[command(flatten)]
        keys: At<KeysArg>,
    },
    /// ID's runs of consecutive periods with EVENT from FROM to TO (period
    /// labels of one granularity, at most 1000 periods): the longest, where
    /// it ends, the current one (ending at TO) and how many periods it did
    /// the event in.
    Streak {
        event: String,
        id: u64,
        #[arg(value_parser = period)]
        from: Period,
        #[arg(value_parser = period)]
        to: Period,
        #[command(flatten)]
        keys: At<KeysArg>,
    },
    /// The ids that did EVENT in at least N of the M periods ending with
    /// LAST (N = M: on a streak of at least M): their count, or --contains
    /// ID, or --members.
    Active {
        event: String,
        #[arg(long)]
        at_least: usize,
        #[arg(long)]
        of_last: usize,
        #[arg(value_parser = period)]
        last: Period,
        #[command(flatten)]
        answer: AnswerArg,
        #[command(flatten)]
        page: PageArg,
        #[command(flatten)]
        keys: At<KeysArg>,
    },
}

pub fn run(command: AnalyticsCommand) -> CliResult {
    match command {
        AnalyticsCommand::Mark {
            event,
            ids,
            strings: true,
            unique: true,
            keys,
            ..
        } => mark_unique_strings(&event, &ids, &keys),
        AnalyticsCommand::Mark {
            event,
            ids,
            at,
            strings: true,
            keys,
            ..
        } => mark_strings(&event, &ids, at, &keys),
        AnalyticsCommand::Mark {
            event,
            ids,
            at,
            unique,
            keys,
            ..
        } => mark(&event, &ids, at, unique, &keys),
        AnalyticsCommand::Count {
            event,
            period,
            uniques,
            to,
            keys,
        } if uniques => count_uniques(&event, &period, to, &keys),
        AnalyticsCommand::Count {
            event,
            period,
            keys,
            ..
        } => count(&event, &period, &keys),
        AnalyticsCommand::Query {
            expr,
            answer,
            page,
            cache,
            ttl_ms,
            keys,
        } => query(expr, &answer, &page, cache.as_deref(), ttl_ms, &keys),
        AnalyticsCommand::Cohort {
            cohort_event,
            return_event,
            first,
            rows,
            columns,
            keys,
        } => cohort(&cohort_event, &return_event, first, rows, columns, &keys),
        AnalyticsCommand::Streak {
            event,
            id,
            from,
            to,
            keys,
        } => streak(&event, id, from, to, &keys),
        AnalyticsCommand::Active {
            event,
            at_least,
            of_last,
            last,
            answer,
            page,
            keys,
        } => {
            let (a, mut con) = keys.open()?;
            let q = a.active_in_last(&event, at_least, of_last, last);
            answer_query(&q, &answer, &page, &mut con)
        }
    }
}

/// `analytics query`: the expression's answer, optionally kept under `cache` for `ttl_ms`.
fn query(
    expr: Expr,
    answer: &AnswerArg,
    page: &PageArg,
    cache: Option<&str>,
    ttl_ms: u64,
    keys: &At<KeysArg>,
) -> CliResult {
    let (a, mut con) = keys.open()?;
    let mut q = a.query(expr);
    if let Some(name) = cache {
        q = q.cache(name, std::time::Duration::from_millis(ttl_ms));
    }
    answer_query(&q, answer, page, &mut con)
}

/// `analytics cohort`: the retention table, one script call.
fn cohort(
    cohort_event: &str,
    return_event: &str,
    first: Period,
    rows: usize,
    columns: usize,
    keys: &At<KeysArg>,
) -> CliResult {
    let (a, mut con) = keys.open()?;
    let table = a
        .cohort(cohort_event, return_event, first, rows, columns)
        .run(&mut con)?;
    out::emit(&table, || cohort_lines(&table));
    Ok(())
}

fn count(event: &str, period: &str, keys: &At<KeysArg>) -> CliResult {
    let (a, mut con) = keys.open()?;
    let n = if period == "U" {
        a.count_unique(event).run(&mut con)?
    } else {
        let p = period.parse::<Period>()?;
        a.count(event, p).run(&mut con)?
    };
    out::emit(
        &json!({"event": event, "period": period, "count": n}),
        || vec![n.to_string()],
    );
    Ok(())
}

fn parse_id(id: &str) -> CliResult<u64> {
    id.parse::<u64>().map_err(|_| {
        Failure::from(format!(
            "`{id}` is not an id (a decimal integer): for e-mail addresses, UUIDs and other strings use --strings"
        ))
    })
}

fn count_uniques(event: &str, first: &str, to: Option<Period>, keys: &At<KeysArg>) -> CliResult {
    let (a, mut con) = keys.open()?;
    if first == "U" {
        if to.is_some() {
            return Err(Failure::from(
                "the unique event (U) is no range: count --uniques EVENT U takes no --to",
            ));
        }
        let n = a.count_unique_approx(event).run(&mut con)?;
        out::emit(
            &json!({"event": event, "period": "U", "uniques": n}),
            || vec![n.to_string()],
        );
        return Ok(());
    }
    let from = first.parse::<Period>()?;
    let to = to.unwrap_or(from);
    let n = a.count_uniques_range(event, from, to).run(&mut con)?;
    out::emit(
        &json!({"event": event, "period": from.label(), "to": to.label(), "uniques": n}),
        || vec![n.to_string()],
    );
    Ok(())
}

fn mark_strings(
    event: &str,
    ids: &[String],
    at: Option<DateTime<Utc>>,
    keys: &At<KeysArg>,
) -> CliResult {
    let (a, mut con) = keys.open()?;
    let at = at.unwrap_or_else(Utc::now);
    let events: Vec<(&str, DateTime<Utc>)> = ids.iter().map(|id| (id.as_str(), at)).collect();
    a.mark_strings(event, &events).run(&mut con)?;
    let when = at.to_rfc3339_opts(SecondsFormat::Secs, true);
    let finest = Period::containing(a.granularities()[0], at.naive_utc());
    let hll = a.hll_key(event, finest);
    out::emit(
        &json!({"event": event, "at": when, "period": finest.label(), "key": hll, "marked": ids.len()}),
        || {
            vec![format!(
                "added {} string id(s) to {hll} (the HyperLogLog of {})",
                ids.len(),
                finest.label()
            )]
        },
    );
    Ok(())
}

/// `mark --unique --strings`: the ids added to the unique event's HyperLogLog.
fn mark_unique_strings(event: &str, ids: &[String], keys: &At<KeysArg>) -> CliResult {
    let (a, mut con) = keys.open()?;
    a.mark_unique_strings(event, ids).run(&mut con)?;
    let hll = a.unique_hll_key(event);
    out::emit(
        &json!({"event": event, "period": "U", "key": hll, "marked": ids.len()}),
        || {
            vec![format!(
                "added {} string id(s) to {hll} (the HyperLogLog of the unique event)",
                ids.len()
            )]
        },
    );
    Ok(())
}

fn streak(event: &str, id: u64, from: Period, to: Period, keys: &At<KeysArg>) -> CliResult {
    let (a, mut con) = keys.open()?;
    let s = a.streak(event, id, from, to).run(&mut con)?;
    out::emit(&s, || {
        let ends = s
            .longest_ends
            .map_or_else(|| "-".to_string(), |p| p.label());
        vec![
            format!("longest {}", s.longest),
            format!("longest_ends {ends}"),
            format!("current {}", s.current),
            format!("marked {}", s.marked),
        ]
    });
    Ok(())
}

/// A query's count, membership (`--contains`) or page (`--members`).
fn answer_query(q: &Query, answer: &AnswerArg, page: &PageArg, con: &mut Connection) -> CliResult {
    if let Some(id) = answer.contains {
        let yes = q.contains(id).run(con)?;
        out::emit(&json!({"id": id, "contains": yes}), || {
            vec![if yes { "yes" } else { "no" }.to_string()]
        });
    } else if answer.members {
        let page = q.members(page.from, page.limit).run(con)?;
        out::emit(&page, || page_lines(&page));
    } else {
        let n = q.count().run(con)?;
        out::emit(&json!({"count": n}), || vec![n.to_string()]);
    }
    Ok(())
}

fn mark(
    event: &str,
    ids: &[String],
    at: Option<DateTime<Utc>>,
    unique: bool,
    keys: &At<KeysArg>,
) -> CliResult {
    let ids = ids
        .iter()
        .map(|id| parse_id(id))
        .collect::<CliResult<Vec<u64>>>()?;
    let (a, mut con) = keys.open()?;
    if unique {
        // Checked before the first is sent.
        if let Some(id) = ids.iter().find(|id| **id > a.max_id()) {
            return Err(Failure::from(format!(
                "id {id} is above the configured maximum {} (--max-id): nothing was marked",
                a.max_id()
            )));
        }
        let mut new = Some(0u64);
        for id in &ids {
            let n = a.mark_unique(event, *id).run(&mut con)?;
            new = new.zip(n).map(|(sum, n)| sum + u64::from(n));
        }
        out::emit(
            &json!({"event": event, "period": "U", "marked": ids.len(), "new": new}),
            || {
                vec![format!(
                    "marked {} id(s) in {event} (unique); new: {}",
                    ids.len(),
                    out::known(new)
                )]
            },
        );
        return Ok(());
    }
    let at = at.unwrap_or_else(Utc::now);
    let events: Vec<(u64, DateTime<Utc>)> = ids.iter().map(|id| (*id, at)).collect();
    let new = a.mark_many(event, &events).run(&mut con)?;
    let when = at.to_rfc3339_opts(SecondsFormat::Secs, true);
    let periods: Vec<String> = a
        .granularities()
        .iter()
        .map(|g| Period::containing(*g, at.naive_utc()).label())
        .collect();
    out::emit(
        &json!({"event": event, "at": when, "periods": periods, "marked": ids.len(), "new": new}),
        || {
            vec![format!(
                "marked {} id(s) in {event} at {} ({}); new: {}",
                ids.len(),
                when,
                periods.join(", "),
                out::known(new)
            )]
        },
    );
    Ok(())
}

fn page_lines(page: &Page) -> Vec<String> {
    let ids: Vec<String> = page.ids.iter().map(u64::to_string).collect();
    vec![
        format!("ids {}", ids.join(" ")),
        format!(
            "next {}",
            page.next.map_or_else(|| "-".to_string(), |n| n.to_string())
        ),
    ]
}

/// One line per row: the period, the cohort size, then each cell as
/// `count (percent%)`, `-` for an empty one.
fn cohort_lines(t: &Cohort) -> Vec<String> {
    let mut lines = Vec::with_capacity(t.periods.len());
    for (i, p) in t.periods.iter().enumerate() {
        let mut line = format!("{p}\t{}", t.sizes[i]);
        for (k, cell) in t.counts[i].iter().enumerate() {
            line.push('\t');
            match (cell, t.percent(i, k)) {
                (Some(n), Some(pct)) => line.push_str(&format!("{n} ({pct:.1}%)")),
                _ => line.push('-'),
            }
        }
        lines.push(line);
    }
    lines
}
