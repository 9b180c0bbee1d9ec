//! The async driver's side of [`Step::Wait`](super::Step::Wait): a hub,
//! shared by the clones of one [`AsyncConnection`](super::AsyncConnection),
//! with one RESP3 subscription connection per node. Every waiting op
//! registers a waiter for its channel; the first waiter of a channel
//! subscribes (`SSUBSCRIBE`), the last one to leave unsubscribes
//! (`SUNSUBSCRIBE`, from a spawned task, so that finishing an op costs no
//! round trip), and each message wakes every waiter of its channel.
//!
//! A waiter registers when its op first waits on the channel and stays
//! until the op finishes or its future is dropped, at any await (the
//! registration is dropped with it and leaves: the waiter is removed
//! before the `SSUBSCRIBE` is sent, and a channel whose subscription may
//! be on its way when its last waiter leaves is unsubscribed all the
//! same): a message between two waits leaves a permit that
//! the next wait takes at once. Subscriptions and unsubscriptions of one
//! node are sent one at a time, in the order the hub's table decided them,
//! so a channel is never left unsubscribed while it has waiters. A
//! connection that drops wakes all its waiters (their ops re-check; their
//! next waits connect again).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::ConnectionLike as _;
use redis::{ConnectionInfo, PushInfo, PushKind, Value};
use tokio::sync::Notify;

use super::nodes::{CONNECT_TIMEOUT, RESPONSE_TIMEOUT};
use super::subscriber::{push_channel, resp3, subscribe_cmd};
use super::wait_stats::{WaitStats, refusal_text};

/// The subscription connections of one async connection (and its clones).
#[derive(Default)]
pub(crate) struct Hub {
    links: Mutex<HashMap<(String, u16), Arc<NodeLink>>>,
    /// One connect at a time, so that concurrent waiters share one link.
    connecting: tokio::sync::Mutex<()>,
    stats: Mutex<WaitStats>,
}

