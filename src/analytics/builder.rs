//! Building [`Analytics`]: prefix, tag, id bound, granularities, expiry per
//! granularity and time zone, checked in [`AnalyticsBuilder::build`].

use chrono::{TimeZone, Utc};

use super::{Analytics, Granularity};
use crate::bitmap::{DEFAULT_MAX_UID, MAX_OFFSET};
use crate::core::{Retention, setters};
use crate::error::{Error, Result};
use crate::keys::{self, Prefix};

/// The value of [`Analytics::DEFAULT_PREFIX`](crate::analytics::Analytics::DEFAULT_PREFIX).
pub(crate) const DEFAULT_PREFIX: &str = "an:";

impl crate::analytics::Analytics {
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = DEFAULT_PREFIX;
}

/// Builds [`Analytics`]: setters never fail, [`AnalyticsBuilder::build`]
/// checks.
#[derive(Debug, Clone)]
pub struct AnalyticsBuilder<Tz: TimeZone = Utc> {
    /// The settings so far, checked by [`AnalyticsBuilder::build`].
    settings: Analytics<Tz>,
}

impl Analytics {
    /// A builder with prefix [`Analytics::DEFAULT_PREFIX`], no tag, maximum id
    /// [`DEFAULT_MAX_UID`], day, week and month bitmaps, no expiry, UTC.
    pub fn builder() -> AnalyticsBuilder {
        AnalyticsBuilder {
            settings: Analytics {
                prefix: Prefix::new(DEFAULT_PREFIX).expect("the default prefix is valid"),
                tag: None,
                max_id: DEFAULT_MAX_UID,
                granularities: vec![Granularity::Day, Granularity::Week, Granularity::Month],
                retention: [Retention::Forever; 5],
                tz: Utc,
                hll: false,
            },
        }
    }
}

impl<Tz: TimeZone> AnalyticsBuilder<Tz> {
    setters! {
        /// The key prefix (default [`Analytics::DEFAULT_PREFIX`]); no whitespace.
        prefix(prefix: Prefix) => settings.prefix;

        /// A hash tag shared by every event (`<prefix>{<tag>}:<event>:<period>`):
        /// every bitmap in one cluster slot, so that expressions and cohort
        /// tables over several events run on the server on a cluster too; not
        /// empty, no `{` or `}`.
        tag(tag: &str) => settings.tag = Some(tag.to_string());

        /// The largest id accepted (default [`DEFAULT_MAX_UID`], at most
        /// 4294967295, the largest bit offset): a bitmap grows to `max_id / 8` bytes.
        max_id(max_id: u64) => settings.max_id;

        /// The granularities a mark sets (default day, week, month); not empty.
        granularities(granularities: &[Granularity]) => settings.granularities = granularities.to_vec();

        /// Keep a HyperLogLog beside the bitmaps (default `false`): a
        /// [mark](Analytics::mark) also adds the id to the event's
        /// HyperLogLog of the finest period, in the same script, so that
        /// [`count_uniques`](Analytics::count_uniques) answers from it (0.81 %
        /// standard error, at most 12 KB per period).
        hll(hll: bool) => settings.hll;
    }

    /// How long the bitmaps of `granularity` live after their period ends
    /// (default [`Retention::Forever`]).
    pub fn retention(mut self, granularity: Granularity, retention: Retention) -> Self {
        self.settings.retention[granularity.index()] = retention;
        self
    }

    /// The zone whose local time the periods are in (default UTC).
    pub fn time_zone<Z: TimeZone>(self, tz: Z) -> AnalyticsBuilder<Z> {
        let s = self.settings;
        AnalyticsBuilder {
            settings: Analytics {
                prefix: s.prefix,
                tag: s.tag,
                max_id: s.max_id,
                granularities: s.granularities,
                retention: s.retention,
                tz,
                hll: s.hll,
            },
        }
    }

    /// Checks the settings.
    pub fn build(self) -> Result<Analytics<Tz>> {
        let mut a = self.settings;
        if a.prefix.as_str().chars().any(char::is_whitespace) {
            return Err(Error::invalid("prefix", "must not contain whitespace"));
        }
        if let Some(tag) = &a.tag {
            check_event_name("tag", tag)?;
        }
        if a.max_id > MAX_OFFSET {
            return Err(Error::invalid(
                "max id",
                format!("{} is above the largest bit offset {MAX_OFFSET}", a.max_id),
            ));
        }
        a.granularities.sort();
        a.granularities.dedup();
        if a.granularities.is_empty() {
            return Err(Error::invalid("granularities", "must not be empty"));
        }
        Ok(a)
    }
}

/// An event name (or tag): not empty, no `{`, `}` or whitespace.
pub(super) fn check_event_name(what: &'static str, name: &str) -> Result<()> {
    keys::check_name(what, name)?;
    if name.chars().any(char::is_whitespace) {
        return Err(Error::invalid(
            what,
            format!("`{name}` must not contain whitespace"),
        ));
    }
    Ok(())
}
