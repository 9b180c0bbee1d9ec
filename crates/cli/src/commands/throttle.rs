//! `redis-patterns throttle KEY --burst B --rate N/PERIOD [--quantity Q]`:
//! one GCRA decision, as redis-cell's `CL.THROTTLE KEY B N PERIOD Q`, on any
//! Redis (no module): the library's [`rate_limit`](redis_patterns::rate_limit)
//! throttle, printing the reply's five fields (`--json` for one JSON object).
//! A subcommand of `redis-patterns` (see `commands/mod.rs`).

use std::time::Duration;

use redis_patterns::Request;
use redis_patterns::keys::Prefix;
use redis_patterns::rate_limit::{Limit, RateLimiter};
use serde::Serialize;

use crate::conn::UrlArg;
use crate::fail::CliResult;
use crate::out::{self, outln};

/// One GCRA rate-limit decision, as redis-cell's CL.THROTTLE (no module needed).
///
/// Takes QUANTITY units for the subject KEY if BURST + 1 at once and RATE
/// allow it now, and prints redis-cell's five fields: limited (1 or 0),
/// limit, remaining, retry_after_ms (-1 when allowed) and reset_after_ms.
#[derive(clap::Args)]
pub struct ThrottleArgs {
    /// The subject: a user, an API key ... (its key is PREFIX{KEY}).
    key: String,
    /// Units allowed at once beyond the steady rate (the limit is BURST + 1).
    #[arg(long)]
    burst: u64,
    /// The steady rate N/PERIOD: N units per PERIOD, a number with a unit
    /// ms, s, m, h or d (seconds without one), e.g. 30/60s, 10/s, 5/500ms.
    #[arg(long, value_parser = parse_rate)]
    rate: Rate,
    /// Units to take; 0 only looks.
    #[arg(long, default_value_t = 1)]
    quantity: u64,
    #[command(flatten)]
    url: UrlArg,
    /// Key prefix.
    #[arg(long, default_value = RateLimiter::DEFAULT_PREFIX)]
    prefix: String,
}

/// `N/PERIOD` of `--rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rate {
    count: u64,
    period: Duration,
}

fn parse_rate(text: &str) -> Result<Rate, String> {
    let (count, period) = text
        .split_once('/')
        .ok_or("expected N/PERIOD, e.g. 30/60s")?;
    let count = count
        .trim()
        .parse()
        .map_err(|_| format!("{count:?} is not a whole number of units"))?;
    let period = period.trim();
    let split = period
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(period.len());
    let (number, unit) = period.split_at(split);
    let number: u64 = match number {
        "" => 1,
        n => n
            .parse()
            .map_err(|_| format!("{n:?} is not a whole number"))?,
    };
    let ms_per_unit = match unit {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        other => return Err(format!("unknown unit {other:?} (ms, s, m, h or d)")),
    };
    let ms = number
        .checked_mul(ms_per_unit)
        .ok_or("the period is too long")?;
    Ok(Rate {
        count,
        period: Duration::from_millis(ms),
    })
}

/// What `--json` prints: the key and the decision's five fields.
#[derive(Serialize)]
struct Output<'a> {
    key: &'a str,
    #[serde(flatten)]
    decision: redis_patterns::rate_limit::Decision,
}

pub fn run(args: ThrottleArgs) -> CliResult {
    let prefix = match args.prefix.as_str() {
        "" => Prefix::none(),
        p => Prefix::new(p)?,
    };
    let limiter = RateLimiter::builder(Limit::gcra(args.burst, args.rate.count, args.rate.period))
        .prefix(prefix)
        .build()?;
    let key = limiter.key(&args.key)?;
    let op = limiter.throttle(&args.key, args.quantity);
    let mut con = args.url.connect()?;
    let decision = op.run(&mut con)?;
    if out::json() {
        out::json_line(&Output {
            key: &key,
            decision,
        });
        return Ok(());
    }
    let retry = decision.retry_after_ms.map_or(-1, |ms| ms as i64);
    outln!("key             {key}");
    outln!("limited         {}", u8::from(decision.limited));
    outln!("limit           {}", decision.limit);
    outln!("remaining       {}", decision.remaining);
    outln!("retry_after_ms  {retry}");
    outln!("reset_after_ms  {}", decision.reset_after_ms);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_as_written() {
        let rate = |count, ms| Rate {
            count,
            period: Duration::from_millis(ms),
        };
        assert_eq!(parse_rate("30/60s"), Ok(rate(30, 60_000)));
        assert_eq!(parse_rate("30/60"), Ok(rate(30, 60_000)));
        assert_eq!(parse_rate("10/s"), Ok(rate(10, 1_000)));
        assert_eq!(parse_rate("5/500ms"), Ok(rate(5, 500)));
        assert_eq!(parse_rate("100/1m"), Ok(rate(100, 60_000)));
        assert_eq!(parse_rate("1000/h"), Ok(rate(1000, 3_600_000)));
        assert_eq!(parse_rate("7/2d"), Ok(rate(7, 172_800_000)));
        for bad in ["30", "x/1s", "3/1w", "3/1.5s", "-1/1s"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }
}
