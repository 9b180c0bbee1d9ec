//! Bloom filters on plain Redis bitmaps (`lua/bloom/`), computed client-side
//! so they run on any Redis, including managed ones that allow no modules.
//!
//! # Seed-compatible filters ([`SeedBloom`])
//!
//! PHP applications built on the seed keep bitmaps such as `bloom_user_email`
//! where each item sets ONE bit: `SETBIT key JSHash(item) 1`
//! ([`crate::hash::js_hash`], bit for bit as PHP 8 computes it, with its
//! `limitMemory` folding). [`SeedBloom`] reads and extends them unchanged, one
//! script per operation (`bloom.seed_add`, `bloom.seed_exists`).
//!
//! **Their false-positive rate, honestly.** With k = 1 the rate is the share
//! of bits set. Without `limitMemory` the offsets cover 2^32 bits (a 512 MB
//! bitmap): about 0.02 % at 1 million distinct items, 0.23 % at 10 million,
//! 2.3 % at 100 million. With `limitMemory` (the seed's default) the offsets
//! stay below 2e9 (a 250 MB bitmap), but the folding maps 3, 4 or 5 hash
//! values onto each offset between ~0.67e9 and 1e9, so that range fills 4-13
//! times faster: about 0.14 % at 1 million, 1.4 % at 10 million and 12 % at
//! 100 million (computed for a uniform hash; JSHash is weaker — short inputs
//! that differ in their last byte land on neighbouring offsets, and `"a"` and
//! `"b"` even share one under folding). A sized filter with p = 1 % needs 1.2
//! MB per million items. Use seed mode to stay compatible with existing data;
//! use [`Bloom`] for new data. The seed forbids nothing, but an empty item is
//! refused here (`JSHash("")` is a constant that every empty form field would
//! share).
//!
//! # Sized filters ([`Bloom`])
//!
//! Created from expected items n and a target false-positive rate p:
//! `m = ceil(-n ln p / (ln 2)^2)` bits and `k = round(m/n ln 2)` (at least 1)
//! bit offsets per item by double hashing (`g_i = h1 + i*h2 mod block_bits`,
//! the exact scheme with its test vectors is in [`crate::hash`]).
//!
//! **Keys.** A config hash `<prefix>{<name>}` (fields `m k n p block_bits
//! scheme version spread`, written once by `bloom.create`) and block bitmaps
//! `<prefix>{<name>}:<j>` (same hash tag) — or `<prefix>{<name>:<j>}` with
//! [`BloomOptions::spread_blocks`], so blocks may live in different cluster
//! slots. Opening a filter with other parameters is
//! [`ErrorKind::BloomConfigMismatch`]; nothing is written.
//!
//! **Blocks.** The bits are split into blocks, each item's k bits inside one
//! block: block j has `block_bits_j` usable bits plus one sentinel bit (the
//! last bit of its string, always 1). An item goes to the block j with
//! `S_j <= x < S_(j+1)`, where `x = floor(block_hash * M / 2^32)`, `M` the sum
//! of all `block_bits` and `S_j` the sum of those before block j — so every
//! block gets items in proportion to its size. (Exact: 128-bit product, or in
//! PHP `(($hb >> 16) * M + ((($hb & 0xFFFF) * M) >> 16)) >> 16`; it is
//! [`crate::hash::select_block`], never `block_hash mod blocks`.) Blocks
//! exist for two reasons: a Redis string holds at most 2^32 bits (512 MB), and
//! Redis' allocator (jemalloc) rounds every allocation up to a size class
//! spaced 25 % apart, so one 1.2 MB bitmap occupies 1.25 MB (+9 %). The
//! layout picks block sizes that fill size classes exactly, largest first
//! (usually 2 or 3 blocks), so the memory Redis reports stays within 1 % of m
//! bits; the bits that fill the classes are used, never wasted.
//!
//! **Engines.** Every operation touches one block per call, and a batch sends
//! one call per block (chunked) in one pipeline — on Redis Cluster with
//! spread blocks, one pipeline per slot: pass [`Topology::Cluster`] in
//! [`BloomOptions::topology`] (or [`Bloom::with_topology`];
//! [`Topology::detect`] asks the server). Without spread blocks all keys share
//! one slot and either topology works. [`Engine::Bitfield`]
//! (default) sends `BITFIELD block SET u1 <sentinel> 1 SET u1 o 1 ...` (or
//! `BITFIELD_RO ... GET u1 ...`) directly: ONE native command, so atomic per
//! block, and about 0.1 µs of server time per bit. Its first op reads the
//! sentinel: 0 means the block was missing (deleted, evicted, flushed) and the
//! call fails with [`ErrorKind::BloomMissing`] (an add that re-created the block
//! clears the sentinel again so the loss stays visible until [`Bloom::clear`]).
//! [`Engine::Script`] runs `bloom.add` / `bloom.exists` (`EVALSHA` /
//! `EVALSHA_RO`), which validate every offset server-side and refuse a missing
//! block before writing anything; for other languages and for callers that
//! want the server to check. Why not Lua for the hot path: pushing k
//! arguments per item into Lua, building the BITFIELD argument table and
//! reading the replies back costs 3-4x the BITFIELD itself (measured in
//! `benches/bloom.rs`), which alone would miss the target of 10x RedisBloom's
//! server time per item; a Lua loop with one `SETBIT` per bit is ~45x.
//!
//! **Sync and async.** Every operation builds its request (commands or script
//! calls) and decodes its replies with the same private functions; the sync
//! methods (`&mut dyn ConnectionLike`: `redis::Connection`, the sync
//! `ClusterConnection`) and their `_async` twins (`MultiplexedConnection`,
//! `ConnectionManager`, the async cluster connection) differ only in how they
//! send. `load` is sync only.

use std::collections::HashMap;

use redis::{Cmd, ConnectionLike, FromRedisValue, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::fanout::{Batch, Topology, decode_all};
use crate::hash::{double_hash, double_hash_offsets, js_hash, select_block, sized_hashes};
use crate::keys;
use crate::script::{ScriptCall, ScriptPipeline, decode_each};
use crate::scripts;

/// Key prefix of sized filters unless [`BloomOptions::prefix`] says otherwise.
pub const DEFAULT_PREFIX: &str = "bloom:";
/// Name of the sized filters' hash scheme, stored in the config.
pub const SCHEME: &str = "murmur3-dh";
/// Version of the hash scheme, stored in the config.
pub const SCHEME_VERSION: i64 = 1;
/// The largest k the scripts accept (p >= ~1e-19; the `k` range of
/// `lua/bloom/create.lua`'s header).
pub const MAX_K: u32 = scripts::bloom::CREATE_K_MAX as u32;
/// A Redis string holds at most 2^32 bits: the largest block in bytes.
pub const MAX_BLOCK_BYTES: u64 = 1 << 29;
/// Default bound on a filter's theoretical size m: 2^36 bits (8 GiB).
pub const DEFAULT_MAX_BITS: u64 = 1 << 36;
/// Offsets per BITFIELD command / script call (the scripts' limit).
const CHUNK_OFFSETS: usize = 1998;

/// How sized filters talk to Redis; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// One native `BITFIELD`/`BITFIELD_RO` per block and chunk (fastest).
    #[default]
    Bitfield,
    /// `bloom.add` / `bloom.exists` scripts (server-side validation).
    Script,
}

