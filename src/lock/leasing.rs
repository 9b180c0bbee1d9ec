//! What every builder of a leased resource (lock, semaphore, read-write
//! lock) sets and checks alike: the key prefix, the lease and the wait
//! mode, and the resolved key, wake-up channel and lease in ms.

use std::time::Duration;

use super::{WaitMode, check_wait, lease_ms};
use crate::error::Result;
use crate::keys::{self, Prefix};

/// The settings every leased resource's builder holds.
#[derive(Debug, Clone)]
pub(crate) struct Leasing {
    pub(crate) name: String,
    pub(crate) prefix: Prefix,
    pub(crate) lease: Duration,
    pub(crate) wait: WaitMode,
}

/// The settings, checked: the resource's key (`<prefix>{<name>}`), its
/// wake-up channel (`<key>:wake`, same hash tag) and the lease in ms.
#[derive(Debug, Clone)]
pub(crate) struct Leased {
    pub(crate) key: String,
    pub(crate) channel: String,
    pub(crate) lease_ms: i64,
    pub(crate) wait: WaitMode,
}

impl Leasing {
    /// `name` under `default_prefix`, a 30 s lease, notified waiting.
    pub(crate) fn new(name: &str, default_prefix: &str) -> Self {
        Self {
            name: name.to_string(),
            prefix: Prefix::new(default_prefix).expect("the default prefix is valid"),
            lease: Duration::from_secs(30),
            wait: WaitMode::Notified,
        }
    }

    /// Checks the settings; `what` names the name in a refusal (`lock name`).
    pub(crate) fn check(&self, what: &'static str, max_lease_ms: u64) -> Result<Leased> {
        keys::check_name(what, &self.name)?;
        check_wait(self.wait)?;
        let key = self.prefix.tagged(&self.name);
        Ok(Leased {
            channel: format!("{key}:wake"),
            key,
            lease_ms: lease_ms("lease", self.lease, max_lease_ms as i64)?,
            wait: self.wait,
        })
    }
}

/// The setters of [`Leasing`] on a builder with a `leasing` field:
/// `prefix`, `lease` (documented with `$lease_doc`) and `wait_mode`.
macro_rules! leasing_setters {
    ($lease_doc:literal) => {
        /// The key prefix (default [`DEFAULT_PREFIX`]).
        pub fn prefix(mut self, prefix: $crate::keys::Prefix) -> Self {
            self.leasing.prefix = prefix;
            self
        }

        #[doc = $lease_doc]
        pub fn lease(mut self, lease: std::time::Duration) -> Self {
            self.leasing.lease = lease;
            self
        }

        /// How a blocking acquire waits (default
        /// [`WaitMode::Notified`](crate::lock::WaitMode::Notified)).
        pub fn wait_mode(mut self, mode: $crate::lock::WaitMode) -> Self {
            self.leasing.wait = mode;
            self
        }
    };
}
pub(crate) use leasing_setters;
