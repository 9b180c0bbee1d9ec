//! Counting the batches an op sends (each batch is one pipeline per node),
//! for tests that check an operation's round trips. Included with
//! `#[path = "support/counting.rs"] mod counting;`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use redis_patterns::core::machine::{Env, Machine, Step};
use redis_patterns::{Op, Replies};

use super::support::Driver;

/// Forwards to an inner op and counts the batches it sends.
struct Counting<T> {
    inner: Op<T>,
    sends: Arc<AtomicUsize>,
}

impl<T: Send + 'static> Machine for Counting<T> {
    type Output = T;
    fn step(&mut self, env: &Env, replies: Option<Replies>) -> redis_patterns::Result<Step<T>> {
        let step = self.inner.step(env, replies)?;
        if matches!(step, Step::Send(_)) {
            self.sends.fetch_add(1, Ordering::Relaxed);
        }
        Ok(step)
    }
}

/// Runs `op` and returns its value with the number of batches it sent.
pub fn counted<T: Send + 'static>(d: &mut Driver, op: Op<T>) -> (T, usize) {
    let sends = Arc::new(AtomicUsize::new(0));
    let value = d
        .run(Op::from_machine(Counting {
            inner: op,
            sends: sends.clone(),
        }))
        .unwrap_or_else(|e| panic!("{}: {e}", d.name()));
    (value, sends.load(Ordering::Relaxed))
}
