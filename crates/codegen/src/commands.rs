//! The Redis commands a script body may call, as the checker and the
//! generated checks need to know them.
//!
//! A body may only call commands listed here: the checker classifies every
//! `redis.call('CMD', ...)` as a read or a write (the header's `READS` and
//! `WRITES` lines must list exactly what the body calls), knows which key
//! type a command checks on its first argument (so a body's own first
//! command on a key can stand in for a generated `TYPE` call), and has a
//! well-formed argument list for `redis.acl_check_cmd` (which reads the
//! command's key positions from its arguments, so it must get a complete
//! call). Add a command here before a script uses it.

use crate::types::KeyType;

/// One command of the table.
#[derive(Debug, Clone, Copy)]
pub struct Command {
    /// Upper-case name, as in `redis.call('SET', ...)`.
    pub name: &'static str,
    /// Has the `write` flag in `COMMAND INFO`.
    pub write: bool,
    /// The type a command checks when its first argument is a key: it
    /// answers `WRONGTYPE`, before changing anything, when the key holds
    /// another type (`None`: the first argument is no key, or any type is
    /// accepted, as by `DEL`, `EXPIRE`, `SET`).
    pub checks: Option<KeyType>,
    /// Can fail on what the key holds even with valid arguments and the
    /// right type (`INCR` on a string that is no integer, an overflow):
    /// such a write must be the script's first.
    pub value_can_fail: bool,
    /// Its first argument is a (shard) channel, not a key: the ACL probe's
    /// `$K` is the call's own first argument (`ARGV[n]`), so the check asks
    /// about the channel the body publishes to.
    pub channel: bool,
    /// Arguments for `redis.acl_check_cmd` after the command name; `$K`
    /// stands for a key of the script (the channel, for a channel command). `acl_check_cmd` extracts the
    /// command's keys from them, so they reach the command's last key
    /// position (fewer arguments than a key position can crash the server
    /// on a fixed-arity command) and no further: each argument costs.
    pub probe: &'static [&'static str],
}

