//! Layouts stored with the data (`lua/layout/`): the small meta hash in
//! which a sharded pattern records how its keys are laid out (scheme, shard
//! count, separator, record width, version), so that every later writer and
//! reader finds the layout with the data instead of having to be told.
//!
//! A pattern whose keys share a slot with their meta key writes it in the
//! same script as its first data (a visit counter's day). A pattern whose
//! keys spread over slots (a sharded hash's shards, a packed store's shards)
//! **claims** its layout once before its first write: [`Layout::claim`] runs
//! `layout.claim`, which stores the layout when the meta key is absent and
//! answers the stored one either way; a different stored layout is
//! [`ErrorKind::LayoutMismatch`], before
//! anything else is written. [`Layout::read`] reads it back (`open` of each pattern).
//! Data written without a meta key (by other code, such as the PHP
//! recipes) has none: name its layout explicitly. A rolling store needs no
//! meta key: its index already holds its ring
//! ([`RollingStore::stored_ring`](crate::rolling::RollingStore::stored_ring)).
//!
//! Every operation is an [`Op`]: run it with `.run(&mut con)` on a
//! [`Connection`](crate::Connection) or `.run_async(&con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection).
//!
//! ```no_run
//! use redis_patterns::layout::Layout;
//! use redis_patterns::prelude::*;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let mine = Layout::new("sharded_hash", 1).with("scheme", "crc32").with("shards", 64);
//! Layout::claim("users:meta", &mine).run(&mut con)?; // refused if another layout is stored
//! assert_eq!(Layout::read("users:meta").run(&mut con)?, Some(mine));
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let stored = Layout::read("users:meta").run_async(&con).await?;
//! # Ok(())
//! # }
//! ```

mod contract;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::core::Op;
use crate::error::{Error, ErrorKind, Result};
use crate::scripts;

pub(crate) use contract::{contract, meta_key_template};

/// A layout as stored in a meta hash: field → value, always with the
/// fields `pattern` and `version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Layout {
    fields: BTreeMap<String, String>,
}

impl Layout {
    /// The layout of `pattern` (e.g. `"sharded_hash"`) at layout `version`.
    pub fn new(pattern: &str, version: u32) -> Self {
        Self {
            fields: BTreeMap::new(),
        }
        .with("pattern", pattern)
        .with("version", version)
    }

    /// With one more field (or a new value for one).
    pub fn with(mut self, field: &str, value: impl fmt::Display) -> Self {
        self.fields.insert(field.to_string(), value.to_string());
        self
    }

    /// The value of a field.
    pub fn get(&self, field: &str) -> Option<&str> {
        self.fields.get(field).map(String::as_str)
    }

    /// The value of a field as an integer.
    pub fn get_u64(&self, field: &str) -> Option<u64> {
        self.get(field).and_then(|v| v.parse().ok())
    }

    /// The pattern it belongs to.
    pub fn pattern(&self) -> Option<&str> {
        self.get("pattern")
    }

    /// Every field, sorted by name.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    fn from_pairs(pairs: Vec<String>) -> Self {
        let mut fields = BTreeMap::new();
        let mut it = pairs.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            fields.insert(k, v);
        }
        Self { fields }
    }

    fn pairs(&self) -> Vec<&str> {
        self.fields
            .iter()
            .flat_map(|(k, v)| [k.as_str(), v.as_str()])
            .collect()
    }

    /// Refuses `requested` when this (stored) layout differs from it.
    pub fn check(&self, key: &str, requested: &Layout) -> Result<()> {
        if self == requested {
            return Ok(());
        }
        Err(ErrorKind::LayoutMismatch {
            key: key.to_string(),
            stored: self.to_string(),
            requested: requested.to_string(),
        }
        .into())
    }
}

impl fmt::Display for Layout {
    /// `shards=64, scheme=crc32, separator=:, version=1` (the pattern name
    /// left out).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (k, v) in &self.fields {
            if k == "pattern" || k == "version" {
                continue;
            }
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{k}={v}")?;
        }
        if let Some(v) = self.fields.get("version") {
            if !first {
                f.write_str(", ")?;
            }
            write!(f, "version={v}")?;
        }
        Ok(())
    }
}

/// The meta key of the pattern data under `base`: `<base>:meta`.
pub(crate) fn meta_key(base: &str) -> String {
    format!("{base}:meta")
}

