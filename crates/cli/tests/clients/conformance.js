// The conformance cases (tests/conformance/cases.json, format in its README)
// on the generated TypeScript client with the real interpreter: every
// operation dispatched by name to the package's classes (camelCase, required
// inputs positional, optional ones in the trailing options object, `hold` as
// `using`), on one server or a cluster; arguments and results converted by
// the API description in the package's manifest.json. An operation the
// client lacks fails its case.
//
//     node conformance.js PACKAGE_DIR CASES URL [URL...] [--cluster] [--part=all|write|read]
//
// Prints `conformance typescript (<target>): N passed, M failed` and the
// failures; exits 1 when a case failed or none ran. ioredis is found through
// NODE_PATH (the test sets it).
"use strict";

const fs = require("fs");
const path = require("path");
const Redis = require("ioredis");

const flags = process.argv.slice(2).filter((a) => a.startsWith("--"));
const plain = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const [packageDir, casesPath, ...urls] = plain;
const cluster = flags.includes("--cluster");
const part = (flags.find((f) => f.startsWith("--part=")) || "--part=all").split("=")[1];

const rp = require(path.resolve(packageDir));
const manifest = JSON.parse(fs.readFileSync(path.join(packageDir, "manifest.json"), "utf8"));
const CLASSES = {};
const RECORDS = {};
for (const p of manifest.patterns) {
  for (const c of p.api.classes || []) CLASSES[c.name] = c;
  for (const r of p.api.records || []) RECORDS[r.name] = r;
}

class Failed extends Error {}

function camel(name) {
  return name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
}

// Types of the description, parsed from their text (`list[opt[bytes]]`).
function parseType(text) {
  let at = 0;
  const ident = () => {
    const m = /^[A-Za-z0-9_]+/.exec(text.slice(at));
    at += m[0].length;
    return m[0];
  };
  const skip = () => {
    while (text[at] === " ") at++;
  };
  const ty = () => {
    skip();
    const word = ident();
    if (text[at] !== "[") return { kind: word };
    at++;
    const args = [];
    for (;;) {
      skip();
      if (word === "int") {
        const m = /^-?\d+\.\.-?\d+/.exec(text.slice(at));
        at += m[0].length;
        args.push(m[0]);
      } else if (word === "enum") {
        args.push(ident());
      } else {
        args.push(ty());
      }
      skip();
      if (text[at] === ",") {
        at++;
        continue;
      }
      at++; // ]
      return { kind: word, args };
    }
  };
  return ty();
}

function isUtf8(b) {
  return Buffer.from(b.toString("utf8"), "utf8").equals(b);
}

function bytesToJson(b) {
  return isUtf8(b) ? b.toString("utf8") : { $hex: b.toString("hex") };
}

// A result of the client as the cases' JSON, by its description type.
function toJson(v, t) {
  if (v === undefined || v === null) return null;
  const kind = t ? t.kind : null;
  if (kind === "opt") return toJson(v, t.args[0]);
  if (kind === "list" || kind === "tuple") {
    if (!Array.isArray(v)) throw new Failed(`expected an array for ${JSON.stringify(t)}, got ${typeof v}`);
    return v.map((x, i) => toJson(x, kind === "list" ? t.args[0] : t.args[i]));
  }
  if (kind === "map") {
    const out = {};
    for (const [k, x] of v instanceof Map ? v : Object.entries(v)) out[k] = toJson(x, t.args[1]);
    return out;
  }
  if (kind && CLASSES[kind]) return describe(v, kind);
  if (kind && RECORDS[kind]) {
    const out = {};
    for (const f of RECORDS[kind].fields) out[f.name] = toJson(v[camel(f.name)], parseType(f.type));
    return out;
  }
  return plainJson(v);
}

// A value without a description type (error data, raw replies).
function plainJson(v) {
  if (v === undefined || v === null) return null;
  if (Buffer.isBuffer(v)) return bytesToJson(v);
  if (typeof v === "bigint") return Number(v);
  if (Array.isArray(v)) return v.map(plainJson);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, plainJson(x)]));
  if (typeof v === "object") {
    if (typeof v.toJSON === "function") return plainJson(v.toJSON());
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plainJson(x)]));
  }
  return v;
}