/// A read command (no `write` flag).
const fn r(name: &'static str, checks: Option<KeyType>, probe: &'static [&'static str]) -> Command {
    Command {
        name,
        write: false,
        checks,
        value_can_fail: false,
        channel: false,
        probe,
    }
}

/// A write command.
const fn w(name: &'static str, checks: Option<KeyType>, probe: &'static [&'static str]) -> Command {
    Command {
        write: true,
        ..r(name, checks, probe)
    }
}

/// A write that can fail on the stored value.
const fn wv(
    name: &'static str,
    checks: Option<KeyType>,
    probe: &'static [&'static str],
) -> Command {
    Command {
        value_can_fail: true,
        ..w(name, checks, probe)
    }
}

/// A command on a shard channel (no write flag: `SPUBLISH`).
const fn c(name: &'static str, probe: &'static [&'static str]) -> Command {
    Command {
        channel: true,
        ..r(name, None, probe)
    }
}

use KeyType::{Hash, List, Set, Stream, String as Str, Zset};

const S: Option<KeyType> = Some(Str);
const H: Option<KeyType> = Some(Hash);
const SE: Option<KeyType> = Some(Set);
const Z: Option<KeyType> = Some(Zset);
const L: Option<KeyType> = Some(List);
const X: Option<KeyType> = Some(Stream);

/// Every command a script may call, sorted by name.
pub const COMMANDS: &[Command] = &[
    w("APPEND", S, &["$K"]),
    r("BITCOUNT", S, &["$K"]),
    w("BITFIELD", S, &["$K"]),
    r("BITFIELD_RO", S, &["$K"]),
    w("BITOP", None, &["OR", "$K", "$K"]),
    r("BITPOS", S, &["$K"]),
    w("COPY", None, &["$K", "$K"]),
    wv("DECR", S, &["$K"]),
    wv("DECRBY", S, &["$K"]),
    w("DEL", None, &["$K"]),
    r("EXISTS", None, &["$K"]),
    w("EXPIRE", None, &["$K"]),
    w("EXPIREAT", None, &["$K"]),
    r("EXPIRETIME", None, &["$K"]),
    r("GET", S, &["$K"]),
    r("GETBIT", S, &["$K"]),
    w("GETDEL", S, &["$K"]),
    r("GETRANGE", S, &["$K"]),
    w("HDEL", H, &["$K"]),
    r("HEXISTS", H, &["$K"]),
    r("HGET", H, &["$K"]),
    r("HGETALL", H, &["$K"]),
    wv("HINCRBY", H, &["$K"]),
    wv("HINCRBYFLOAT", H, &["$K"]),
    r("HKEYS", H, &["$K"]),
    r("HLEN", H, &["$K"]),
    r("HMGET", H, &["$K"]),
    r("HPTTL", H, &["$K"]),
    w("HSET", H, &["$K"]),
    w("HSETEX", H, &["$K"]),
    w("HSETNX", H, &["$K"]),
    r("HVALS", H, &["$K"]),
    wv("INCR", S, &["$K"]),
    wv("INCRBY", S, &["$K"]),
    wv("INCRBYFLOAT", S, &["$K"]),
    r("INFO", None, &[]),
    r("LINDEX", L, &["$K"]),
    r("LLEN", L, &["$K"]),
    w("LPOP", L, &["$K"]),
    w("LPUSH", L, &["$K"]),
    r("LRANGE", L, &["$K"]),
    w("LREM", L, &["$K"]),
    wv("LSET", L, &["$K"]),
    w("LTRIM", L, &["$K"]),
    r("MGET", None, &["$K"]),
    w("PERSIST", None, &["$K"]),
    w("PEXPIRE", None, &["$K"]),
    w("PEXPIREAT", None, &["$K"]),
    r("PEXPIRETIME", None, &["$K"]),
    wv("PFADD", S, &["$K"]),
    r("PFCOUNT", S, &["$K"]),
    r("PTTL", None, &["$K"]),
    w("RPOP", L, &["$K"]),
    w("RPUSH", L, &["$K"]),
    w("SADD", SE, &["$K"]),
    r("SCARD", SE, &["$K"]),
    w("SET", None, &["$K"]),
    w("SETBIT", S, &["$K"]),
    w("SETRANGE", S, &["$K"]),
    r("SISMEMBER", SE, &["$K"]),
    r("SMEMBERS", SE, &["$K"]),
    r("SMISMEMBER", SE, &["$K"]),
    w("SPOP", SE, &["$K"]),
    c("SPUBLISH", &["$K"]),
    w("SREM", SE, &["$K"]),
    r("STRLEN", S, &["$K"]),
    r("TIME", None, &[]),
    r("TTL", None, &["$K"]),
    r("TYPE", None, &["$K"]),
    w("UNLINK", None, &["$K"]),
    w("XADD", X, &["$K"]),
    w("XDEL", X, &["$K"]),
    r("XLEN", X, &["$K"]),
    r("XRANGE", X, &["$K"]),
    w("XTRIM", X, &["$K"]),
    w("ZADD", Z, &["$K"]),
    r("ZCARD", Z, &["$K"]),
    r("ZCOUNT", Z, &["$K"]),
    wv("ZINCRBY", Z, &["$K"]),
    r("ZRANGE", Z, &["$K"]),
    w("ZREM", Z, &["$K"]),
    w("ZREMRANGEBYRANK", Z, &["$K"]),
    w("ZREMRANGEBYSCORE", Z, &["$K"]),
    r("ZSCORE", Z, &["$K"]),
];

/// The table entry of `name` (upper case).
pub fn lookup(name: &str) -> Option<&'static Command> {
    COMMANDS
        .binary_search_by(|c| c.name.cmp(name))
        .ok()
        .map(|i| &COMMANDS[i])
}

#[cfg(test)]
mod tests {
    #[test]
    fn table_is_sorted_and_every_probe_names_a_key_when_it_checks_one() {
        for pair in super::COMMANDS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} before {}",
                pair[0].name,
                pair[1].name
            );
        }
        for c in super::COMMANDS {
            if c.checks.is_some() {
                assert_eq!(c.probe.first(), Some(&"$K"), "{}", c.name);
            }
            assert!(
                c.probe.last().is_none_or(|p| *p == "$K"),
                "{}: up to the last key",
                c.name
            );
            assert!(!c.value_can_fail || c.write, "{}", c.name);
        }
    }
}
