//! One cluster's state, without I/O, for both drivers: the slot map, every
//! node seen, the connections to the nodes and the router, and the
//! decisions over them — where each command goes, when the map is read
//! again and from which node, which connection is dropped after a failure.
//!
//! The sync driver owns one; the async driver's clones share one behind a
//! single lock, never held across an `.await`. The drivers only connect,
//! send and read: they ask the state, do the I/O it names, and tell it what
//! came back. `C` is a driver's connection to one node, `R` its cluster
//! router (redis-rs's `ClusterConnection`).

use std::collections::HashMap;

use redis::{ConnectionInfo, Value};

use super::exchange::{Addr, Refresh, Target};
use super::nodes::{Seeds, addr_of, cannot_reconnect, cluster_client, node_info};
use super::slots::SlotMap;
use crate::error::{Error, Result};

/// A cluster link's state; see the [module](self).
pub(crate) struct ClusterState<C, R> {
    /// The cluster router for commands without a key; `None` until it is
    /// built again (after it failed).
    router: Option<R>,
    /// Where the router is built from and how to reach a node
    /// (credentials, TLS); `None` when the router was handed to us: it is
    /// then never rebuilt, and every command goes through it.
    own: Option<Seeds>,
    nodes: HashMap<Addr, C>,
    slots: SlotMap,
    /// Every node seen, asked in turn for the slot map.
    known: Known,
}

impl<C, R> ClusterState<C, R> {
    /// A state that opens connections of its own from `own`, or (`None`)
    /// one that sends everything through `router`.
    pub(crate) fn new(router: R, own: Option<Seeds>) -> Self {
        Self {
            router: Some(router),
            known: Known::of(own.as_ref()),
            own,
            nodes: HashMap::new(),
            slots: SlotMap::default(),
        }
    }

    /// The seeds it reaches nodes with (`None` for a wrapped router).
    pub(crate) fn own(&self) -> Option<&Seeds> {
        self.own.as_ref()
    }

    /// Applies `refresh`, then where each command of `slots` goes (or
    /// [`Lookup::ReadMap`]: then [`route`] over the map read).
    pub(crate) fn targets(
        &mut self,
        refresh: Refresh,
        slots: &[Option<u16>],
    ) -> Lookup<Vec<Target>> {
        if refresh.slots {
            self.forget_map();
        }
        if refresh.router && self.own.is_some() {
            self.router = None;
        }
        if self.own.is_none() {
            return Lookup::Found(vec![Target::Router; slots.len()]);
        }
        if self.slots.is_empty() && slots.iter().any(Option::is_some) {
            return Lookup::ReadMap;
        }
        Lookup::Found(route(&self.slots, slots))
    }

    /// The node a wait on `slot` subscribes on, and how to reach it (or
    /// [`Lookup::ReadMap`]: then [`ClusterState::serving`] over the map
    /// read); `None` when it cannot subscribe (a wrapped router: it
    /// sleeps) or the map does not cover the slot.
    pub(crate) fn wait_target(&self, slot: u16) -> Lookup<Option<(Addr, ConnectionInfo)>> {
        if self.own.is_some() && self.slots.is_empty() {
            return Lookup::ReadMap;
        }
        Lookup::Found(self.serving(&self.slots, slot))
    }

    /// The node that serves `slot` by `map`, and how to reach it (`None`
    /// for a wrapped router, which reaches no node itself).
    pub(crate) fn serving(&self, map: &SlotMap, slot: u16) -> Option<(Addr, ConnectionInfo)> {
        let base = &self.own.as_ref()?.base;
        let (host, port) = map.primary_of(slot)?.clone();
        let info = node_info(base, &host, port);
        Some(((host, port), info))
    }

    /// The slot map is stale (a subscription was refused, a redirect): it
    /// is read again before its next use.
    pub(crate) fn forget_map(&mut self) {
        self.slots = SlotMap::default();
    }

    /// The connection to `addr`, when one is open.
    pub(crate) fn node(&mut self, addr: &Addr) -> Option<&mut C> {
        self.nodes.get_mut(addr)
    }

    /// How to open a connection to `addr`.
    pub(crate) fn node_info(&self, addr: &Addr) -> ConnectionInfo {
        self.own
            .as_ref()
            .expect("nodes are reached only with seeds of its own")
            .node(addr)
    }

    /// Keeps `con` as the connection to `addr`, unless one was kept since
    /// (a clone opened it first): the one kept.
    pub(crate) fn keep_node(&mut self, addr: &Addr, con: C) -> &mut C {
        self.nodes.entry(addr.clone()).or_insert(con)
    }

    /// The connection to `addr` failed: the next use opens another.
    pub(crate) fn drop_node(&mut self, addr: &Addr) {
        self.nodes.remove(addr);
    }

    /// The router, when it stands.
    pub(crate) fn router(&mut self) -> Option<&mut R> {
        self.router.as_mut()
    }

