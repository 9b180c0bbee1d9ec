//! Every kind of connection of the crate to one server, as [`Driver`]s: the
//! sync [`Connection`](redis_patterns::Connection), the async one on a
//! `ConnectionManager` ([`AsyncConnection::open`](redis_patterns::AsyncConnection::open)),
//! and a wrapped `MultiplexedConnection` that reconnects with its client.
//! Included with `#[path = "support/kinds.rs"] mod kinds;`.
#![allow(dead_code)]

use super::support::{Driver, call_mode, runtime};

/// A name for each kind, in the order [`every_kind`] returns them.
pub const KINDS: [&str; 3] = ["sync", "async manager", "async multiplexed"];

/// One driver of each kind, connected to the server at `url`, in the
/// tests' call mode.
pub fn every_kind(url: &str) -> Vec<Driver> {
    let sync = redis_patterns::Connection::open(url)
        .expect("sync connection")
        .with_call_mode(call_mode());
    let rt = runtime();
    let manager = rt
        .block_on(redis_patterns::AsyncConnection::open(url))
        .expect("async connection")
        .with_call_mode(call_mode());
    let rt2 = runtime();
    let multiplexed = rt2.block_on(async {
        let client = redis::Client::open(url).expect("url");
        let mux = client
            .get_multiplexed_async_connection()
            .await
            .expect("multiplexed connection");
        redis_patterns::AsyncConnection::from_multiplexed_with_client(client, mux)
            .await
            .expect("wrap multiplexed")
            .with_call_mode(call_mode())
    });
    vec![
        Driver::Sync(sync),
        Driver::Async(manager, rt),
        Driver::Async(multiplexed, rt2),
    ]
}
