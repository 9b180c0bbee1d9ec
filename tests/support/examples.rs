//! One valid example call per bundled script, with the data it needs, for
//! the generic tests over the registry (`tests/atomicity.rs`) and the
//! checks benchmark (`benches/checks.rs`). A script without an example here
//! fails those tests: add one when you add a script.
#![allow(dead_code)]

/// Unix seconds far ahead (2100-01-01): expiries the scripts accept.
pub const LATER: &str = "4102444800";

/// The same instant in unix milliseconds (the ends of leases in sorted sets).
pub const LATER_MS: &str = "4102444800000";

/// A valid call of one script and the data it needs.
pub struct Example {
    /// `<pattern>.<op>`
    pub script: &'static str,
    /// Plain commands that prepare the data the call works on.
    pub setup: Vec<redis::Cmd>,
    pub keys: Vec<String>,
    pub args: Vec<String>,
}

fn cmd(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn ex(script: &'static str, setup: &[&[&str]], keys: &[&str], args: &[&str]) -> Example {
    Example {
        script,
        setup: setup.iter().map(|c| cmd(c)).collect(),
        keys: strings(keys),
        args: strings(args),
    }
}

/// The example of a release (`script`, with `args`) of the lock or
/// semaphore `key` that `held` took: a live waiter (its place ends in
/// 2100) and a ghost wait in its queue; the release wakes the waiter and
/// drops the ghost.
fn waking_release(script: &'static str, key: &str, held: &[&str], args: &[&str]) -> Example {
    let (queue, places) = (format!("{key}:queue"), format!("{key}:places"));
    ex(
        script,
        &[
            held,
            &["ZADD", &queue, "1", "ghost", "2", "next"],
            &["ZADD", &places, LATER_MS, "next"],
        ],
        &[key, &queue, &places],
        args,
    )
}

impl Example {
    /// The example with `n` more `field<i>`, `value<i>` pairs after its
    /// arguments.
    fn with_pairs(mut self, n: usize) -> Self {
        for i in 0..n {
            self.args.push(format!("field{i}"));
            self.args.push(format!("value{i}"));
        }
        self
    }
}

/// Unrelated data every example runs next to.
pub fn seed() -> Vec<redis::Cmd> {
    vec![
        cmd(&["SET", "other:string", "x"]),
        cmd(&["HSET", "other:hash", "f", "v"]),
        cmd(&["SADD", "other:set", "1", "2"]),
        cmd(&["RPUSH", "other:list", "a", "b"]),
        cmd(&["ZADD", "other:zset", "1", "m"]),
        cmd(&["SET", "other:ttl", "y", "PX", "600000"]),
    ]
}

/// Rolling store `rl:{t}`: 3 slots of 2 records, head 0 holding f0.
fn rolling_setup() -> Vec<&'static [&'static str]> {
    vec![
        &[
            "HSET",
            "rl:{t}",
            "head",
            "0",
            "gen",
            "0",
            "shards",
            "3",
            "shard_size",
            "2",
        ],
        &["HSET", "rl:{t}:0", "f0", "v0"],
        &["RPUSH", "rl:{t}:0:order", "f0"],
    ]
}

const SLOTS: [&str; 6] = [
    "rl:{t}:0",
    "rl:{t}:0:order",
    "rl:{t}:1",
    "rl:{t}:1:order",
    "rl:{t}:2",
    "rl:{t}:2:order",
];

/// Every example. With `big`, the scripts that take many keys or arguments
/// get batch-sized calls (for the benchmark); otherwise small ones.
pub fn examples(big: bool) -> Vec<Example> {
    let patterns: [fn(Size) -> Vec<Example>; 13] = [
        analytics,
        bloom,
        lock,
        login_log,
        packed,
        rate_limit,
        rolling,
        sharded_hash,
        expiring_map,
        rwlock,
        semaphore,
        signin,
        visits,
    ];
    patterns.into_iter().flat_map(|p| p(Size(big))).collect()
}

/// How big the calls are: `n.of(small, large)`.
#[derive(Clone, Copy)]
struct Size(bool);

impl Size {
    fn of(self, small: usize, large: usize) -> usize {
        if self.0 { large } else { small }
    }
}