function describe(obj, className) {
  const c = CLASSES[className];
  const out = {};
  for (const g of c.getters) out[g.name] = toJson(obj[camel(g.name)], parseType(g.type));
  return out;
}

// A case's JSON argument as the client takes it, by its description type.
function fromJson(v, t) {
  if (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 && "$hex" in v) {
    return Buffer.from(v.$hex, "hex");
  }
  if (v === null || v === undefined) return v;
  const kind = t ? t.kind : null;
  if (kind === "opt") return fromJson(v, t.args[0]);
  if ((kind === "list" || kind === "tuple") && Array.isArray(v)) {
    return v.map((x, i) => fromJson(x, kind === "list" ? t.args[0] : t.args[i]));
  }
  if (kind && RECORDS[kind] && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      const f = RECORDS[kind].fields.find((f) => f.name === k);
      out[camel(k)] = fromJson(x, f ? parseType(f.type) : null);
    }
    return out;
  }
  return v;
}

function compact(v) {
  const s = JSON.stringify(v === undefined ? null : v);
  return s.length <= 300 ? s : s.slice(0, 300) + "...";
}

function canonicalHex(h) {
  return bytesToJson(Buffer.from(h, "hex"));
}

function matches(want, got) {
  if (want && typeof want === "object" && !Array.isArray(want)) {
    const keys = Object.keys(want);
    if (keys.length === 1 && keys[0].startsWith("$")) {
      const arg = want[keys[0]];
      switch (keys[0]) {
        case "$any":
          return true;
        case "$range":
          return typeof got === "number" && got >= arg[0] && got <= arg[1];
        case "$above":
          return typeof got === "number" && got > arg;
        case "$len":
          return Array.isArray(got) && got.length === arg;
        case "$hex":
          return JSON.stringify(got) === JSON.stringify(canonicalHex(arg));
        case "$prefix":
          return typeof got === "string" && got.startsWith(arg);
        case "$type":
          return {
            str: () => typeof got === "string",
            int: () => typeof got === "number" && Number.isInteger(got),
            float: () => typeof got === "number",
            bool: () => typeof got === "boolean",
            list: () => Array.isArray(got),
          }[arg]();
        case "$unordered":
          return (
            Array.isArray(got) &&
            JSON.stringify(arg.map(compact).sort()) === JSON.stringify(got.map(compact).sort())
          );
        default:
          throw new Error(`unknown matcher ${keys[0]}`);
      }
    }
  }
  if (Array.isArray(want)) {
    return Array.isArray(got) && want.length === got.length && want.every((w, i) => matches(w, got[i]));
  }
  if (want && typeof want === "object") {
    if (!got || typeof got !== "object" || Array.isArray(got)) return false;
    const a = Object.keys(want).sort();
    const b = Object.keys(got).sort();
    return JSON.stringify(a) === JSON.stringify(b) && a.every((k) => matches(want[k], got[k]));
  }
  return want === got;
}

function today(offset) {
  const d = new Date(Date.now() + offset * 86_400_000);
  return d.toISOString().slice(0, 10);
}

function hostPort(url) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

class Target {
  constructor() {
    this.nodes = urls.map((u) => new Redis(u));
  }

  client() {
    return cluster ? new Redis.Cluster(urls.map(hostPort)) : new Redis(urls[0]);
  }

  async flush() {
    for (const n of this.nodes) {
      await n.flushall().catch(() => {});
    }
  }

  // The manifest's capabilities the server has: COMMAND INFO of their commands answers no nil.
  async capabilities() {
    const have = [];
    for (const c of manifest.capabilities) {
      if (c.commands.join("").includes(" ")) continue;
      const info = await this.nodes[0].call("COMMAND", "INFO", ...c.commands).catch(() => null);
      if (Array.isArray(info) && info.every((x) => x !== null)) have.push(c.name);
    }
    return have;
  }

  async keys() {
    const out = [];
    for (const n of this.nodes) {
      const info = await n.info("replication");
      if (/role:slave/.test(info)) continue;
      out.push(...(await n.keys("*")));
    }
    return out.sort();
  }

  close() {
    for (const n of this.nodes) n.disconnect();
  }
}

