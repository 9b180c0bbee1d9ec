//! Batches of single-key commands whose keys may live in different hash
//! slots, sent in as few round trips as the server allows.
//!
//! On one server a batch is one pipeline. Redis Cluster refuses a pipeline
//! whose commands span slots (redis-rs routes a pipeline by its first key:
//! the async cluster connection rejects it with `CROSSSLOT`, the sync one
//! sends it to one node, where the other slots answer `MOVED`). With
//! [`Topology::Cluster`] a [`Batch`] is therefore split into one pipeline per
//! hash slot, and the replies are put back in the order the commands were
//! added. Each pattern that fans out over several keys takes a [`Topology`]
//! (default [`Topology::Standalone`]; [`Topology::detect`] asks the server).
//!
//! A connection that cannot pipeline at all (redis-rs's sync
//! `ClusterConnection`) gets the commands one at a time, in order; as in a
//! pipeline, an error reply stays in its command's slot and only a connection
//! error ends the batch.

use redis::{Cmd, ConnectionLike, FromRedisValue, Value};

use crate::error::{Error, Result};
use crate::keys::cluster_slot;

/// Where the commands go: decides how multi-key batches are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Topology {
    /// One server (or a primary with replicas): a batch is one pipeline.
    #[default]
    Standalone,
    /// Redis Cluster: a batch is one pipeline per hash slot.
    Cluster,
}

impl Topology {
    /// `Cluster` when `INFO cluster` says `cluster_enabled:1`. On a cluster
    /// connection redis-rs sends `INFO` to every node and answers with a map
    /// of node to text; any node saying so counts.
    pub fn detect(con: &mut dyn ConnectionLike) -> Result<Self> {
        let reply: Value = redis::cmd("INFO").arg("cluster").query(con)?;
        let texts: Vec<String> = match reply {
            Value::Map(nodes) => nodes
                .into_iter()
                .map(|(_, info)| String::from_redis_value(info))
                .collect::<std::result::Result<_, _>>()
                .map_err(redis::RedisError::from)?,
            info => vec![String::from_redis_value(info).map_err(redis::RedisError::from)?],
        };
        let enabled = texts
            .iter()
            .any(|info| info.lines().any(|l| l.trim() == "cluster_enabled:1"));
        Ok(if enabled {
            Self::Cluster
        } else {
            Self::Standalone
        })
    }
}

/// Single-key commands to send together; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// Each command with the hash slot of the key it touches.
    cmds: Vec<(u16, Cmd)>,
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a command that touches `key` (and only keys of its slot); its
    /// reply comes back at this position.
    pub fn add(&mut self, key: impl AsRef<[u8]>, cmd: Cmd) -> &mut Self {
        self.cmds.push((cluster_slot(key.as_ref()), cmd));
        self
    }

    pub fn len(&self) -> usize {
        self.cmds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// Sends the batch and returns every reply in order. A command's error
    /// reply stays in its slot as `Value::ServerError` (nothing is re-sent).
    pub fn query_values(
        &self,
        con: &mut dyn ConnectionLike,
        topology: Topology,
    ) -> Result<Vec<Value>> {
        let mut out: Vec<Option<Value>> = vec![None; self.cmds.len()];
        for group in self.groups(topology) {
            let replies: Vec<Value> = if con.supports_pipelining() {
                self.pipe_of(&group).query(con)?
            } else {
                let mut replies = Vec::with_capacity(group.len());
                for &i in &group {
                    replies.push(reply_in_slot(self.cmds[i].1.query::<Value>(con))?);
                }
                replies
            };
            place(&mut out, group, replies)?;
        }
        collect(out)
    }

    /// Async twin of [`Batch::query_values`] (`MultiplexedConnection`,
    /// `ConnectionManager`, the async cluster connection: all pipeline).
    pub async fn query_values_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        topology: Topology,
    ) -> Result<Vec<Value>> {
        let mut out: Vec<Option<Value>> = vec![None; self.cmds.len()];
        for group in self.groups(topology) {
            let replies: Vec<Value> = self.pipe_of(&group).query_async(con).await?;
            place(&mut out, group, replies)?;
        }
        collect(out)
    }

    /// Sends the batch and decodes every reply as `T`; the first error reply
    /// (after the whole batch ran) is returned as an error.
    pub fn query<T: FromRedisValue>(
        &self,
        con: &mut dyn ConnectionLike,
        topology: Topology,
    ) -> Result<Vec<T>> {
        decode_all(self.query_values(con, topology)?)
    }

    /// Async twin of [`Batch::query`].
    pub async fn query_async<T: FromRedisValue, C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        topology: Topology,
    ) -> Result<Vec<T>> {
        decode_all(self.query_values_async(con, topology).await?)
    }

    /// The commands at `group` as one pipeline (error replies kept in place).
    fn pipe_of(&self, group: &[usize]) -> redis::Pipeline {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for &i in group {
            pipe.add_command(self.cmds[i].1.clone());
        }
        pipe
    }

    /// Indices of the commands sent together: all of them on one server, one
    /// group per slot (in order of first appearance) on a cluster.
    fn groups(&self, topology: Topology) -> Vec<Vec<usize>> {
        if self.cmds.is_empty() {
            return Vec::new();
        }
        match topology {
            Topology::Standalone => vec![(0..self.cmds.len()).collect()],
            Topology::Cluster => slot_groups(self.cmds.iter().map(|(slot, _)| *slot)),
        }
    }
}