/// The analytics scripts' examples.
fn analytics(_n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    let (d1, d2, w1) = (
        "an:{t}:e:D:2024-01-01",
        "an:{t}:e:D:2024-01-02",
        "an:{t}:e:W:2024-W01",
    );
    let (f1, f2, f3) = (
        "an:{t}:f:D:2024-01-01",
        "an:{t}:f:D:2024-01-02",
        "an:{t}:f:D:2024-01-03",
    );
    out.push(ex(
        "analytics.mark",
        &[&["SETBIT", d1, "3", "1"]],
        &[d1, w1],
        &["1000", LATER, "0", "7", "9"],
    ));
    let hll = "an:{t}:e:D:2024-01-01:hll";
    out.push(ex(
        "analytics.mark_hll",
        &[&["PFADD", hll, "1"], &["SETBIT", d1, "3", "1"]],
        &[hll, d1, w1],
        &["1000", LATER, LATER, "0", "7", "9"],
    ));
    out.push(ex(
        "analytics.query",
        &[
            &["SETBIT", d1, "3", "1"],
            &["SETBIT", d2, "3", "1"],
            &["SETBIT", f1, "5", "1"],
        ],
        &["an:{t}:tmp:r", "an:{t}:tmp:0", d1, d2, f1],
        &[
            "0",
            "1",
            "COUNT",
            "0",
            "0",
            "0",
            "OR 2 3 4",
            "AND 2 2 5",
            "XOR 1 2 3",
        ],
    ));
    out.push(ex(
        "analytics.cohort",
        // Far ids: the script pads a copy of d1 to f2's length, and copies
        // d2's window of f2 into its temporary key.
        &[
            &["SETBIT", d1, "3", "1"],
            &["SETBIT", d1, "40000", "1"],
            &["SETBIT", d2, "4", "1"],
            &["SETBIT", f2, "3", "1"],
            &["SETBIT", f2, "120000", "1"],
        ],
        &["an:{t}:tmp:c", d1, d2, f1, f2, f3],
        &["2", "2"],
    ));
    out.push(ex(
        "analytics.streak",
        &[&["SETBIT", f1, "3", "1"], &["SETBIT", f2, "3", "1"]],
        &[f1, f2, f3],
        &["3"],
    ));
    out
}

/// The bloom scripts' examples.
fn bloom(n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    // Blocks of 1023 usable bits plus the sentinel (bit 1023).
    let block: &[&str] = &["SETBIT", "bf:{t}:0", "1023", "1"];
    let offsets: Vec<String> = (0..n.of(4, 1998))
        .map(|i| ((i * 37) % 1023).to_string())
        .collect();
    let with_offsets = |head: &[&str]| -> Vec<String> {
        strings(head)
            .into_iter()
            .chain(offsets.iter().cloned())
            .collect()
    };
    let mut add = ex("bloom.add", &[block], &["bf:{t}:0"], &[]);
    add.args = with_offsets(&["1023", "2"]);
    out.push(add);
    let blocks: Vec<String> = (0..n.of(2, 8)).map(|i| format!("bf:{{t}}:{i}")).collect();
    let mut clear = ex("bloom.clear", &[], &[], &[]);
    for b in &blocks {
        clear.setup.push(cmd(&["SETBIT", b, "1023", "1"]));
        clear.setup.push(cmd(&["SETBIT", b, "5", "1"]));
    }
    clear.setup.push(cmd(&["PEXPIRE", &blocks[0], "600000"]));
    clear.keys = blocks.clone();
    clear.args = vec!["1023".to_string(); blocks.len()];
    out.push(clear);
    out.push(ex(
        "bloom.create",
        &[],
        &["bf:{t}", "bf:{t}:0"],
        &["1000", "7", "100", "0.01", "1023", "murmur3-dh", "1", "0"],
    ));
    let mut exists = ex(
        "bloom.exists",
        &[block, &["SETBIT", "bf:{t}:0", "37", "1"]],
        &["bf:{t}:0"],
        &[],
    );
    exists.args = with_offsets(&["1023", "2"]);
    out.push(exists);
    out.push(ex("bloom.init_block", &[], &["bf:{t}:9"], &["1023", "1"]));
    let seed_offsets: Vec<String> = (0..n.of(3, 1000))
        .map(|i| (i * 101 % 100_000).to_string())
        .collect();
    let mut seed_add = ex(
        "bloom.jshash_add",
        &[&["SETBIT", "bloom_email{t}", "77", "1"]],
        &["bloom_email{t}"],
        &[],
    );
    seed_add.args = seed_offsets.clone();
    out.push(seed_add);
    let mut seed_exists = ex(
        "bloom.jshash_exists",
        &[&["SETBIT", "bloom_email{t}", "77", "1"]],
        &["bloom_email{t}"],
        &[],
    );
    seed_exists.args = seed_offsets;
    out.push(seed_exists);
    out
}

