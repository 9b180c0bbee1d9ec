// The TypeScript client's part of `cargo bench --bench clients` (the
// compiled package on ioredis), run by crates/cli/benches/clients.rs against
// the servers it started on loopback (ioredis found through NODE_PATH):
//
//   node bench.js DIR figures PORT ROUNDS PAIRS
//   node bench.js DIR fanout URL [URL...] [--cluster]
//
// figures prints one JSON line: the hot PING round trip (median of 2,000),
// one PING after an idle pause as long as a handoff's hold, 20 to 29 ms
// (median of ROUNDS: the server and this process idle as before a release),
// ROUNDS lock
// handoffs (a holder on its own connection releases; the waiter, blocked in
// acquire on another, returns: microseconds from just before the release is
// sent; both run on this process's event loop, as in one Node service),
// ROUNDS handoffs of the floor (the same exchange with ioredis alone: the
// holder's raw EVALSHA of the shipped lock/release, whose SPUBLISH reaches a
// raw SSUBSCRIBE connection's smessage event, then the waiter's raw EVALSHA
// of lock/acquire; the waiter's refused attempt before puts it in the queue,
// as a client's does), and 5 rounds of PAIRS acquire + release pairs/s
// (tryAcquire + release), of ioredis's raw SET NX PX + EVALSHA
// compare-and-delete and of raw EVALSHAs of the same two shipped lock
// scripts the client sends, interleaved (the order turns each round) after
// a warm-up of each.
//
// fanout builds a ShardedHash of 2,048 shards, calls len once (the client's
// first use: connections, script loads), prints "ready", reads a line,
// calls len again (the call the driver counts on the servers) and prints
// its JSON.
"use strict";

const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const readline = require("readline");
const Redis = require("ioredis");

const [dir, mode, ...rest] = process.argv.slice(2);
const { Lock, ShardedHash } = require(path.resolve(dir));

const nowUs = () => Number(process.hrtime.bigint()) / 1000;
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

async function handoffs(port, rounds) {
  const holderClient = new Redis(port, "127.0.0.1");
  const waiterClient = new Redis(port, "127.0.0.1");
  const holder = new Lock(holderClient, "bench-handoff", { leaseMs: 30000 });
  const waiter = new Lock(waiterClient, "bench-handoff", { leaseMs: 30000 });
  const waits = [];
  for (let i = 0; i < rounds; i++) {
    const held = await holder.tryAcquire();
    const got = waiter.acquire(10000).then((lease) => ({ lease, at: nowUs() }));
    await sleep(20 + ((i * 7) % 10));
    const t = nowUs();
    await holder.release(held.token);
    const { lease, at } = await got;
    waits.push(at - t);
    await waiter.release(lease.token);
  }
  holderClient.disconnect();
  waiterClient.disconnect();
  return waits;
}

/** The shipped lock scripts sent by ioredis alone (EVALSHA), on the client's keys. */
async function rawLock(r, name) {
  const keys = new Lock(r, name, { leaseMs: 30000 });
  const load = (f) => r.script("LOAD", fs.readFileSync(path.join(dir, "lua", "lock", f)));
  const [acquireSha, releaseSha] = [await load("acquire.lua"), await load("release.lua")];
  const acquireKeys = [keys.key, keys.fenceKey, keys.queueKey, keys.placesKey];
  const releaseKeys = [keys.key, keys.queueKey, keys.placesKey];
  return {
    channel: keys.channel,
    /** lock/acquire: the fence (> 0), or a refusal (<= 0; with a place the token waits in the queue). */
    attempt(token, placeMs = 0) {
      return r.evalsha(acquireSha, 4, ...acquireKeys, token, 30000, placeMs, 0);
    },
    async acquire(token, placeMs = 0) {
      const fence = await this.attempt(token, placeMs);
      if (!(fence > 0)) throw new Error(`acquire: ${fence}`);
    },
    async release(token) {
      if ((await r.evalsha(releaseSha, 3, ...releaseKeys, token, keys.channel)) !== 1) throw new Error("release");
    },
  };
}

/** The handoff with ioredis alone: the same exchange, no client. */
async function floorHandoffs(port, rounds) {
  const holderClient = new Redis(port, "127.0.0.1");
  const waiterClient = new Redis(port, "127.0.0.1");
  const sub = new Redis(port, "127.0.0.1");
  const holder = await rawLock(holderClient, "bench-floor");
  const waiter = await rawLock(waiterClient, "bench-floor");
  let wake = null;
  sub.on("smessageBuffer", () => {
    const w = wake;
    wake = null;
    if (w !== null) w();
  });
  await sub.ssubscribe(holder.channel);
  const waits = [];
  for (let i = 0; i < rounds; i++) {
    const token = crypto.randomBytes(16).toString("hex");
    await holder.acquire(token);
    const mine = crypto.randomBytes(16).toString("hex");
    // refused: the token waits in the queue (a third of the lease), as a waiter's does
    if ((await waiter.attempt(mine, 10000)) > 0) throw new Error("the floor waiter got a held lock");
    const got = new Promise((res) => {
      wake = res;
    }).then(async () => {
      await waiter.acquire(mine, 10000);
      return nowUs();
    });
    await sleep(20 + ((i * 7) % 10));
    const t = nowUs();
    await holder.release(token);
    waits.push((await got) - t);
    const own = new Promise((res) => {
      wake = res;
    });
    await waiter.release(mine);
    await own; // its own release's message
  }
  holderClient.disconnect();
  waiterClient.disconnect();
  sub.disconnect();
  return waits;
}

