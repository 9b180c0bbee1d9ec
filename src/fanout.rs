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
#[derive(Debug, Clone)]
pub struct Batch {
    /// The commands, sent as they are when the batch goes in one pipeline.
    pipe: redis::Pipeline,
    /// The hash slot of each command's key.
    slots: Vec<u16>,
}

impl Default for Batch {
    fn default() -> Self {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        Self {
            pipe,
            slots: Vec::new(),
        }
    }
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a command that touches `key` (and only keys of its slot); its
    /// reply comes back at this position.
    pub fn add(&mut self, key: impl AsRef<[u8]>, cmd: Cmd) -> &mut Self {
        self.slots.push(cluster_slot(key.as_ref()));
        self.pipe.add_command(cmd);
        self
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Sends the batch and returns every reply in order. A command's error
    /// reply stays in its slot as `Value::ServerError` (nothing is re-sent).
    pub fn query_values(
        &self,
        con: &mut dyn ConnectionLike,
        topology: Topology,
    ) -> Result<Vec<Value>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        if !con.supports_pipelining() {
            return self
                .pipe
                .cmd_iter()
                .map(|cmd| reply_in_slot(cmd.query::<Value>(con)))
                .collect();
        }
        let Some(groups) = self.groups(topology) else {
            return self.one_pipeline(self.pipe.query(con)?);
        };
        let cmds: Vec<&Cmd> = self.pipe.cmd_iter().collect();
        let mut out: Vec<Option<Value>> = vec![None; self.len()];
        for group in groups {
            let replies: Vec<Value> = pipe_of(&cmds, &group).query(con)?;
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
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let Some(groups) = self.groups(topology) else {
            return self.one_pipeline(self.pipe.query_async(con).await?);
        };
        let cmds: Vec<&Cmd> = self.pipe.cmd_iter().collect();
        let mut out: Vec<Option<Value>> = vec![None; self.len()];
        for group in groups {
            let replies: Vec<Value> = pipe_of(&cmds, &group).query_async(con).await?;
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
    /// The replies of the whole batch sent as one pipeline.
    fn one_pipeline(&self, replies: Vec<Value>) -> Result<Vec<Value>> {
        if replies.len() == self.len() {
            Ok(replies)
        } else {
            Err(Error::short_reply())
        }
    }

    /// The per-slot groups on a cluster; `None` when the whole batch goes as
    /// one pipeline (one server, or nothing to send).
    fn groups(&self, topology: Topology) -> Option<Vec<Vec<usize>>> {
        match topology {
            Topology::Cluster if !self.is_empty() => Some(slot_groups(self.slots.iter().copied())),
            _ => None,
        }
    }
}

/// The commands at `group` as a pipeline of their own.
fn pipe_of(cmds: &[&Cmd], group: &[usize]) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for &i in group {
        pipe.add_command(cmds[i].clone());
    }
    pipe
}

/// The reply of one command sent on its own, as a pipeline would file it: an
/// error reply from the server becomes `Value::ServerError` in its slot; any
/// other error (the connection, a protocol problem) is returned.
pub(crate) fn reply_in_slot(reply: redis::RedisResult<Value>) -> Result<Value> {
    match reply {
        Ok(v) => Ok(v),
        Err(e) => match redis::ServerError::try_from(e) {
            Ok(server) => Ok(Value::ServerError(server)),
            Err(e) => Err(Error::from(e)),
        },
    }
}

/// Files the replies of one group at the group's positions.
pub(crate) fn place(
    out: &mut [Option<Value>],
    group: Vec<usize>,
    replies: Vec<Value>,
) -> Result<()> {
    if replies.len() != group.len() {
        return Err(Error::short_reply());
    }
    for (i, v) in group.into_iter().zip(replies) {
        out[i] = Some(v);
    }
    Ok(())
}

/// The filed replies in order; a hole means the server sent too few.
pub(crate) fn collect(out: Vec<Option<Value>>) -> Result<Vec<Value>> {
    out.into_iter()
        .map(|v| v.ok_or_else(Error::short_reply))
        .collect()
}

/// Decodes every reply as `T`; the first error reply becomes the error.
pub fn decode_all<T: FromRedisValue>(values: Vec<Value>) -> Result<Vec<T>> {
    values
        .into_iter()
        .map(|v| match v {
            Value::ServerError(e) => Err(Error::from(redis::RedisError::from(e))),
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
    fn standalone_sends_one_pipeline() {
        let mut b = Batch::new();
        b.add("a", redis::cmd("GET")).add("b", redis::cmd("GET"));
        assert_eq!(b.groups(Topology::Standalone), None);
        assert_eq!(b.groups(Topology::Cluster), Some(vec![vec![0], vec![1]]));
    }
}