class Case {
  constructor(target, client) {
    this.target = target;
    this.client = client;
    this.saved = {};
    this.spawned = [];
    this.errors = [];
  }

  resolve(v) {
    if (Array.isArray(v)) return v.map((x) => this.resolve(x));
    if (v && typeof v === "object") {
      if (Object.keys(v).length === 1 && "$ref" in v) return this.lookup(v.$ref);
      if ("$today" in v) {
        const day = today(v.$today);
        return "in" in v ? v.in.replace("@", day) : day;
      }
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, this.resolve(x)]));
    }
    return v;
  }

  lookup(ref) {
    const [first, ...rest] = ref.split(".");
    if (!(first in this.saved)) throw new Failed(`nothing saved as ${first}`);
    let v = this.saved[first].json;
    for (const p of rest) v = v[/^\d+$/.test(p) ? Number(p) : p];
    return v;
  }

  async steps(steps) {
    for (let i = 0; i < steps.length; i++) {
      try {
        await this.step(steps[i]);
      } catch (e) {
        if (e instanceof Failed) throw new Failed(`step ${i + 1} ${compact(steps[i])}: ${e.message}`);
        throw e;
      }
    }
  }

  async step(s) {
    if ("sleep_ms" in s) return new Promise((r) => setTimeout(r, s.sleep_ms));
    if ("spawn" in s) return this.spawn(s.spawn);
    if ("keys" in s) return this.check(s, ["ok", await this.target.keys()], "keys");
    if ("redis" in s) {
      const [cmd, ...args] = this.resolve(s.redis).map(String);
      let got;
      try {
        got = ["ok", plainJson(await this.client.call(cmd, ...args))];
      } catch (e) {
        got = ["err", ["Server", { message: e.message }, e.message]];
      }
      return this.check(s, got);
    }
    const outcome = await this.call(s, this.resolve(s.args || {}));
    if (outcome[0] === "ok") {
      const name = s.as || s.save;
      if (name) this.saved[name] = { value: outcome[1], json: outcome[2] };
      return this.check(s, ["ok", outcome[2]]);
    }
    return this.check(s, outcome);
  }

  // Positional required inputs, then an options object of the optional ones.
  inputs(params, args, extra) {
    const known = new Set(params.map((p) => p.name));
    for (const k of Object.keys(args)) {
      if (!known.has(k)) throw new Failed(`the description has no input ${k}`);
    }
    const positional = [];
    const options = {};
    for (const p of params) {
      const t = parseType(p.type);
      if (!("default" in p)) {
        positional.push(fromJson(args[p.name], t));
      } else if (p.name in args) {
        options[camel(p.name)] = fromJson(args[p.name], t);
      }
    }
    if (extra !== undefined) positional.push(extra);
    else if (params.some((p) => "default" in p)) positional.push(options);
    return positional;
  }

  async call(s, args) {
    try {
      if ("new" in s) {
        const cls = rp[s.new];
        const desc = CLASSES[s.new];
        if (typeof cls !== "function" || !desc) throw new Failed(`the client has no class ${s.new}`);
        const obj = new cls(this.client, ...this.inputs(desc.new, args));
        return ["ok", obj, describe(obj, s.new)];
      }
      const { on, op } = s;
      const saved = this.saved[on];
      const className = saved ? saved.value.constructor.name : on;
      const desc = CLASSES[className];
      if (!desc) throw new Failed(`the client has no class ${className}`);
      const d = desc.ops.find((o) => o.name === op);
      if (!d) throw new Failed(`the description has no ${className}.${op}`);
      const target = saved ? saved.value : rp[on];
      if (op === "hold") return await this.hold(target, d, args, s);
      const fn = target && target[camel(op)];
      if (typeof fn !== "function") throw new Failed(`the client lacks ${className}.${camel(op)}`);
      const inputs = this.inputs(d.params, args);
      const result = await (d.static ? fn.call(target, this.client, ...inputs) : fn.apply(target, inputs));
      return ["ok", result, toJson(result, parseType(d.returns))];
    } catch (e) {
      if (e instanceof Failed) throw e;
      if (e instanceof rp.RedisPatternsError) return ["err", [e.kind, plainJson(e.data()), e.message]];
      return ["err", ["Server", { message: String(e && e.message) }, String(e && e.stack)]];
    }
  }

  async hold(target, d, args, s) {
    if (typeof target.using !== "function") throw new Failed("the client lacks using (hold)");
    let held = null;
    await target.using(
      ...this.inputs(d.params, args, async (h) => {
        held = h;
        await this.steps(s.body || []);
      }),
    );
    const json = { token: held.token, fence: held.fence, lost: held.lost };
    return ["ok", json, json];
  }

  spawn(spawn) {
    const run = async () => {
      await new Promise((r) => setTimeout(r, spawn.after_ms || 0));
      try {
        await this.steps(spawn.steps || []);
      } catch (e) {
        this.errors.push(`spawned: ${e.message}`);
      }
    };
    this.spawned.push(run());
  }

  async join() {
    await Promise.all(this.spawned);
    if (this.errors.length > 0) throw new Failed(this.errors.join("; "));
  }

  check(s, outcome, what = "result") {
    const kind = s.error;
    if (outcome[0] === "ok") {
      if (kind) throw new Failed(`expected error ${kind}, got ${compact(outcome[1])}`);
      const want = what === "keys" ? s.keys : s.expect;
      if (what === "keys" || "expect" in s) {
        const w = this.resolve(want);
        if (!matches(w, outcome[1])) throw new Failed(`expected ${compact(w)}, got ${compact(outcome[1])}`);
      }
      return;
    }
    const [gotKind, data, message] = outcome[1];
    if (!kind) throw new Failed(`failed: ${gotKind} ${compact(data)} (${message})`);
    if (gotKind !== kind) throw new Failed(`expected error ${kind}, got ${gotKind} ${compact(data)} (${message})`);
    for (const [k, w] of Object.entries(this.resolve(s.data || {}))) {
      if (!matches(w, data[k] === undefined ? null : data[k])) {
        throw new Failed(`error data ${k}: expected ${compact(w)}, got ${compact(data[k])}`);
      }
    }
  }
}