/// Options of a sized filter.
#[derive(Debug, Clone)]
pub struct BloomOptions {
    /// Key prefix (default `bloom:`); must not contain `{` or `}`.
    pub prefix: String,
    /// Refuse filters whose theoretical m exceeds this many bits.
    pub max_bits: u64,
    /// Largest block in bytes (at most 512 MB, a Redis string's limit).
    pub max_block_bytes: u64,
    /// Give each block its own hash tag, so blocks may spread over cluster slots.
    pub spread_blocks: bool,
    /// How operations reach Redis.
    pub engine: Engine,
    /// Where the keys live: [`Topology::Cluster`] sends the per-block calls
    /// of one operation as one pipeline per hash slot (needed with
    /// `spread_blocks` on Redis Cluster); see [`crate::fanout`].
    pub topology: Topology,
}

impl Default for BloomOptions {
    fn default() -> Self {
        Self {
            prefix: DEFAULT_PREFIX.to_string(),
            max_bits: DEFAULT_MAX_BITS,
            max_block_bytes: MAX_BLOCK_BYTES,
            spread_blocks: false,
            engine: Engine::Bitfield,
            topology: Topology::Standalone,
        }
    }
}

/// The parameters of a sized filter, as stored in its config hash.
#[derive(Debug, Clone, PartialEq)]
pub struct BloomParams {
    /// Expected items.
    pub n: u64,
    /// Target false-positive rate.
    pub p: f64,
    /// Theoretical bits, `ceil(-n ln p / (ln 2)^2)`.
    pub m: u64,
    /// Bits per item, `round(m/n ln 2)`, at least 1.
    pub k: u32,
    /// Usable bits of each block (each block has one more, sentinel, bit).
    pub block_bits: Vec<u64>,
}

impl BloomParams {
    /// m, k and the block layout for n expected items at false-positive rate p.
    pub fn new(n: u64, p: f64, max_bits: u64, max_block_bytes: u64) -> Result<Self> {
        if n == 0 {
            return Err(Error::invalid("expected items", "must be at least 1"));
        }
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::invalid(
                "false-positive rate",
                format!("{p} is not strictly between 0 and 1"),
            ));
        }
        if !(64..=MAX_BLOCK_BYTES).contains(&max_block_bytes) {
            return Err(Error::invalid(
                "max block bytes",
                format!("must be from 64 to {MAX_BLOCK_BYTES}"),
            ));
        }
        let ln2 = std::f64::consts::LN_2;
        let m = (-(n as f64) * p.ln() / (ln2 * ln2)).ceil();
        if !m.is_finite() || m > max_bits as f64 {
            return Err(Error::invalid(
                "filter size",
                format!("m = {m} bits exceeds the configured bound of {max_bits} bits"),
            ));
        }
        let m = (m as u64).max(1);
        let k = ((m as f64 / n as f64) * ln2).round().max(1.0);
        if k > MAX_K as f64 {
            return Err(Error::invalid(
                "false-positive rate",
                format!("{p} needs k = {k} > {MAX_K} hash functions"),
            ));
        }
        Ok(Self {
            n,
            p,
            m,
            k: k as u32,
            block_bits: plan_blocks(m, max_block_bytes),
        })
    }

    /// Total usable bits (at least m).
    pub fn total_bits(&self) -> u64 {
        self.block_bits.iter().sum()
    }

    fn block_bits_field(&self) -> String {
        let v: Vec<String> = self.block_bits.iter().map(u64::to_string).collect();
        v.join(",")
    }

    fn p_field(&self) -> String {
        format!("{:?}", self.p)
    }
}

/// jemalloc's size class of an allocation of `size` bytes (4 classes per
/// doubling, 16-byte quantum).
fn size_class(size: u64) -> u64 {
    if size <= 8 {
        return 8;
    }
    let lg = 63 - (size - 1).leading_zeros() as u64;
    let step = 1u64 << lg.saturating_sub(2).max(4);
    size.div_ceil(step) * step
}

/// The class just below `class` (0 for none).
fn class_below(class: u64) -> u64 {
    if class <= 8 {
        return 0;
    }
    if class <= 16 {
        return 8;
    }
    let lg = 63 - (class - 1).leading_zeros() as u64;
    class - (1u64 << lg.saturating_sub(2).max(4))
}

/// Bytes an SDS string of `len` bytes allocates beyond `len` (header + NUL).
fn sds_overhead(len: u64) -> u64 {
    1 + match len {
        0..256 => 3,
        256..65536 => 5,
        65536..4294967296 => 9,
        _ => 17,
    }
}

/// The longest string that still fits allocation class `class`.
fn payload_of_class(class: u64) -> u64 {
    [3u64, 5, 9, 17]
        .iter()
        .map(|h| class.saturating_sub(1 + h))
        .find(|&p| p + sds_overhead(p) <= class)
        .unwrap_or(0)
}

/// Block sizes in usable bits for a filter of at least `m` bits: strings that
/// fill jemalloc size classes exactly, largest first, until the remainder
/// rounds up with little waste (see the module docs).
fn plan_blocks(m: u64, max_block_bytes: u64) -> Vec<u64> {
    let total_bytes = (m + 1).div_ceil(8);
    let tolerance = (total_bytes / 100).max(64);
    let max_blocks = total_bytes.div_ceil(max_block_bytes) as usize + 8;
    let mut blocks = Vec::new();
    let mut need = m; // usable bits still to place
    loop {
        let need_bytes = (need + 1).div_ceil(8); // + sentinel
        let class = size_class(need_bytes + sds_overhead(need_bytes));
        let fill = payload_of_class(class).clamp(need_bytes, max_block_bytes.max(need_bytes));
        let waste = class - need_bytes - sds_overhead(need_bytes);
        if need_bytes <= max_block_bytes && (waste <= tolerance || blocks.len() + 1 >= max_blocks) {
            blocks.push(fill.min(max_block_bytes) * 8 - 1);
            return blocks;
        }
        // The largest class whose string fits in what is still needed.
        let cap = need_bytes.min(max_block_bytes);
        let mut c = size_class(cap + sds_overhead(cap));
        while payload_of_class(c) > cap {
            c = class_below(c);
        }
        let bytes = payload_of_class(c).max(8);
        blocks.push(bytes * 8 - 1);
        need = need.saturating_sub(bytes * 8 - 1);
        if need == 0 {
            return blocks;
        }
    }
}

