//! `cargo run --example rwlock`: readers share the lock; a waiting writer
//! keeps new readers out until the readers left, and gets it then. Talks to
//! `REDIS_URL`, else starts a throwaway redis-server.

use std::time::Duration;

use redis_patterns::prelude::*;
use redis_patterns::rwlock::RwLock;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let prices = RwLock::new("example:prices", Duration::from_secs(10))?;
    let a = prices.try_read().run(&mut con)?;
    let b = prices.try_read().run(&mut con)?;
    println!("two readers share it");
    let refused = prices.try_write().run(&mut con).unwrap_err();
    println!("a single write attempt: {refused}");

    // A writer that waits records its intent: new readers wait behind it.
    let writer = {
        let (prices, url) = (prices.clone(), url.to_string());
        std::thread::spawn(move || -> redis_patterns::Result<()> {
            let mut con = Connection::open(url.as_str())?;
            let write = prices.write(Duration::from_secs(5)).run(&mut con)?;
            println!("the writer got it once the readers left");
            prices.release(&write).run(&mut con)?;
            Ok(())
        })
    };
    let mut kept_out = false;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(20));
        match prices.try_read().run(&mut con) {
            Ok(late) => prices.release(&late).run(&mut con).map(drop)?,
            Err(e) => {
                println!("a new reader while the writer waits: {e}");
                kept_out = true;
                break;
            }
        }
    }
    assert!(kept_out);
    prices.release(&a).run(&mut con)?;
    prices.release(&b).run(&mut con)?;
    writer.join().expect("the writer")?;
    Ok(())
}
