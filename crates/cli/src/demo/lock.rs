use std::time::{Duration, Instant};

use redis_patterns::keys::Prefix;
use redis_patterns::lease::Guard;
use redis_patterns::lock::{Lease, Lock};

use crate::fail::CliResult;
use redis_patterns::{Connection, ErrorKind, Op, Request};

/// Waits (at most 5 s) until someone subscribed to the shard channel.
fn await_subscriber(con: &mut Connection, channel: &str) -> redis_patterns::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let mut cmd = redis::cmd("PUBSUB");
        cmd.arg("SHARDNUMSUB").arg(channel);
        let reply: Vec<redis::Value> = Op::cmd(channel, cmd).run(con)?;
        if matches!(reply.get(1), Some(redis::Value::Int(n)) if *n > 0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut a = Connection::open(url)?;
    let mut b = Connection::open(url)?;
    let lock = Lock::builder("withdraw:42")
        .prefix(Prefix::new(prefix)?)
        .lease(Duration::from_millis(300))
        .build()?;

    let first = too_fast(&lock, &mut a, &mut b)?;
    let second = late_release(&lock, &mut a, &mut b, &first)?;
    woken_waiter(url, &lock, &mut b, &second)?;
    let job = guarded_job(prefix, &mut a)?;
    let _: () = a.query(
        redis::cmd("DEL")
            .arg(lock.key())
            .arg(lock.fence_key())
            .arg(job.fence_key()),
    )?;
    Ok(())
}

/// The PHP lock recipe's "you are going too fast": a user who repeats an
/// action within the lease is refused at once, nothing waits.
fn too_fast(lock: &Lock, a: &mut Connection, b: &mut Connection) -> CliResult<Lease> {
    let first = lock.try_acquire().run(a)?;
    crate::out::outln!(
        "user 42 clicks withdraw: acquired {} (fencing token {})",
        lock.key(),
        first.fence
    );
    let busy = super::refusal(
        lock.try_acquire().run(b),
        |k| matches!(k, ErrorKind::LockBusy { .. }),
        "a second withdraw got a lock the first one holds",
    )?;
    match busy {
        ErrorKind::LockBusy {
            retry_after_ms: Some(ms),
            ..
        } => crate::out::outln!(
            "user 42 clicks withdraw again: refused at once, \"you are going too fast\" (try again in {ms} ms)"
        ),
        _ => crate::out::outln!(
            "user 42 clicks withdraw again: refused at once (the lock has no lease)"
        ),
    }
    Ok(first)
}

/// A wrong token releases nothing; a lease that ran out goes to the next
/// owner with a higher fencing token, and the late owner's release is refused.
fn late_release(
    lock: &Lock,
    a: &mut Connection,
    b: &mut Connection,
    first: &Lease,
) -> CliResult<Lease> {
    crate::out::outln!(
        "client B tries to release with a wrong token: released = {}",
        crate::out::known(lock.release("not-the-owner").run(b)?)
    );
    std::thread::sleep(Duration::from_millis(350));
    let second = lock.acquire(Duration::from_secs(1)).run(b)?;
    crate::out::outln!(
        "A's lease ran out; B acquired with fencing token {} (> {})",
        second.fence,
        first.fence
    );
    crate::out::outln!(
        "A's late release (an unconditional EXPIRE would delete B's lock): released = {}",
        crate::out::known(lock.release(&first.token).run(a)?)
    );
    Ok(second)
}

/// A waiter is woken by the release (a message in the lock's slot), not
/// by polling.
fn woken_waiter(url: &str, lock: &Lock, b: &mut Connection, second: &Lease) -> CliResult {
    let waiter = {
        let (lock, mut con) = (lock.clone(), Connection::open(url)?);
        std::thread::spawn(move || {
            let lease = lock.acquire(Duration::from_secs(5)).run(&mut con);
            (lease, Instant::now())
        })
    };
    await_subscriber(b, lock.channel())?;
    std::thread::sleep(Duration::from_millis(20));
    let released = Instant::now();
    lock.release(&second.token).run(b)?;
    let (lease, got) = waiter.join().map_err(|_| "the waiter panicked")?;
    let lease = lease?;
    crate::out::outln!(
        "B releases; a waiting client holds it {} us later (woken by the release), fencing token {}",
        got.duration_since(released).as_micros(),
        lease.fence
    );
    lock.release(&lease.token).run(b)?;
    Ok(())
}

/// A long job holds its lock with a guard, which renews the lease. (A
/// lease of a second: renewed every lease/3, it survives a stalled
/// renewal of up to two thirds of it.)
fn guarded_job(prefix: &str, a: &mut Connection) -> CliResult<Lock> {
    let job = Lock::builder("report:42")
        .prefix(Prefix::new(prefix)?)
        .lease(Duration::from_secs(1))
        .build()?;
    {
        let guard = Guard::acquire(&job, a, Duration::from_secs(1))?;
        std::thread::sleep(job.lease() * 2);
        guard.check()?;
        crate::out::outln!(
            "a guard held {} through 2 leases of {} ms (renewed every lease/3), fencing token {}; dropping it releases",
            job.key(),
            job.lease().as_millis(),
            guard.fence()
        );
    }
    Ok(job)
}
