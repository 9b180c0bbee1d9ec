//! The sync driver's side of [`Step::Wait`](super::Step::Wait): one RESP3
//! subscription connection per node, on which the [`Connection`](super::Connection)
//! subscribes to shard channels (`SSUBSCRIBE`) for the op that waits, and
//! reads the messages.
//!
//! A subscription lasts from the op's first wait on a channel until the op
//! finishes; a message that arrives between two waits is remembered, so a
//! wait that follows a re-check sees it at once. At the end of the op the
//! subscriptions are dropped with `SUNSUBSCRIBE`, written without waiting
//! for the reply (its confirmation is read, and ignored, by the next wait),
//! so finishing costs no round trip.
//!
//! The connection speaks RESP3 so that every pub/sub message is a push,
//! apart from the replies the driver asks for: redis-rs drops the next
//! *reply* after a read timed out (it takes it for the late reply of the
//! timed-out request), which a push never is. A connection on which a read
//! timed out is therefore replaced before it sends another `SSUBSCRIBE`,
//! whose error reply could otherwise be the one dropped.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use redis::{ConnectionInfo, ProtocolVersion, PushKind, Value};

use super::op::wakes;
use super::wait_stats::{WaitStats, refusal_text};

/// How long subscribing may take (connect, `SSUBSCRIBE`, its confirmation).
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(5);

/// `info` speaking RESP3 (every pub/sub message a push).
pub(crate) fn resp3(info: &ConnectionInfo) -> ConnectionInfo {
    let settings = info
        .redis_settings()
        .clone()
        .set_protocol(ProtocolVersion::RESP3);
    info.clone().set_redis_settings(settings)
}

/// The channel a push message is about (its first element).
pub(crate) fn push_channel(data: &[Value]) -> Option<&[u8]> {
    match data.first() {
        Some(Value::BulkString(b)) => Some(b),
        Some(Value::SimpleString(s)) => Some(s.as_bytes()),
        _ => None,
    }
}

/// The message of a push message (its second element).
pub(crate) fn push_message(data: &[Value]) -> Option<&[u8]> {
    match data.get(1) {
        Some(Value::BulkString(b)) => Some(b),
        Some(Value::SimpleString(s)) => Some(s.as_bytes()),
        _ => None,
    }
}

/// `SSUBSCRIBE channel` or `SUNSUBSCRIBE channel`.
pub(crate) fn subscribe_cmd(name: &str, channel: &[u8]) -> redis::Cmd {
    let mut cmd = redis::cmd(name);
    cmd.arg(channel);
    cmd
}

/// One subscription connection and what it is subscribed to.
struct Link {
    con: redis::Connection,
    /// Channels the current op subscribed to.
    subscribed: HashSet<Vec<u8>>,
    /// Messages (channel, message) on subscribed channels not yet taken
    /// by a wait.
    pending: HashSet<(Vec<u8>, Vec<u8>)>,
    /// A read timed out since the last reply: the next reply may be dropped.
    timed_out: bool,
}

impl Link {
    /// Keeps a message on a subscribed channel for a later wait.
    fn remember(&mut self, channel: Option<&[u8]>, data: &[Value]) {
        if let Some(c) = channel.filter(|c| self.subscribed.contains(*c)) {
            let m = push_message(data).unwrap_or_default();
            self.pending.insert((c.to_vec(), m.to_vec()));
        }
    }
}

/// What a failed subscription leaves the wait to do.
enum Subscribed {
    /// Subscribed (now or earlier in this op).
    Yes,
    /// The server refused (with this reply) or the connection failed
    /// (`None`): sleep out the wait.
    No(Option<String>),
}

/// The subscription connections of one sync [`Connection`](super::Connection),
/// by node (`(host, port)`; the one server's address on a single server).
#[derive(Default)]
pub(crate) struct Subscriber {
    links: HashMap<(String, u16), Link>,
    stats: WaitStats,
}

impl Subscriber {
    /// One [`Step::Wait`](super::Step::Wait) on the node `info` points at:
    /// `true` when a message on `channel` woke it (one for the waiter `to`,
    /// when given: [`wakes`]). Never fails: a wait that
    /// cannot subscribe sleeps out its timeout (a lost wake-up), and a
    /// subscription connection that broke ends the wait early (the op
    /// re-checks; the next wait connects again). `refused` is called when
    /// the node refused the subscription (e.g. `MOVED`: the slot map is
    /// stale).
    pub(crate) fn wait(
        &mut self,
        node: (String, u16),
        info: &ConnectionInfo,
        (channel, to): (&[u8], Option<&[u8]>),
        timeout: Duration,
        refused: &mut dyn FnMut(),
    ) -> bool {
        let started = Instant::now();
        if let Subscribed::No(refusal) = self.subscribe(&node, info, channel) {
            self.stats.unsubscribed(refusal);
            refused();
            std::thread::sleep(timeout.saturating_sub(started.elapsed()));
            return false;
        }
        let woken = self.wait_subscribed(node, (channel, to), started + timeout, refused);
        self.stats.ended(woken);
        woken
    }

