//! The sized filter [`Bloom`]: created for n items at a false-positive rate
//! p, its bits in blocks with sentinels, every operation an [`Op`].

use std::collections::HashMap;
use std::sync::Arc;

use redis::Cmd;
use serde::Serialize;

use super::hash::{BloomHash, double_hash};
use super::load::{Filter, Load, LoadItem};
use super::params::{
    BloomParams, DEFAULT_MAX_BITS, DEFAULT_MAX_MEMORY, KEY_OVERHEAD, MAX_BLOCK_BYTES, MAX_K,
};
use crate::contract::parts::KeyTemplate;
use crate::core::alloc::{reserved, string_request};
use crate::core::memory::{self, ServerMemory};
use crate::core::resend::changed;
use crate::core::{Allocator, Batch, Op, Replies, setters};
use crate::error::{Error, ErrorKind, MemoryLimit, Result, ServerErrorKind};
use crate::keys::{self, Prefix};
use crate::scripts;

/// The value of [`Bloom::DEFAULT_PREFIX`].
pub(crate) const DEFAULT_PREFIX: &str = "bloom:";

impl Bloom {
    /// Key prefix of sized filters unless [`BloomBuilder::prefix`] says otherwise.
    pub const DEFAULT_PREFIX: &'static str = DEFAULT_PREFIX;
}
/// Name of the sized filters' hash scheme, stored in the config.
pub(crate) const SCHEME: &str = "murmur3-dh";
/// Version of the hash scheme, stored in the config.
pub(crate) const SCHEME_VERSION: i64 = 1;
/// Offsets per BITFIELD command / script call (the scripts' limit).
pub(crate) const CHUNK_OFFSETS: usize = 1998;

/// How a sized filter talks to Redis; see the module docs of [`crate::bloom`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Engine {
    /// One native `BITFIELD`/`BITFIELD_RO` per block and chunk (fastest).
    #[default]
    Bitfield,
    /// `bloom.add` / `bloom.exists` scripts (server-side validation).
    Script,
}

/// A sized Bloom filter: its keys, parameters and engine. Cheap to clone;
/// holds no connection. Made by the op of [`Bloom::create`] or
/// [`Bloom::open`] (or of a [`BloomBuilder`]).
#[derive(Debug, Clone)]
pub struct Bloom {
    layout: Arc<Layout>,
    engine: Engine,
}

/// What a filter handle knows of its keys and bits.
#[derive(Debug)]
struct Layout {
    name: String,
    prefix: Prefix,
    config_key: String,
    block_keys: Vec<String>,
    params: BloomParams,
    /// Prefix sums of block_bits (starts[j] = bits before block j).
    starts: Vec<u64>,
    total: u64,
    spread: bool,
}

/// Builds the op that creates or opens a [`Bloom`]: setters never fail;
/// [`BloomBuilder::create`] and [`BloomBuilder::open`] check everything
/// before anything is sent.
#[derive(Debug, Clone)]
pub struct BloomBuilder {
    name: String,
    prefix: Prefix,
    expected: Option<u64>,
    fp_rate: Option<f64>,
    max_bits: u64,
    max_block_bytes: u64,
    max_memory: u64,
    plan_for: Option<Allocator>,
    spread: bool,
    engine: Engine,
}

/// What [`Bloom::info`] reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BloomInfo {
    /// The filter's name.
    pub name: String,
    /// Its config hash's key.
    pub config_key: String,
    /// Its blocks' keys, in block order.
    pub block_keys: Vec<String>,
    /// Its parameters (m, k, blocks ...).
    pub params: BloomParams,
    /// Bits set per block (sentinel excluded).
    pub bits_set: Vec<u64>,
    /// Estimated distinct items added, from the bits set.
    pub approx_count: u64,
    /// The false-positive rate at the current fill, `prod fill^k` averaged
    /// over blocks by size.
    pub current_fp_rate: f64,
}

