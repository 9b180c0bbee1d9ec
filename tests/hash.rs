//! The hash functions against reference values computed by real PHP:
//! `tests/data/jshash_vectors.tsv` (the seed's `JSHash`, copied verbatim into
//! `tests/data/shared.php`, run by `tests/data/jshash_vectors.php`) and `tests/data/sized_vectors.tsv` (the
//! sized filters' scheme computed with PHP's built-in `murmur3a`).

use redis_patterns::bloom::BloomHash;

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect())
        .collect()
}

#[test]
fn js_hash_equals_php_on_every_committed_vector() {
    let text = include_str!("data/jshash_vectors.tsv");
    let rows = rows(text);
    assert!(rows.len() >= 700, "expected a few hundred vectors");
    let mut long = 0;
    for row in &rows {
        let input = unhex(row[0]);
        let limit = row[1] == "1";
        let want: u32 = row[2].parse().expect("u32");
        assert_eq!(
            BloomHash::js_hash(&input, limit),
            want,
            "input {:?} limit_memory {limit}",
            String::from_utf8_lossy(&input)
        );
        if input.len() >= 1000 {
            long += 1;
        }
    }
    assert!(long >= 8, "long inputs are part of the vectors");
}

#[test]
fn js_hash_issue_values() {
    for (input, want) in [
        ("", 1315423911u32),
        ("a", 978430663),
        ("abc", 984010710),
        ("hello@example.com", 701432834),
        ("13800138000", 847338860),
    ] {
        assert_eq!(
            BloomHash::js_hash(input.as_bytes(), true),
            want,
            "{input:?}"
        );
    }
}

#[test]
fn js_hash_limit_memory_folds_large_values() {
    // "a" hashes to 2935291990 unfolded, above 2e9: divided by 3.
    assert_eq!(BloomHash::js_hash(b"a", false), 2935291990);
    assert_eq!(BloomHash::js_hash(b"a", true), 2935291990 / 3);
    // Folding maps different inputs onto one offset: "b" is 2935291989.
    assert_eq!(
        BloomHash::js_hash(b"b", true),
        BloomHash::js_hash(b"a", true)
    );
    let text = include_str!("data/jshash_vectors.tsv");
    for row in rows(text).chunks(2) {
        let (limited, raw): (u32, u32) = (row[0][2].parse().unwrap(), row[1][2].parse().unwrap());
        assert!(limited <= 2_000_000_000);
        let folded = match raw {
            r if r > 4_000_000_000 => r / 5,
            r if r > 3_000_000_000 => r / 4,
            r if r > 2_000_000_000 => r / 3,
            r => r,
        };
        assert_eq!(limited, folded);
    }
}

#[test]
fn sized_scheme_equals_php_vectors() {
    let text = include_str!("data/sized_vectors.tsv");
    let rows = rows(text);
    assert!(rows.len() >= 60);
    let mut not_modulo = 0;
    let mut multi_block = 0;
    for row in rows {
        let input = unhex(row[0]);
        let n = |i: usize| row[i].parse::<u64>().expect("number");
        let (h1, h2, hb) = BloomHash::sized_hashes(&input);
        assert_eq!(
            (h1 as u64, h2 as u64, hb as u64),
            (n(1), n(2), n(3)),
            "{input:?}"
        );
        assert_eq!(BloomHash::murmur3_32(&input, BloomHash::SEED_H1), h1);
        assert_eq!(BloomHash::murmur3_32(&input, BloomHash::SEED_H2), h2);
        assert_eq!(BloomHash::murmur3_32(&input, BloomHash::SEED_BLOCK), hb);
        let block_bits: Vec<u64> = row[4].split(',').map(|s| s.parse().unwrap()).collect();
        let k = n(5);
        let mut starts = Vec::new();
        let mut total = 0;
        for b in &block_bits {
            starts.push(total);
            total += b;
        }
        let block = BloomHash::select_block(hb, &starts, total);
        assert_eq!(block as u64, n(6), "block of {input:?} in {block_bits:?}");
        if block_bits.len() > 1 {
            multi_block += 1;
            if hb as u64 % block_bits.len() as u64 != n(6) {
                not_modulo += 1;
            }
        }
        let mut offsets = Vec::new();
        BloomHash::double_hash_offsets(h1, h2, k as u32, block_bits[block], &mut offsets);
        let want: Vec<u64> = row[7].split(',').map(|s| s.parse().unwrap()).collect();
        assert_eq!(offsets, want, "{input:?}");
    }
    // The vectors tell the real selector from `block_hash mod blocks`.
    assert!(
        multi_block >= 40 && not_modulo >= 20,
        "{multi_block} {not_modulo}"
    );
}

#[test]
fn select_block_splits_in_proportion_to_block_sizes() {
    // Blocks of 1, 2 and 1 quarters of 2^32 bits: hb maps to itself.
    let q = 1u64 << 30;
    let starts = [0, q, 3 * q];
    let total = 4 * q;
    assert_eq!(BloomHash::select_block(0, &starts, total), 0);
    assert_eq!(BloomHash::select_block((q - 1) as u32, &starts, total), 0);
    assert_eq!(BloomHash::select_block(q as u32, &starts, total), 1);
    assert_eq!(
        BloomHash::select_block((3 * q - 1) as u32, &starts, total),
        1
    );
    assert_eq!(BloomHash::select_block((3 * q) as u32, &starts, total), 2);
    assert_eq!(BloomHash::select_block(u32::MAX, &starts, total), 2);
    // One block: always 0, even beyond 2^32 bits.
    assert_eq!(BloomHash::select_block(u32::MAX, &[0], 1 << 40), 0);
    // Totals above 2^32 need the wide product: hb * total overflows u64.
    let big = [0u64, 4_294_967_295, 8_589_934_590];
    let total = 8_589_934_590 + 2_147_483_647;
    assert_eq!(BloomHash::select_block(u32::MAX, &big, total), 2);
    assert_eq!(BloomHash::select_block(1 << 31, &big, total), 1);
}
