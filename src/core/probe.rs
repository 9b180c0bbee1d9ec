//! Asking a server what it can do, as operations: [`detect`], which a
//! driver runs before a connection's first operation, and [`Caps::read`],
//! which reads what it found (the answer's type and parsing: [`caps`](super::caps)).

use super::batch::Batch;
use super::caps::{Caps, asked_commands};
use super::op::{Env, Op};

/// Adds what [`detect`] reads: `INFO server`, `COMMAND INFO` of every
/// capability's commands and `COMMAND DOCS BITOP`, none with a key.
fn add(batch: &mut Batch) {
    let mut info = redis::cmd("INFO");
    info.arg("server");
    batch.add_keyless(info);
    let mut command = redis::cmd("COMMAND");
    command.arg("INFO").arg(asked_commands());
    batch.add_keyless(command);
    let mut docs = redis::cmd("COMMAND");
    docs.arg("DOCS").arg("BITOP");
    batch.add_keyless(docs);
}

/// Detects what the server can do, as an operation (what a driver runs
/// before a connection's first operation).
pub(crate) fn detect() -> Op<Caps> {
    let mut batch = Batch::with_capacity(3);
    add(&mut batch);
    Op::send(batch, |mut r| {
        let info = r.take_value()?;
        let commands = r.take_value()?;
        let docs = r.take_value()?;
        Ok(Caps::from_replies(info, commands, docs))
    })
}

impl Caps {
    /// What the connection's server can do, detected once per connection (the
    /// driver detects it before the connection's first operation, and this op
    /// only reads it).
    ///
    /// ```no_run
    /// use redis_patterns::core::Caps;
    /// use redis_patterns::prelude::*;
    ///
    /// # fn main() -> redis_patterns::Result<()> {
    /// let mut con = Connection::open("redis://127.0.0.1/")?;
    /// let caps = Caps::read().run(&mut con)?;
    /// println!("{} {:?}: {:?}", caps.server.name(), caps.version, caps.names());
    /// # Ok(())
    /// # }
    /// ```
    pub fn read() -> Op<Caps> {
        Op::with_env(|env: &Env| Op::ready(env.caps()))
    }
}