/// Files the replies of one group at their positions.
/// The reply of one command sent on its own, as a pipeline would file it: an
/// error reply from the server becomes `Value::ServerError` in its slot; any
/// other error (the connection, a protocol problem) is returned.
pub(crate) fn reply_in_slot(reply: redis::RedisResult<Value>) -> Result<Value> {
    match reply {
        Ok(v) => Ok(v),
        Err(e) => match redis::ServerError::try_from(e) {
            Ok(server) => Ok(Value::ServerError(server)),
            Err(e) => Err(Error::Redis(e)),
        },
    }
}

fn place(out: &mut [Option<Value>], group: Vec<usize>, replies: Vec<Value>) -> Result<()> {
    if replies.len() != group.len() {
        return Err(Error::ShortReply);
    }
    for (i, v) in group.into_iter().zip(replies) {
        out[i] = Some(v);
    }
    Ok(())
}

fn collect(out: Vec<Option<Value>>) -> Result<Vec<Value>> {
    out.into_iter()
        .map(|v| v.ok_or(Error::ShortReply))
        .collect()
}

/// Decodes every reply as `T`; the first error reply becomes the error.
pub fn decode_all<T: FromRedisValue>(values: Vec<Value>) -> Result<Vec<T>> {
    values
        .into_iter()
        .map(|v| match v {
            Value::ServerError(e) => Err(Error::Redis(e.into())),
            v => Ok(T::from_redis_value(v).map_err(redis::RedisError::from)?),
        })
        .collect()
}

/// Groups positions by slot, keeping the order of first appearance and the
/// order within each group.
pub(crate) fn slot_groups(slots: impl Iterator<Item = u16>) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut index_of: std::collections::HashMap<u16, usize> = std::collections::HashMap::new();
    for (i, slot) in slots.enumerate() {
        let g = *index_of.entry(slot).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_groups_keep_order_within_and_across_groups() {
        let groups = slot_groups([5u16, 9, 5, 7, 9, 5].into_iter());
        assert_eq!(groups, vec![vec![0, 2, 5], vec![1, 4], vec![3]]);
    }

    #[test]
    fn standalone_sends_one_group() {
        let mut b = Batch::new();
        b.add("a", redis::cmd("GET")).add("b", redis::cmd("GET"));
        assert_eq!(b.groups(Topology::Standalone), vec![vec![0, 1]]);
        assert_eq!(b.groups(Topology::Cluster).len(), 2);
    }
}
