//! [`JsHashBloom`]: the PHP-compatible filter, one bit per item at
//! `JSHash(item)`, reading and extending the bitmaps that the PHP
//! `BloomFilter::JSHash` recipe writes.

use super::hash::BloomHash;
use super::load::{Filter, Load, LoadItem};
use crate::core::resend::changed;
use crate::core::{Op, setters};
use crate::error::{Error, Result};
use crate::keys::Prefix;
use crate::scripts;

/// A filter of the PHP `BloomFilter::JSHash` recipe: one bit per item at
/// `JSHash(item)` ([`BloomHash::js_hash`], bit for bit as PHP 8 computes it) in the
/// bitmap `key` (e.g. `bloom_user_email`), exactly as the PHP code reads and
/// writes it (`SETBIT key JSHash(item) 1` / `GETBIT`). Use it to keep
/// working with bitmaps that PHP wrote; use [`Bloom`](super::Bloom) for new
/// data (see the module docs of [`crate::bloom`] for its false-positive
/// rate). Cheap to clone; holds no connection.
#[derive(Debug, Clone)]
pub struct JsHashBloom {
    key: String,
    limit_memory: bool,
}

/// Builds a [`JsHashBloom`]: setters never fail, [`JsHashBloomBuilder::build`]
/// checks.
#[derive(Debug, Clone)]
pub struct JsHashBloomBuilder {
    key: String,
    prefix: Prefix,
    limit_memory: bool,
}

impl JsHashBloomBuilder {
    setters! {
        /// A prefix in front of the key (default none: the PHP recipe's bare
        /// keys).
        prefix(prefix: Prefix) => prefix;

        /// PHP's `limitMemory` (default `true`, as in the recipe): must match
        /// what the PHP side uses.
        limit_memory(limit_memory: bool) => limit_memory;
    }

    /// Checks the settings.
    pub fn build(self) -> Result<JsHashBloom> {
        if self.key.is_empty() {
            return Err(Error::invalid("key", "must not be empty"));
        }
        Ok(JsHashBloom {
            key: self.prefix.key(&self.key),
            limit_memory: self.limit_memory,
        })
    }
}

impl JsHashBloom {
    /// A builder for the filter in bitmap `key`.
    pub fn builder(key: &str) -> JsHashBloomBuilder {
        JsHashBloomBuilder {
            key: key.to_string(),
            prefix: Prefix::none(),
            limit_memory: true,
        }
    }

    /// The filter in bitmap `key` with the recipe's default
    /// `limitMemory = true`.
    pub fn new(key: &str) -> Result<Self> {
        Self::builder(key).build()
    }

    /// The bitmap's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether offsets use PHP's `limitMemory` folding.
    pub fn limit_memory(&self) -> bool {
        self.limit_memory
    }

    /// The item's offset, `JSHash(item, limit_memory)`; an empty item is
    /// refused (`JSHash("")` is a constant that every empty form field would
    /// share).
    pub fn offset(&self, item: &[u8]) -> Result<u32> {
        if item.is_empty() {
            return Err(Error::invalid(
                "item",
                "must not be empty in a JSHash filter",
            ));
        }
        super::check_item(item)?;
        Ok(BloomHash::js_hash(item, self.limit_memory))
    }

    fn offsets<T: AsRef<[u8]>>(&self, items: &[T]) -> Result<Vec<i64>> {
        items
            .iter()
            .map(|i| self.offset(i.as_ref()).map(i64::from))
            .collect()
    }

    /// Adds one item; `Some(true)` when its bit was 0, `None` when not
    /// known (the call was sent again after its reply was lost and found
    /// the bit set: see [`Bloom::add`](super::Bloom::add)).
    pub fn add(&self, item: impl AsRef<[u8]>) -> Op<Option<bool>> {
        self.multi_add(&[item]).map(super::first_added)
    }

    /// Whether the item may be present.
    pub fn exists(&self, item: impl AsRef<[u8]>) -> Op<bool> {
        self.multi_exists(&[item]).map(super::first_flag)
    }

    /// Adds items with one `bloom.jshash_add` call; per item `Some(true)`
    /// when new, `None` when not known (as [`JsHashBloom::add`]).
    /// The first write at a high offset makes Redis allocate the bitmap up
    /// to that offset (up to 250 MB with `limitMemory`), which can outlast an
    /// async connection's response timeout; give such connections a longer
    /// one for the first loads.
    pub fn multi_add<T: AsRef<[u8]>>(&self, items: &[T]) -> Op<Vec<Option<bool>>> {
        match self.offsets(items) {
            Err(e) => Op::fail(e),
            Ok(offsets) if offsets.is_empty() => Op::ready(Vec::new()),
            Ok(offsets) => Op::script_resent(scripts::bloom::jshash_add(&self.key, &offsets)).map(
                |(reply, resent)| {
                    flags(reply)
                        .into_iter()
                        .map(|f| changed(f, resent))
                        .collect()
                },
            ),
        }
    }

    /// Checks items with one `bloom.jshash_exists` call (`EVALSHA_RO`).
    pub fn multi_exists<T: AsRef<[u8]>>(&self, items: &[T]) -> Op<Vec<bool>> {
        match self.offsets(items) {
            Err(e) => Op::fail(e),
            Ok(offsets) if offsets.is_empty() => Op::ready(Vec::new()),
            Ok(offsets) => {
                Op::script(scripts::bloom::jshash_exists(&self.key, &offsets)).map(flags)
            }
        }
    }

    /// A bulk load of `items` into this filter: see [`Load`]. Every item of
    /// a batch is checked before the batch is sent (an empty one fails it).
    pub fn load<I>(&self, items: I) -> Load<I::IntoIter>
    where
        I: IntoIterator,
        I::Item: LoadItem,
    {
        Load::new(self.clone(), items.into_iter())
    }
}

fn flags(reply: Vec<i64>) -> Vec<bool> {
    reply.into_iter().map(|x| x == 1).collect()
}

impl Filter for JsHashBloom {
    fn multi_add(&self, items: &[&[u8]]) -> Op<Vec<Option<bool>>> {
        JsHashBloom::multi_add(self, items)
    }
}
