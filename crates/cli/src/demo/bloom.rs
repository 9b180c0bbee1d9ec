use redis_patterns::bloom::{Bloom, JsHashBloom};
use redis_patterns::keys::Prefix;
use redis_patterns::{Connection, ErrorKind, Request};

/// `[a, b, c]` of displayable values.
fn list<T: std::fmt::Display>(values: &[T]) -> String {
    let parts: Vec<String> = values.iter().map(T::to_string).collect();
    format!("[{}]", parts.join(", "))
}

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;

    // PHP-compatible: the bitmap of the PHP BloomFilter::JSHash recipe, one
    // JSHash bit per item.
    let php = JsHashBloom::builder("bloom_user_email")
        .prefix(Prefix::new(prefix)?)
        .build()?;
    crate::out::outln!(
        "JSHash filter: JSHash(\"hello@example.com\") = {} (the offset the PHP recipe uses)",
        php.offset(b"hello@example.com")?
    );
    php.multi_add(&["hello@example.com", "a@example.com"])
        .run(&mut con)?;
    crate::out::outln!(
        "JSHash filter: exists(hello@example.com) = {}, exists(nobody@example.com) = {}",
        php.exists("hello@example.com").run(&mut con)?,
        php.exists("nobody@example.com").run(&mut con)?
    );

    // Sized: n = 100,000 at p = 1 %.
    let sized = |n: u64| -> redis_patterns::Result<_> {
        Ok(Bloom::builder("emails")
            .prefix(Prefix::new(&format!("{prefix}bloom:"))?)
            .expected(n)
            .fp_rate(0.01))
    };
    let bf = sized(100_000)?.create().run(&mut con)?;
    let p = bf.params();
    crate::out::outln!(
        "sized filter {}: m = {} bits, k = {}, blocks of {} usable bits",
        bf.key(),
        p.m,
        p.k,
        list(&p.block_bits)
    );
    let flags = bf.multi_add(&["alice", "bob", "alice"]).run(&mut con)?;
    crate::out::outln!(
        "multi-add [alice, bob, alice] -> newly added {}",
        list(&flags.into_iter().map(crate::out::known).collect::<Vec<_>>())
    );
    let items: Vec<String> = (0..20_000)
        .map(|i| format!("user{i}@example.com"))
        .collect();
    let done = bf.load(items).batch(5_000).into_op(|_| {}).run(&mut con)?;
    crate::out::outln!(
        "bulk-loaded {} items ({} new); approx count now {}",
        done.done,
        done.added,
        bf.approx_count().run(&mut con)?
    );
    crate::out::outln!(
        "multi-exists [alice, carol, user7@example.com] -> {}",
        list(
            &bf.multi_exists(&["alice", "carol", "user7@example.com"])
                .run(&mut con)?
        )
    );
    if let ErrorKind::BloomConfigMismatch { detail } = super::refusal(
        sized(200_000)?.create().run(&mut con),
        |k| matches!(k, ErrorKind::BloomConfigMismatch { .. }),
        "re-creating it with other parameters was not refused",
    )? {
        crate::out::outln!("re-creating it with n = 200,000 is refused: {detail}")
    }
    bf.destroy().run(&mut con)?;
    let _: i64 = con.query(redis::cmd("DEL").arg(php.key()))?;
    Ok(())
}