impl BloomBuilder {
    setters! {
        /// The key prefix (default [`Bloom::DEFAULT_PREFIX`]).
        prefix(prefix: Prefix) => prefix;

        /// The number of items the filter is sized for (needed to create it).
        expected(items: u64) => expected = Some(items);

        /// The target false-positive rate at the expected items (needed to
        /// create it).
        fp_rate(p: f64) => fp_rate = Some(p);

        /// Refuse filters whose theoretical m exceeds this many bits (default
        /// [`BloomParams::DEFAULT_MAX_BITS`]).
        max_bits(bits: u64) => max_bits;

        /// The largest block in bytes (default and most [`BloomParams::MAX_BLOCK_BYTES`], a
        /// Redis string's limit). A server whose `proto-max-bulk-len` is lower
        /// (read with `CONFIG GET` when allowed) gets blocks within its limit.
        max_block_bytes(bytes: u64) => max_block_bytes;

        /// The ceiling on the memory of the filter's blocks, as the server's
        /// allocator will hold them ([`BloomParams::memory`]; default
        /// [`BloomParams::DEFAULT_MAX_MEMORY`], 4 GiB). A bigger filter is refused with
        /// [`ErrorKind::NotEnoughMemory`] (limit [`MemoryLimit::Ceiling`])
        /// before anything is written, with or without `maxmemory`; raise it to
        /// create one on purpose. (The server's own `maxmemory` headroom is
        /// checked as well.)
        max_memory(bytes: u64) => max_memory;

        /// Plan the blocks for this allocator instead of the one the server
        /// reports (`mem_allocator` in `INFO memory`): for a filter that will be
        /// copied to a server built otherwise. Only
        /// [`create`](BloomBuilder::create) uses it; an existing filter keeps
        /// its stored plan.
        plan_for(allocator: Allocator) => plan_for = Some(allocator);

        /// Give each block its own hash tag, so the blocks may spread over the
        /// nodes of a Redis Cluster (default: one hash tag for the whole filter).
        /// Only [`create`](BloomBuilder::create) uses it; an opened filter
        /// follows its config.
        spread_blocks(spread: bool) => spread;

        /// How operations reach Redis (default [`Engine::Bitfield`]).
        engine(engine: Engine) => engine;
    }

    /// Creates the filter, or opens it when it exists with exactly these
    /// parameters ([`ErrorKind::BloomConfigMismatch`] otherwise, nothing
    /// written). Everything the caller gave is validated before anything is
    /// sent.
    ///
    /// First, in one batch, the server's memory figures and allocator (see
    /// [`ServerMemory::read`](crate::core::ServerMemory::read)) and the config hash are read. An
    /// existing filter keeps the block plan stored in its config (planned
    /// for the allocator of the server that created it; every client opens
    /// it the same way), and `bloom.create` checks the parameters
    /// atomically. A new one is planned for this server's allocator (or
    /// [`plan_for`](BloomBuilder::plan_for)) within its `proto-max-bulk-len`,
    /// and refused with [`ErrorKind::NotEnoughMemory`] before anything is
    /// written when its memory is above the
    /// [ceiling](BloomBuilder::max_memory) or above the `maxmemory` headroom
    /// of its node (of each node holding its blocks, with spread blocks).
    ///
    /// Then every block is created first, one `bloom.init_block` call each
    /// (all in one batch: the server checks `maxmemory` before each call,
    /// and each call checks the headroom itself before its one write), and
    /// the config LAST (`bloom.create`), so a crash in between leaves only
    /// pristine blocks, which the retry adopts (a block holding data is
    /// refused with [`ErrorKind::BloomConfigMismatch`]). When a block cannot
    /// be created, the blocks this call created are deleted again and the
    /// error returned.
    pub fn create(self) -> Op<Bloom> {
        if let Err(e) = self.requested() {
            return Op::fail(e);
        }
        let config_key = self.prefix.tagged(&self.name);
        let mut batch = Batch::with_capacity(3);
        memory::add(&mut batch, &config_key);
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(&config_key);
        batch.add(&config_key, cmd);
        let name = self.name.clone();
        Op::send(batch, move |mut r| {
            let mem = memory::take(&mut r)?;
            let cfg: HashMap<String, String> =
                r.take().map_err(|e| config_taken(&name, &config_key, e))?;
            Ok((mem, cfg))
        })
        .and_then(move |(mem, cfg)| {
            if cfg.is_empty() {
                self.create_new(mem)
            } else {
                self.create_existing(cfg)
            }
        })
    }

    /// The filter `cfg` describes, when it has the parameters asked for
    /// (its stored block plan is kept), confirmed by `bloom.create`.
    fn create_existing(self, cfg: HashMap<String, String>) -> Op<Bloom> {
        let stored = match Bloom::from_config(&self.name, &self.prefix, cfg) {
            Ok(b) => b.with_engine(self.engine),
            Err(e) => return Op::fail(e),
        };
        if let Err(e) = self.matches(&stored) {
            return Op::fail(e);
        }
        stored.write_config().and_then(move |_| {
            let check = if stored.layout.spread {
                stored.init_blocks(false)
            } else {
                Op::ready(())
            };
            check.map(move |()| stored)
        })
    }

    /// [`ErrorKind::BloomConfigMismatch`] when the stored filter has other
    /// parameters than the ones asked for (its blocks may differ: they are
    /// the plan of the server that created it).
    fn matches(&self, stored: &Bloom) -> Result<()> {
        let want = self.requested()?;
        let have = &stored.layout.params;
        let differs = |field: &str, have: String, want: String| {
            Err(Error::from(ErrorKind::BloomConfigMismatch {
                detail: format!("{field} stored {have} requested {want}"),
            }))
        };
        if have.n != want.n {
            return differs("n", have.n.to_string(), want.n.to_string());
        }
        if have.p_field() != want.p_field() {
            return differs("p", have.p_field(), want.p_field());
        }
        if (have.m, have.k) != (want.m, want.k) {
            return differs(
                "m/k",
                format!("{}/{}", have.m, have.k),
                format!("{}/{}", want.m, want.k),
            );
        }
        if stored.layout.spread != self.spread {
            return differs(
                "spread",
                u8::from(stored.layout.spread).to_string(),
                u8::from(self.spread).to_string(),
            );
        }
        Ok(())
    }

