use std::time::{Duration, Instant};

use redis_patterns::keys::Prefix;
use redis_patterns::rwlock::RwLock;
use redis_patterns::{Connection, Request};

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;
    let prices = RwLock::builder("prices")
        .prefix(Prefix::new(prefix)?)
        .lease(Duration::from_secs(10))
        .build()?;
    let r1 = prices.try_read().run(&mut con)?;
    let r2 = prices.try_read().run(&mut con)?;
    crate::out::outln!("two readers share {}", prices.writer_key());
    crate::out::outln!(
        "a single write attempt is refused while they read: busy = {}",
        prices.try_write().run(&mut con).is_err_and(|e| e.is_busy())
    );
    // A writer that waits keeps new readers out, then is woken by the last
    // reader's release.
    let writer = {
        let (prices, mut con) = (prices.clone(), Connection::open(url)?);
        std::thread::spawn(move || prices.write(Duration::from_secs(5)).run(&mut con))
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let waiting: i64 = con.query(redis::cmd("ZCARD").arg(prices.intents_key()))?;
        if waiting > 0 || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    crate::out::outln!(
        "while a writer waits, a new reader is refused: busy = {}",
        prices.try_read().run(&mut con).is_err_and(|e| e.is_busy())
    );
    prices.release(&r1).run(&mut con)?;
    prices.release(&r2).run(&mut con)?;
    let write = writer.join().map_err(|_| "the writer panicked")??;
    crate::out::outln!(
        "the readers leave; the writer, woken by the last one's release, holds it alone"
    );
    prices.release(&write).run(&mut con)?;
    let r3 = prices.try_read().run(&mut con)?;
    crate::out::outln!("the writer leaves; readers are let in again");
    prices.release(&r3).run(&mut con)?;
    Ok(())
}
