//! One module per pattern (and one for the script bundle): each declares
//! its subcommands and runs them as a thin layer over the library's ops.
//! A new command is one variant in its module and one line in `main.rs`.

pub mod analytics;
pub mod bloom;
pub mod bundle;
pub mod hash;
pub mod info;
pub mod load;
pub mod lock;
pub mod login_log;
pub mod map;
pub mod packed;
pub mod rolling;
pub mod signin;
pub mod throttle;
pub mod visits;

use redis_patterns::chrono::{NaiveDate, Utc};

/// A `YYYY-MM-DD` argument.
pub fn day(s: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map_err(|_| format!("{s} is not a date: write it as YYYY-MM-DD"))
}

/// Today in UTC.
pub fn today() -> NaiveDate {
    Utc::now().date_naive()
}

/// A `YYYY-MM` argument, as its first day.
pub fn month(s: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(&format!("{s}-01"), "%Y-%m-%d")
        .map_err(|_| format!("{s} is not a month: write it as YYYY-MM"))
}

/// `YYYY-MM-DD`.
pub fn iso(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

/// `--day YYYY-MM-DD`, default today (UTC).
#[derive(clap::Args, Debug, Clone)]
pub struct DayArg {
    #[arg(long, value_parser = day)]
    day: Option<NaiveDate>,
}

impl DayArg {
    /// The day given, or today.
    pub fn get(&self) -> NaiveDate {
        self.day.unwrap_or_else(today)
    }
}