fn check_item(item: &[u8]) -> Result<()> {
    // Items are bytes; the only limit is Redis' own, far above this.
    if item.len() > 512 * 1024 * 1024 {
        return Err(Error::invalid("item", "must be at most 512 MB"));
    }
    Ok(())
}

/// A sized Bloom filter: its keys and parameters. Cheap to clone; holds no
/// connection. Make it with [`Bloom::create`] or [`Bloom::open`].
#[derive(Debug, Clone)]
pub struct Bloom {
    name: String,
    config_key: String,
    block_keys: Vec<String>,
    params: BloomParams,
    /// Prefix sums of block_bits (starts[j] = bits before block j).
    starts: Vec<u64>,
    total: u64,
    spread: bool,
    engine: Engine,
    topology: Topology,
}

/// What [`Bloom::info`] reports.
#[derive(Debug, Clone, PartialEq)]
pub struct BloomInfo {
    pub name: String,
    pub config_key: String,
    pub block_keys: Vec<String>,
    pub params: BloomParams,
    /// Bits set per block (sentinel excluded).
    pub bits_set: Vec<u64>,
    /// Estimated distinct items added, from the bits set.
    pub approx_count: u64,
    /// The false-positive rate at the current fill, `prod fill^k` averaged
    /// over blocks by size.
    pub current_fp_rate: f64,
}

/// Progress of a bulk load: `done` items of the input consumed so far
/// (counting from position 0, including skipped ones), `added` of the loaded
/// ones newly added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadProgress {
    pub done: u64,
    pub added: u64,
}

fn block_key(prefix: &str, name: &str, j: usize, spread: bool) -> String {
    if spread {
        keys::tagged(prefix, &format!("{name}:{j}"))
    } else {
        format!("{}:{j}", keys::tagged(prefix, name))
    }
}

fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.contains(['{', '}']) {
        return Err(Error::invalid("prefix", "must not contain '{' or '}'"));
    }
    Ok(())
}

impl Bloom {
    fn assemble(name: &str, options: &BloomOptions, params: BloomParams) -> Self {
        let config_key = keys::tagged(&options.prefix, name);
        let block_keys = (0..params.block_bits.len())
            .map(|j| block_key(&options.prefix, name, j, options.spread_blocks))
            .collect();
        let mut starts = Vec::with_capacity(params.block_bits.len());
        let mut total = 0;
        for b in &params.block_bits {
            starts.push(total);
            total += b;
        }
        Self {
            name: name.to_string(),
            config_key,
            block_keys,
            params,
            starts,
            total,
            spread: options.spread_blocks,
            engine: options.engine,
            topology: options.topology,
        }
    }

    /// Creates the filter `name` for `expected_items` at `fp_rate` with
    /// default options, or opens it when it exists with exactly these
    /// parameters ([`ErrorKind::BloomConfigMismatch`] otherwise).
    pub fn create(
        con: &mut dyn ConnectionLike,
        name: &str,
        expected_items: u64,
        fp_rate: f64,
    ) -> Result<Self> {
        Self::create_with(con, name, expected_items, fp_rate, &BloomOptions::default())
    }

    /// Async twin of [`Bloom::create`].
    pub async fn create_async<C: redis::aio::ConnectionLike + Send>(
        con: &mut C,
        name: &str,
        expected_items: u64,
        fp_rate: f64,
    ) -> Result<Self> {
        Self::create_with_async(con, name, expected_items, fp_rate, &BloomOptions::default()).await
    }

    /// [`Bloom::create`] with options. Everything is validated before
    /// anything is written; the config hash (and, unless blocks spread over
    /// slots, every block) is created by one script call.
    ///
    /// Spread blocks live in other slots, so they cannot be created in the
    /// same call: when the config does not exist yet, every block is created
    /// first (one `bloom.init_block` call each, sent together; one pipeline
    /// per slot with [`Topology::Cluster`]) and the config LAST, so a crash
    /// in between leaves only blocks, which the retry adopts when they are
    /// pristine (a block holding data is refused with
    /// [`ErrorKind::BloomConfigMismatch`]). When the config exists it is checked,
    /// then every block is required.
    pub fn create_with(
        con: &mut dyn ConnectionLike,
        name: &str,
        expected_items: u64,
        fp_rate: f64,
        options: &BloomOptions,
    ) -> Result<Self> {
        let (bloom, call) = Self::create_request(name, expected_items, fp_rate, options)?;
        if !bloom.spread {
            call.invoke(con)?;
            return Ok(bloom);
        }
        let mut exists: bool = bloom.config_exists().query(con)?;
        if !exists {
            let wire = bloom.init_request(true)?;
            let values = wire.send(con, bloom.topology)?;
            match wire.decode::<i64>(values) {
                Ok(_) => {}
                // Another creator finished first and items went in: open it.
                Err(e)
                    if matches!(e.kind(), ErrorKind::BloomConfigMismatch { .. })
                        && bloom.config_exists().query::<bool>(con)? =>
                {
                    exists = true
                }
                Err(e) => return Err(e),
            }
        }
        call.invoke(con)?;
        if exists {
            let wire = bloom.init_request(false)?;
            let values = wire.send(con, bloom.topology)?;
            wire.decode::<i64>(values)?;
        }
        Ok(bloom)
    }

    /// Async twin of [`Bloom::create_with`].
    pub async fn create_with_async<C: redis::aio::ConnectionLike + Send>(
        con: &mut C,
        name: &str,
        expected_items: u64,
        fp_rate: f64,
        options: &BloomOptions,
    ) -> Result<Self> {
        let (bloom, call) = Self::create_request(name, expected_items, fp_rate, options)?;
        if !bloom.spread {
            call.invoke_async(con).await?;
            return Ok(bloom);
        }
        let mut exists: bool = bloom.config_exists().query_async(con).await?;
        if !exists {
            let wire = bloom.init_request(true)?;
            let values = wire.send_async(con, bloom.topology).await?;
            match wire.decode::<i64>(values) {
                Ok(_) => {}
                Err(e)
                    if matches!(e.kind(), ErrorKind::BloomConfigMismatch { .. })
                        && bloom.config_exists().query_async::<bool>(con).await? =>
                {
                    exists = true
                }
                Err(e) => return Err(e),
            }
        }
        call.invoke_async(con).await?;
        if exists {
            let wire = bloom.init_request(false)?;
            let values = wire.send_async(con, bloom.topology).await?;
            wire.decode::<i64>(values)?;
        }
        Ok(bloom)
    }

    /// `EXISTS` of the config hash.
    fn config_exists(&self) -> Cmd {
        let mut cmd = redis::cmd("EXISTS");
        cmd.arg(&self.config_key);
        cmd
    }

