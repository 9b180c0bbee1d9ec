//! Key names: validation and hash tags shared by every pattern.
//!
//! Lua never builds a key name; the client computes every key and passes it
//! in `KEYS`. Keys that one script call touches together share a hash tag
//! (`{...}`), so they live in one Redis Cluster slot.

use crate::error::{Error, Result};

/// Checks a user-supplied name that becomes part of a key: not empty, and no
/// `{` or `}` (the crate places the hash tag itself).
pub(crate) fn check_name(what: &'static str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(what, "must not be empty"));
    }
    if name.contains(['{', '}']) {
        return Err(Error::invalid(
            what,
            format!("`{name}` must not contain '{{' or '}}'"),
        ));
    }
    Ok(())
}

/// Checks a key prefix that goes in front of a hash tag the crate places:
/// it may be empty, but must not contain `{` or `}`.
pub(crate) fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.contains(['{', '}']) {
        return Err(Error::invalid("prefix", "must not contain '{' or '}'"));
    }
    Ok(())
}

/// A validated key prefix: what every key of a pattern object starts with.
///
/// [`Prefix::new`] refuses an empty prefix and one containing `{` or `}`
/// (the crate places hash tags itself); [`Prefix::none`] says explicitly
/// that keys are the bare names (e.g. sign-in bitmaps keyed by the bare date,
/// as existing PHP code writes them).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Prefix(String);

impl Prefix {
    /// A prefix such as `"visits:"`.
    pub fn new(prefix: &str) -> Result<Self> {
        if prefix.is_empty() {
            return Err(Error::invalid(
                "prefix",
                "must not be empty (use Prefix::none() for bare keys)",
            ));
        }
        check_prefix(prefix)?;
        Ok(Self(prefix.to_string()))
    }

    /// No prefix: keys are the bare names.
    pub fn none() -> Self {
        Self(String::new())
    }

    /// The prefix text (empty for [`Prefix::none`]).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `<prefix><rest>`
    pub fn key(&self, rest: &str) -> String {
        format!("{}{rest}", self.0)
    }

    /// `<prefix>{<name>}`: see [`tagged`].
    pub fn tagged(&self, name: &str) -> String {
        tagged(&self.0, name)
    }
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `<prefix>{<name>}`: the key of `name`, tagged so that every key derived
/// from it lands in the same cluster slot.
pub fn tagged(prefix: &str, name: &str) -> String {
    format!("{prefix}{{{name}}}")
}

/// `<base>:tmp:<16 random hex digits>`: a fresh temporary key in `base`'s
/// hash tag (or slot), for a script that writes it and deletes it before it
/// returns.
pub(crate) fn tmp_key(base: &str) -> String {
    let mut r = [0u8; 8];
    getrandom::fill(&mut r).expect("the operating system's random source is unavailable");
    format!("{base}:tmp:{:016x}", u64::from_le_bytes(r))
}

/// The hash tag of a key (what its slot is computed from), when it has one:
/// the first `{...}` when it is not empty.
fn tag_of(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    match key[open + 1..].iter().position(|&b| b == b'}') {
        Some(len) if len > 0 => Some(&key[open + 1..open + 1 + len]),
        _ => None,
    }
}

/// The part of a key (or shard channel) that picks its cluster slot: the
/// first `{...}` when it is not empty, else the whole name. Names with the
/// same hash tag share a slot.
pub(crate) fn hash_tag(key: &[u8]) -> &[u8] {
    tag_of(key).unwrap_or(key)
}

/// A key named after `key` and `suffix`, in `key`'s cluster slot:
/// `<key>:<suffix>` when `key` has a hash tag, `{<key>}:<suffix>` when it
/// has none (its tag is then the whole of `key`). Refused for a key without
/// a hash tag that contains `}` (no tag can equal it).
pub(crate) fn in_slot_of(key: &str, suffix: &str) -> Result<String> {
    if tag_of(key.as_bytes()).is_some() {
        Ok(format!("{key}:{suffix}"))
    } else if key.contains('}') {
        Err(Error::invalid(
            "key",
            format!("`{key}` has no hash tag but contains '}}': no other key can share its slot"),
        ))
    } else {
        Ok(format!("{{{key}}}:{suffix}"))
    }
}

/// The Redis Cluster slot of a key (CRC16/XMODEM of its hash tag, mod 16384).
pub fn cluster_slot(key: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in hash_tag(key) {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::identity_op)] // the spec's CRC16 value, mod 16384 as the spec writes it
    fn slots_match_the_cluster_spec() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(cluster_slot(b"123456789"), 0x31C3); // CRC16 check value
        assert_eq!(cluster_slot(b"foo"), 12182);
        assert_eq!(
            cluster_slot(b"{user1000}.following"),
            cluster_slot(b"user1000")
        );
        // An empty first tag means the whole key is hashed (checked against
        // CLUSTER KEYSLOT in tests/bundle.rs).
        assert_ne!(cluster_slot(b"foo{}{bar}"), cluster_slot(b"bar"));
        assert_eq!(hash_tag(b"redis:lock:{job}:wake"), b"job");
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("name", "").is_err());
        assert!(check_name("name", "a{b").is_err());
        assert!(check_name("name", "a:b").is_ok());
        assert_eq!(tagged("lock:", "x"), "lock:{x}");
    }
}
