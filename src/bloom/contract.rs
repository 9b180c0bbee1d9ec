//! The Bloom filters' contract for other languages (see
//! [`crate::contract`]): the sized filters' hashing, block selection and
//! block planning, and the PHP `JSHash`, precise enough to port bit for bit.

use serde_json::json;

use super::hash::BloomHash;
use super::params::{EXTRA_BLOCKS, MIN_WASTE, WASTE_DIVISOR};
use super::sized::{BLOCK_IS_CONFIG, CHUNK_OFFSETS, CONFIG_HOLDS_BLOCK};
use super::{DEFAULT_MAX_BITS, DEFAULT_PREFIX, MAX_BLOCK_BYTES, MAX_K, SCHEME, SCHEME_VERSION};
use crate::contract::parts::*;
use crate::core::alloc::{LG_CLASSES_PER_DOUBLING, LG_QUANTUM, MIN_CLASS, SDS_HEADERS};

/// The initial value of PHP's `JSHash`.
pub(crate) const JS_HASH_INIT: i64 = 1_315_423_911;

fn with_vectors(mut f: Function, vectors: &[&str]) -> Function {
    f.vectors = vectors.iter().map(|s| s.to_string()).collect();
    f
}

pattern_contract! {
    "bloom", "Bloom filters on plain bitmaps: sized filters (murmur3 double hashing in size-class blocks) and the PHP BloomFilter::JSHash bitmaps";
    params, keys, constants, functions, protocols
}

/// The filters' parameters: the sized filters' name, size and spread; the JSHash filters' key and folding.
fn params() -> Vec<Param> {
    vec![
        prefix_param_meaning(
            DEFAULT_PREFIX,
            "sized filters: what every key starts with (no `{` or `}`)",
        ),
        required_param(
            "name",
            "string",
            "sized filters: the filter's name, not empty, no `{` or `}`",
        ),
        required_param(
            "expected",
            "integer",
            "sized filters: n, the items the filter is sized for, at least 1",
        ),
        required_param(
            "fp_rate",
            "number",
            "sized filters: p, the target false-positive rate, strictly between 0 and 1",
        ),
        param(
            "spread",
            "bool",
            json!(false),
            "sized filters: give every block its own hash tag (blocks spread over a cluster)",
        ),
        param(
            "max_bits",
            "integer",
            json!(DEFAULT_MAX_BITS),
            "sized filters: refuse a filter whose m exceeds this",
        ),
        param(
            "max_block_bytes",
            "integer",
            json!(MAX_BLOCK_BYTES),
            "sized filters: the largest block in bytes, 64 to max_block_bytes",
        ),
        required_param(
            "key",
            "string",
            "JSHash filters: the bitmap's key as the PHP code names it (e.g. bloom_user_email)",
        ),
        param(
            "limit_memory",
            "bool",
            json!(true),
            "JSHash filters: PHP's limitMemory folding; must match the PHP side",
        ),
    ]
}

/// The filters' keys: a sized filter's config and blocks (with and without spread), a JSHash bitmap.
fn keys() -> Vec<KeyTemplate> {
    vec![
        key(
            "config",
            "<prefix>{<name>}",
            "hash",
            "fields m k n p block_bits scheme version spread, written once by bloom.create",
        ),
        key(
            "block",
            "<prefix>{<name>}:<j>",
            "string",
            "block j (0-based) without spread: block_bits[j] usable bits, then the sentinel bit block_bits[j] (always 1)",
        ),
        key(
            "block_spread",
            "<prefix>{<name>:<j>}",
            "string",
            "block j with spread (its own hash tag)",
        ),
        key(
            "bitmap",
            "<key>",
            "string",
            "a JSHash filter's bitmap: bit JSHash(item) set per item",
        ),
    ]
}

/// The constants the hashing, the block planning and the JSHash use.
fn constants() -> Vec<Constant> {
    [
        hashing_constants(),
        sizing_constants(),
        jshash_constants(),
        collision_constants(),
    ]
    .concat()
}

/// The refusals of two sized filters whose keys collide (a spread filter
/// `f`'s block `j` is the config key of a filter `f:<j>`), as templates.
fn collision_constants() -> Vec<Constant> {
    vec![
        constant(
            "config_holds_block",
            CONFIG_HOLDS_BLOCK,
            "BloomConfigMismatch's message when a filter's config key (<key>) holds block <j> of the spread filter <base>",
        ),
        constant(
            "block_is_config",
            BLOCK_IS_CONFIG,
            "BloomConfigMismatch's message when block <j> (<key>) of a spread filter is the config key of the filter <name>:<j>",
        ),
    ]
}