    /// Validates everything and prepares the `bloom.create` call.
    fn create_request(
        name: &str,
        expected_items: u64,
        fp_rate: f64,
        options: &BloomOptions,
    ) -> Result<(Self, ScriptCall<i64>)> {
        keys::check_name("filter name", name)?;
        check_prefix(&options.prefix)?;
        let params = BloomParams::new(
            expected_items,
            fp_rate,
            options.max_bits,
            options.max_block_bytes,
        )?;
        let bloom = Self::assemble(name, options, params);
        let same_slot: &[String] = if bloom.spread { &[] } else { &bloom.block_keys };
        let call = scripts::bloom::create(
            &bloom.config_key,
            same_slot,
            bloom.params.m as i64,
            bloom.params.k as i64,
            bloom.params.n as i64,
            &bloom.params.p_field(),
            &bloom.params.block_bits_field(),
            SCHEME,
            SCHEME_VERSION,
            bloom.spread,
        )?;
        Ok((bloom, call))
    }

    /// The `bloom.init_block` calls of spread blocks: `create` them (before
    /// the config is written) or require them (the config exists).
    fn init_request(&self, create: bool) -> Result<Wire> {
        let mut pipe = ScriptPipeline::new();
        pipe.topology(self.topology);
        for (key, bits) in self.block_keys.iter().zip(&self.params.block_bits) {
            pipe.push(scripts::bloom::init_block(key, *bits as i64, create)?);
        }
        Ok(Wire::Scripts(pipe))
    }

    /// Opens an existing filter from its config hash (default prefix).
    pub fn open(con: &mut dyn ConnectionLike, name: &str) -> Result<Self> {
        Self::open_with(con, name, &BloomOptions::default())
    }

    /// Async twin of [`Bloom::open`].
    pub async fn open_async<C: redis::aio::ConnectionLike + Send>(
        con: &mut C,
        name: &str,
    ) -> Result<Self> {
        Self::open_with_async(con, name, &BloomOptions::default()).await
    }

    /// Opens an existing filter with options (prefix, engine, topology; size
    /// options are ignored: the stored parameters rule). Reads the config,
    /// then checks every block's sentinel bit in one batch.
    pub fn open_with(
        con: &mut dyn ConnectionLike,
        name: &str,
        options: &BloomOptions,
    ) -> Result<Self> {
        let cmd = Self::config_request(name, options)?;
        let cfg: HashMap<String, String> = cmd.query(con)?;
        let bloom = Self::from_config(name, options, cfg)?;
        let wire = bloom.sentinels_request();
        let values = wire.send(con, bloom.topology)?;
        bloom.sentinels_reply(wire.decode(values)?)?;
        Ok(bloom)
    }

    /// Async twin of [`Bloom::open_with`].
    pub async fn open_with_async<C: redis::aio::ConnectionLike + Send>(
        con: &mut C,
        name: &str,
        options: &BloomOptions,
    ) -> Result<Self> {
        let cmd = Self::config_request(name, options)?;
        let cfg: HashMap<String, String> = cmd.query_async(con).await?;
        let bloom = Self::from_config(name, options, cfg)?;
        let wire = bloom.sentinels_request();
        let values = wire.send_async(con, bloom.topology).await?;
        bloom.sentinels_reply(wire.decode(values)?)?;
        Ok(bloom)
    }

    /// Validates the name and options; the `HGETALL` of the config hash.
    fn config_request(name: &str, options: &BloomOptions) -> Result<Cmd> {
        keys::check_name("filter name", name)?;
        check_prefix(&options.prefix)?;
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(keys::tagged(&options.prefix, name));
        Ok(cmd)
    }

    /// The filter its stored config describes.
    fn from_config(
        name: &str,
        options: &BloomOptions,
        cfg: HashMap<String, String>,
    ) -> Result<Self> {
        let config_key = keys::tagged(&options.prefix, name);
        if cfg.is_empty() {
            return Err(Error::from(ErrorKind::BloomMissing {
                detail: format!("no config hash {config_key}"),
            }));
        }
        let field = |f: &str| {
            cfg.get(f).cloned().ok_or_else(|| {
                Error::from(ErrorKind::BloomConfigMismatch {
                    detail: format!("{config_key} has no field {f}"),
                })
            })
        };
        let bad = |f: &str, v: &str| {
            Error::from(ErrorKind::BloomConfigMismatch {
                detail: format!("{config_key} field {f} = {v:?} is not understood"),
            })
        };
        let scheme = field("scheme")?;
        let version = field("version")?;
        if scheme != SCHEME || version != SCHEME_VERSION.to_string() {
            return Err(Error::from(ErrorKind::BloomConfigMismatch {
                detail: format!(
                    "scheme stored {scheme} v{version} requested {SCHEME} v{SCHEME_VERSION}"
                ),
            }));
        }
        let num = |f: &str| -> Result<u64> {
            let v = field(f)?;
            v.parse().map_err(|_| bad(f, &v))
        };
        let p_text = field("p")?;
        let block_text = field("block_bits")?;
        let block_bits: Vec<u64> = block_text
            .split(',')
            .map(|s| s.parse().map_err(|_| bad("block_bits", &block_text)))
            .collect::<Result<_>>()?;
        let params = BloomParams {
            n: num("n")?,
            p: p_text.parse().map_err(|_| bad("p", &p_text))?,
            m: num("m")?,
            k: num("k")? as u32,
            block_bits,
        };
        let spread = field("spread")? == "1";
        if params.k == 0
            || params.k > MAX_K
            || params.block_bits.iter().any(|&b| b < 7 || (b + 1) % 8 != 0)
        {
            return Err(bad("k/block_bits", &format!("{} / {block_text}", params.k)));
        }
        let options = BloomOptions {
            spread_blocks: spread,
            ..options.clone()
        };
        Ok(Self::assemble(name, &options, params))
    }

    /// `GETBIT` of every block's sentinel.
    fn sentinels_request(&self) -> Wire {
        let mut batch = Batch::new();
        for (key, bits) in self.block_keys.iter().zip(&self.params.block_bits) {
            let mut cmd = redis::cmd("GETBIT");
            cmd.arg(key).arg(*bits);
            batch.add(key, cmd);
        }
        Wire::Cmds(batch)
    }

    fn sentinels_reply(&self, sentinels: Vec<i64>) -> Result<()> {
        match sentinels.iter().position(|&s| s != 1) {
            Some(j) => Err(self.missing(j)),
            None => Ok(()),
        }
    }

    /// Uses `engine` for the operations of this handle.
    pub fn with_engine(mut self, engine: Engine) -> Self {
        self.engine = engine;
        self
    }

    /// Sends this handle's multi-block batches for `topology` (see
    /// [`BloomOptions::topology`]).
    pub fn with_topology(mut self, topology: Topology) -> Self {
        self.topology = topology;
        self
    }