/// The subscription connection to one node.
struct NodeLink {
    con: redis::aio::MultiplexedConnection,
    table: Arc<Mutex<Table>>,
    /// Held while a subscription command is in flight: subscriptions and
    /// unsubscriptions reach the server in the order the table decided.
    order: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Table {
    channels: HashMap<Vec<u8>, Channel>,
    /// The connection dropped: every waiter was woken; connect again.
    dead: bool,
}

#[derive(Default)]
struct Channel {
    waiters: Vec<Arc<Notify>>,
    /// The server confirmed the subscription (its messages arrive).
    subscribed: bool,
    /// An `SSUBSCRIBE` was sent (perhaps by an op dropped before its reply)
    /// and no `SUNSUBSCRIBE` since: the server may have it subscribed.
    sent: bool,
}

/// Called by the connection for every push: wakes the waiters of a
/// message's channel, or every waiter when the connection dropped.
fn dispatch(table: &Mutex<Table>, push: PushInfo) {
    let mut t = table.lock().expect("subscription table");
    match push.kind {
        PushKind::SMessage => {
            if let Some(ch) = push_channel(&push.data).and_then(|c| t.channels.get(c)) {
                ch.waiters.iter().for_each(|w| w.notify_one());
            }
        }
        // Our own unsubscription (the channel has no waiters then), or the
        // server's (the slot moved): the waiters re-check and subscribe
        // again, on the slot's node.
        PushKind::SUnsubscribe => {
            if let Some(ch) = push_channel(&push.data).and_then(|c| t.channels.get_mut(c)) {
                ch.subscribed = false;
                ch.sent = false;
                ch.waiters.iter().for_each(|w| w.notify_one());
            }
        }
        PushKind::Disconnection => {
            t.dead = true;
            for ch in t.channels.values_mut() {
                ch.subscribed = false;
                ch.sent = false;
                ch.waiters.iter().for_each(|w| w.notify_one());
            }
        }
        _ => {}
    }
}

/// One op's registration on one channel: its waiter is in the channel's
/// list from before the `SSUBSCRIBE` is sent until it is dropped, and
/// dropping it (the op finished, or its future was dropped at any await)
/// leaves the channel.
struct Registration {
    link: Arc<NodeLink>,
    channel: Vec<u8>,
    waiter: Arc<Notify>,
}

impl Registration {
    /// Whether it still receives the channel's messages.
    fn live(&self) -> bool {
        let t = self.link.table.lock().expect("subscription table");
        !t.dead
            && t.channels.get(&self.channel).is_some_and(|ch| {
                ch.subscribed && ch.waiters.iter().any(|w| Arc::ptr_eq(w, &self.waiter))
            })
    }
}

impl Drop for Registration {
    /// Leaves the channel; the last waiter's leaving unsubscribes it (in a
    /// spawned task, after any subscription in flight, whose op may have
    /// been dropped before its reply; without a runtime the subscription
    /// stays until the connection closes).
    fn drop(&mut self) {
        let unsubscribe = {
            let mut t = self.link.table.lock().expect("subscription table");
            let dead = t.dead;
            match t.channels.get_mut(&self.channel) {
                Some(ch) => {
                    ch.waiters.retain(|w| !Arc::ptr_eq(w, &self.waiter));
                    ch.waiters.is_empty() && ch.sent && !dead
                }
                None => false,
            }
        };
        if !unsubscribe {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let link = Arc::clone(&self.link);
        let channel = std::mem::take(&mut self.channel);
        runtime.spawn(unsubscribe_idle(link, channel));
    }
}

/// Unsubscribes `channel` if it still has no waiter once the subscription
/// commands before it were answered.
async fn unsubscribe_idle(link: Arc<NodeLink>, channel: Vec<u8>) {
    let _order = link.order.lock().await;
    let still = {
        let t = link.table.lock().expect("subscription table");
        t.channels
            .get(&channel)
            .is_some_and(|ch| ch.waiters.is_empty() && ch.sent)
    };
    if !still {
        return;
    }
    let reply = link
        .con
        .clone()
        .req_packed_command(&subscribe_cmd("SUNSUBSCRIBE", &channel))
        .await;
    let mut t = link.table.lock().expect("subscription table");
    match reply {
        Ok(_) => {
            if let Some(ch) = t.channels.get_mut(&channel) {
                ch.subscribed = false;
                ch.sent = false;
                if ch.waiters.is_empty() {
                    t.channels.remove(&channel);
                }
            }
        }
        // Refused: not subscribed either.
        Err(e) if e.code().is_some() => {}
        Err(_) => t.dead = true,
    }
}

/// The registrations of one run of an op; dropping it (the op finished)
/// leaves every channel.
#[derive(Default)]
pub(crate) struct Waits {
    regs: Vec<Registration>,
}

// Dropping `Waits` drops every registration, which leaves its channel.

/// Why a subscription failed.
enum Failed {
    /// The node refused it (`MOVED`, `NOPERM` ...; its reply, when it was
    /// an error): the slot map may be stale.
    Refused(Option<String>),
    /// No connection.
    Unreachable,
}

impl Hub {
    /// One [`Step::Wait`](super::Step::Wait) on the node `info` points at:
    /// whether a message on `channel` woke it, and whether the node refused
    /// the subscription (the slot map may be stale). A wait that cannot
    /// subscribe sleeps out its timeout.
    pub(crate) async fn wait(
        &self,
        node: (String, u16),
        info: &ConnectionInfo,
        channel: &[u8],
        timeout: Duration,
        waits: &mut Waits,
    ) -> (bool, bool) {
        let started = Instant::now();
        let at = waits.regs.iter().position(|r| r.channel == channel);
        let live = at.is_some_and(|i| waits.regs[i].live());
        if !live {
            if let Some(i) = at {
                drop(waits.regs.swap_remove(i));
            }
            match self.register(node, info, channel).await {
                Ok(reg) => waits.regs.push(reg),
                Err(failed) => {
                    let refused = match failed {
                        Failed::Refused(refusal) => {
                            self.stats().unsubscribed(refusal);
                            true
                        }
                        Failed::Unreachable => {
                            self.stats().unsubscribed(None);
                            false
                        }
                    };
                    tokio::time::sleep(timeout.saturating_sub(started.elapsed())).await;
                    return (false, refused);
                }
            }
        }
        let reg = waits
            .regs
            .iter()
            .find(|r| r.channel == channel)
            .expect("registered above");
        let left = timeout.saturating_sub(started.elapsed());
        let woken = tokio::time::timeout(left, reg.waiter.notified())
            .await
            .is_ok();
        self.stats().ended(woken);
        (woken, false)
    }