async function pairs(r, n) {
  const lock = new Lock(r, "bench-pairs", { leaseMs: 30000 });
  const scripts = await rawLock(r, "bench-scripts");
  const cad = await r.script(
    "LOAD",
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
  );
  const oursPairs = async (k) => {
    for (let i = 0; i < k; i++) {
      const lease = await lock.tryAcquire();
      await lock.release(lease.token);
    }
  };
  const rawPairs = async (k) => {
    for (let i = 0; i < k; i++) {
      const token = crypto.randomBytes(16).toString("hex");
      if ((await r.set("bench-raw", token, "PX", 30000, "NX")) !== "OK") throw new Error("SET NX");
      if ((await r.evalsha(cad, 1, "bench-raw", token)) !== 1) throw new Error("CAD");
    }
  };
  const scriptPairs = async (k) => {
    for (let i = 0; i < k; i++) {
      const token = crypto.randomBytes(16).toString("hex");
      await scripts.acquire(token);
      await scripts.release(token);
    }
  };
  // Pairs/s, and this process's CPU microseconds per pair.
  const timed = async (f) => {
    const c = process.cpuUsage();
    const t = process.hrtime.bigint();
    await f(n);
    const rate = n / (Number(process.hrtime.bigint() - t) / 1e9);
    const used = process.cpuUsage(c);
    return [rate, (used.user + used.system) / n];
  };
  const kinds = [oursPairs, rawPairs, scriptPairs];
  for (const f of kinds) {
    await f(Math.floor(n / 10));
  }
  const got = new Map(kinds.map((f) => [f, []]));
  for (let round = 0; round < 5; round++) {
    const turn = round % 3;
    for (const f of [...kinds.slice(turn), ...kinds.slice(0, turn)]) {
      got.get(f).push(await timed(f));
    }
  }
  const rate = (f) => got.get(f).map(([x]) => x);
  const cpu = (f) => got.get(f).map(([, c]) => c);
  return {
    ours: rate(oursPairs),
    raw: rate(rawPairs),
    scripts: rate(scriptPairs),
    oursCpu: cpu(oursPairs),
    scriptsCpu: cpu(scriptPairs),
  };
}

async function figures(port, rounds, n) {
  const r = new Redis(port, "127.0.0.1");
  const pings = [];
  for (let i = 0; i < 2000; i++) {
    const t = nowUs();
    await r.ping();
    pings.push(nowUs() - t);
  }
  const idle = [];
  for (let i = 0; i < rounds; i++) {
    await sleep(20 + ((i * 7) % 10));
    const t = nowUs();
    await r.ping();
    idle.push(nowUs() - t);
  }
  const waits = await handoffs(port, rounds);
  const floor = await floorHandoffs(port, rounds);
  const { ours, raw, scripts, oursCpu, scriptsCpu } = await pairs(r, n);
  r.disconnect();
  console.log(
    JSON.stringify({
      ping_us: median(pings),
      idle_ping_us: median(idle),
      handoffs_us: waits,
      ours_pairs_s: ours,
      raw_pairs_s: raw,
      floor_handoffs_us: floor,
      script_pairs_s: scripts,
      ours_cpu_us: oursCpu,
      script_cpu_us: scriptsCpu,
    }),
  );
}

async function fanout(urls, cluster) {
  const hostPort = (u) => {
    const p = new URL(u);
    return { host: p.hostname, port: Number(p.port) };
  };
  const r = cluster ? new Redis.Cluster(urls.map(hostPort)) : new Redis(urls[0]);
  const h = new ShardedHash(r, "bench-fan", { shards: 2048 });
  await h.len();
  console.log("ready");
  const lines = readline.createInterface({ input: process.stdin });
  await new Promise((res) => lines.once("line", res));
  lines.close();
  console.log(JSON.stringify({ len: await h.len() }));
  r.disconnect();
}

(async () => {
  if (mode === "figures") {
    await figures(Number(rest[0]), Number(rest[1]), Number(rest[2]));
  } else {
    await fanout(rest.filter((a) => !a.startsWith("--")), rest.includes("--cluster"));
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