    /// A new filter planned for the server `mem` describes: refused when it
    /// does not fit, else its blocks, then its config.
    fn create_new(self, mem: ServerMemory) -> Op<Bloom> {
        let bloom = match self.plan(&mem) {
            Ok(bloom) => bloom.with_engine(self.engine),
            Err(e) => return Op::fail(e),
        };
        let needed = bloom.layout.params.memory(&mem.allocator);
        if needed > self.max_memory {
            return Op::fail(
                ErrorKind::NotEnoughMemory {
                    what: format!("bloom filter {}", self.name),
                    needed,
                    available: self.max_memory,
                    limit: MemoryLimit::Ceiling,
                    script: None,
                }
                .into(),
            );
        }
        let fits = if bloom.layout.spread {
            bloom.check_nodes(mem.allocator.clone())
        } else {
            match mem.check(needed, &format!("bloom filter {}", self.name)) {
                Ok(()) => Op::ready(()),
                Err(e) => Op::fail(e),
            }
        };
        let retry = self.clone();
        let probe = bloom.clone();
        fits.and_then(move |()| {
            probe.create_blocks().or_else(move |e| {
                if !matches!(e.kind(), ErrorKind::BloomConfigMismatch { .. }) {
                    return Op::fail(e);
                }
                // Another creator finished first and items went in: open
                // its filter (create again takes the existing path).
                retry.config_exists().and_then(move |now| {
                    if now {
                        retry.create().map(|b| (b, true))
                    } else {
                        Op::fail(e)
                    }
                })
            })
        })
        .and_then(move |(other, existed)| {
            if existed {
                return Op::ready(other);
            }
            bloom.write_config().map(move |_| bloom)
        })
    }

    /// `EXISTS` of the config hash.
    fn config_exists(&self) -> Op<bool> {
        let key = self.prefix.tagged(&self.name);
        let mut cmd = redis::cmd("EXISTS");
        cmd.arg(&key);
        Op::cmd(&key, cmd)
    }

    /// Opens an existing filter from its config hash ([`ErrorKind::BloomMissing`]
    /// when there is none); the size settings are ignored, the stored
    /// parameters rule. Reads the config, then checks every block's
    /// sentinel bit in one batch.
    pub fn open(self) -> Op<Bloom> {
        if let Err(e) = keys::check_name("filter name", &self.name) {
            return Op::fail(e);
        }
        let config_key = self.prefix.tagged(&self.name);
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(&config_key);
        let (name, key) = (self.name.clone(), config_key.clone());
        let read = Op::<HashMap<String, String>>::cmd(&config_key, cmd)
            .or_else(move |e| Op::fail(config_taken(&name, &key, e)));
        read.and_then(
            move |cfg| match Bloom::from_config(&self.name, &self.prefix, cfg) {
                Ok(bloom) => {
                    let bloom = bloom.with_engine(self.engine);
                    bloom.check_sentinels().map(move |()| bloom)
                }
                Err(e) => Op::fail(e),
            },
        )
    }

    /// Validates what the caller gave: the parameters asked for (m and k do
    /// not depend on the block plan).
    fn requested(&self) -> Result<BloomParams> {
        keys::check_name("filter name", &self.name)?;
        let n = self
            .expected
            .ok_or_else(|| Error::invalid("expected items", "must be set to create a filter"))?;
        let p = self.fp_rate.ok_or_else(|| {
            Error::invalid("false-positive rate", "must be set to create a filter")
        })?;
        BloomParams::new(n, p, self.max_bits, self.max_block_bytes)
    }

    /// The handle of the filter to create on the server `mem` describes:
    /// blocks planned for its allocator, within its string limit.
    fn plan(&self, mem: &ServerMemory) -> Result<Bloom> {
        let want = self.requested()?;
        let allocator = self.plan_for.as_ref().unwrap_or(&mem.allocator);
        let max_block = self.max_block_bytes.min(mem.max_string_bytes).max(64);
        let params =
            BloomParams::for_allocator(want.n, want.p, self.max_bits, max_block, allocator)?;
        Ok(Bloom::assemble(
            &self.name,
            &self.prefix,
            params,
            self.spread,
        ))
    }
}

/// The refusal of a filter whose config key holds block `<j>` of the
/// spread filter `<base>` (a contract constant: every client renders it).
pub(crate) const CONFIG_HOLDS_BLOCK: &str = "<key>, the config key of the filter <name>, holds block <j> of the spread filter <base>: the two filters' keys collide; choose another name for one of them";

