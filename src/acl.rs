//! The ACL rules a service account of the patterns needs, one group per
//! concern: what every connection sends, a cluster's, functions mode's,
//! durability's, the planners', and one group per pattern. A pattern's
//! group grants its keys and channels (for the default prefixes and the
//! names its examples use), the commands its Rust API sends itself, and
//! every command its scripts call (the headers' `WRITES` and `READS`,
//! so the group follows the scripts as they change).
//!
//! A script's own commands are checked against the user's ACL too, so they
//! are in the group; hash-tagged keys need their `{` in the pattern
//! (`~visits:{*`); the request keys of `incr_once` / `add_once` live in the
//! shard's slot as `{<shard key>}:req:<id>` (`~{users:*`). The guide's
//! Operations chapter shows [`AclGroup::rules_text`], and `tests/least_privilege.rs`
//! runs every operation of each pattern as a user made of exactly these
//! rules, on one server and on a cluster.
//!
//! ```
//! let lock = redis_patterns::acl::AclGroup::all().into_iter().find(|g| g.name == "lock").unwrap();
//! assert!(lock.rules.contains(&"&redis:lock:{*".to_string()));
//! assert!(lock.rules.contains(&"+spublish".to_string())); // lock.release's, from its header
//! ```

use crate::scripts::ALL;

/// One group of rules, for one concern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclGroup {
    /// The concern: `every`, `cluster`, `functions`, `durability`,
    /// `planners`, or a pattern's name.
    pub name: &'static str,
    /// What the rules are for.
    pub about: &'static str,
    /// The rules (`~pattern`, `&channel`, `+command`), in order.
    pub rules: Vec<String>,
}

impl AclGroup {
    /// The group as one `ACL SETUSER <user> ...` line.
    pub fn setuser(&self, user: &str) -> String {
        format!("ACL SETUSER {user} {}", self.rules.join(" "))
    }
}

/// What a group grants besides its scripts' commands.
struct Grant {
    name: &'static str,
    about: &'static str,
    /// Key and channel patterns, then the commands the Rust API sends.
    rules: &'static [&'static str],
    /// The patterns whose scripts it calls: in a group whose name ends in
    /// `_native`, only the scripts that need a server capability (their
    /// commands exist only there); in any other, only those that need none.
    scripts_of: &'static [&'static str],
}

const EVERY: Grant = Grant {
    name: "every",
    about: "every pattern: connecting (INFO cluster; what the server can do: INFO server, COMMAND INFO, COMMAND DOCS), calls by SHA1, reloading a flushed script, the generated checks' TYPE",
    rules: &[
        "on",
        ">secret",
        "resetkeys",
        "resetchannels",
        "-@all",
        "+info",
        "+command|info",
        "+command|docs",
        "+evalsha",
        "+evalsha_ro",
        "+script|load",
        "+type",
    ],
    scripts_of: &[],
};