    pub fn topology(&self) -> Topology {
        self.topology
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// The config hash key.
    pub fn config_key(&self) -> &str {
        &self.config_key
    }

    /// The block bitmap keys, in block order.
    pub fn block_keys(&self) -> &[String] {
        &self.block_keys
    }

    /// Every key of the filter (config first).
    pub fn all_keys(&self) -> Vec<String> {
        std::iter::once(self.config_key.clone())
            .chain(self.block_keys.iter().cloned())
            .collect()
    }

    /// The block and the k bit offsets (within that block) of an item.
    pub fn locate(&self, item: &[u8]) -> (usize, Vec<u64>) {
        let mut offsets = Vec::with_capacity(self.params.k as usize);
        let block = self.locate_into(item, &mut offsets);
        (block, offsets)
    }

    fn locate_into(&self, item: &[u8], out: &mut Vec<u64>) -> usize {
        let (h1, h2, hb) = sized_hashes(item);
        let block = select_block(hb, &self.starts, self.total);
        double_hash_offsets(h1, h2, self.params.k, self.params.block_bits[block], out);
        block
    }

    /// Adds one item; `true` when it was new (some bit was 0), `false` when it
    /// may have been present.
    pub fn add(&self, con: &mut dyn ConnectionLike, item: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.multi_add(con, &[item])?[0])
    }

