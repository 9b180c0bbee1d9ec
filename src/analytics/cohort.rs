//! Cohort (retention) tables in one call: per period, the ids of the cohort
//! event and how many of them did the return event in each later period,
//! counted by `analytics.cohort` on the server (or client-side over the
//! fetched bitmaps when they are in several cluster slots).

use chrono::TimeZone;
use serde::Serialize;

use super::builder::check_event_name;
use super::{Analytics, Period, eval};
use crate::bitmap::checked;
use crate::core::{Batch, Op};
use crate::error::{Error, Result};
use crate::keys::{self, cluster_slot};
use crate::scripts;

/// The most rows or columns of a table.
pub const MAX_COHORT: usize = scripts::analytics::COHORT_ROWS_MAX as usize;

/// A cohort table: row `i` is the cohort of period `periods[i]`, column
/// `k` the period `k` periods later (column 0: the same period).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cohort {
    /// Each row's period.
    pub periods: Vec<String>,
    /// Each row's cohort size (the ids of the cohort event in its period).
    pub sizes: Vec<u64>,
    /// `counts[i][k]`: how many of row `i`'s cohort did the return event `k`
    /// periods later; `None` when the cohort is empty or nobody did the
    /// return event that period (bitmapist's empty cell).
    pub counts: Vec<Vec<Option<u64>>>,
}

impl Cohort {
    /// `counts[row][column]` as a percentage of the row's cohort.
    pub fn percent(&self, row: usize, column: usize) -> Option<f64> {
        let n = (*self.counts.get(row)?.get(column)?)?;
        Some(n as f64 * 100.0 / self.sizes[row] as f64)
    }
}

impl<Tz: TimeZone> Analytics<Tz> {
    /// The cohort table of `cohort_event` and `return_event`: `rows` rows
    /// from the period `first` on (its granularity's), `columns` columns
    /// each (1 to [`COHORT_ROWS_MAX`](crate::scripts::analytics::COHORT_ROWS_MAX)). One script call, or one batch of `GET`s
    /// when the two events are in different cluster slots.
    pub fn cohort(
        &self,
        cohort_event: &str,
        return_event: &str,
        first: Period,
        rows: usize,
        columns: usize,
    ) -> Op<Cohort> {
        checked(|| {
            check_event_name("cohort event", cohort_event)?;
            check_event_name("return event", return_event)?;
            for (what, n) in [("rows", rows), ("columns", columns)] {
                if n == 0 || n > MAX_COHORT {
                    return Err(Error::invalid(
                        what,
                        format!("must be from 1 to {MAX_COHORT}"),
                    ));
                }
            }
            let periods = (0..rows + columns - 1)
                .map(|i| first.offset(i as i64))
                .collect::<Result<Vec<_>>>()?;
            let mut bitmaps: Vec<String> = periods[..rows]
                .iter()
                .map(|p| self.key(cohort_event, *p))
                .collect();
            bitmaps.extend(periods.iter().map(|p| self.key(return_event, *p)));
            let tmp = keys::tmp_key(&self.slot_base(cohort_event));
            let labels: Vec<String> = periods[..rows].iter().map(|p| p.label()).collect();
            Ok(Op::with_env(move |env| {
                let slot = cluster_slot(tmp.as_bytes());
                if !env.is_cluster() || bitmaps.iter().all(|k| cluster_slot(k.as_bytes()) == slot) {
                    let call =
                        scripts::analytics::cohort(&tmp, &bitmaps, rows as i64, columns as i64);
                    Op::script(call).map(move |flat| table(labels, rows, columns, &flat))
                } else {
                    fetched(bitmaps, labels, rows, columns)
                }
            }))
        })
    }
}

/// The table of the script's reply: every return bitmap's count, then per
/// row the cohort size and its cells.
fn table(periods: Vec<String>, rows: usize, columns: usize, flat: &[i64]) -> Cohort {
    let returns = rows + columns - 1;
    let back = &flat[..returns];
    let mut at = returns;
    let (mut sizes, mut counts) = (Vec::new(), Vec::new());
    for i in 0..rows {
        let size = flat[at].max(0) as u64;
        at += 1;
        let cells = columns.min(returns - i);
        let row = (0..cells)
            .map(|k| {
                let n = flat[at + k].max(0) as u64;
                (size > 0 && back[i + k] > 0).then_some(n)
            })
            .collect();
        at += cells;
        sizes.push(size);
        counts.push(row);
    }
    Cohort {
        periods,
        sizes,
        counts,
    }
}

/// The same reply computed client-side over the fetched bitmaps.
fn fetched(bitmaps: Vec<String>, labels: Vec<String>, rows: usize, columns: usize) -> Op<Cohort> {
    let mut batch = Batch::new();
    for k in &bitmaps {
        let mut get = redis::cmd("GET");
        get.arg(k);
        batch.add(k, get);
    }
    Op::send(batch, move |replies| {
        let b: Vec<Vec<u8>> = replies
            .all::<Option<Vec<u8>>>()?
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect();
        let (cohorts, back) = b.split_at(rows);
        let mut flat: Vec<i64> = back.iter().map(|r| eval::count(r) as i64).collect();
        for (i, c) in cohorts.iter().enumerate() {
            flat.push(eval::count(c) as i64);
            for r in back.iter().skip(i).take(columns) {
                let both: u64 = c
                    .iter()
                    .zip(r)
                    .map(|(x, y)| u64::from((x & y).count_ones()))
                    .sum();
                flat.push(both as i64);
            }
        }
        Ok(table(labels, rows, columns, &flat))
    })
}