const GRANTS: &[Grant] = &[
    Grant {
        name: "cluster",
        about: "cluster: the connection's own slot map, ASK redirects while a slot migrates, the cluster client's PING at connect",
        rules: &["+cluster|slots", "+asking", "+ping"],
        scripts_of: &[],
    },
    Grant {
        name: "functions",
        about: "functions: in CallMode::Functions the calls are FCALL / FCALL_RO, and a missing library is loaded",
        rules: &["+fcall", "+fcall_ro", "+function|load"],
        scripts_of: &[],
    },
    Grant {
        name: "durability",
        about: "durability: Durability::replicas sends WAIT after the writes",
        rules: &["+wait"],
        scripts_of: &[],
    },
    Grant {
        name: "planners",
        about: "planners (optional): without it ShardedHash::planned and VisitCounter::planned assume Redis's defaults and say so (LimitsSource::DefaultBecauseDenied)",
        rules: &["+config|get"],
        scripts_of: &[],
    },
    Grant {
        name: "lock",
        about: "lock: redis:lock:{<name>}, redis:lock:{<name>}:fence, the waiter queue redis:lock:{<name>}:queue and :places, and the waiters' shard channel redis:lock:{<name>}:wake (Replication::Acknowledged also needs +wait)",
        rules: &[
            "~redis:lock:{*",
            "&redis:lock:{*",
            "+get",
            "+pttl",
            "+ssubscribe",
            "+sunsubscribe",
        ],
        scripts_of: &["lock"],
    },
    Grant {
        name: "semaphore",
        about: "semaphore: redis:semaphore:{<name>} (a sorted set of holders), its waiter queue :queue and :places, and its shard channel redis:semaphore:{<name>}:wake",
        rules: &[
            "~redis:semaphore:{*",
            "&redis:semaphore:{*",
            "+ssubscribe",
            "+sunsubscribe",
        ],
        scripts_of: &["semaphore"],
    },
    Grant {
        name: "rwlock",
        about: "rwlock: redis:rwlock:{<name>} (the writer), its :readers and :intents, the waiter queue :queue and :places, and its shard channel :wake",
        rules: &[
            "~redis:rwlock:{*",
            "&redis:rwlock:{*",
            "+ssubscribe",
            "+sunsubscribe",
        ],
        scripts_of: &["rwlock"],
    },
    Grant {
        name: "rate_limit",
        about: "rate_limit: rate:{<subject>}, its :counter and its :log",
        rules: &["~rate:{*", "+del"],
        scripts_of: &["rate_limit"],
    },
    Grant {
        name: "visits",
        about: "visits: visits:{<name>:<day>}:<shard>, visits:{<name>:<day>}:count and the day's layout visits:{<name>:<day>}:meta",
        rules: &[
            "~visits:{*",
            "+get",
            "+sismember",
            "+scard",
            "+smembers",
            "+hget",
        ],
        scripts_of: &["visits"],
    },
    Grant {
        name: "sharded_hash",
        about: "sharded_hash: users:<shard>, request keys {users:<shard>}:req:<id>, the layout users:meta",
        rules: &[
            "~users:*",
            "~{users:*",
            "+hget",
            "+hmget",
            "+hexists",
            "+hlen",
            "+hset",
            "+hsetnx",
            "+hdel",
            "+hincrby",
            "+object|encoding",
        ],
        scripts_of: &["sharded_hash", "layout"],
    },
    Grant {
        name: "expiring_map",
        about: "expiring_map: sessions:<shard> (the portable path's scripts keep each expiry in its entry), the layout sessions:meta",
        rules: &[
            "~sessions:*",
            "+hlen",
            "+object|encoding",
            "+hgetall",
            "+hmget",
            "+time",
        ],
        scripts_of: &["expiring_map", "layout"],
    },
    Grant {
        name: "expiring_map_native",
        about: "expiring_map_native (only on servers with per-field TTLs, which know these commands): the native path and the planner's probe sessions:probe",
        rules: &[
            "+hsetex",
            "+hmget",
            "+hpexpire",
            "+hpexpiretime",
            "+hpttl",
            "+hpersist",
            "+hdel",
            "+hgetall",
            "+hkeys",
            "+hset",
            "+del",
            "+memory|usage",
        ],
        scripts_of: &["expiring_map"],
    },
    Grant {
        name: "packed",
        about: "packed: logins:<shard>, request keys {logins:<shard>}:req:<id>, the layout logins:meta",
        rules: &["~logins:*", "~{logins:*", "+getrange", "+strlen"],
        scripts_of: &["packed", "layout"],
    },
    Grant {
        name: "bloom",
        about: "bloom: bloom:{<name>} and its blocks; a JsHashBloom's bitmap by its name",
        rules: &[
            "~bloom:{*",
            "~bloom_user_email",
            "+bitfield",
            "+bitfield_ro",
            "+getbit",
            "+setbit",
            "+bitcount",
            "+strlen",
            "+exists",
            "+hmget",
            "+hgetall",
            "+del",
            "+pexpiretime",
        ],
        scripts_of: &["bloom"],
    },
    Grant {
        name: "rolling",
        about: "rolling: redis:rolling:{<key>} and its shards and order lists",
        rules: &[
            "~redis:rolling:{*",
            "+hget",
            "+hmget",
            "+hlen",
            "+llen",
            "+lrange",
            "+unlink",
        ],
        scripts_of: &["rolling"],
    },
    Grant {
        name: "login_log",
        about: "login_log: loginLog_<YYYY-MM>_<type>_<uid> and loginLog_{<YYYY-MM>}:...",
        rules: &[
            "~loginLog_*",
            "+getbit",
            "+bitcount",
            "+bitfield_ro",
            "+bitop",
            "+get",
            "+getrange",
            "+del",
            // signin.combine's
            "+getdel",
            "+sismember",
            "+smembers",
            "+expiretime",
            "+strlen",
            "+scan",
        ],
        scripts_of: &["login_log"],
    },
    Grant {
        name: "analytics",
        about: "analytics: an:{<event>}:<period>, or an:{<tag>}:<event>:<period> with a tag (and their tmp and cache keys)",
        rules: &["~an:*", "+getbit", "+bitcount", "+get", "+pfcount"],
        scripts_of: &["analytics"],
    },
    Grant {
        name: "signin",
        about: "signin: signin:<YYYYMMDD>, or signin:{<tag>}:<YYYYMMDD> with a tag",
        rules: &[
            "~signin:*",
            "+getbit",
            "+bitcount",
            "+bitop",
            "+get",
            "+del",
        ],
        scripts_of: &["signin"],
    },
];

impl AclGroup {
    /// Every group, in order: what every connection needs first.
    pub fn all() -> Vec<AclGroup> {
        let base: Vec<String> = EVERY.rules.iter().map(|r| r.to_string()).collect();
        let mut out = vec![AclGroup {
            name: EVERY.name,
            about: EVERY.about,
            rules: base.clone(),
        }];
        for g in GRANTS {
            let mut rules: Vec<String> = Vec::new();
            let mut add = |rule: String| {
                if !base.contains(&rule) && !rules.contains(&rule) {
                    rules.push(rule);
                }
            };
            for r in g.rules {
                add(r.to_string());
            }
            let native = g.name.ends_with("_native");
            for s in ALL.iter().filter(|s| {
                g.scripts_of
                    .contains(&s.name.split('.').next().unwrap_or(""))
                    && s.needs.is_empty() != native
            }) {
                for c in s.writes.iter().chain(s.reads) {
                    add(format!("+{}", c.to_lowercase()));
                }
            }
            out.push(AclGroup {
                name: g.name,
                about: g.about,
                rules,
            });
        }
        out
    }

    /// Every group as a comment line (`# <about>`) and its `ACL SETUSER <user>`
    /// line (the first one with the password `secret`).
    pub fn rules_text(user: &str) -> String {
        Self::all()
            .iter()
            .map(|g| format!("# {}\n{}\n", g.about, g.setuser(user)))
            .collect()
    }
}