    /// Async twin of [`Bloom::add`].
    pub async fn add_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        Ok(self.multi_add_async(con, &[item]).await?[0])
    }

    /// Whether the item may be present (`false`: certainly absent).
    pub fn exists(&self, con: &mut dyn ConnectionLike, item: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.multi_exists(con, &[item])?[0])
    }

    /// Async twin of [`Bloom::exists`].
    pub async fn exists_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        Ok(self.multi_exists_async(con, &[item]).await?[0])
    }

    /// Adds items in one round trip (one atomic call per block and chunk of
    /// 1998 offsets; on Redis Cluster with spread blocks, one round trip per
    /// slot); per item `true` when newly added, `false` when it may have been
    /// present (also for a repeat earlier in the same batch).
    pub fn multi_add<T: AsRef<[u8]>>(
        &self,
        con: &mut dyn ConnectionLike,
        items: &[T],
    ) -> Result<Vec<bool>> {
        self.run(con, items, true)
    }

    /// Async twin of [`Bloom::multi_add`].
    pub async fn multi_add_async<T: AsRef<[u8]>, C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        items: &[T],
    ) -> Result<Vec<bool>> {
        self.run_async(con, items, true).await
    }

    /// Checks items in one round trip (read-only: `BITFIELD_RO` or
    /// `EVALSHA_RO`); per item `true` when it may be present.
    pub fn multi_exists<T: AsRef<[u8]>>(
        &self,
        con: &mut dyn ConnectionLike,
        items: &[T],
    ) -> Result<Vec<bool>> {
        self.run(con, items, false)
    }

    /// Async twin of [`Bloom::multi_exists`].
    pub async fn multi_exists_async<T: AsRef<[u8]>, C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        items: &[T],
    ) -> Result<Vec<bool>> {
        self.run_async(con, items, false).await
    }

    /// Groups the items per block, preserving order within a block, and
    /// cuts each group into chunks of whole items. Only the two hashes of an
    /// item are kept until its chunk is known; its k offsets are then
    /// generated straight into the chunk (no intermediate copy per bit).
    fn plan<T: AsRef<[u8]>>(&self, items: &[T]) -> Result<Vec<Chunk>> {
        let k = self.params.k as usize;
        let per_chunk = (CHUNK_OFFSETS / k).max(1);
        let mut groups: Vec<Vec<(usize, u32, u32)>> = vec![Vec::new(); self.block_keys.len()];
        for (i, item) in items.iter().enumerate() {
            check_item(item.as_ref())?;
            let (h1, h2, hb) = sized_hashes(item.as_ref());
            groups[select_block(hb, &self.starts, self.total)].push((i, h1, h2));
        }
        let mut chunks = Vec::new();
        for (block, group) in groups.into_iter().enumerate() {
            let bits = self.params.block_bits[block];
            for part in group.chunks(per_chunk) {
                let mut c = Chunk {
                    block,
                    items: Vec::with_capacity(part.len()),
                    offsets: Vec::with_capacity(part.len() * k),
                };
                for &(i, h1, h2) in part {
                    c.items.push(i);
                    // Offsets are below 2^32: exact as i64.
                    c.offsets
                        .extend(double_hash(h1, h2, self.params.k, bits).map(|o| o as i64));
                }
                chunks.push(c);
            }
        }
        Ok(chunks)
    }

    fn run<T: AsRef<[u8]>>(
        &self,
        con: &mut dyn ConnectionLike,
        items: &[T],
        add: bool,
    ) -> Result<Vec<bool>> {
        let request = self.items_request(items, add)?;
        let values = request.wire.send(con, self.topology)?;
        match self.items_reply(&request, values)? {
            Settled::Flags(flags) => Ok(flags),
            Settled::Lost { block, mark } => {
                if let Some(batch) = mark {
                    decode_all::<i64>(batch.query_values(con, self.topology)?)?;
                }
                Err(self.missing(block))
            }
        }
    }

    async fn run_async<T: AsRef<[u8]>, C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        items: &[T],
        add: bool,
    ) -> Result<Vec<bool>> {
        let request = self.items_request(items, add)?;
        let values = request.wire.send_async(con, self.topology).await?;
        match self.items_reply(&request, values)? {
            Settled::Flags(flags) => Ok(flags),
            Settled::Lost { block, mark } => {
                if let Some(batch) = mark {
                    decode_all::<i64>(batch.query_values_async(con, self.topology).await?)?;
                }
                Err(self.missing(block))
            }
        }
    }

    /// Validates the items and builds what a multi-add (or multi-exists)
    /// sends: one `BITFIELD` (`BITFIELD_RO`) or one `bloom.add`
    /// (`bloom.exists`) call per block and chunk.
    fn items_request<T: AsRef<[u8]>>(&self, items: &[T], add: bool) -> Result<ItemsRequest> {
        let chunks = self.plan(items)?;
        let wire = match self.engine {
            Engine::Bitfield => {
                let mut batch = Batch::new();
                for c in &chunks {
                    let key = &self.block_keys[c.block];
                    let sentinel = self.params.block_bits[c.block];
                    let mut cmd = redis::cmd(if add { "BITFIELD" } else { "BITFIELD_RO" });
                    cmd.arg(key);
                    if add {
                        cmd.arg("SET").arg("u1").arg(sentinel).arg(1);
                        for o in &c.offsets {
                            cmd.arg("SET").arg("u1").arg(*o).arg(1);
                        }
                    } else {
                        cmd.arg("GET").arg("u1").arg(sentinel);
                        for o in &c.offsets {
                            cmd.arg("GET").arg("u1").arg(*o);
                        }
                    }
                    batch.add(key, cmd);
                }
                Wire::Cmds(batch)
            }
            Engine::Script => {
                let mut pipe = ScriptPipeline::new();
                pipe.topology(self.topology);
                let k = self.params.k as i64;
                for c in &chunks {
                    let key = &self.block_keys[c.block];
                    let bits = self.params.block_bits[c.block] as i64;
                    pipe.push(if add {
                        scripts::bloom::add(key, bits, k, &c.offsets)?
                    } else {
                        scripts::bloom::exists(key, bits, k, &c.offsets)?
                    });
                }
                Wire::Scripts(pipe)
            }
        };
        Ok(ItemsRequest {
            chunks,
            wire,
            len: items.len(),
            add,
        })
    }

    /// Decodes the replies of an [`ItemsRequest`] into per-item flags, in
    /// the caller's order.
    fn items_reply(&self, request: &ItemsRequest, values: Vec<Value>) -> Result<Settled> {
        let k = self.params.k as usize;
        let add = request.add;
        let per_chunk: Vec<Vec<bool>> = match &request.wire {
            Wire::Scripts(_) => request
                .wire
                .decode::<Vec<i64>>(values)?
                .into_iter()
                .map(|v| v.into_iter().map(|x| x == 1).collect())
                .collect(),
            Wire::Cmds(_) => {
                let replies = request.wire.decode::<Vec<i64>>(values)?;
                let mut out = Vec::with_capacity(replies.len());
                let mut lost: Vec<usize> = Vec::new();
                for (c, bits) in request.chunks.iter().zip(replies) {
                    if bits.len() != c.offsets.len() + 1 {
                        return Err(Error::short_reply());
                    }
                    if bits[0] != 1 && !lost.contains(&c.block) {
                        lost.push(c.block);
                    }
                    out.push(
                        bits[1..]
                            .chunks(k)
                            .map(|item| item.contains(&0) == add)
                            .collect(),
                    );
                }
                if let Some(&block) = lost.first() {
                    // An add re-created these blocks (or wrote into
                    // strangers): keep every one marked lost so later calls
                    // fail too.
                    let mark = add.then(|| {
                        let mut batch = Batch::new();
                        for &j in &lost {
                            let key = &self.block_keys[j];
                            let mut cmd = redis::cmd("SETBIT");
                            cmd.arg(key).arg(self.params.block_bits[j]).arg(0);
                            batch.add(key, cmd);
                        }
                        batch
                    });
                    return Ok(Settled::Lost { block, mark });
                }
                out
            }
        };
        if per_chunk.len() != request.chunks.len() {
            return Err(Error::short_reply());
        }
        let mut flags = vec![false; request.len];
        for (chunk, chunk_flags) in request.chunks.iter().zip(per_chunk) {
            if chunk_flags.len() != chunk.items.len() {
                return Err(Error::short_reply());
            }
            for (&i, f) in chunk.items.iter().zip(chunk_flags) {
                flags[i] = f;
            }
        }
        Ok(Settled::Flags(flags))
    }

    fn missing(&self, block: usize) -> Error {
        Error::from(ErrorKind::BloomMissing {
            detail: format!(
                "block {} is missing or lost its sentinel bit",
                self.block_keys[block]
            ),
        })
    }

    /// Bits set in each block (sentinel excluded), by `BITCOUNT`;
    /// [`ErrorKind::BloomMissing`] when a block is missing or lost its sentinel
    /// (so are [`Bloom::approx_count`] and [`Bloom::info`]).
    pub fn bits_set(&self, con: &mut dyn ConnectionLike) -> Result<Vec<u64>> {
        let wire = self.bits_set_request();
        let values = wire.send(con, self.topology)?;
        self.bits_set_reply(wire.decode(values)?)
    }

    /// Async twin of [`Bloom::bits_set`].
    pub async fn bits_set_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
    ) -> Result<Vec<u64>> {
        let wire = self.bits_set_request();
        let values = wire.send_async(con, self.topology).await?;
        self.bits_set_reply(wire.decode(values)?)
    }

    /// `BITCOUNT`/`GETBIT` pairs to bits set per block, sentinel excluded.
    /// A block whose sentinel is 0 (missing, or lost and re-created) is
    /// [`ErrorKind::BloomMissing`], as in every other operation, never "empty".
    fn bits_set_reply(&self, replies: Vec<u64>) -> Result<Vec<u64>> {
        if replies.len() != 2 * self.block_keys.len() {
            return Err(Error::short_reply());
        }
        if let Some(j) = replies.chunks(2).position(|r| r[1] != 1) {
            return Err(self.missing(j));
        }
        Ok(replies.chunks(2).map(|r| r[0] - 1).collect())
    }

    /// `BITCOUNT` and sentinel `GETBIT` of every block.
    fn bits_set_request(&self) -> Wire {
        let mut batch = Batch::new();
        for (key, bits) in self.block_keys.iter().zip(&self.params.block_bits) {
            let mut count = redis::cmd("BITCOUNT");
            count.arg(key);
            let mut sentinel = redis::cmd("GETBIT");
            sentinel.arg(key).arg(*bits);
            batch.add(key, count).add(key, sentinel);
        }
        Wire::Cmds(batch)
    }

    /// Estimated number of distinct items added, from the bits set:
    /// `sum_j -(bits_j / k) ln(1 - set_j / bits_j)` (Swamidass & Baldi).
    pub fn approx_count(&self, con: &mut dyn ConnectionLike) -> Result<u64> {
        let set = self.bits_set(con)?;
        Ok(self.estimate(&set))
    }

    /// Async twin of [`Bloom::approx_count`].
    pub async fn approx_count_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
    ) -> Result<u64> {
        let set = self.bits_set_async(con).await?;
        Ok(self.estimate(&set))
    }

    fn estimate(&self, set: &[u64]) -> u64 {
        let k = self.params.k as f64;
        let mut total = 0.0;
        for (&x, &bits) in set.iter().zip(&self.params.block_bits) {
            let bits = bits as f64;
            let x = (x as f64).min(bits - 1.0);
            total += -(bits / k) * (1.0 - x / bits).ln();
        }
        total.round() as u64
    }

    /// Parameters, keys, bits set, the estimated count and the current
    /// false-positive rate.
    pub fn info(&self, con: &mut dyn ConnectionLike) -> Result<BloomInfo> {
        let bits_set = self.bits_set(con)?;
        Ok(self.info_from(bits_set))
    }

    /// Async twin of [`Bloom::info`].
    pub async fn info_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
    ) -> Result<BloomInfo> {
        let bits_set = self.bits_set_async(con).await?;
        Ok(self.info_from(bits_set))
    }

    fn info_from(&self, bits_set: Vec<u64>) -> BloomInfo {
        let k = self.params.k as i32;
        let fp = bits_set
            .iter()
            .zip(&self.params.block_bits)
            .map(|(&x, &b)| (b as f64 / self.total as f64) * (x as f64 / b as f64).powi(k))
            .sum();
        BloomInfo {
            name: self.name.clone(),
            config_key: self.config_key.clone(),
            block_keys: self.block_keys.clone(),
            params: self.params.clone(),
            approx_count: self.estimate(&bits_set),
            bits_set,
            current_fp_rate: fp,
        }
    }

    /// Resets every bit to 0, keeping the config, sizes and TTLs (one script
    /// call for all blocks, or one per block when blocks spread over slots,
    /// sent together). Also makes a block that lost its sentinel usable again.
    pub fn clear(&self, con: &mut dyn ConnectionLike) -> Result<()> {
        let wire = self.clear_request()?;
        let values = wire.send(con, self.topology)?;
        wire.decode::<i64>(values)?;
        Ok(())
    }

    /// Async twin of [`Bloom::clear`].
    pub async fn clear_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
    ) -> Result<()> {
        let wire = self.clear_request()?;
        let values = wire.send_async(con, self.topology).await?;
        wire.decode::<i64>(values)?;
        Ok(())
    }

    fn clear_request(&self) -> Result<Wire> {
        let bits: Vec<i64> = self.params.block_bits.iter().map(|&b| b as i64).collect();
        let mut pipe = ScriptPipeline::new();
        pipe.topology(self.topology);
        if self.spread {
            for (key, b) in self.block_keys.iter().zip(&bits) {
                pipe.push(scripts::bloom::clear(&[key], &[*b])?);
            }
        } else {
            pipe.push(scripts::bloom::clear(&self.block_keys, &bits)?);
        }
        Ok(Wire::Scripts(pipe))
    }

    /// Deletes the config and every block.
    pub fn destroy(&self, con: &mut dyn ConnectionLike) -> Result<()> {
        let wire = self.destroy_request();
        let values = wire.send(con, self.topology)?;
        wire.decode::<i64>(values)?;
        Ok(())
    }

    /// Async twin of [`Bloom::destroy`].
    pub async fn destroy_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
    ) -> Result<()> {
        let wire = self.destroy_request();
        let values = wire.send_async(con, self.topology).await?;
        wire.decode::<i64>(values)?;
        Ok(())
    }

    /// One `DEL` of every key, or one per key when blocks spread over slots.
    fn destroy_request(&self) -> Wire {
        let mut batch = Batch::new();
        if self.spread {
            for key in self.all_keys() {
                let mut cmd = redis::cmd("DEL");
                cmd.arg(&key);
                batch.add(&key, cmd);
            }
        } else {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(self.all_keys());
            batch.add(&self.config_key, cmd);
        }
        Wire::Cmds(batch)
    }

    /// Loads items from any iterator in pipelined batches of `batch` items
    /// (one [`Bloom::multi_add`] each), skipping the first `start` items —
    /// pass the `done` of an interrupted load to resume it. `progress` gets
    /// the position after every batch. Returns the final progress.
    pub fn load<I, T>(
        &self,
        con: &mut dyn ConnectionLike,
        items: I,
        batch: usize,
        start: u64,
        progress: impl FnMut(LoadProgress),
    ) -> Result<LoadProgress>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        load_batches(items, batch, start, progress, |chunk| {
            Ok(self
                .multi_add(con, chunk)?
                .into_iter()
                .filter(|&b| b)
                .count() as u64)
        })
    }
}

