//! Which plain commands may be sent again when their outcome is unknown, and
//! which of them write: the one table behind the exchange's resend decision
//! for commands that are not script calls (a script's own header says it:
//! [`Idempotency`](crate::script::Idempotency)) and behind the durability
//! wait; and what a reply that answers such a resend can tell
//! ([`changed`], [`changed_count`]).
//!
//! Safe to resend: a command that, run a second time right after the first,
//! leaves the data as one run does — every read, and writes such as `SET`,
//! `HSET`, `HSETNX`, `SETBIT`, `SETRANGE`, `DEL`, `SADD`, `ZADD`,
//! `EXPIREAT`, `BITFIELD ... SET`. Its second reply describes the second
//! run (`SADD` then says 0 members were added). Not safe: writes that add
//! to what is there (`INCR`, `HINCRBY`, `APPEND`, `RPUSH`, `XADD`,
//! `BITFIELD ... INCRBY`, `ZADD ... INCR`), that take something away
//! (`LPOP`, `SPOP`, `GETDEL`), whose reply is the point and would be wrong
//! (`SET ... NX`, `SETNX`, `SET ... GET`, `GETSET`: a lock or an old value),
//! relative ones (`LTRIM`, `LREM`, `RENAME`), and every command this table
//! does not know.

use redis::Cmd;

/// What a reply's "this call changed it" answer (a member that was new, a
/// lock that was released, a bit that was 0) says when the reply may
/// answer a resend ([`Replies::resent`](super::Replies::resent)): a resend
/// that changed it knows so (the first attempt did not, or its effect was
/// lost), but one that found it changed cannot tell whether the first
/// attempt changed it or it was so before: `None`, not a `false` that may
/// be wrong.
pub(crate) fn changed(flag: bool, resent: bool) -> Option<bool> {
    (flag || !resent).then_some(flag)
}

/// [`changed`] for a count of changes out of `max` possible (fields new to
/// a hash, records deleted): known unless a resend found some of them
/// changed already.
pub(crate) fn changed_count(n: u64, max: u64, resent: bool) -> Option<u64> {
    (n >= max || !resent).then_some(n)
}

/// What the resend decision and the durability wait need to know of one
/// plain command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Traits {
    /// May be sent again when its outcome is unknown.
    pub(crate) resend_safe: bool,
    /// May change the data (a durability wait follows it).
    pub(crate) writes: bool,
}

const READ: Traits = Traits {
    resend_safe: true,
    writes: false,
};
const SAFE_WRITE: Traits = Traits {
    resend_safe: true,
    writes: true,
};
const UNSAFE: Traits = Traits {
    resend_safe: false,
    writes: true,
};

/// Commands that only read (or touch no data).
const READS: &[&str] = &[
    "BITCOUNT",
    "BITFIELD_RO",
    "BITPOS",
    "DBSIZE",
    "DUMP",
    "ECHO",
    "EVALSHA_RO",
    "EVAL_RO",
    "EXISTS",
    "EXPIRETIME",
    "FCALL_RO",
    "GET",
    "GETBIT",
    "GETRANGE",
    "HEXISTS",
    "HGET",
    "HGETALL",
    "HKEYS",
    "HLEN",
    "HMGET",
    "HRANDFIELD",
    "HSCAN",
    "HSTRLEN",
    "HVALS",
    "INFO",
    "KEYS",
    "LINDEX",
    "LLEN",
    "LPOS",
    "LRANGE",
    "MGET",
    "OBJECT",
    "PEXPIRETIME",
    "PFCOUNT",
    "PING",
    "PTTL",
    "RANDOMKEY",
    "SCAN",
    "SCARD",
    "SDIFF",
    "SINTER",
    "SINTERCARD",
    "SISMEMBER",
    "SMEMBERS",
    "SMISMEMBER",
    "SRANDMEMBER",
    "SSCAN",
    "STRLEN",
    "SUBSTR",
    "SUNION",
    "TIME",
    "TTL",
    "TYPE",
    "WAIT",
    "XLEN",
    "XRANGE",
    "XREVRANGE",
    "ZCARD",
    "ZCOUNT",
    "ZMSCORE",
    "ZRANGE",
    "ZRANGEBYSCORE",
    "ZRANK",
    "ZREVRANGE",
    "ZREVRANK",
    "ZSCAN",
    "ZSCORE",
];

/// Writes that a second run leaves as one run does.
const SAFE_WRITES: &[&str] = &[
    "BITOP",
    "DEL",
    "EXPIREAT",
    "GETEX",
    "HDEL",
    "HMSET",
    "HSET",
    "HSETNX",
    "LSET",
    "MSET",
    "PERSIST",
    "PEXPIREAT",
    "PFADD",
    "PFMERGE",
    "PSETEX",
    "SADD",
    "SDIFFSTORE",
    "SETBIT",
    "SETEX",
    "SETRANGE",
    "SINTERSTORE",
    "SMOVE",
    "SREM",
    "SUNIONSTORE",
    "UNLINK",
    "XACK",
    "XDEL",
    "ZREM",
    "ZREMRANGEBYLEX",
    "ZREMRANGEBYSCORE",
    // Relative expiries: a resend sets the same time to live from a moment
    // later.
    "EXPIRE",
    "PEXPIRE",
];

