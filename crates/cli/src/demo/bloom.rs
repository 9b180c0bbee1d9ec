use redis_patterns::bloom::{Bloom, BloomOptions, SeedBloom};
use redis_patterns::{Error, ErrorKind};

pub fn run(client: &redis::Client, prefix: &str) -> super::DemoResult {
    let mut con = client.get_connection()?;

    // Seed-compatible: the PHP seed's bitmap, one JSHash bit per item.
    let seed = SeedBloom::new(&format!("{prefix}bloom_user_email"))?;
    println!(
        "seed mode: JSHash(\"hello@example.com\") = {} (same offset the PHP seed uses)",
        seed.offset(b"hello@example.com")?
    );
    seed.multi_add(&mut con, &["hello@example.com", "a@example.com"])?;
    println!(
        "seed mode: exists(hello@example.com) = {}, exists(nobody@example.com) = {}",
        seed.exists(&mut con, "hello@example.com")?,
        seed.exists(&mut con, "nobody@example.com")?
    );

    // Sized: n = 100,000 at p = 1 %.
    let options = BloomOptions {
        prefix: format!("{prefix}bloom:"),
        ..BloomOptions::default()
    };
    let bf = Bloom::create_with(&mut con, "emails", 100_000, 0.01, &options)?;
    let p = bf.params();
    println!(
        "sized filter {}: m = {} bits, k = {}, blocks of {:?} usable bits",
        bf.config_key(),
        p.m,
        p.k,
        p.block_bits
    );
    let flags = bf.multi_add(&mut con, &["alice", "bob", "alice"])?;
    println!("multi-add [alice, bob, alice] -> newly added {flags:?}");
    let items: Vec<String> = (0..20_000)
        .map(|i| format!("user{i}@example.com"))
        .collect();
    let done = bf.load(&mut con, items.iter(), 5_000, 0, |_| {})?;
    println!(
        "bulk-loaded {} items ({} new); approx count now {}",
        done.done,
        done.added,
        bf.approx_count(&mut con)?
    );
    println!(
        "multi-exists [alice, carol, user7@example.com] -> {:?}",
        bf.multi_exists(&mut con, &["alice", "carol", "user7@example.com"])?
    );
    match Bloom::create_with(&mut con, "emails", 200_000, 0.01, &options).map_err(Error::into_kind)
    {
        Err(ErrorKind::BloomConfigMismatch { detail }) => {
            println!("re-creating it with n = 200,000 is refused: {detail}")
        }
        other => return Err(format!("expected a config mismatch, got {other:?}").into()),
    }
    bf.destroy(&mut con)?;
    let _: () = redis::cmd("DEL").arg(seed.key()).query(&mut con)?;
    Ok(())
}