/// The lock scripts' examples.
fn lock(_n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    let held: &[&str] = &["SET", "lock{t}", "tok", "PX", "600000"];
    // A waiter whose place ended (none recorded) ahead in the queue: a fair
    // acquire skips and drops it.
    let ghost: &[&str] = &["ZADD", "lock{t}:queue", "1", "ghost"];
    let lock_keys = &[
        "lock{t}",
        "lock{t}:fence",
        "lock{t}:queue",
        "lock{t}:places",
    ];
    out.push(ex(
        "lock.acquire",
        &[&["SET", "lock{t}:fence", "5"], ghost],
        lock_keys,
        // now_us 0: a token that does not depend on when it runs.
        &["tok", "30000", "30000", "1", "0"],
    ));
    out.push(ex("lock.extend", &[held], &["lock{t}"], &["tok", "30000"]));
    out.push(ex("lock.owned", &[held], &["lock{t}"], &["tok"]));
    out.push(waking_release(
        "lock.release",
        "lock{t}",
        held,
        &["tok", "lock{t}:wake"],
    ));
    out
}

/// The login_log scripts' examples.
fn login_log(_n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    let log = "loginLog_2024-05_client_7{t}";
    let index = "{loginLog:2024-05}:20240503:client";
    let types = "{loginLog:2024-05}:types";
    out.push(ex(
        "login_log.days",
        &[&["SETBIT", log, "3", "1"]],
        &[log],
        &["1", "31"],
    ));
    out.push(ex(
        "login_log.index",
        &[&["SETBIT", index, "2", "1"], &["SADD", types, "admin"]],
        &[index, types],
        &["7", "1000", "client", LATER],
    ));
    out.push(ex(
        "login_log.mark",
        &[&["SETBIT", log, "1", "1"]],
        &[log],
        &["3", LATER],
    ));
    out.push(ex(
        "login_log.record",
        &[&["SETBIT", log, "1", "1"], &["SADD", types, "admin"]],
        &[log, index, types],
        &["3", "7", "1000", "client", LATER, LATER],
    ));
    out
}

/// The packed scripts' examples.
fn packed(n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    // 8-byte records in shard pk:{t}:0, reserved to 64 bytes.
    out.push(ex(
        "packed.add",
        &[&["SET", "pk:{t}:0", "\x01\x00\x00\x00"]],
        &["pk:{t}:0", "pk:{t}:0:req:r1"],
        &["64", "2", "2", "0", "5", "60000"],
    ));
    let mut put = ex(
        "packed.put",
        &[&["SET", "pk:{t}:0", "abcd"]],
        &["pk:{t}:0"],
        &["4096"],
    );
    for i in 0..n.of(2, 100) {
        put.args.push((i * 8).to_string());
        put.args.push(format!("rec{i:05}"));
    }
    out.push(put);
    out.push(ex(
        "packed.swap",
        &[&["SET", "pk:{t}:0", "abcd"]],
        &["pk:{t}:0"],
        &["64", "0", "abcd", "wxyz"],
    ));
    out
}

/// The rate_limit scripts' examples.
fn rate_limit(_n: Size) -> Vec<Example> {
    // Each call finds state of an earlier call and takes a unit.
    vec![
        ex(
            "rate_limit.throttle",
            &[&["SET", "rate:{t}", "1000000000000000"]],
            &["rate:{t}"],
            &["5", "10", "1000", "1"],
        ),
        ex(
            "rate_limit.window_counter",
            &[&["HSET", "rate:{t}:counter", "w", "1", "c", "2", "p", "0"]],
            &["rate:{t}:counter"],
            &["10", "1000", "1"],
        ),
        ex(
            "rate_limit.window_log",
            &[&["ZADD", "rate:{t}:log", "1000000", "1000000-1"]],
            &["rate:{t}:log"],
            &["10", "1000", "1"],
        ),
    ]
}

