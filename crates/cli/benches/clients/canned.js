// The TypeScript client's own CPU per tryAcquire + release pair, without a
// server: ioredis's callBuffer answers from a table (a fence, then 1); see
// canned.py. Each DIR is an exported client (with ioredis on NODE_PATH),
// several measured interleaved in one process:
//
//   node canned.js DIR [DIR...] [--pairs N] [--rounds R]
const path = require("path");
const crypto = require("crypto");
const Redis = require("ioredis");

const argv = process.argv.slice(2);
const opt = (name, d) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : d);
const dirs = argv.filter((a, i) => !a.startsWith("--") && !(i > 0 && argv[i - 1].startsWith("--")));
const n = opt("--pairs", 20000);
const rounds = opt("--rounds", 15);
let flip = 0;
// lock/acquire's fence, then lock/release's 1.
const canned = () => {
  flip ^= 1;
  return Promise.resolve(flip ? 17 : 1);
};

function pairsOf(dir) {
  const { Lock } = require(path.resolve(dir));
  const r = new Redis({ lazyConnect: true });
  r.callBuffer = canned;
  const lock = new Lock(r, "canned-pairs", { leaseMs: 30000 });
  return async (k) => {
    for (let i = 0; i < k; i++) {
      await lock.release((await lock.tryAcquire()).token);
    }
  };
}

async function byHand(k) {
  for (let i = 0; i < k; i++) {
    const token = crypto.randomBytes(16).toString("hex");
    if (Number(await canned("EVALSHA", ["a".repeat(40), "4", "k", "f", "q", "p", token, "30000", "0", "0"])) <= 0) throw new Error("fence");
    if ((await canned("EVALSHA", ["b".repeat(40), "3", "k", "q", "p", token, "c"])) !== 1) throw new Error("release");
  }
}

(async () => {
  const kinds = [...dirs.map(pairsOf), byHand];
  for (const f of kinds) await f(n / 5);
  const best = kinds.map(() => Infinity);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < kinds.length; i++) {
      const c = process.cpuUsage();
      await kinds[i](n);
      const used = process.cpuUsage(c);
      best[i] = Math.min(best[i], (used.user + used.system) / n);
    }
  }
  const hand = best[best.length - 1];
  dirs.forEach((d, i) => {
    console.log(`${d}: client CPU per pair ${(best[i] - hand).toFixed(2)} us (min of ${rounds} rounds of ${n}; canned calls by hand ${hand.toFixed(2)} us)`);
  });
  process.exit(0);
})();