/// The sized filters' scheme, murmur3's initial states and the bounds on k, blocks and calls.
fn hashing_constants() -> Vec<Constant> {
    vec![
        constant(
            "scheme",
            SCHEME,
            "the sized filters' hash scheme, stored in the config",
        ),
        constant(
            "scheme_version",
            SCHEME_VERSION,
            "its version, stored in the config",
        ),
        constant(
            "h1_init",
            BloomHash::SEED_H1,
            "murmur3_x86_32's initial hash state (the reference implementation's third argument) for h1",
        ),
        constant("h2_init", BloomHash::SEED_H2, "... for h2 (0x9e3779b9)"),
        constant(
            "hb_init",
            BloomHash::SEED_BLOCK,
            "... for the block hash hb (0x85ebca6b)",
        ),
        constant(
            "ln2",
            std::f64::consts::LN_2,
            "ln 2 as an IEEE double, used by m and k",
        ),
        constant("max_k", MAX_K, "the largest k the scripts accept"),
        constant(
            "max_block_bytes",
            MAX_BLOCK_BYTES,
            "a Redis string's limit: 2^29 bytes (2^32 bits)",
        ),
        constant(
            "chunk_offsets",
            CHUNK_OFFSETS as u64,
            "at most this many offsets per bloom.add / bloom.exists call (whole items: floor(chunk_offsets / k) items)",
        ),
    ]
}

/// jemalloc's size classes, Redis's SDS headers and the block planner's tolerances.
fn sizing_constants() -> Vec<Constant> {
    vec![
        constant("min_class", MIN_CLASS, "jemalloc: the smallest size class"),
        constant(
            "lg_quantum",
            LG_QUANTUM,
            "jemalloc: log2 of the quantum (16 bytes)",
        ),
        constant(
            "lg_classes_per_doubling",
            LG_CLASSES_PER_DOUBLING,
            "jemalloc: log2 of the size classes per doubling (4)",
        ),
        constant(
            "sds_headers",
            json!(SDS_HEADERS),
            "Redis SDS header bytes for string lengths < 2^8, < 2^16, < 2^32, beyond",
        ),
        constant(
            "waste_divisor",
            WASTE_DIVISOR,
            "block planning: tolerated waste is total_bytes / waste_divisor ...",
        ),
        constant("min_waste", MIN_WASTE, "... but at least min_waste bytes"),
        constant(
            "extra_blocks",
            EXTRA_BLOCKS,
            "block planning: blocks beyond ceil(total_bytes / max_block_bytes)",
        ),
    ]
}

/// PHP `JSHash`'s initial value and `limitMemory` folding.
fn jshash_constants() -> Vec<Constant> {
    vec![
        constant(
            "jshash_init",
            JS_HASH_INIT,
            "PHP JSHash's initial hash value",
        ),
        constant(
            "jshash_folds",
            json!([
                [4_000_000_000u64, 5],
                [3_000_000_000u64, 4],
                [2_000_000_000u64, 3]
            ]),
            "limitMemory: a value above the first number is divided by the second (first match)",
        ),
    ]
}

/// The computations every client does: the sized filters' hashes and block plan, then the JSHash.
fn functions() -> Vec<Function> {
    [hashing(), sizing(), vec![jshash()]].concat()
}

/// How an item picks its block and its bits: murmur3 double hashing.
fn hashing() -> Vec<Function> {
    vec![
        with_vectors(
            function(
                "murmur3_x86_32",
                "murmur3_x86_32(data: bytes, h: u32) -> u32",
                &[
                    "Austin Appleby's MurmurHash3_x86_32, all arithmetic modulo 2^32: c1 = 0xcc9e2d51, c2 = 0x1b873593",
                    "for each 4-byte little-endian block k: k = rotl(k * c1, 15) * c2; h ^= k; h = rotl(h, 13) * 5 + 0xe6546b64",
                    "tail (1 to 3 bytes, little-endian into k): k = rotl(k * c1, 15) * c2; h ^= k",
                    "h ^= len(data); h ^= h >> 16; h *= 0x85ebca6b; h ^= h >> 13; h *= 0xc2b2ae35; h ^= h >> 16",
                    "as Python mmh3.hash(data, h, signed=False) and PHP hexdec(hash('murmur3a', data, false, ['seed' => h]))",
                ],
            ),
            &["tests/data/sized_vectors.tsv (h1, h2, block_hash)"],
        ),
        with_vectors(
            function(
                "sized_offsets",
                "sized_offsets(item: bytes, block_bits: integer[], k) -> (block, offsets)",
                &[
                    "h1 = murmur3_x86_32(item, h1_init); h2 = murmur3_x86_32(item, h2_init); hb = murmur3_x86_32(item, hb_init)",
                    "M = sum(block_bits); S_j = block_bits[0] + .. + block_bits[j-1] (S_0 = 0)",
                    "x = floor(hb * M / 2^32), exact (a 128-bit product; with 63-bit integers and M < 2^47: ((hb >> 16) * M + (((hb & 0xFFFF) * M) >> 16)) >> 16)",
                    "block = the j with S_j <= x < S_(j+1) (NOT hb mod blocks)",
                    "g_i = (h1 + i * h2) mod block_bits[block] for i = 0 .. k-1, with h1 + i * h2 computed exactly (not mod 2^32)",
                    "the item's bits are g_0 .. g_(k-1) of the block's string",
                ],
            ),
            &["tests/data/sized_vectors.tsv (block_bits, k, block, offsets)"],
        ),
    ]
}