    /// The client to build the router again from, seeded with the seeds
    /// and every node known since (see [`cluster_client`]); a wrapped router that broke cannot be rebuilt (the error says
    /// so).
    pub(crate) fn router_client(&self) -> Result<redis::cluster::ClusterClient> {
        let own = self.own.as_ref().ok_or_else(|| cannot_reconnect(None))?;
        cluster_client(self.known.with_seeds(own), &own.tls)
    }

    /// Keeps a router built again.
    pub(crate) fn keep_router(&mut self, router: R) {
        self.router = Some(router);
    }

    /// The router failed: one of its own is built again on its next use (a
    /// wrapped one is kept: it reconnects by its own settings).
    pub(crate) fn router_failed(&mut self) {
        if self.own.is_some() {
            self.router = None;
        }
    }
}

/// What a look-up in the slot map found.
pub(crate) enum Lookup<T> {
    Found(T),
    /// The slot map must be read first ([`SlotRead`]).
    ReadMap,
}

/// One reading of the slot map: every known node asked in turn until one
/// answers. A step machine the drivers run: [`SlotRead::step`] names the
/// node to ask, the driver sends it `CLUSTER SLOTS` ([`SlotMap::cmd`]) and
/// hands back the reply.
pub(crate) struct SlotRead {
    order: Vec<Addr>,
    /// How many of `order` were asked.
    asked: usize,
    last: Option<Error>,
}

/// What a [`SlotRead`] asks of the driver.
pub(crate) enum Ask {
    /// Send `CLUSTER SLOTS` to this node.
    Node(Addr),
    /// The map read (kept in the state too), or why none could be.
    Done(Result<SlotMap>),
}

impl SlotRead {
    pub(crate) fn new<C, R>(state: &ClusterState<C, R>) -> Self {
        Self {
            order: state.known.in_order(),
            asked: 0,
            last: None,
        }
    }

    /// `reply`: the answer of the node asked last (`None` at the start).
    pub(crate) fn step<C, R>(
        &mut self,
        state: &mut ClusterState<C, R>,
        reply: Option<Result<Value>>,
    ) -> Ask {
        if let Some(reply) = reply {
            let addr = &self.order[self.asked - 1];
            match read_map(reply) {
                Ok(map) => {
                    state.known.answered(addr, &map);
                    state.slots = map.clone();
                    return Ask::Done(Ok(map));
                }
                Err(e) => {
                    state.drop_node(addr);
                    self.last = Some(e);
                }
            }
        }
        match self.order.get(self.asked) {
            Some(addr) => {
                self.asked += 1;
                Ask::Node(addr.clone())
            }
            None => Ask::Done(Err(state.known.none_answered(self.last.take()))),
        }
    }
}

/// Every node seen (the seeds and the slot maps' nodes), in the order they
/// are asked for the slot map: the one that answered last comes first.
#[derive(Debug, Clone, Default)]
pub(crate) struct Known(Vec<Addr>);

impl Known {
    /// The seeds' addresses (none without seeds).
    pub(crate) fn of(own: Option<&Seeds>) -> Self {
        let seeds = own.map_or(&[][..], |o| &o.seeds);
        Self(seeds.iter().filter_map(addr_of).collect())
    }

    /// The nodes to ask, in order.
    pub(crate) fn in_order(&self) -> Vec<Addr> {
        self.0.clone()
    }

    /// `addr` answered with `map`: it is asked first next time, and every
    /// node the map names is known from now on.
    pub(crate) fn answered(&mut self, addr: &Addr, map: &SlotMap) {
        if let Some(at) = self.0.iter().position(|a| a == addr) {
            self.0.rotate_left(at);
        }
        for a in map.all_nodes() {
            if !self.0.contains(a) {
                self.0.push(a.clone());
            }
        }
    }

    /// No node answered (`last` is the last failure): the next one is asked
    /// first next time; the error to return.
    pub(crate) fn none_answered(&mut self, last: Option<Error>) -> Error {
        if !self.0.is_empty() {
            self.0.rotate_left(1);
        }
        last.unwrap_or_else(|| Error::invalid("nodes", "no cluster node is known"))
    }

    /// The seeds of a cluster client: `own` seeds, then every node known
    /// since (same credentials as the first).
    pub(crate) fn with_seeds(&self, own: &Seeds) -> Vec<ConnectionInfo> {
        let mut out = own.seeds.clone();
        for addr in &self.0 {
            let info = own.node(addr);
            if !out.iter().any(|s| s.addr() == info.addr()) {
                out.push(info);
            }
        }
        out
    }
}

/// A node's `CLUSTER SLOTS` reply as a slot map; one that names no slot is
/// refused too.
fn read_map(reply: Result<Value>) -> Result<SlotMap> {
    match reply.and_then(SlotMap::parse) {
        Ok(map) if map.is_empty() => Err(Error::unexpected("CLUSTER SLOTS named no slot")),
        other => other,
    }
}