/// The refusal of a spread filter whose block `<j>` is the config key of
/// the filter `<name>:<j>` (a contract constant: every client renders it).
pub(crate) const BLOCK_IS_CONFIG: &str = "<key>, block <j> of the spread filter <name>, is the config key of the filter <name>:<j>: the two filters' keys collide; choose another name for one of them";

/// A spread filter's block `j` has the key of the config of a filter named
/// `<name>:<j>` (`bloom:{f:0}`): the config key of filter `name` that
/// holds another type than a hash (`WRONGTYPE`) is, when `name` ends in
/// `:<j>`, a block of the spread filter before it. Refused naming it.
fn config_taken(name: &str, key: &str, e: Error) -> Error {
    let spread_owner = name.rsplit_once(':').filter(|(base, j)| {
        !base.is_empty() && !j.is_empty() && j.bytes().all(|b| b.is_ascii_digit())
    });
    match spread_owner {
        Some((base, j)) if e.server_kind() == Some(ServerErrorKind::WrongType) => {
            ErrorKind::BloomConfigMismatch {
                detail: KeyTemplate::render(
                    CONFIG_HOLDS_BLOCK,
                    &[("key", key), ("name", name), ("j", j), ("base", base)],
                ),
            }
            .into()
        }
        _ => e,
    }
}

/// Block `j` of a spread filter whose key holds another type than a
/// string (`WRONGTYPE`): the config of a filter named `<name>:<j>`.
/// Refused naming it.
fn block_taken(l: &Layout, j: usize, e: Error) -> Error {
    if !l.spread || e.server_kind() != Some(ServerErrorKind::WrongType) {
        return e;
    }
    ErrorKind::BloomConfigMismatch {
        detail: KeyTemplate::render(
            BLOCK_IS_CONFIG,
            &[
                ("key", &l.block_keys[j]),
                ("j", &j.to_string()),
                ("name", &l.name),
            ],
        ),
    }
    .into()
}

fn block_key(prefix: &Prefix, name: &str, j: usize, spread: bool) -> String {
    if spread {
        prefix.tagged(&format!("{name}:{j}"))
    } else {
        format!("{}:{j}", prefix.tagged(name))
    }
}

impl Bloom {
    /// A builder for the filter named `name` (config key `bloom:{name}`).
    pub fn builder(name: &str) -> BloomBuilder {
        BloomBuilder {
            name: name.to_string(),
            prefix: Prefix::new(DEFAULT_PREFIX).expect("the default prefix is valid"),
            expected: None,
            fp_rate: None,
            max_bits: DEFAULT_MAX_BITS,
            max_block_bytes: MAX_BLOCK_BYTES,
            max_memory: DEFAULT_MAX_MEMORY,
            plan_for: None,
            spread: false,
            engine: Engine::Bitfield,
        }
    }

    /// Creates the filter `name` for `expected_items` at `fp_rate` with the
    /// default settings, or opens it when it exists with exactly these
    /// parameters: see [`BloomBuilder::create`].
    pub fn create(name: &str, expected_items: u64, fp_rate: f64) -> Op<Bloom> {
        Self::builder(name)
            .expected(expected_items)
            .fp_rate(fp_rate)
            .create()
    }

    /// Opens the existing filter `name` (default prefix): see
    /// [`BloomBuilder::open`].
    pub fn open(name: &str) -> Op<Bloom> {
        Self::builder(name).open()
    }

    pub(crate) fn assemble(name: &str, prefix: &Prefix, params: BloomParams, spread: bool) -> Self {
        let config_key = prefix.tagged(name);
        let block_keys = (0..params.block_bits.len())
            .map(|j| block_key(prefix, name, j, spread))
            .collect();
        let mut starts = Vec::with_capacity(params.block_bits.len());
        let mut total = 0;
        for b in &params.block_bits {
            starts.push(total);
            total += b;
        }
        Self {
            layout: Arc::new(Layout {
                name: name.to_string(),
                prefix: prefix.clone(),
                config_key,
                block_keys,
                params,
                starts,
                total,
                spread,
            }),
            engine: Engine::Bitfield,
        }
    }

