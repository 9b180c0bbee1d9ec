//! What a driver is set to, alike for both: whether it talks to a cluster,
//! its call mode, its retry policy and its durability, and the public
//! accessors that read and change them ([`driver_settings!`]).

use super::durability::Durability;
use super::op::Env;
use super::retry::RetryPolicy;
use crate::error::{Error, Result};

/// A driver's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) env: Env,
    pub(crate) policy: RetryPolicy,
    pub(crate) durability: Durability,
    /// Whether it reaches cluster nodes itself (not only through a wrapped
    /// `ClusterConnection`): then a command the router sent that answers
    /// `ASK` goes to the node named, after `ASKING`.
    pub(crate) per_node: bool,
}

impl Settings {
    /// The defaults of a connection to one server or (`cluster`) a cluster.
    pub(crate) fn new(cluster: bool) -> Self {
        Self {
            env: Env {
                cluster,
                ..Env::default()
            },
            policy: RetryPolicy::default(),
            durability: Durability::default(),
            per_node: true,
        }
    }

    /// Sets `durability` on a driver that sends each node's commands itself
    /// (`per_node`); `driver` names its type in the refusal of a wrapped
    /// cluster connection, which sends commands one by one.
    pub(crate) fn set_durability(
        &mut self,
        durability: Durability,
        per_node: bool,
        driver: &str,
    ) -> Result<()> {
        if !per_node && matches!(durability, Durability::Replicas { .. }) {
            return Err(Error::invalid(
                "durability",
                format!(
                    "needs a connection that sends each node's commands itself ({driver}::cluster or {driver}::open), not a wrapped ClusterConnection"
                ),
            ));
        }
        self.durability = durability;
        Ok(())
    }

    /// The driver's `Debug` output: its type, whether it is a cluster
    /// connection, its policy and durability.
    pub(crate) fn debug(&self, f: &mut std::fmt::Formatter<'_>, driver: &str) -> std::fmt::Result {
        f.debug_struct(driver)
            .field("cluster", &self.env.cluster)
            .field("policy", &self.policy)
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

/// The public accessors of a driver with a `settings` field and a
/// `sends_per_node(&self) -> bool` method; `$driver` is the type's name,
/// `$mode_scope` and `$scope` what a setter changes beyond this value (for
/// the async driver's clones).
macro_rules! driver_settings {
    ($driver:literal, $mode_scope:literal, $scope:literal) => {
        /// Whether this connection talks to a Redis Cluster.
        pub fn is_cluster(&self) -> bool {
            self.settings.env.cluster
        }

        /// How this connection sends script calls (default
        /// [`CallMode::Evalsha`]).
        pub fn call_mode(&self) -> CallMode {
            self.settings.env.call_mode
        }

        #[doc = concat!("Sends script calls as `mode` says from now on", $mode_scope, ":")]
        /// [`CallMode::Functions`] sends `FCALL` / `FCALL_RO` of the
        /// [library](crate::functions) and loads it where it is missing.
        pub fn set_call_mode(&mut self, mode: CallMode) {
            self.settings.env.call_mode = mode;
        }

        /// The connection with its call mode set (see
        #[doc = concat!("[`", $driver, "::set_call_mode`]).")]
        pub fn with_call_mode(mut self, mode: CallMode) -> Self {
            self.set_call_mode(mode);
            self
        }

        /// What the server can do ([`Caps`](crate::core::Caps)): `None`
        /// until the connection's first operation detected it (or it was
        /// set); [`Caps::read`](crate::core::Caps::read) detects it when
        /// needed.
        pub fn caps(&self) -> Option<crate::core::Caps> {
            self.settings.env.caps.or_else(|| self.detected_caps())
        }

        #[doc = concat!("Sets what the server is taken to be able to do", $scope, ", instead of detecting it:")]
        /// e.g. the detected caps [`without`](crate::core::Caps::without) a
        /// capability, to keep every node of a cluster being upgraded on
        /// the path every server has.
        pub fn set_caps(&mut self, caps: crate::core::Caps) {
            self.settings.env.caps = Some(caps);
        }

        /// How this connection retries (see [`RetryPolicy`]).
        pub fn retry_policy(&self) -> RetryPolicy {
            self.settings.policy
        }

        #[doc = concat!("Sets how this connection", $scope, " retries.")]
        pub fn set_retry_policy(&mut self, policy: RetryPolicy) {
            self.settings.policy = policy;
        }

        /// How many replicas must acknowledge writes (see [`Durability`]).
        pub fn durability(&self) -> Durability {
            self.settings.durability
        }

        #[doc = concat!("Sets how many replicas must acknowledge this connection's", $scope, " writes.")]
        /// Refused on a wrapped redis-rs cluster connection
        #[doc = concat!("([`", $driver, "::from_cluster`]):")]
        /// it sends commands one by one, so no `WAIT` could follow them on
        /// their node's connection.
        pub fn set_durability(&mut self, durability: Durability) -> Result<()> {
            let per_node = self.sends_per_node();
            self.settings.set_durability(durability, per_node, $driver)
        }
    };
}
pub(crate) use driver_settings;
