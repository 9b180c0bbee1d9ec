use std::time::Duration;

use redis_patterns::keys::Prefix;
use redis_patterns::lock::Lock;
use redis_patterns::{Connection, ErrorKind, Request};

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut a = Connection::open(url)?;
    let mut b = Connection::open(url)?;
    let lock = Lock::builder("withdraw:42")
        .prefix(Prefix::new(prefix)?)
        .lease(Duration::from_millis(300))
        .build()?;

    let first = lock.try_acquire().run(&mut a)?;
    crate::out::outln!(
        "client A acquired {} (fencing token {})",
        lock.key(),
        first.fence
    );
    match lock.try_acquire().run(&mut b).map_err(|e| e.into_kind()) {
        Err(ErrorKind::LockBusy { retry_after_ms, .. }) => match retry_after_ms {
            Some(ms) => {
                crate::out::outln!("client B is refused while A holds it ({ms} ms of lease left)")
            }
            None => {
                crate::out::outln!("client B is refused while A holds it (the lock has no lease)")
            }
        },
        Ok(_) => return Err("client B got a lock that client A holds".into()),
        Err(e) => return Err(redis_patterns::Error::from(e).into()),
    }
    crate::out::outln!(
        "client B tries to release with a wrong token: released = {}",
        lock.release("not-the-owner").run(&mut b)?
    );
    std::thread::sleep(Duration::from_millis(350));
    let second = lock.acquire(Duration::from_secs(1)).run(&mut b)?;
    crate::out::outln!(
        "A's lease ran out; B acquired with fencing token {} (> {})",
        second.fence,
        first.fence
    );
    crate::out::outln!(
        "A's late release (an unconditional EXPIRE would delete B's lock): released = {}",
        lock.release(&first.token).run(&mut a)?
    );
    match lock.owned(&second.token).run(&mut b)? {
        Some(left) => crate::out::outln!("B still owns it: {} ms left", left.as_millis()),
        None => return Err("B lost a lock it should still hold".into()),
    }
    crate::out::outln!(
        "B releases: released = {}",
        lock.release(&second.token).run(&mut b)?
    );
    {
        let guard = lock.guard(&mut a, Duration::from_secs(1))?;
        crate::out::outln!(
            "a guard took it with fencing token {}; dropping the guard releases it",
            guard.fence()
        );
    }
    let _: () = a.query(redis::cmd("DEL").arg(lock.key()).arg(lock.fence_key()))?;
    Ok(())
}
