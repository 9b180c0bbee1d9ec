//! The generator's golden file is real Rust: compile it against the
//! library's runtime types and check what its wrappers put where. (The
//! generator's own tests, golden file included, are in crates/codegen.)

/// The golden file is real Rust: compile it here and check what its
/// wrappers put where.
mod golden {
    #![allow(dead_code)]
    use redis_patterns::script::{ArgSpec, ArgType, KeySpec, ScriptCall, ScriptInfo};
    include!("../crates/codegen/tests/fixtures/generated.rs.golden");
}

#[test]
fn golden_wrappers_place_keys_and_args_in_header_order() {
    let call = golden::demo::put(
        "c",
        &["a", "b"],
        100,
        1.5,
        &[b"x".as_slice(), b"y".as_slice()],
    );
    assert_eq!(call.keys(), [b"c".to_vec(), b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(
        call.args(),
        [
            b"100".to_vec(),
            b"1.5".to_vec(),
            b"x".to_vec(),
            b"y".to_vec()
        ]
    );
    let packed = String::from_utf8_lossy(&call.cmd().get_packed_command()).into_owned();
    assert!(packed.contains("EVALSHA\r\n") && packed.contains(golden::DEMO_PUT.sha1));
    let ro = golden::demo::peek("t", "l");
    assert!(String::from_utf8_lossy(&ro.cmd().get_packed_command()).contains("EVALSHA_RO"));
    assert_eq!(golden::ALL.len(), 2);
}