/// The rolling scripts' examples.
fn rolling(_n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    let setup = rolling_setup();
    let meta_and = |keys: &[&str]| -> Vec<String> {
        std::iter::once("rl:{t}")
            .chain(keys.iter().copied())
            .map(String::from)
            .collect()
    };
    let mut add = ex(
        "rolling.add",
        &setup,
        &[],
        &["0", "3", "2", "f1", "{\"v\":1}", "60000", "120000"],
    );
    add.keys = meta_and(&SLOTS[..4]);
    out.push(add);
    let mut clear = ex("rolling.clear", &setup, &[], &[]);
    clear.keys = meta_and(&SLOTS);
    out.push(clear);
    let hashes = [SLOTS[0], SLOTS[2], SLOTS[4]];
    let mut get = ex("rolling.get", &setup, &[], &["f0"]);
    get.keys = meta_and(&hashes);
    out.push(get);
    let mut len = ex("rolling.len", &setup, &[], &[]);
    len.keys = meta_and(&hashes);
    out.push(len);
    let mut recent = ex("rolling.recent", &setup, &[], &["5"]);
    recent.keys = meta_and(&SLOTS);
    out.push(recent);
    out
}

/// The sharded_hash scripts' examples.
fn sharded_hash(n: Size) -> Vec<Example> {
    vec![
        ex(
            "sharded_hash.incr",
            &[&["HSET", "sh:{t}:0", "a", "1"]],
            &["sh:{t}:0", "sh:{t}:0:req:r1"],
            &["a", "5", "512", "60000"],
        ),
        // layout: a meta key that is absent (the claim stores the pairs).
        ex(
            "layout.claim",
            &[],
            &["lay:{t}:meta"],
            &["pattern", "sharded_hash", "scheme", "crc32", "shards", "64"],
        ),
        ex(
            "sharded_hash.put",
            &[&["HSET", "sh:{t}:0", "a", "1"]],
            &["sh:{t}:0"],
            &["0", "512"],
        )
        .with_pairs(n.of(2, 200)),
    ]
}

/// The expiring_map scripts' examples.
fn expiring_map(n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    // A shard holding one entry without expiry (its value's
    // first 6 bytes, 0) and one that expired in 1970 (expiry 1 ms).
    let em: &[&str] = &[
        "HSET",
        "em:{t}:0",
        "a",
        "\0\0\0\0\0\0va",
        "old",
        "\0\0\0\0\0\x01vo",
    ];
    out.push(
        ex(
            "expiring_map.put",
            &[em],
            &["em:{t}:0"],
            &["0", "0", "512", "3"],
        )
        .with_pairs(n.of(2, 200)),
    );
    out.push(ex(
        "expiring_map.get",
        &[em],
        &["em:{t}:0"],
        &["0", "a", "old", "b"],
    ));
    out.push(ex(
        "expiring_map.remove",
        &[em],
        &["em:{t}:0"],
        &["a", "old"],
    ));
    out.push(ex("expiring_map.ttl", &[em], &["em:{t}:0"], &["a"]));
    out.push(ex("expiring_map.expire", &[em], &["em:{t}:0"], &["a", "0"]));
    out.push(ex("expiring_map.sweep", &[em], &["em:{t}:0"], &[]));
    out.push(ex("expiring_map.entries", &[em], &["em:{t}:0"], &[]));
    // The native path's shard (servers with per-field TTLs only): one entry
    // without expiry and one with a TTL, which the cap of 2 evicts.
    out.push(
        ex(
            "expiring_map.put_native",
            &[
                &["HSET", "emn:{t}:0", "a", "va", "c", "vc"],
                &["HPEXPIRE", "emn:{t}:0", "600000", "FIELDS", "1", "c"],
            ],
            &["emn:{t}:0"],
            &["0", "0", "512", "2"],
        )
        .with_pairs(n.of(1, 200)),
    );
    out
}