    /// The filter its stored config describes.
    fn from_config(name: &str, prefix: &Prefix, cfg: HashMap<String, String>) -> Result<Self> {
        let config_key = prefix.tagged(name);
        if cfg.is_empty() {
            return Err(ErrorKind::BloomMissing {
                detail: format!("no config hash {config_key}"),
            }
            .into());
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
                detail: format!("{config_key} field {f} = `{v}` is not understood"),
            })
        };
        let scheme = field("scheme")?;
        let version = field("version")?;
        if scheme != SCHEME || version != SCHEME_VERSION.to_string() {
            return Err(ErrorKind::BloomConfigMismatch {
                detail: format!(
                    "scheme stored {scheme} v{version} requested {SCHEME} v{SCHEME_VERSION}"
                ),
            }
            .into());
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
        Ok(Self::assemble(name, prefix, params, spread))
    }

    /// The `bloom.create` call: writes the config hash (and, unless blocks
    /// spread over slots, every block), or checks the existing one.
    fn write_config(&self) -> Op<i64> {
        let l = &self.layout;
        let same_slot: &[String] = if l.spread { &[] } else { &l.block_keys };
        Op::script(scripts::bloom::create(
            &l.config_key,
            same_slot,
            l.params.m as i64,
            l.params.k as i64,
            l.params.n as i64,
            &l.params.p_field(),
            &l.params.block_bits_field(),
            SCHEME,
            SCHEME_VERSION,
            l.spread,
        ))
    }

    /// The `bloom.init_block` calls that require every spread block (the
    /// config exists), in one batch.
    fn init_blocks(&self, create: bool) -> Op<()> {
        self.init_block_calls(create).and_then(|results| {
            match results.into_iter().find_map(Result::err) {
                Some(e) => Op::fail(e),
                None => Op::ready(()),
            }
        })
    }

    /// One `bloom.init_block` call per block, in one batch (the server
    /// checks `maxmemory` before each); each block's reply.
    fn init_block_calls(&self, create: bool) -> Op<Vec<Result<i64>>> {
        let l = &self.layout;
        let mut batch = Batch::with_capacity(l.block_keys.len());
        for (key, bits) in l.block_keys.iter().zip(&l.params.block_bits) {
            batch.script(scripts::bloom::init_block(key, *bits as i64, create));
        }
        let bloom = self.clone();
        Op::send(batch, move |r| {
            let l = &bloom.layout;
            Ok(r.each::<i64>()
                .into_iter()
                .enumerate()
                .map(|(j, res)| res.map_err(|e| block_taken(l, j, e)))
                .collect())
        })
    }

    /// Creates (or adopts, when pristine) every block before the config
    /// exists. When one fails, the blocks created by this call are deleted
    /// again (one batch) before the error. `(self, false)` when done.
    fn create_blocks(&self) -> Op<(Bloom, bool)> {
        let bloom = self.clone();
        self.init_block_calls(true).and_then(move |results| {
            let created: Vec<String> = results
                .iter()
                .zip(&bloom.layout.block_keys)
                .filter(|(r, _)| matches!(r, Ok(1)))
                .map(|(_, k)| k.clone())
                .collect();
            let Some(e) = results.into_iter().find_map(Result::err) else {
                return Op::ready((bloom, false));
            };
            if created.is_empty() {
                return Op::fail(e);
            }
            let mut batch = Batch::with_capacity(created.len());
            for key in &created {
                let mut cmd = redis::cmd("DEL");
                cmd.arg(key);
                batch.add(key, cmd);
            }
            Op::send(batch, |r| r.all::<i64>().map(drop)).and_then(move |()| Op::fail(e))
        })
    }

    /// The `maxmemory` headroom of every node that will hold a spread block
    /// (`INFO` at each block's slot, in one batch): the blocks of one node
    /// (told apart by `run_id`) must fit together.
    fn check_nodes(&self, allocator: Allocator) -> Op<()> {
        let l = &self.layout;
        let mut batch = Batch::with_capacity(l.block_keys.len());
        for key in &l.block_keys {
            memory::add_info(&mut batch, key);
        }
        let bloom = self.clone();
        Op::send(batch, move |r| {
            let mut nodes: Vec<(ServerMemory, u64)> = Vec::new();
            for (reply, bytes) in r
                .into_values()
                .into_iter()
                .zip(bloom.layout.params.block_bytes())
            {
                let mem = ServerMemory::from_reply(reply)?;
                let need = reserved(&allocator, string_request(bytes)) + KEY_OVERHEAD;
                match nodes.iter_mut().find(|(m, _)| m.node == mem.node) {
                    Some((_, total)) => *total += need,
                    None => nodes.push((mem, need)),
                }
            }
            for (mem, needed) in &nodes {
                mem.check(*needed, &format!("bloom filter {}", bloom.layout.name))?;
            }
            Ok(())
        })
    }

    /// `GETBIT` of every block's sentinel, in one batch; a 0 is
    /// [`ErrorKind::BloomMissing`].
    fn check_sentinels(&self) -> Op<()> {
        let l = &self.layout;
        let mut batch = Batch::with_capacity(l.block_keys.len());
        for (key, bits) in l.block_keys.iter().zip(&l.params.block_bits) {
            let mut cmd = redis::cmd("GETBIT");
            cmd.arg(key).arg(*bits);
            batch.add(key, cmd);
        }
        let bloom = self.clone();
        Op::send(batch, move |r| {
            match r.all::<i64>()?.iter().position(|&s| s != 1) {
                Some(j) => Err(bloom.missing(j)),
                None => Ok(()),
            }
        })
    }

    /// Uses `engine` for the operations of this handle.
    pub fn with_engine(mut self, engine: Engine) -> Self {
        self.engine = engine;
        self
    }

    /// The engine of this handle.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The filter's name.
    pub fn name(&self) -> &str {
        &self.layout.name
    }

    /// The key prefix.
    pub fn prefix(&self) -> &Prefix {
        &self.layout.prefix
    }

    /// The stored parameters.
    pub fn params(&self) -> &BloomParams {
        &self.layout.params
    }

    /// Whether each block has its own hash tag (see
    /// [`BloomBuilder::spread_blocks`]).
    pub fn spread_blocks(&self) -> bool {
        self.layout.spread
    }

    /// The config hash key, `<prefix>{<name>}`.
    pub fn key(&self) -> &str {
        &self.layout.config_key
    }

    /// The config hash key (the same as [`Bloom::key`]).
    pub fn config_key(&self) -> &str {
        &self.layout.config_key
    }

    /// The block bitmap keys, in block order.
    pub fn block_keys(&self) -> &[String] {
        &self.layout.block_keys
    }

    /// Every key of the filter (config first).
    pub fn all_keys(&self) -> Vec<String> {
        std::iter::once(self.layout.config_key.clone())
            .chain(self.layout.block_keys.iter().cloned())
            .collect()
    }

    /// The block and the k bit offsets (within that block) of an item.
    pub fn locate(&self, item: &[u8]) -> (usize, Vec<u64>) {
        let l = &self.layout;
        let mut offsets = Vec::with_capacity(l.params.k as usize);
        let (h1, h2, hb) = BloomHash::sized_hashes(item);
        let block = BloomHash::select_block(hb, &l.starts, l.total);
        BloomHash::double_hash_offsets(
            h1,
            h2,
            l.params.k,
            l.params.block_bits[block],
            &mut offsets,
        );
        (block, offsets)
    }

    /// Adds one item; `Some(true)` when it was new (some bit was 0),
    /// `Some(false)` when it may have been present, `None` when it is not
    /// known: the call was sent again after its reply was lost and found
    /// every bit set — by the first attempt, or before it.
    pub fn add(&self, item: impl AsRef<[u8]>) -> Op<Option<bool>> {
        self.multi_add(&[item]).map(super::first_added)
    }

    /// Whether the item may be present (`false`: certainly absent).
    pub fn exists(&self, item: impl AsRef<[u8]>) -> Op<bool> {
        self.multi_exists(&[item]).map(super::first_flag)
    }

    /// Adds items in one batch (one atomic call per block and chunk of 1998
    /// offsets; one pipeline per node); per item `true` when newly added,
    /// `false` when it may have been present (also for a repeat earlier in
    /// the same batch), `None` when not known (see [`Bloom::add`]: its
    /// block's call was sent again after its reply was lost). The items are
    /// hashed when the op is built.
    pub fn multi_add<T: AsRef<[u8]>>(&self, items: &[T]) -> Op<Vec<Option<bool>>> {
        self.items_op(items, true)
    }

    /// Checks items in one batch (read-only: `BITFIELD_RO` or
    /// `EVALSHA_RO`); per item `true` when it may be present.
    pub fn multi_exists<T: AsRef<[u8]>>(&self, items: &[T]) -> Op<Vec<bool>> {
        // A read is never flagged as a resend's; "maybe present" is the
        // safe answer anyway.
        self.items_op(items, false)
            .map(|flags| flags.into_iter().map(|f| f.unwrap_or(true)).collect())
    }

    /// Groups the items per block, preserving order within a block, and
    /// cuts each group into chunks of whole items. Only the two hashes of an
    /// item are kept until its chunk is known; its k offsets are then
    /// generated straight into the chunk (no intermediate copy per bit).
    fn plan<T: AsRef<[u8]>>(&self, items: &[T]) -> Result<Vec<Chunk>> {
        let l = &self.layout;
        let k = l.params.k as usize;
        let per_chunk = (CHUNK_OFFSETS / k).max(1);
        let mut groups: Vec<Vec<(usize, u32, u32)>> = vec![Vec::new(); l.block_keys.len()];
        for (i, item) in items.iter().enumerate() {
            super::check_item(item.as_ref())?;
            let (h1, h2, hb) = BloomHash::sized_hashes(item.as_ref());
            groups[BloomHash::select_block(hb, &l.starts, l.total)].push((i, h1, h2));
        }
        let mut chunks = Vec::new();
        for (block, group) in groups.into_iter().enumerate() {
            let bits = l.params.block_bits[block];
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
                        .extend(double_hash(h1, h2, l.params.k, bits).map(|o| o as i64));
                }
                chunks.push(c);
            }
        }
        Ok(chunks)
    }

    /// A multi-add (or multi-exists): one `BITFIELD` (`BITFIELD_RO`) or one
    /// `bloom.add` (`bloom.exists`) call per block and chunk, all in one
    /// batch; after an add that found lost blocks, one more batch that keeps
    /// them marked lost.
    fn items_op<T: AsRef<[u8]>>(&self, items: &[T], add: bool) -> Op<Vec<Option<bool>>> {
        let chunks = match self.plan(items) {
            Ok(chunks) => chunks,
            Err(e) => return Op::fail(e),
        };
        let l = &self.layout;
        let mut batch = Batch::with_capacity(chunks.len());
        for c in &chunks {
            let key = &l.block_keys[c.block];
            let bits = l.params.block_bits[c.block];
            match self.engine {
                Engine::Bitfield => batch.add(key, bitfield(key, bits, &c.offsets, add)),
                Engine::Script => {
                    let k = l.params.k as i64;
                    if add {
                        batch.script(scripts::bloom::add(key, bits as i64, k, &c.offsets))
                    } else {
                        batch.script(scripts::bloom::exists(key, bits as i64, k, &c.offsets))
                    }
                }
            };
        }
        let len = items.len();
        let decoder = self.clone();
        let bloom = self.clone();
        Op::send(batch, move |replies| {
            decoder.settle(&chunks, len, add, replies)
        })
        .and_then(move |settled| match settled {
            Settled::Flags(flags) => Op::ready(flags),
            Settled::Lost { block, mark: None } => Op::fail(bloom.missing(block)),
            Settled::Lost {
                block,
                mark: Some(mark),
            } => Op::send(mark, |r| r.all::<i64>().map(drop))
                .and_then(move |()| Op::fail(bloom.missing(block))),
        })
    }

    /// Decodes the replies of a multi-add (multi-exists) into per-item
    /// flags, in the caller's order.
    fn settle(&self, chunks: &[Chunk], len: usize, add: bool, replies: Replies) -> Result<Settled> {
        let l = &self.layout;
        let k = l.params.k as usize;
        let resent = replies.resent_each();
        let replies = replies.all::<Vec<i64>>()?;
        if replies.len() != chunks.len() {
            return Err(Error::short_reply());
        }
        let mut per_chunk: Vec<Vec<bool>> = Vec::with_capacity(replies.len());
        match self.engine {
            Engine::Script => {
                for bits in replies {
                    per_chunk.push(bits.into_iter().map(|x| x == 1).collect());
                }
            }
            Engine::Bitfield => {
                let mut lost: Vec<usize> = Vec::new();
                for (c, bits) in chunks.iter().zip(replies) {
                    if bits.len() != c.offsets.len() + 1 {
                        return Err(Error::short_reply());
                    }
                    if bits[0] != 1 && !lost.contains(&c.block) {
                        lost.push(c.block);
                    }
                    per_chunk.push(
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
                        let mut batch = Batch::with_capacity(lost.len());
                        for &j in &lost {
                            let key = &l.block_keys[j];
                            let mut cmd = redis::cmd("SETBIT");
                            cmd.arg(key).arg(l.params.block_bits[j]).arg(0);
                            batch.add(key, cmd);
                        }
                        batch
                    });
                    return Ok(Settled::Lost { block, mark });
                }
            }
        }
        let mut flags = vec![Some(false); len];
        for ((chunk, chunk_flags), resent) in chunks.iter().zip(per_chunk).zip(resent) {
            if chunk_flags.len() != chunk.items.len() {
                return Err(Error::short_reply());
            }
            for (&i, f) in chunk.items.iter().zip(chunk_flags) {
                flags[i] = if add { changed(f, resent) } else { Some(f) };
            }
        }
        Ok(Settled::Flags(flags))
    }

    fn missing(&self, block: usize) -> Error {
        ErrorKind::BloomMissing {
            detail: format!(
                "block {} is missing or lost its sentinel bit",
                self.layout.block_keys[block]
            ),
        }
        .into()
    }

    /// Bits set in each block (sentinel excluded): `BITCOUNT` and the
    /// sentinel's `GETBIT` of every block in one batch. A block whose
    /// sentinel is 0 (missing, or lost and re-created) is
    /// [`ErrorKind::BloomMissing`], never "empty" (so are
    /// [`Bloom::approx_count`] and [`Bloom::info`]).
    pub fn bits_set(&self) -> Op<Vec<u64>> {
        let l = &self.layout;
        let mut batch = Batch::with_capacity(2 * l.block_keys.len());
        for (key, bits) in l.block_keys.iter().zip(&l.params.block_bits) {
            let mut count = redis::cmd("BITCOUNT");
            count.arg(key);
            let mut sentinel = redis::cmd("GETBIT");
            sentinel.arg(key).arg(*bits);
            batch.add(key, count).add(key, sentinel);
        }
        let bloom = self.clone();
        Op::send(batch, move |r| {
            let replies = r.all::<u64>()?;
            if replies.len() != 2 * bloom.layout.block_keys.len() {
                return Err(Error::short_reply());
            }
            if let Some(j) = replies.chunks(2).position(|r| r[1] != 1) {
                return Err(bloom.missing(j));
            }
            Ok(replies.chunks(2).map(|r| r[0] - 1).collect())
        })
    }

    /// Estimated number of distinct items added, from the bits set:
    /// `sum_j -(bits_j / k) ln(1 - set_j / bits_j)` (Swamidass & Baldi).
    pub fn approx_count(&self) -> Op<u64> {
        let bloom = self.clone();
        self.bits_set().map(move |set| bloom.estimate(&set))
    }

    fn estimate(&self, set: &[u64]) -> u64 {
        let params = &self.layout.params;
        let k = params.k as f64;
        let mut total = 0.0;
        for (&x, &bits) in set.iter().zip(&params.block_bits) {
            let bits = bits as f64;
            let x = (x as f64).min(bits - 1.0);
            total += -(bits / k) * (1.0 - x / bits).ln();
        }
        total.round() as u64
    }

    /// Parameters, keys, bits set, the estimated count and the current
    /// false-positive rate (one batch, as [`Bloom::bits_set`]).
    pub fn info(&self) -> Op<BloomInfo> {
        let bloom = self.clone();
        self.bits_set()
            .map(move |bits_set| bloom.info_from(bits_set))
    }

    fn info_from(&self, bits_set: Vec<u64>) -> BloomInfo {
        let l = &self.layout;
        let k = l.params.k as i32;
        let fp = bits_set
            .iter()
            .zip(&l.params.block_bits)
            .map(|(&x, &b)| (b as f64 / l.total as f64) * (x as f64 / b as f64).powi(k))
            .sum();
        BloomInfo {
            name: l.name.clone(),
            config_key: l.config_key.clone(),
            block_keys: l.block_keys.clone(),
            params: l.params.clone(),
            approx_count: self.estimate(&bits_set),
            bits_set,
            current_fp_rate: fp,
        }
    }

    /// Resets every bit to 0, keeping the config, sizes and TTLs (one
    /// `bloom.clear` call for all blocks, or one per block when blocks
    /// spread over slots, in one batch). Also makes a block that lost its
    /// sentinel usable again.
    pub fn clear(&self) -> Op<()> {
        let l = &self.layout;
        let bits: Vec<i64> = l.params.block_bits.iter().map(|&b| b as i64).collect();
        let mut batch = Batch::new();
        if l.spread {
            for (key, b) in l.block_keys.iter().zip(&bits) {
                batch.script(scripts::bloom::clear(&[key], &[*b]));
            }
        } else {
            batch.script(scripts::bloom::clear(&l.block_keys, &bits));
        }
        Op::send(batch, |r| r.all::<i64>().map(drop))
    }

    /// Deletes the config and every block (one `DEL`, or one per key when
    /// blocks spread over slots, in one batch).
    pub fn destroy(&self) -> Op<()> {
        let mut batch = Batch::new();
        if self.layout.spread {
            for key in self.all_keys() {
                let mut cmd = redis::cmd("DEL");
                cmd.arg(&key);
                batch.add(&key, cmd);
            }
        } else {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(self.all_keys());
            batch.add(&self.layout.config_key, cmd);
        }
        Op::send(batch, |r| r.all::<i64>().map(drop))
    }

    /// A bulk load of `items` into this filter: see [`Load`].
    pub fn load<I>(&self, items: I) -> Load<I::IntoIter>
    where
        I: IntoIterator,
        I::Item: LoadItem,
    {
        Load::new(self.clone(), items.into_iter())
    }
}