/// The offsets of some items that go to one block in one call.
#[derive(Debug)]
struct Chunk {
    block: usize,
    /// Positions of the items in the caller's slice.
    items: Vec<usize>,
    /// k offsets per item, as the wire and the scripts take them.
    offsets: Vec<i64>,
}

/// What one operation sends. Requests are built and replies decoded by pure
/// functions; the sync and async methods differ only in how they send.
#[derive(Debug)]
enum Wire {
    /// Plain commands (BITFIELD, GETBIT, ...), see [`Batch`].
    Cmds(Batch),
    /// Script calls; the pipeline carries its topology.
    Scripts(ScriptPipeline),
}

impl Wire {
    fn send(&self, con: &mut dyn ConnectionLike, topology: Topology) -> Result<Vec<Value>> {
        match self {
            Wire::Cmds(batch) => batch.query_values(con, topology),
            Wire::Scripts(pipe) => pipe.query_values(con),
        }
    }

    async fn send_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        topology: Topology,
    ) -> Result<Vec<Value>> {
        match self {
            Wire::Cmds(batch) => batch.query_values_async(con, topology).await,
            Wire::Scripts(pipe) => pipe.query_values_async(con).await,
        }
    }

    /// Types every reply; the first error reply (a script's typed) wins.
    fn decode<T: FromRedisValue>(&self, values: Vec<Value>) -> Result<Vec<T>> {
        match self {
            Wire::Cmds(_) => decode_all(values),
            Wire::Scripts(pipe) => decode_each(pipe, values).into_iter().collect(),
        }
    }
}

/// A prepared multi-add or multi-exists.
#[derive(Debug)]
struct ItemsRequest {
    chunks: Vec<Chunk>,
    wire: Wire,
    /// Items in the caller's slice.
    len: usize,
    add: bool,
}

/// A decoded multi-add or multi-exists.
enum Settled {
    Flags(Vec<bool>),
    /// Blocks lost their sentinel (`block`: the first); `mark` (after an
    /// add) clears the sentinel of EVERY block the add re-created, before
    /// [`ErrorKind::BloomMissing`].
    Lost {
        block: usize,
        mark: Option<Batch>,
    },
}

fn seed_flags(reply: Vec<i64>) -> Vec<bool> {
    reply.into_iter().map(|x| x == 1).collect()
}

fn load_batches<I, T>(
    items: I,
    batch: usize,
    start: u64,
    mut progress: impl FnMut(LoadProgress),
    mut send: impl FnMut(&[T]) -> Result<u64>,
) -> Result<LoadProgress>
where
    I: IntoIterator<Item = T>,
    T: AsRef<[u8]>,
{
    if batch == 0 {
        return Err(Error::invalid("batch size", "must be at least 1"));
    }
    let mut state = LoadProgress {
        done: start,
        added: 0,
    };
    let mut iter = items.into_iter();
    for _ in 0..start {
        if iter.next().is_none() {
            return Ok(state);
        }
    }
    let mut buf: Vec<T> = Vec::with_capacity(batch);
    loop {
        buf.clear();
        buf.extend(iter.by_ref().take(batch));
        if buf.is_empty() {
            return Ok(state);
        }
        state.added += send(&buf)?;
        state.done += buf.len() as u64;
        progress(state);
    }
}

/// A seed-compatible filter: one bit per item at `JSHash(item)` in the
/// bitmap `key` (e.g. `bloom_user_email`), exactly as the seed's PHP reads
/// and writes it. See the module docs for its false-positive behaviour.
#[derive(Debug, Clone)]
pub struct SeedBloom {
    key: String,
    limit_memory: bool,
}