/// The rwlock scripts' examples.
fn rwlock(_n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    // A reader and a writer's intent that end in 2100, and a
    // queued reader.
    let rw = [
        "rw{t}",
        "rw{t}:readers",
        "rw{t}:intents",
        "rw{t}:queue",
        "rw{t}:places",
    ];
    let reader: &[&str] = &["ZADD", "rw{t}:readers", LATER_MS, "tok"];
    let writer: &[&str] = &["SET", "rw{t}", "tok", "PX", "600000"];
    let queued: &[&str] = &["ZADD", "rw{t}:queue", "1", "next"];
    let placed: &[&str] = &["ZADD", "rw{t}:places", LATER_MS, "next"];
    out.push(ex(
        "rwlock.read_extend",
        &[reader],
        &rw[1..2],
        &["tok", "30000"],
    ));
    out.push(ex(
        "rwlock.read_acquire",
        &[&["ZADD", "rw{t}:readers", LATER_MS, "other"], queued],
        &rw,
        &["tok", "30000", "30000"],
    ));
    out.push(ex(
        "rwlock.read_release",
        &[reader, queued, placed],
        &rw,
        &["tok", "rw{t}:wake"],
    ));
    out.push(ex(
        "rwlock.write_acquire",
        &[&["ZADD", "rw{t}:intents", LATER_MS, "tok"], queued],
        &rw,
        &["tok", "30000", "30000", "1"],
    ));
    out.push(ex(
        "rwlock.write_extend",
        &[writer],
        &rw[..1],
        &["tok", "30000"],
    ));
    out.push(ex(
        "rwlock.write_release",
        &[
            writer,
            &["ZADD", "rw{t}:intents", LATER_MS, "next"],
            queued,
            placed,
        ],
        &rw,
        &["tok", "rw{t}:wake"],
    ));
    out
}

/// The semaphore scripts' examples.
fn semaphore(_n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    // 3 permits, one taken until 2100.
    let permit: &[&str] = &["ZADD", "sem{t}", LATER_MS, "tok"];
    out.push(ex(
        "semaphore.acquire",
        &[
            &["ZADD", "sem{t}", LATER_MS, "other"],
            &["ZADD", "sem{t}:queue", "1", "ghost"],
        ],
        &["sem{t}", "sem{t}:queue", "sem{t}:places"],
        &["tok", "3", "30000", "30000", "1"],
    ));
    out.push(ex(
        "semaphore.extend",
        &[permit],
        &["sem{t}"],
        &["tok", "30000"],
    ));
    out.push(waking_release(
        "semaphore.release",
        "sem{t}",
        permit,
        &["tok", "3", "sem{t}:wake"],
    ));
    out
}

/// The signin scripts' examples.
fn signin(n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    let days: Vec<String> = (1..=n.of(2, 31))
        .map(|d| format!("si:{{t}}:202401{d:02}"))
        .collect();
    for script in ["signin.combine", "signin.count"] {
        let mut e = ex(script, &[], &["si:{t}:tmp"], &["OR"]);
        for (i, d) in days.iter().enumerate() {
            e.setup.push(cmd(&["SETBIT", d, &(i * 3).to_string(), "1"]));
            e.keys.push(d.clone());
        }
        out.push(e);
    }
    out.push(ex(
        "signin.mark",
        &[&["SETBIT", "si:{t}:20240101", "3", "1"]],
        &["si:{t}:20240101"],
        &["7", "1000", LATER],
    ));
    out
}

/// The visits scripts' examples.
fn visits(n: Size) -> Vec<Example> {
    let mut out = Vec::new();
    let counter = "vi:{t}:count";
    out.push(ex(
        "visits.add",
        &[&["SADD", "vi:{t}:0", "1"], &["SET", counter, "1"]],
        &[counter, "vi:{t}:0", "vi:{t}:meta"],
        &[LATER, LATER, "42", "4"],
    ));
    let shards = n.of(2, 4);
    let per = n.of(2, 250);
    let mut batch = ex(
        "visits.add_batch",
        &[
            &["SADD", "vi:{t}:0", "1"],
            &["SET", counter, "1"],
            &["HSET", "vi:{t}:meta", "pattern", "visits", "shards", "4"],
        ],
        &[counter, "vi:{t}:meta"],
        &[LATER, LATER, "4"],
    );
    for s in 0..shards {
        batch.keys.push(format!("vi:{{t}}:{s}"));
        batch.args.push(per.to_string());
        for m in 0..per {
            batch.args.push((s * 100_000 + m).to_string());
        }
    }
    out.push(batch);
    out.push(ex(
        "visits.contains",
        &[&["SADD", "vi:{t}:0", "42"], &["SET", counter, "1"]],
        &[counter, "vi:{t}:0"],
        &["42"],
    ));
    out
}
