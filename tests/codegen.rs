//! The generator's golden file is real Rust: compile it against the
//! library's runtime types and check what its wrappers put where, and that
//! they refuse what the header refuses before anything is sent. (The
//! generator's own tests, golden files included, are in crates/codegen.)

/// The golden file is real Rust: compile it here and check what its
/// wrappers put where.
mod golden {
    #![allow(dead_code)]
    use redis_patterns::script::{
        ArgSpec, ArgType, Bound, KeySpec, KeyType, ScriptCall, ScriptInfo,
    };
    use redis_patterns::{Error, Result};
    include!("../crates/codegen/tests/fixtures/generated.rs.golden");
}

use redis_patterns::ErrorKind;

#[test]
fn golden_wrappers_place_keys_and_args_in_header_order() {
    let call = golden::demo::put(
        "c",
        &["a", "b"],
        100,
        50,
        1.5,
        "NX",
        &[b"x".as_slice(), b"y".as_slice()],
    )
    .unwrap();
    assert_eq!(call.keys(), [b"c".to_vec(), b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(
        call.args(),
        [
            b"100".to_vec(),
            b"50".to_vec(),
            b"1.5".to_vec(),
            b"NX".to_vec(),
            b"x".to_vec(),
            b"y".to_vec()
        ]
    );
    let packed = String::from_utf8_lossy(&call.cmd().get_packed_command()).into_owned();
    assert!(packed.contains("EVALSHA\r\n") && packed.contains(golden::DEMO_PUT.sha1));
    let ro = golden::demo::peek("t", "l").unwrap();
    assert!(String::from_utf8_lossy(&ro.cmd().get_packed_command()).contains("EVALSHA_RO"));
    let rotate = golden::demo::rotate("m", &["h", "l"], -5, true).unwrap();
    assert_eq!(rotate.args(), [b"-5".to_vec(), b"1".to_vec()]);
    assert_eq!(golden::ALL.len(), 3);
    assert_eq!(golden::demo::PUT_TTL_MS_MAX, 86_400_000);
}

#[test]
fn golden_wrappers_refuse_what_the_header_refuses() {
    let refused = |r: redis_patterns::Result<redis_patterns::ScriptCall<Vec<i64>>>,
                   name: &str,
                   reason: &str| {
        match r.map_err(redis_patterns::Error::into_kind) {
            Err(ErrorKind::InvalidArgument {
                script: None,
                name: n,
                reason: why,
            }) => {
                assert_eq!((n.as_str(), why.as_str()), (name, reason));
                let spec = golden::DEMO_PUT
                    .args
                    .iter()
                    .find(|a| a.name == name)
                    .unwrap();
                assert_eq!(spec.reason, reason, "the registry carries the same reason");
            }
            other => panic!("expected InvalidArgument({name}), got {other:?}"),
        }
    };
    let v: &[&[u8]] = &[b"x"];
    refused(
        golden::demo::put("c", &["a"], 0, 0, 1.0, "NX", v),
        "ttl_ms",
        "must be an integer from 1 to 86400000",
    );
    refused(
        golden::demo::put("c", &["a"], 100, 101, 1.0, "NX", v),
        "grace_ms",
        "must be an integer from 0 to ttl_ms",
    );
    refused(
        golden::demo::put("c", &["a"], 100, 0, f64::NAN, "NX", v),
        "weight",
        "must be a finite number",
    );
    refused(
        golden::demo::put("c", &["a"], 100, 0, 1.0, "nx", v),
        "mode",
        "must be one of NX, XX, ANY",
    );
    refused(
        golden::demo::put("c", &["a", "b"], 100, 0, 1.0, "XX", &[b"x".as_slice(), b""]),
        "values",
        "must not be empty",
    );
    // The bounds, as the registry and the constants give them.
    let ttl = golden::DEMO_PUT.args[0];
    assert_eq!(
        (ttl.min, ttl.max),
        (
            Some(redis_patterns::script::Bound::Value(1)),
            Some(redis_patterns::script::Bound::Value(86_400_000))
        )
    );
    assert_eq!(
        golden::DEMO_PUT.args[1].max.unwrap().to_string(),
        "ttl_ms",
        "a bound naming another argument"
    );
    // The by-name dispatcher reaches the same wrappers.
    let cmd = golden::typed_call("demo.rotate", &["m", "h", "l"], &[b"7", b"0"])
        .expect("fits the types")
        .expect("valid");
    assert_eq!(
        cmd.get_packed_command(),
        golden::demo::rotate("m", &["h", "l"], 7, false)
            .unwrap()
            .cmd()
            .get_packed_command()
    );
    assert!(golden::typed_call("demo.rotate", &["m"], &[b"007", b"0"]).is_none());
    assert!(golden::typed_call("demo.rotate", &["m"], &[b"7", b"2"]).is_none());
    assert!(golden::typed_call("demo.rotate", &["m"], &[b"7"]).is_none());
    assert!(golden::typed_call("demo.nope", &[], &[]).is_none());
    assert!(matches!(
        golden::typed_call("demo.put", &["c"], &[b"0", b"0", b"1", b"NX"]),
        Some(Err(_))
    ));
}
