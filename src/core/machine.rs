//! For those who write their own operations: the step machine under every
//! [`Op`](super::Op).
//!
//! An operation is a [`Machine`] that a driver steps: each
//! [`Machine::step`] gets the [`Env`] (cluster or not, how scripts are
//! called, what the server can do) and the replies to the previous step,
//! and answers the next [`Step`]: send a batch, sleep, wait for a message
//! on a shard channel (a message naming the waiter, or [`Step::BROADCAST`],
//! wakes it), or finish with the output. [`Op::from_machine`] makes an op
//! of a machine, and [`Op::step`] advances an op by one step (what a
//! machine that runs ops inside it calls). The patterns build almost all of
//! their operations with [`Op`](super::Op)'s constructors and combinators instead;
//! none of this is needed to use them.
//!
//! [`Op::from_machine`]: super::Op::from_machine
//! [`Op::step`]: super::Op::step

pub use super::op::{Env, Machine, Step};