    /// A wait with no node to subscribe on (a wrapped connection without
    /// node addresses): sleeps out `timeout`.
    pub(crate) fn sleep(&mut self, timeout: Duration) {
        self.stats.unsubscribed(None);
        std::thread::sleep(timeout);
    }

    /// What this connection's waits met.
    pub(crate) fn stats(&self) -> WaitStats {
        self.stats.clone()
    }

    /// A subscribed wait, until `deadline`.
    fn wait_subscribed(
        &mut self,
        node: (String, u16),
        (channel, to): (&[u8], Option<&[u8]>),
        deadline: Instant,
        refused: &mut dyn FnMut(),
    ) -> bool {
        let link = self.links.get_mut(&node).expect("subscribed above");
        // The messages of the channel that came meanwhile: this op's waits
        // all wait for the same `to`, so those for others are dropped.
        let mut woken = false;
        link.pending.retain(|(c, m)| {
            let mine = c.as_slice() == channel;
            woken |= mine && wakes(to, Some(m));
            !mine
        });
        if woken {
            return true;
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            if link.con.set_read_timeout(Some(left)).is_err() {
                self.links.remove(&node);
                return true;
            }
            match link.con.recv_response() {
                Ok(Value::Push { kind, data }) => {
                    let about = push_channel(&data);
                    match kind {
                        PushKind::SMessage
                            if about == Some(channel) && wakes(to, push_message(&data)) =>
                        {
                            return true;
                        }
                        // A message for another waiter of the channel.
                        PushKind::SMessage if about == Some(channel) => {}
                        PushKind::SMessage => link.remember(about, &data),
                        // The server dropped the subscription (the slot
                        // moved): end the wait; the next one subscribes
                        // again, on the slot's new node.
                        PushKind::SUnsubscribe if about == Some(channel) => {
                            link.subscribed.remove(channel);
                            refused();
                            return true;
                        }
                        _ => {}
                    }
                }
                Ok(_) => link.timed_out = false,
                Err(e) if e.is_timeout() => {
                    link.timed_out = true;
                    return false;
                }
                Err(_) => {
                    self.links.remove(&node);
                    return true;
                }
            }
        }
    }

    /// Subscribes to `channel` on `node` unless the op already did.
    fn subscribe(
        &mut self,
        node: &(String, u16),
        info: &ConnectionInfo,
        channel: &[u8],
    ) -> Subscribed {
        if let Some(link) = self.links.get(node) {
            if link.subscribed.contains(channel) {
                return Subscribed::Yes;
            }
            if link.timed_out {
                self.links.remove(node);
            }
        }
        if !self.links.contains_key(node) {
            let Ok(con) = redis::Client::open(resp3(info))
                .and_then(|c| c.get_connection_with_timeout(SUBSCRIBE_TIMEOUT))
            else {
                return Subscribed::No(None);
            };
            self.links.insert(
                node.clone(),
                Link {
                    con,
                    subscribed: HashSet::new(),
                    pending: HashSet::new(),
                    timed_out: false,
                },
            );
        }
        let link = self.links.get_mut(node).expect("inserted above");
        let packed = subscribe_cmd("SSUBSCRIBE", channel).get_packed_command();
        if link.con.send_packed_command(&packed).is_err()
            || link.con.set_read_timeout(Some(SUBSCRIBE_TIMEOUT)).is_err()
        {
            self.links.remove(node);
            return Subscribed::No(None);
        }
        // Read up to the confirmation; messages of the op's other channels
        // on the way are remembered.
        loop {
            match link.con.recv_response() {
                Ok(Value::Push { kind, data }) => {
                    let about = push_channel(&data);
                    match kind {
                        PushKind::SSubscribe if about == Some(channel) => {
                            link.subscribed.insert(channel.to_vec());
                            return Subscribed::Yes;
                        }
                        PushKind::SMessage => link.remember(about, &data),
                        _ => {}
                    }
                }
                // An error reply (MOVED, NOPERM ...) to the SSUBSCRIBE.
                Ok(Value::ServerError(e)) => {
                    self.links.remove(node);
                    return Subscribed::No(refusal_text(&e.into()));
                }
                Err(e) => {
                    self.links.remove(node);
                    return Subscribed::No(refusal_text(&e));
                }
                Ok(_) => {}
            }
        }
    }

    /// The op finished: drops its subscriptions (`SUNSUBSCRIBE`, written
    /// without reading the confirmation).
    pub(crate) fn finish(&mut self) {
        let mut broken = Vec::new();
        for (node, link) in &mut self.links {
            link.pending.clear();
            for channel in link.subscribed.drain() {
                let packed = subscribe_cmd("SUNSUBSCRIBE", &channel).get_packed_command();
                if link.con.send_packed_command(&packed).is_err() {
                    broken.push(node.clone());
                    break;
                }
            }
        }
        for node in broken {
            self.links.remove(&node);
        }
    }
}
