//! Which keys the generated checks call `TYPE` on: every key but an `any`
//! key and a fixed key whose type the body's own first command on it
//! checks before any write can run.

use super::analysis::{Access, Analysis};
use crate::header::Key;
use crate::types::KeyType;

/// Whether every access is safe, or comes after a safe access that runs
/// unconditionally.
fn verified(accesses: &[Access]) -> bool {
    accesses.iter().all(|a| {
        a.safe
            || accesses
                .iter()
                .any(|first| first.unconditional && first.place < a.place)
    })
}

impl Analysis<'_> {
    /// For each of `keys`, whether the generated checks call `TYPE` on it
    /// (on every key of a variadic tail). A fixed key needs none when every
    /// access of it (other than reads that accept any type) either is safe
    /// — a command that checks the declared type, which no write can
    /// precede but writes that are such commands on the same key (a loop
    /// of them) — or comes after a safe access that runs unconditionally.
    pub(crate) fn type_checked(&self, keys: &[Key]) -> Vec<bool> {
        (keys.iter().enumerate())
            .map(|(i, key)| {
                if key.types.iter().all(|t| *t == KeyType::Any) {
                    false
                } else if key.variadic {
                    true
                } else {
                    !verified(&self.accesses(i + 1, key.types[0]))
                }
            })
            .collect()
    }
}
