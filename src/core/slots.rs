//! A cluster's slot map (`CLUSTER SLOTS`): which primary serves each hash
//! slot, so that a batch can be split into one pipeline per node.

use redis::Value;

use crate::error::{Error, Result};

/// Slot ranges and the primaries that serve them.
#[derive(Debug, Clone, Default)]
pub(crate) struct SlotMap {
    /// `(first slot, last slot, node index)`, sorted by first slot.
    ranges: Vec<(u16, u16, usize)>,
    /// `(host, port)` of each primary.
    nodes: Vec<(String, u16)>,
    /// `(host, port)` of every node the map names, primaries and replicas.
    all: Vec<(String, u16)>,
}

/// `(host, port)` of one node entry of a `CLUSTER SLOTS` row.
fn addr_of(node: &[Value]) -> Option<(String, u16)> {
    let host = match node.first()? {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        _ => return None,
    };
    let Some(Value::Int(port)) = node.get(1) else {
        return None;
    };
    Some((host, u16::try_from(*port).ok()?))
}

impl SlotMap {
    /// The `CLUSTER SLOTS` command.
    pub(crate) fn cmd() -> redis::Cmd {
        let mut cmd = redis::cmd("CLUSTER");
        cmd.arg("SLOTS");
        cmd
    }

    /// Parses a `CLUSTER SLOTS` reply.
    pub(crate) fn parse(reply: Value) -> Result<Self> {
        let bad = || Error::unexpected("CLUSTER SLOTS reply of an unknown shape");
        let Value::Array(rows) = reply else {
            return Err(bad());
        };
        let mut map = SlotMap::default();
        for row in rows {
            let Value::Array(row) = row else {
                return Err(bad());
            };
            let (Some(Value::Int(first)), Some(Value::Int(last)), Some(Value::Array(primary))) =
                (row.first(), row.get(1), row.get(2))
            else {
                return Err(bad());
            };
            let addr = addr_of(primary).ok_or_else(bad)?;
            for node in &row[2..] {
                if let Value::Array(node) = node
                    && let Some(a) = addr_of(node)
                    && !map.all.contains(&a)
                {
                    map.all.push(a);
                }
            }
            let node = match map.nodes.iter().position(|n| *n == addr) {
                Some(i) => i,
                None => {
                    map.nodes.push(addr);
                    map.nodes.len() - 1
                }
            };
            map.ranges.push((*first as u16, *last as u16, node));
        }
        map.ranges.sort_unstable();
        Ok(map)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The node serving `slot`, if the map covers it.
    pub(crate) fn node_of(&self, slot: u16) -> Option<usize> {
        let i = self.ranges.partition_point(|r| r.0 <= slot);
        let (first, last, node) = *self.ranges.get(i.checked_sub(1)?)?;
        (first..=last).contains(&slot).then_some(node)
    }

    /// Every primary as `host:port` with the first slot it serves, in
    /// address order.
    pub(crate) fn primaries(&self) -> Vec<(String, u16)> {
        let mut out: Vec<(String, u16)> = Vec::with_capacity(self.nodes.len());
        for (i, (host, port)) in self.nodes.iter().enumerate() {
            if let Some(&(first, _, _)) = self.ranges.iter().find(|r| r.2 == i) {
                out.push((format!("{host}:{port}"), first));
            }
        }
        out.sort();
        out
    }

    /// `(host, port)` of node `i`.
    #[cfg(test)]
    pub(crate) fn addr(&self, node: usize) -> &(String, u16) {
        &self.nodes[node]
    }

    /// The primary serving `slot`, if the map covers it.
    pub(crate) fn primary_of(&self, slot: u16) -> Option<&(String, u16)> {
        self.node_of(slot).map(|n| &self.nodes[n])
    }

    /// Every node the map names, primaries and replicas.
    pub(crate) fn all_nodes(&self) -> &[(String, u16)] {
        &self.all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::BulkString(host.as_bytes().to_vec()),
            Value::Int(port),
            Value::BulkString(b"id".to_vec()),
        ])
    }

    #[test]
    fn parses_and_partitions() {
        let reply = Value::Array(vec![
            Value::Array(vec![
                Value::Int(5461),
                Value::Int(10922),
                node("127.0.0.1", 7001),
            ]),
            Value::Array(vec![
                Value::Int(0),
                Value::Int(5460),
                node("127.0.0.1", 7000),
            ]),
            Value::Array(vec![
                Value::Int(10923),
                Value::Int(16383),
                node("127.0.0.1", 7002),
            ]),
        ]);
        let map = SlotMap::parse(reply).unwrap();
        assert_eq!(map.node_of(0), Some(1));
        assert_eq!(map.node_of(5460), Some(1));
        assert_eq!(map.node_of(5461), Some(0));
        assert_eq!(map.node_of(16383), Some(2));
        assert_eq!(map.addr(1), &("127.0.0.1".to_string(), 7000));
        assert_eq!(map.primary_of(6000), Some(&("127.0.0.1".to_string(), 7001)));
        assert_eq!(map.primary_of(3), Some(&("127.0.0.1".to_string(), 7000)));
        assert_eq!(map.all_nodes().len(), 3);
        assert_eq!(
            map.primaries(),
            [
                ("127.0.0.1:7000".to_string(), 0),
                ("127.0.0.1:7001".to_string(), 5461),
                ("127.0.0.1:7002".to_string(), 10923)
            ]
        );
    }
}