/// How a filter is sized: m and k, the config's p, jemalloc's size classes and the block plan.
fn sizing() -> Vec<Function> {
    vec![
        function(
            "params",
            "params(n, p, max_bits, max_block_bytes) -> (m, k, block_bits)",
            &[
                "refuse n < 1, p not strictly between 0 and 1, max_block_bytes outside 64..max_block_bytes",
                "mf = ceil(-(double)n * log(p) / (ln2 * ln2)) in IEEE double arithmetic, in exactly this order; refuse mf > max_bits",
                "m = max(1, mf); kf = round_half_away_from_zero((double)m / (double)n * ln2), at least 1; refuse kf > max_k; k = kf",
                "block_bits = plan_blocks(m, max_block_bytes)",
            ],
        ),
        function(
            "format_p",
            "format_p(p: double) -> string",
            &[
                "the config's p field: the shortest decimal that reads back as p (round trip), as Rust's {:?} writes it:",
                "plain when 1e-4 <= p < 1e16 (0.01, 0.0001), else <digits>e<exponent> with the mantissa's shortest digits and a",
                "plain exponent (1e-5, 1.5e-7: no `+`, no leading zeros, no `.0`)",
            ],
        ),
        function(
            "size_class",
            "size_class(size) -> integer",
            &[
                "size <= min_class: min_class",
                "else lg = floor(log2(size - 1)); step = 2^max(lg - lg_classes_per_doubling, lg_quantum); ceil(size / step) * step",
            ],
        ),
        function(
            "class_below",
            "class_below(class) -> integer",
            &[
                "class <= min_class: 0; class <= 2 * min_class: min_class",
                "else lg = floor(log2(class - 1)); class - 2^max(lg - lg_classes_per_doubling, lg_quantum)",
            ],
        ),
        function(
            "sds_overhead",
            "sds_overhead(len) -> integer",
            &[
                "1 + sds_headers[0] when len < 2^8, [1] when < 2^16, [2] when < 2^32, else [3] (header + NUL)",
            ],
        ),
        function(
            "payload_of_class",
            "payload_of_class(class) -> integer",
            &[
                "the first p of max(0, class - 1 - h) for h in sds_headers, in order, with p + sds_overhead(p) <= class; 0 when none",
            ],
        ),
        function(
            "plan_blocks",
            "plan_blocks(m, max_block_bytes) -> integer[]",
            &[
                "total_bytes = ceil((m + 1) / 8); tolerance = max(floor(total_bytes / waste_divisor), min_waste)",
                "max_blocks = ceil(total_bytes / max_block_bytes) + extra_blocks; blocks = []; need = m",
                "loop: need_bytes = ceil((need + 1) / 8); class = size_class(need_bytes + sds_overhead(need_bytes))",
                "  fill = clamp(payload_of_class(class), need_bytes, max(max_block_bytes, need_bytes)); waste = class - need_bytes - sds_overhead(need_bytes)",
                "  if need_bytes <= max_block_bytes and (waste <= tolerance or len(blocks) + 1 >= max_blocks): append min(fill, max_block_bytes) * 8 - 1; return blocks",
                "  cap = min(need_bytes, max_block_bytes); c = size_class(cap + sds_overhead(cap)); while payload_of_class(c) > cap: c = class_below(c)",
                "  bytes = max(payload_of_class(c), min_class); append bytes * 8 - 1; need = max(0, need - (bytes * 8 - 1)); if need = 0: return blocks",
            ],
        ),
    ]
}

/// PHP's `BloomFilter::JSHash`, bit for bit.
fn jshash() -> Function {
    with_vectors(
        function(
            "jshash",
            "jshash(item: bytes, limit_memory: bool) -> u32",
            &[
                "PHP 8 (64-bit) BloomFilter::JSHash, bit for bit: hash = jshash_init, a PHP integer (signed 64-bit)",
                "for each byte c: t = (hash << 5) + c + (hash >> 2), where << wraps in 64 bits and >> is arithmetic,",
                "  and each + that overflows int64 turns the sum into a double (both operands converted; later additions in double);",
                "  hash ^= int(t), where int of a double is PHP's conversion: truncation inside [-2^63, 2^63), else fmod(t, 2^64)",
                "  made non-negative, converted to an unsigned 64-bit integer and reinterpreted as signed",
                "num = (hash % 0xFFFFFFFF) & 0xFFFFFFFF with % truncating toward zero (C) and & on the two's complement value",
                "limit_memory: num > 4e9: floor(num / 5); else > 3e9: floor(num / 4); else > 2e9: floor(num / 3) (jshash_folds)",
                "an empty item is refused (its value is the constant jshash_init)",
            ],
        ),
        &["tests/data/jshash_vectors.tsv (input_hex, limit_memory, jshash)"],
    )
}