fn upper(arg: Option<&[u8]>) -> String {
    arg.map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
        .unwrap_or_default()
}

/// The traits of a plain command (see the module docs).
pub(crate) fn traits(cmd: &Cmd) -> Traits {
    let args: Vec<&[u8]> = cmd
        .args_iter()
        .filter_map(|a| match a {
            redis::Arg::Simple(bytes) => Some(bytes),
            _ => None,
        })
        .collect();
    let name = upper(args.first().copied());
    let sub = upper(args.get(1).copied());
    let has = |word: &str| {
        args.iter()
            .skip(1)
            .any(|a| a.eq_ignore_ascii_case(word.as_bytes()))
    };
    match name.as_str() {
        n if READS.contains(&n) => READ,
        n if SAFE_WRITES.contains(&n) => SAFE_WRITE,
        // A set-if-absent or a swap: the reply is the point.
        "SET" if has("NX") || has("GET") => UNSAFE,
        "SET" => SAFE_WRITE,
        "BITFIELD" if has("INCRBY") => UNSAFE,
        "BITFIELD" => SAFE_WRITE,
        "ZADD" if has("INCR") => UNSAFE,
        "ZADD" => SAFE_WRITE,
        "CONFIG" if sub == "GET" => READ,
        "CLUSTER"
            if matches!(
                sub.as_str(),
                "SLOTS" | "SHARDS" | "NODES" | "INFO" | "KEYSLOT" | "MYID"
            ) =>
        {
            READ
        }
        "SCRIPT" if matches!(sub.as_str(), "LOAD" | "EXISTS") => SAFE_WRITE,
        "ACL" if sub == "WHOAMI" => READ,
        "COMMAND" if matches!(sub.as_str(), "INFO" | "DOCS" | "COUNT") => READ,
        "CLIENT" if matches!(sub.as_str(), "ID" | "INFO" | "GETNAME") => READ,
        "MEMORY" if sub == "USAGE" => READ,
        "ASKING" | "READONLY" | "READWRITE" => READ,
        _ => UNSAFE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(args: &[&str]) -> Traits {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        traits(&cmd)
    }

    #[test]
    fn a_resend_that_found_the_change_made_does_not_know_who_made_it() {
        assert_eq!(changed(true, false), Some(true));
        assert_eq!(changed(false, false), Some(false));
        assert_eq!(changed(true, true), Some(true));
        assert_eq!(changed(false, true), None);
        assert_eq!(changed_count(2, 3, false), Some(2));
        assert_eq!(changed_count(2, 3, true), None);
        assert_eq!(changed_count(3, 3, true), Some(3));
        assert_eq!(changed_count(0, 0, true), Some(0));
    }

    #[test]
    fn reads_and_idempotent_writes_are_safe_the_rest_is_not() {
        for read in [
            &["GET", "k"][..],
            &["hmget", "h", "a"],
            &["SMEMBERS", "s"],
            &["CONFIG", "GET", "x"],
            &["CLUSTER", "SLOTS"],
            &["BITFIELD_RO", "b", "GET", "u1", "0"],
            &["WAIT", "1", "100"],
        ] {
            assert_eq!(of(read), READ, "{read:?}");
        }
        for write in [
            &["SET", "k", "v"][..],
            &["SET", "k", "v", "PX", "10", "XX"],
            &["HSET", "h", "a", "1"],
            &["HSETNX", "h", "a", "1"],
            &["SETBIT", "b", "7", "1"],
            &["DEL", "k"],
            &["SADD", "s", "1"],
            &["BITFIELD", "b", "SET", "u1", "0", "1"],
            &["ZADD", "z", "1", "m"],
            &["EXPIREAT", "k", "100"],
            &["SCRIPT", "LOAD", "return 1"],
        ] {
            assert_eq!(of(write), SAFE_WRITE, "{write:?}");
        }
        for unsafe_ in [
            &["INCR", "k"][..],
            &["incrby", "k", "2"],
            &["HINCRBY", "h", "a", "1"],
            &["RPUSH", "l", "x"],
            &["LPOP", "l"],
            &["SET", "k", "v", "NX"],
            &["set", "k", "v", "get"],
            &["SETNX", "k", "v"],
            &["GETSET", "k", "v"],
            &["BITFIELD", "b", "INCRBY", "u8", "0", "1"],
            &["ZADD", "z", "INCR", "1", "m"],
            &["EVALSHA", "abc", "0"],
            &["CONFIG", "SET", "x", "y"],
            &["NOSUCHCOMMAND"],
        ] {
            assert_eq!(of(unsafe_), UNSAFE, "{unsafe_:?}");
        }
    }
}