function select(steps) {
  const split = steps.findIndex((s) => s.part === "read");
  if (part === "all" || split < 0) return steps.filter((s) => !("part" in s));
  return part === "write" ? steps.slice(0, split) : steps.slice(split + 1);
}

async function main() {
  const target = new Target();
  let cases = JSON.parse(fs.readFileSync(casesPath, "utf8")).cases;
  if (part !== "all") {
    cases = cases.filter((c) => c.steps.some((s) => s.part === "read"));
    if (part === "write") await target.flush();
  }
  const have = await target.capabilities();
  // A case runs where the server has every capability of its needs and
  // none of its lacks (a refusal where they are missing).
  const lacking = [...new Set(cases.flatMap((c) => (c.needs ?? []).filter((n) => !have.includes(n))))].sort();
  const having = [...new Set(cases.flatMap((c) => (c.lacks ?? []).filter((n) => have.includes(n))))].sort();
  const skipped = cases.filter(
    (c) => (c.needs ?? []).some((n) => lacking.includes(n)) || (c.lacks ?? []).some((n) => having.includes(n)),
  );
  cases = cases.filter((c) => !skipped.includes(c));
  let passed = 0;
  const failed = [];
  for (const c of cases) {
    if (part === "all") await target.flush();
    const client = target.client();
    const run = new Case(target, client);
    try {
      await run.steps(select(c.steps));
      await run.join();
      passed += 1;
    } catch (e) {
      await Promise.allSettled(run.spawned);
      failed.push([c.name, e instanceof Failed ? e.message : String(e && e.stack)]);
    } finally {
      client.disconnect();
    }
  }
  target.close();
  const where = (cluster ? "cluster" : "server") + (part !== "all" ? `, ${part} part` : "");
  const why = [
    ...(lacking.length > 0 ? [`they need ${lacking.join(" and ")}, which the server lacks`] : []),
    ...(having.length > 0 ? [`they run only without ${having.join(" and ")}, which the server has`] : []),
  ];
  const skip = skipped.length > 0 ? `, ${skipped.length} skipped (${why.join("; ")})` : "";
  console.log(`conformance typescript (${where}): ${passed} passed, ${failed.length} failed${skip}`);
  for (const [name, why] of failed) console.log(`- ${name}: ${why}`);
  return passed > 0 && failed.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
