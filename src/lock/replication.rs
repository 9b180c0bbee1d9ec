//! [`Replication`]: whether an acquire waits for its write to reach
//! replicas before it hands out the fencing token.
//!
//! Redis replicates asynchronously: when the lock's primary fails before a
//! replica received an acquire, the promoted replica does not know the
//! lock was taken. Fencing tokens still go on increasing (they follow the
//! server's clock, see [the lock's docs](super#fencing-tokens-and-the-clock)),
//! but the lease itself is lost: the new primary can grant the lock to
//! someone else while the first holder still believes it holds it. An
//! acknowledged acquire sends `WAIT <replicas> <timeout>` in the same
//! pipeline, to the same node, right after the acquire script, and returns
//! the lease only when that many replicas have the write:
//!
//! * **Without it** ([`Replication::None`]), a lease survives only as long
//!   as the lock's primary keeps its data (no failover, or a failover to a
//!   replica that had received it); fencing tokens never repeat either way.
//! * **With it**, a lease handed out is on `replicas` replicas too, so a
//!   failover to one of them keeps the lock held (with one replica per
//!   primary, the one that takes over). An acquire that was not
//!   acknowledged in time fails with
//!   [`ErrorKind::NotReplicated`](crate::ErrorKind::NotReplicated); its
//!   lock is released (best effort) and its token is never used.
//!
//! `WAIT` does not make Redis strongly consistent: a failover may still
//! pick a replica that had not acknowledged (with several replicas and
//! `replicas` below their number), and a partitioned old primary may keep
//! accepting writes until `cluster-node-timeout`.

use std::time::Duration;

use serde::Serialize;

/// Whether an acquire waits for replicas (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Replication {
    /// Return when the primary has the write (default).
    None,
    /// Wait until `replicas` replicas acknowledge the write, at most
    /// `timeout` (`WAIT`); fewer fail the acquire with
    /// [`ErrorKind::NotReplicated`](crate::ErrorKind::NotReplicated).
    Acknowledged {
        /// How many replicas must have the acquire.
        replicas: u32,
        /// How long `WAIT` waits for them.
        timeout: Duration,
    },
    /// [`Replication::DEFAULT_ACKNOWLEDGED`] when the lock's primary has
    /// replicas (`connected_slaves` in `INFO replication`, asked once per
    /// acquire, of the node that serves the lock's slot); otherwise as
    /// [`Replication::None`].
    Auto,
}

impl Replication {
    /// One replica, one second: what [`Replication::Auto`] asks for.
    pub const DEFAULT_ACKNOWLEDGED: Replication = Replication::Acknowledged {
        replicas: 1,
        timeout: Duration::from_secs(1),
    };
}

/// `connected_slaves` of an `INFO replication` reply.
pub(crate) fn connected_replicas(info: &str) -> u32 {
    info.lines()
        .find_map(|l| l.trim().strip_prefix("connected_slaves:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// `WAIT replicas timeout_ms` (a timeout of at least 1 ms: 0 would block
/// forever).
pub(crate) fn wait_cmd(replicas: u32, timeout: Duration) -> redis::Cmd {
    let ms = timeout.as_millis().clamp(1, u128::from(u32::MAX)) as u64;
    let mut cmd = redis::cmd("WAIT");
    cmd.arg(replicas).arg(ms);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_connected_replicas() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=127.0.0.1\r\n";
        assert_eq!(connected_replicas(info), 2);
        assert_eq!(connected_replicas("role:slave\r\n"), 0);
        let packed = wait_cmd(1, Duration::ZERO).get_packed_command();
        assert!(String::from_utf8_lossy(&packed).ends_with("$1\r\n1\r\n$1\r\n1\r\n"));
    }
}