    /// A wait with no node to subscribe on (a wrapped connection without
    /// node addresses): sleeps out `timeout`.
    pub(crate) async fn sleep(&self, timeout: Duration) {
        self.stats().unsubscribed(None);
        tokio::time::sleep(timeout).await;
    }

    /// What the waits through this hub met.
    pub(crate) fn wait_stats(&self) -> WaitStats {
        self.stats().clone()
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, WaitStats> {
        self.stats.lock().expect("wait stats")
    }

    /// Registers a waiter for `channel` on `node`, subscribing when it is the
    /// channel's first.
    async fn register(
        &self,
        node: (String, u16),
        info: &ConnectionInfo,
        channel: &[u8],
    ) -> Result<Registration, Failed> {
        let link = self.link(node, info).await.ok_or(Failed::Unreachable)?;
        let waiter = Arc::new(Notify::new());
        let _order = link.order.lock().await;
        let subscribe = {
            let mut t = link.table.lock().expect("subscription table");
            if t.dead {
                return Err(Failed::Unreachable);
            }
            let ch = t.channels.entry(channel.to_vec()).or_default();
            ch.waiters.push(waiter.clone());
            let subscribe = !ch.subscribed;
            ch.sent |= subscribe;
            subscribe
        };
        // From here a drop (of this future, at the await below) leaves.
        let reg = Registration {
            link: link.clone(),
            channel: channel.to_vec(),
            waiter,
        };
        if !subscribe {
            return Ok(reg);
        }
        let reply = link
            .con
            .clone()
            .req_packed_command(&subscribe_cmd("SSUBSCRIBE", channel))
            .await;
        let failed = {
            let mut t = link.table.lock().expect("subscription table");
            match reply {
                Ok(Value::Push {
                    kind: PushKind::SSubscribe,
                    ..
                }) => {
                    if let Some(ch) = t.channels.get_mut(channel) {
                        ch.subscribed = true;
                    }
                    return Ok(reg);
                }
                Ok(Value::ServerError(e)) => Failed::Refused(refusal_text(&e.into())),
                Ok(_) => Failed::Refused(None),
                Err(e) if e.code().is_some() => Failed::Refused(refusal_text(&e)),
                Err(_) => {
                    t.dead = true;
                    Failed::Unreachable
                }
            }
        };
        // Not subscribed: the registration leaves, with nothing to undo.
        if let Some(ch) = link
            .table
            .lock()
            .expect("subscription table")
            .channels
            .get_mut(channel)
        {
            ch.sent = ch.subscribed;
        }
        drop(reg);
        Err(failed)
    }

    /// The live link to `node`, connecting when there is none.
    async fn link(&self, node: (String, u16), info: &ConnectionInfo) -> Option<Arc<NodeLink>> {
        let alive = |links: &HashMap<(String, u16), Arc<NodeLink>>| {
            links
                .get(&node)
                .filter(|l| !l.table.lock().expect("subscription table").dead)
                .cloned()
        };
        if let Some(link) = alive(&self.links.lock().expect("hub links")) {
            return Some(link);
        }
        let _connecting = self.connecting.lock().await;
        if let Some(link) = alive(&self.links.lock().expect("hub links")) {
            return Some(link);
        }
        let table = Arc::new(Mutex::new(Table::default()));
        let sink = Arc::clone(&table);
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_push_sender(move |push: PushInfo| -> Result<(), ()> {
                dispatch(&sink, push);
                Ok(())
            });
        let con = redis::Client::open(resp3(info))
            .ok()?
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .ok()?;
        let link = Arc::new(NodeLink {
            con,
            table,
            order: tokio::sync::Mutex::new(()),
        });
        self.links
            .lock()
            .expect("hub links")
            .insert(node, Arc::clone(&link));
        Some(link)
    }
}