/// `BITFIELD block SET u1 <sentinel> 1 SET u1 o 1 ...` (an add) or
/// `BITFIELD_RO block GET u1 <sentinel> GET u1 o ...`.
fn bitfield(key: &str, sentinel: u64, offsets: &[i64], add: bool) -> Cmd {
    let mut cmd = redis::cmd(if add { "BITFIELD" } else { "BITFIELD_RO" });
    cmd.arg(key);
    if add {
        cmd.arg("SET").arg("u1").arg(sentinel).arg(1);
        for o in offsets {
            cmd.arg("SET").arg("u1").arg(*o).arg(1);
        }
    } else {
        cmd.arg("GET").arg("u1").arg(sentinel);
        for o in offsets {
            cmd.arg("GET").arg("u1").arg(*o);
        }
    }
    cmd
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

/// A decoded multi-add or multi-exists.
enum Settled {
    Flags(Vec<Option<bool>>),
    /// Blocks lost their sentinel (`block`: the first); `mark` (after an
    /// add) clears the sentinel of EVERY block the add re-created, before
    /// [`ErrorKind::BloomMissing`].
    Lost {
        block: usize,
        mark: Option<Batch>,
    },
}

impl Filter for Bloom {
    fn multi_add(&self, items: &[&[u8]]) -> Op<Vec<Option<bool>>> {
        Bloom::multi_add(self, items)
    }
}