/// How each operation runs: create, open, add and exists, the JSHash bitmaps, clear and destroy.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "create",
            &["bloom.create", "bloom.init_block", "EXISTS"],
            &[
                "(m, k, block_bits) = params(n, p, ...); config args: m, k, n, format_p(p), block_bits joined by `,`, scheme, scheme_version, spread",
                "without spread: bloom.create(config, every block key, ...) creates config and blocks in one call (1), or checks an existing one (0; BLOOMCONFIG: other parameters)",
                "with spread: EXISTS config; if it exists: bloom.create(config, no blocks, ...) then bloom.init_block(block_j, block_bits[j], 0) for every block (required)",
                "  else bloom.init_block(block_j, block_bits[j], 1) for every block FIRST (pristine leftovers are adopted), then bloom.create(config, no blocks, ...) LAST",
                "  (a crash in between leaves only blocks, which the retry adopts); BLOOMCONFIG from init_block when the config appeared meanwhile: open it",
            ],
        ),
        protocol(
            "open",
            &["HGETALL", "GETBIT"],
            &[
                "HGETALL config (empty: no filter); scheme and version must be scheme / scheme_version; block_bits split on `,`",
                "GETBIT block_j block_bits[j] must be 1 for every block (else the block is lost: NOFILTER)",
            ],
        ),
        protocol(
            "add_and_exists",
            &["bloom.add", "bloom.exists", "BITFIELD"],
            &[
                "group items by sized_offsets' block, keep their order inside a block, cut each group into calls of floor(chunk_offsets / k) items",
                "bloom.add(block key, block_bits[j], k, the items' offsets k per item) -> per item 1 when new; bloom.exists -> per item 1 when maybe present",
                "(the Rust default engine sends the same bits as BITFIELD SET/GET u1 with the sentinel first; the layout is the same)",
            ],
        ),
        protocol(
            "jshash",
            &["bloom.jshash_add", "bloom.jshash_exists"],
            &[
                "bloom.jshash_add(bitmap, jshash(item, limit_memory) per item) -> per item 1 when its bit was 0; bloom.jshash_exists -> per item its bit",
            ],
        ),
        protocol(
            "clear_and_destroy",
            &["bloom.clear", "DEL"],
            &[
                "clear: bloom.clear(blocks, block_bits) (with spread one call per block); destroy: DEL config and every block",
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::{Bloom, BloomParams, JsHashBloom};
    use crate::contract::parts::KeyTemplate;

    #[test]
    fn templates_render_the_keys_the_filters_use() {
        let c = contract();
        let params = BloomParams::new(1_000_000, 0.01, DEFAULT_MAX_BITS, MAX_BLOCK_BYTES).unwrap();
        for spread in [false, true] {
            let b = Bloom::assemble(
                "emails",
                &crate::keys::Prefix::new(DEFAULT_PREFIX).unwrap(),
                params.clone(),
                spread,
            );
            assert_eq!(
                KeyTemplate::render(
                    &c.keys[0].template,
                    &[("prefix", DEFAULT_PREFIX), ("name", "emails")]
                ),
                b.config_key()
            );
            let t = if spread { &c.keys[2] } else { &c.keys[1] };
            for (j, k) in b.block_keys().iter().enumerate() {
                assert_eq!(
                    &KeyTemplate::render(
                        &t.template,
                        &[
                            ("prefix", DEFAULT_PREFIX),
                            ("name", "emails"),
                            ("j", &j.to_string())
                        ]
                    ),
                    k
                );
            }
        }
        let js = JsHashBloom::new("bloom_user_email").unwrap();
        assert_eq!(
            KeyTemplate::render(&c.keys[3].template, &[("key", "bloom_user_email")]),
            js.key()
        );
        assert_eq!(BloomHash::js_hash(b"", false) as i64, JS_HASH_INIT);
        assert_eq!(params.p_field(), "0.01");
        assert_eq!(
            BloomParams {
                p: 1.5e-7,
                ..params.clone()
            }
            .p_field(),
            "1.5e-7"
        );
        assert_eq!(BloomParams { p: 1e-4, ..params }.p_field(), "0.0001");
    }
}
