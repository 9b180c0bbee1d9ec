use std::time::Duration;

use redis_patterns::keys::Prefix;
use redis_patterns::semaphore::Semaphore;
use redis_patterns::{Connection, ErrorKind, Request};

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;
    let exports = Semaphore::builder("exports", 2)
        .prefix(Prefix::new(prefix)?)
        .lease(Duration::from_millis(300))
        .build()?;
    let one = exports.try_acquire().run(&mut con)?;
    let _crashed = exports.try_acquire().run(&mut con)?;
    crate::out::outln!("two exports hold the 2 permits of {}", exports.key());
    if let ErrorKind::NoPermit { retry_after_ms, .. } = super::refusal(
        exports.try_acquire().run(&mut con),
        |k| matches!(k, ErrorKind::NoPermit { .. }),
        "a third holder got a permit of two",
    )? {
        crate::out::outln!(
            "a third is refused: every permit is taken (the first lease ends in {} ms)",
            retry_after_ms.unwrap_or(0)
        )
    }
    crate::out::outln!(
        "the first export finishes and gives its permit back: released = {}",
        crate::out::known(exports.release(&one.token).run(&mut con)?)
    );
    let third = exports.try_acquire().run(&mut con)?;
    crate::out::outln!("the third takes the free permit");
    // The second export crashed: its permit comes back when its lease ends.
    let fourth = exports.acquire(Duration::from_secs(2)).run(&mut con)?;
    crate::out::outln!(
        "the second export never released (it crashed); a fourth got its permit when its lease ended"
    );
    for p in [third, fourth] {
        exports.release(&p.token).run(&mut con)?;
    }
    Ok(())
}