impl SeedBloom {
    /// The filter in bitmap `key` with the seed's default `limitMemory = true`.
    pub fn new(key: &str) -> Result<Self> {
        if key.is_empty() {
            return Err(Error::invalid("key", "must not be empty"));
        }
        Ok(Self {
            key: key.to_string(),
            limit_memory: true,
        })
    }

    /// Sets `limitMemory` (must match what the PHP side uses).
    pub fn limit_memory(mut self, limit_memory: bool) -> Self {
        self.limit_memory = limit_memory;
        self
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// The item's offset, `JSHash(item, limit_memory)`; empty items are
    /// refused.
    pub fn offset(&self, item: &[u8]) -> Result<u32> {
        if item.is_empty() {
            return Err(Error::invalid("item", "must not be empty in seed mode"));
        }
        check_item(item)?;
        Ok(js_hash(item, self.limit_memory))
    }

    fn offsets<T: AsRef<[u8]>>(&self, items: &[T]) -> Result<Vec<i64>> {
        items
            .iter()
            .map(|i| self.offset(i.as_ref()).map(i64::from))
            .collect()
    }

    /// Adds one item; `true` when its bit was 0.
    pub fn add(&self, con: &mut dyn ConnectionLike, item: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.multi_add(con, &[item])?[0])
    }

    /// Async twin of [`SeedBloom::add`].
    pub async fn add_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        Ok(self.multi_add_async(con, &[item]).await?[0])
    }

    /// Whether the item may be present.
    pub fn exists(&self, con: &mut dyn ConnectionLike, item: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.multi_exists(con, &[item])?[0])
    }

    /// Async twin of [`SeedBloom::exists`].
    pub async fn exists_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        Ok(self.multi_exists_async(con, &[item]).await?[0])
    }

    /// Adds items with one `bloom.seed_add` call; per item `true` when new.
    pub fn multi_add<T: AsRef<[u8]>>(
        &self,
        con: &mut dyn ConnectionLike,
        items: &[T],
    ) -> Result<Vec<bool>> {
        match self.call(items, true)? {
            Some(call) => Ok(seed_flags(call.invoke(con)?)),
            None => Ok(Vec::new()),
        }
    }

    /// Async twin of [`SeedBloom::multi_add`]. The first write at a high
    /// offset makes Redis allocate the bitmap up to that offset (up to 250 MB
    /// with `limitMemory`), which can outlast an async connection's response
    /// timeout; give such connections a longer one for the first loads.
    pub async fn multi_add_async<T: AsRef<[u8]>, C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        items: &[T],
    ) -> Result<Vec<bool>> {
        match self.call(items, true)? {
            Some(call) => Ok(seed_flags(call.invoke_async(con).await?)),
            None => Ok(Vec::new()),
        }
    }

    /// Checks items with one `bloom.seed_exists` call (`EVALSHA_RO`).
    pub fn multi_exists<T: AsRef<[u8]>>(
        &self,
        con: &mut dyn ConnectionLike,
        items: &[T],
    ) -> Result<Vec<bool>> {
        match self.call(items, false)? {
            Some(call) => Ok(seed_flags(call.invoke(con)?)),
            None => Ok(Vec::new()),
        }
    }

    /// Async twin of [`SeedBloom::multi_exists`].
    pub async fn multi_exists_async<T: AsRef<[u8]>, C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        items: &[T],
    ) -> Result<Vec<bool>> {
        match self.call(items, false)? {
            Some(call) => Ok(seed_flags(call.invoke_async(con).await?)),
            None => Ok(Vec::new()),
        }
    }

    /// Validates the items; the `bloom.seed_add` (`bloom.seed_exists`) call,
    /// or `None` for no items.
    fn call<T: AsRef<[u8]>>(&self, items: &[T], add: bool) -> Result<Option<ScriptCall<Vec<i64>>>> {
        let offsets = self.offsets(items)?;
        if offsets.is_empty() {
            return Ok(None);
        }
        Ok(Some(if add {
            scripts::bloom::seed_add(&self.key, &offsets)?
        } else {
            scripts::bloom::seed_exists(&self.key, &offsets)?
        }))
    }

    /// Bulk load like [`Bloom::load`]; every item of a batch is validated
    /// before the batch is sent.
    pub fn load<I, T>(
        &self,
        con: &mut dyn ConnectionLike,
        items: I,
        batch: usize,
        start: u64,
        progress: impl FnMut(LoadProgress),
    ) -> Result<LoadProgress>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        load_batches(items, batch, start, progress, |chunk| {
            Ok(self
                .multi_add(con, chunk)?
                .into_iter()
                .filter(|&b| b)
                .count() as u64)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_match_jemalloc() {
        assert_eq!(size_class(149_777), 163_840);
        assert_eq!(size_class(1_797_209), 1_835_008);
        assert_eq!(size_class(1 << 20), 1 << 20);
        assert_eq!(class_below(1 << 20), 917_504);
        assert_eq!(class_below(1_310_720), 1 << 20);
        assert_eq!(size_class(100), 112);
    }

    #[test]
    fn params_follow_the_formulas() {
        let p = BloomParams::new(1_000_000, 0.01, DEFAULT_MAX_BITS, MAX_BLOCK_BYTES).unwrap();
        assert_eq!(p.m, 9_585_059);
        assert_eq!(p.k, 7);
        assert!(p.total_bits() >= p.m);
        let p = BloomParams::new(1_000_000, 0.001, DEFAULT_MAX_BITS, MAX_BLOCK_BYTES).unwrap();
        assert_eq!(p.m, 14_377_588);
        assert_eq!(p.k, 10);
    }

    #[test]
    fn layouts_fill_size_classes() {
        for (n, p) in [
            (1_000_000u64, 0.01),
            (1_000_000, 0.001),
            (100, 0.01),
            (1, 0.5),
            (123_456, 0.05),
            (50_000_000, 0.0001),
        ] {
            let params = BloomParams::new(n, p, DEFAULT_MAX_BITS, MAX_BLOCK_BYTES).unwrap();
            let total = params.total_bits();
            assert!(total >= params.m);
            let alloc: u64 = params
                .block_bits
                .iter()
                .map(|b| {
                    let bytes = (b + 1) / 8;
                    size_class(bytes + sds_overhead(bytes))
                })
                .sum();
            let ideal = params.m.div_ceil(8);
            if ideal > 64 * 1024 {
                assert!(
                    alloc as f64 <= ideal as f64 * 1.011,
                    "n {n} p {p}: {alloc} vs {ideal} ({:?})",
                    params.block_bits
                );
            }
            assert!(params.block_bits.len() <= 9, "{:?}", params.block_bits);
        }
    }

    #[test]
    fn big_filters_split_at_the_block_limit() {
        let p = BloomParams::new(3_000_000_000, 0.01, 1 << 36, MAX_BLOCK_BYTES).unwrap();
        assert!(p.block_bits.iter().all(|&b| b < 1 << 32));
        assert!(p.block_bits.len() >= 4);
        assert!(p.total_bits() >= p.m);
    }
}
