use std::time::Duration;

use redis_patterns::lock::Lock;
use redis_patterns::{Error, ErrorKind};

pub fn run(client: &redis::Client, prefix: &str) -> super::DemoResult {
    let mut a = client.get_connection()?;
    let mut b = client.get_connection()?;
    let lock = Lock::with_prefix(prefix, "withdraw:42", Duration::from_millis(300))?;

    let first = lock.try_acquire(&mut a)?;
    println!(
        "client A acquired {} (fencing token {})",
        lock.key(),
        first.fence
    );
    match lock.try_acquire(&mut b).map_err(Error::into_kind) {
        Err(ErrorKind::LockBusy { retry_after_ms, .. }) => {
            println!("client B is refused while A holds it (lease left: {retry_after_ms:?} ms)")
        }
        other => return Err(format!("expected LockBusy, got {other:?}").into()),
    }
    println!(
        "client B tries to release with a wrong token: released = {}",
        lock.release(&mut b, "not-the-owner")?
    );
    std::thread::sleep(Duration::from_millis(350));
    let second = lock.acquire(&mut b, Duration::from_secs(1))?;
    println!(
        "A's lease ran out; B acquired with fencing token {} (> {})",
        second.fence, first.fence
    );
    println!(
        "A's late release (the seed's bug would delete B's lock): released = {}",
        lock.release(&mut a, &first.token)?
    );
    println!(
        "B still owns it: {:?} left",
        lock.owned(&mut b, &second.token)?
    );
    println!(
        "B releases: released = {}",
        lock.release(&mut b, &second.token)?
    );
    {
        let guard = lock.lock(&mut a, Duration::from_secs(1))?;
        println!(
            "a guard took it with fencing token {}; dropping the guard releases it",
            guard.fence()
        );
    }
    let _: () = redis::cmd("DEL")
        .arg(lock.key())
        .arg(lock.fence_key())
        .query(&mut a)?;
    Ok(())
}