/// Where each command goes by `map`: the primary of its slot, or the
/// router (no key, or a slot the map does not cover).
pub(crate) fn route(map: &SlotMap, slots: &[Option<u16>]) -> Vec<Target> {
    slots
        .iter()
        .map(|s| match s.and_then(|s| map.primary_of(s)) {
            Some(addr) => Target::Node(addr.clone()),
            None => Target::Router,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::nodes::Tls;

    type State = ClusterState<&'static str, &'static str>;

    fn own() -> State {
        let seeds = ["redis://127.0.0.1:7000/", "redis://127.0.0.1:7001/"];
        ClusterState::new("router", Some(Seeds::of(seeds, Tls::default()).unwrap()))
    }

    fn addr(port: u16) -> Addr {
        ("127.0.0.1".to_string(), port)
    }

    /// A `CLUSTER SLOTS` reply: all slots on `port`, with a replica on `port + 100`.
    fn slots_on(port: u16) -> Value {
        let node = |p: u16| {
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::Int(i64::from(p)),
            ])
        };
        Value::Array(vec![Value::Array(vec![
            Value::Int(0),
            Value::Int(16383),
            node(port),
            node(port + 100),
        ])])
    }

    /// Runs a slot read whose nodes answer by `answer`; the nodes asked.
    fn read(
        state: &mut State,
        answer: impl Fn(&Addr) -> Result<Value>,
    ) -> (Vec<u16>, Result<SlotMap>) {
        let mut read = SlotRead::new(state);
        let (mut asked, mut reply) = (Vec::new(), None);
        loop {
            match read.step(state, reply.take()) {
                Ask::Done(map) => return (asked, map),
                Ask::Node(a) => {
                    asked.push(a.1);
                    reply = Some(answer(&a));
                }
            }
        }
    }

    #[test]
    fn keyed_commands_wait_for_the_map_keyless_ones_go_to_the_router() {
        let mut state = own();
        assert!(
            matches!(state.targets(Refresh::default(), &[None]), Lookup::Found(t) if t == [Target::Router])
        );
        assert!(matches!(
            state.targets(Refresh::default(), &[None, Some(5)]),
            Lookup::ReadMap
        ));
        assert!(matches!(state.wait_target(5), Lookup::ReadMap));
        let (asked, map) = read(&mut state, |_| Ok(slots_on(7001)));
        assert_eq!(asked, [7000]);
        assert_eq!(
            route(&map.unwrap(), &[Some(5), None]),
            [Target::Node(addr(7001)), Target::Router]
        );
        match state.targets(Refresh::default(), &[Some(9)]) {
            Lookup::Found(t) => assert_eq!(t, [Target::Node(addr(7001))]),
            Lookup::ReadMap => panic!("the map was read"),
        }
        match state.wait_target(9) {
            Lookup::Found(Some((a, info))) => {
                assert_eq!(a, addr(7001));
                assert_eq!(info.addr().to_string(), "127.0.0.1:7001");
            }
            _ => panic!("the map serves slot 9"),
        }
        let refresh = Refresh {
            slots: true,
            router: false,
        };
        assert!(matches!(
            state.targets(refresh, &[Some(9)]),
            Lookup::ReadMap
        ));
    }

    #[test]
    fn a_failed_read_drops_the_node_and_asks_the_next_who_answered_is_asked_first() {
        let mut state = own();
        state.keep_node(&addr(7000), "con 7000");
        let (asked, map) = read(&mut state, |a| {
            if a.1 == 7000 {
                Err(Error::unexpected("down"))
            } else {
                Ok(slots_on(7002))
            }
        });
        assert_eq!(asked, [7000, 7001]);
        assert!(map.is_ok());
        assert!(
            state.node(&addr(7000)).is_none(),
            "the failed node's connection is dropped"
        );
        // 7001 answered: asked first; the map's nodes (7002 and its replica) are known now.
        let (asked, _) = read(&mut state, |_| Err(Error::unexpected("down")));
        assert_eq!(asked, [7001, 7000, 7002, 7102]);
        // None answered: the next one is asked first next time.
        let (asked, map) = read(&mut state, |_| Ok(Value::Array(Vec::new())));
        assert_eq!(asked, [7000, 7002, 7102, 7001]);
        assert!(map.unwrap_err().to_string().contains("named no slot"));
    }

    #[test]
    fn a_wrapped_router_is_kept_and_takes_every_command() {
        let mut state: State = ClusterState::new("wrapped", None);
        let refresh = Refresh {
            slots: true,
            router: true,
        };
        match state.targets(refresh, &[Some(1), None]) {
            Lookup::Found(t) => assert_eq!(t, [Target::Router, Target::Router]),
            Lookup::ReadMap => panic!("a wrapped router reads no map"),
        }
        state.router_failed();
        assert_eq!(state.router().copied(), Some("wrapped"));
        assert!(matches!(state.wait_target(1), Lookup::Found(None)));
        assert!(state.router_client().is_err());
        let mut own = own();
        own.targets(
            Refresh {
                slots: false,
                router: true,
            },
            &[],
        );
        assert!(own.router().is_none(), "a router of its own is built again");
        own.keep_router("again");
        own.router_failed();
        assert!(own.router().is_none());
    }
}