/// The layout stored in the meta key of the pattern data under `base`
/// ([`meta_key`]), read as `T` by `from`; `None` when none is stored (data
/// written without one), [`ErrorKind::LayoutMismatch`] when the stored one
/// is not a `pattern` layout of `version` or `from` cannot read it, and an
/// invalid `base` (nothing sent) when it is empty.
pub(crate) fn read_as<T: Send + 'static>(
    base: &str,
    pattern: &'static str,
    version: u32,
    from: fn(&Layout) -> Option<T>,
) -> Op<Option<T>> {
    if base.is_empty() {
        return Op::fail(Error::invalid("base", "must not be empty"));
    }
    let key = meta_key(base);
    Layout::read(&key).try_map(move |stored| {
        let Some(l) = stored else { return Ok(None) };
        let ours = l.pattern() == Some(pattern) && l.get_u64("version") == Some(u64::from(version));
        match ours.then(|| from(&l)).flatten() {
            Some(t) => Ok(Some(t)),
            None => Err(ErrorKind::LayoutMismatch {
                key,
                stored: l.to_string(),
                requested: format!("{} {pattern} layout of version {version}", article(pattern)),
            }
            .into()),
        }
    })
}

/// `an` before a vowel, `a` otherwise.
fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// Whether a pattern's value that records its layout has claimed it yet,
/// shared by its clones: the first write claims the layout, later ones
/// skip the claim.
#[derive(Debug, Clone, Default)]
pub(crate) struct Claim(Option<Arc<AtomicBool>>);

impl Claim {
    /// A claim still to make when `record` is set, none otherwise.
    pub(crate) fn new(record: bool) -> Self {
        Self(record.then(|| Arc::new(AtomicBool::new(false))))
    }

    /// Whether the layout is recorded with the data.
    pub(crate) fn records(&self) -> bool {
        self.0.is_some()
    }

    /// [`Layout::claim`] of `layout` at `meta_key`, remembered as made once it
    /// succeeded.
    pub(crate) fn claim(&self, meta_key: &str, layout: &Layout) -> Op<()> {
        let flag = self.0.clone();
        Layout::claim(meta_key, layout).map(move |()| {
            if let Some(flag) = flag {
                flag.store(true, Ordering::Relaxed);
            }
        })
    }

    /// `op`, after `claim()` when the layout is recorded and not claimed
    /// yet.
    pub(crate) fn before<T: Send + 'static>(
        &self,
        claim: impl FnOnce() -> Op<()>,
        op: Op<T>,
    ) -> Op<T> {
        match &self.0 {
            Some(flag) if !flag.load(Ordering::Relaxed) => claim().and_then(move |()| op),
            _ => op,
        }
    }
}

impl Layout {
    /// Stores `layout` at `meta_key` unless a layout is stored there
    /// (`layout.claim`, one script call), and refuses with
    /// [`ErrorKind::LayoutMismatch`] when the stored one differs.
    pub fn claim(meta_key: &str, layout: &Layout) -> Op<()> {
        let key = meta_key.to_string();
        let wanted = layout.clone();
        Op::script(scripts::layout::claim(meta_key, &layout.pairs())).try_map(
            move |stored: Vec<Option<Vec<u8>>>| {
                let text = stored
                    .into_iter()
                    .map(|b| String::from_utf8_lossy(&b.unwrap_or_default()).into_owned())
                    .collect();
                Layout::from_pairs(text).check(&key, &wanted)
            },
        )
    }

    /// The layout stored at `meta_key` (`HGETALL`), `None` when there is none.
    pub fn read(meta_key: &str) -> Op<Option<Layout>> {
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(meta_key);
        Op::<Vec<String>>::cmd(meta_key, cmd)
            .map(|pairs| (!pairs.is_empty()).then(|| Layout::from_pairs(pairs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_compare_and_print_without_their_pattern() {
        let a = Layout::new("sharded_hash", 1)
            .with("shards", 64)
            .with("scheme", "crc32");
        assert_eq!(a.to_string(), "scheme=crc32, shards=64, version=1");
        assert_eq!(a.get_u64("shards"), Some(64));
        let b = a.clone().with("shards", 3);
        let e = a.check("users:meta", &b).unwrap_err();
        assert_eq!(
            e.to_string(),
            "users:meta holds data laid out as scheme=crc32, shards=64, version=1, not as scheme=crc32, shards=3, version=1"
        );
        assert!(a.check("users:meta", &a.clone()).is_ok());
        assert_eq!(
            Layout::from_pairs(a.pairs().iter().map(|s| s.to_string()).collect()),
            a
        );
    }
}
