// The driver: every operation is written once, as an async function over
// an Io (the I/O of one run of it), and run by a Runner on an ioredis Redis
// or Cluster.
//
// * one(request): one script Call or plain Cmd, its reply; an error reply is
//   thrown as its errors.ts class;
// * batch(requests): one pipeline per node (on a cluster the requests are
//   grouped by the primary that serves their slot), the replies in order,
//   each error reply as an Error object in its place; all(requests) throws
//   the first;
// * wait(channel, ms): true when a message on the shard channel woke it
//   (SSUBSCRIBE on a connection of its own to the node of the channel's
//   slot, subscribed at the run's first wait and until the run ends, so a
//   message published after a zero-timeout wait is not missed; the runner
//   keeps the last one of a client, still subscribed (its socket unref'd:
//   it holds no process up; closed when the client ends), and the next run
//   that waits on the same channel takes it over without a connect or a
//   round trip, past the messages that came meanwhile, as the Python and
//   PHP clients do), false at the
//   timeout; with `to` (a waiter's token) only a message equal to it or to
//   `released` wakes it (the others name other waiters); sleep(ms); nodes():
//   the names of the primaries.
//
// EVALSHA answers NOSCRIPT after SCRIPT FLUSH or a restart: the script is
// loaded (its SHA1 checked) and the call sent again; in a pipeline, when
// every call from the first NOSCRIPT on failed that way, exactly that tail
// is sent again, else PipelineInterrupted. Replies are raw (bulk strings as
// Buffers): records and bitmaps are bytes.

import * as fs from "fs";
import * as path from "path";
import type { Cluster, Redis } from "ioredis";

import { Arg, Call, Cmd, Request, hashTag } from "./call";
import { InvalidArgument, PipelineInterrupted, RedisPatternsError, Server, ShaMismatch, fromCode } from "./errors";
import { SCRIPTS, ScriptInfo } from "./scripts";
import { crc16 } from "./hashing";

/** An ioredis client: a standalone Redis or a Cluster. */
export type Client = Redis | Cluster;

/** The node name of a keyless command any node answers (CONFIG GET, TIME). */
export const ANY = "any";
/** The one node of a standalone server. */
export const SERVER = "server";

const LUA = path.join(__dirname, "..", "lua");

/** The shipped script, as SCRIPT LOAD gets it. */
export function source(script: ScriptInfo): Buffer {
  return fs.readFileSync(path.join(LUA, script.file));
}

/** A reply as text. */
export function text(v: unknown): string {
  return Buffer.isBuffer(v) ? v.toString("utf8") : String(v);
}

/** A reply as an integer. */
export function int(v: unknown): number {
  return typeof v === "number" ? v : Number(text(v));
}

/** A reply as bytes (null stays null). */
export function bytes(v: unknown): Buffer | null {
  if (v === null || v === undefined) {
    return null;
  }
  return Buffer.isBuffer(v) ? v : Buffer.from(String(v));
}

/** The field-value pairs of a HGETALL-like reply (an array, or ioredis's object). */
export function pairs(v: unknown): [string, Buffer][] {
  if (Array.isArray(v)) {
    const out: [string, Buffer][] = [];
    for (let i = 0; i + 1 < v.length; i += 2) {
      out.push([text(v[i]), bytes(v[i + 1]) ?? Buffer.alloc(0)]);
    }
    return out;
  }
  if (v !== null && typeof v === "object") {
    return Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, bytes(x) ?? Buffer.alloc(0)]);
  }
  return [];
}

/** The cluster slot of a key (or channel). */
export function slot(key: Arg): number {
  return crc16(hashTag(key)) % 16384;
}

function isReplyError(e: unknown): e is Error {
  return e instanceof Error && e.name === "ReplyError";
}

function isNoScript(e: unknown): boolean {
  return isReplyError(e) && e.message.startsWith("NOSCRIPT");
}

function isRedirect(e: unknown): boolean {
  return isReplyError(e) && (e.message.startsWith("MOVED") || e.message.startsWith("ASK"));
}

/** The error of an error reply to a call of `script` (null: a command). */
export function errorOf(script: ScriptInfo | null, e: unknown): unknown {
  if (e instanceof RedisPatternsError || !isReplyError(e)) {
    return e;
  }
  const msg = e.message;
  const space = msg.indexOf(" ");
  const code = space < 0 ? msg : msg.slice(0, space);
  const full = space < 0 ? "" : msg.slice(space + 1);
  const at = full.indexOf(" script: ");
  const detail = at >= 0 ? full.slice(0, at).trimEnd() : full;
  if (script !== null && (script.errors.includes(code) || code === "MAXMEMORY")) {
    return fromCode(code, detail, script.name);
  }
  const denied = script !== null && isDenial(code, full) ? deniedCall(script, full) : null;
  return new Server(code, denied === null ? detail : `${detail} (${denied})`, script === null ? null : script.name);
}

/** NOPERM, or the plain ERR with which Redis 7.0 and Valkey answer a command the user's ACL denies inside a script. */
function isDenial(code: string, detail: string): boolean {
  return code === "NOPERM" || (code === "ERR" && (
    ["can't run this command", "can't publish to the channel", "can't access at least one of the keys"].some((p) => detail.includes(p)) ||
    detail.startsWith("ACL failure in script")));
}

/**
 * What a script's call that the user's ACL denied was: the server names the line
 * (`@user_script:<n>`), the script's table of calls names the command and, through
 * the header, its key or channel. null when that line holds no call.
 */
function deniedCall(script: ScriptInfo, detail: string): string | null {
  const at = /@user_script:(\d+)/.exec(detail);
  const what = at === null ? undefined : script.calls[Number(at[1])];
  return at === null || what === undefined ? null : `denied: ${what}, line ${at[1]} of ${script.name}`;
}

function infoOf(req: Request): ScriptInfo | null {
  return req instanceof Call ? SCRIPTS[req.script] : null;
}

function wireOf(req: Request): [string, Arg[]] {
  if (req instanceof Cmd) {
    return [text(req.args[0]), req.args.slice(1)];
  }
  const s = SCRIPTS[req.script];
  return [s.readOnly ? "EVALSHA_RO" : "EVALSHA", [s.sha1, String(req.keys.length), ...req.keys, ...req.args]];
}

function routeOf(req: Request): Arg | null {
  return req instanceof Call ? (req.keys[0] ?? null) : req.key;
}

function checkedLoad(script: ScriptInfo, sha: unknown): void {
  if (text(sha).toLowerCase() !== script.sha1) {
    throw new ShaMismatch(script.name, script.sha1, text(sha));
  }
}

/** The message that wakes every waiter (a release with no waiter queued). */
export const BROADCAST = "released";

/** The subscription of one run to one shard channel (on `node`: a cluster's primary of its slot, or SERVER). */
class Subscription {
  private pending = 0;
  private waker: (() => void) | null = null;

  constructor(
    private readonly conn: Redis,
    readonly channel: string,
    readonly node: string,
    private to: string | null,
  ) {
    conn.on("smessageBuffer", (ch: Buffer, message: Buffer) => {
      const m = message === undefined ? null : message.toString();
      if (ch.toString() === channel && (this.to === null || m === this.to || m === BROADCAST)) {
        this.pending += 1;
        const w = this.waker;
        this.waker = null;
        if (w !== null) {
          w();
        }
      }
    });
  }

  wait(ms: number): Promise<boolean> {
    if (this.pending > 0) {
      this.pending -= 1;
      return Promise.resolve(true);
    }
    if (ms <= 0) {
      return Promise.resolve(false);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waker = null;
        resolve(false);
      }, ms);
      this.waker = () => {
        clearTimeout(timer);
        this.pending -= 1;
        resolve(true);
      };
    });
  }

  /**
   * Taken over by a run that waits on the same channel (for `to`): the
   * messages that came while it was idle are read past (they were sent
   * before that run's next attempt, which sees what they announced).
   * False when its connection is not up (the run makes a new one).
   */
  takeOver(to: string | null): boolean {
    if (this.conn.status !== "ready") {
      return false;
    }
    this.to = to;
    this.pending = 0;
    this.waker = null;
    this.conn.stream?.ref();
    return true;
  }

  /** Kept idle by the runner: its socket holds no process up. */
  park(): void {
    this.conn.stream?.unref();
  }

  close(): void {
    this.conn.disconnect();
  }
}

/** What the runs on one client keep between them: the last run's subscription, still subscribed. */
export interface Kept {
  idle: Subscription | null;
}

const keptOf = new WeakMap<Client, Kept>();

/** What the runs on `client` keep (one subscription per client at most); closed when the client ends. */
function keptFor(client: Client): Kept {
  let k = keptOf.get(client);
  if (k === undefined) {
    const fresh: Kept = { idle: null };
    keptOf.set(client, fresh);
    client.on("end", () => {
      fresh.idle?.close();
      fresh.idle = null;
    });
    k = fresh;
  }
  return k;
}

/** The I/O of one run of an operation. */
export class Io {
  readonly cluster: boolean;
  private readonly subs = new Map<string, Promise<Subscription>>();

  constructor(
    private readonly client: Client,
    private readonly kept: Kept = { idle: null },
  ) {
    this.cluster = client.isCluster;
  }

  /** One request: its reply; an error reply thrown as its errors.ts class. */
  async one(req: Request): Promise<any> {
    try {
      return await this.send(req);
    } catch (e) {
      const s = infoOf(req);
      if (s === null || !isNoScript(e)) {
        throw errorOf(s, e);
      }
      await this.load(s, routeOf(req));
      try {
        return await this.send(req);
      } catch (again) {
        throw errorOf(s, again);
      }
    }
  }

  /** One pipeline per node: the replies in order, error replies as Error objects in place. */
  async batch(reqs: readonly Request[]): Promise<any[]> {
    if (reqs.length === 0) {
      return [];
    }
    if (!this.cluster) {
      return this.pipeline(this.client as Redis, reqs);
    }
    const cluster = this.client as Cluster;
    await ready(cluster);
    const groups = new Map<string, number[]>();
    const alone: number[] = [];
    reqs.forEach((req, i) => {
      const key = routeOf(req);
      if (req instanceof Cmd && req.node !== null) {
        alone.push(i);
      } else {
        const node = key === null ? ANY : (cluster.slots[slot(key)]?.[0] ?? ANY);
        const g = groups.get(node);
        if (g === undefined) {
          groups.set(node, [i]);
        } else {
          g.push(i);
        }
      }
    });
    const out: any[] = new Array(reqs.length);
    const sent = [...groups].map(async ([node, idx]) => {
      const conn = this.nodeConn(node);
      const replies = await this.pipeline(conn, idx.map((i) => reqs[i]));
      await Promise.all(
        idx.map(async (i, j) => {
          // A slot that moved since the slot map was read: not executed there, sent again by the cluster.
          out[i] = isRedirect(replies[j]) ? await this.one(reqs[i]).catch((e: unknown) => e) : replies[j];
        }),
      );
    });
    // Commands for a named node (SCAN of each primary): one each.
    const named = alone.map(async (i) => {
      out[i] = await this.one(reqs[i]).catch((e: unknown) => e);
    });
    await Promise.all([...sent, ...named]);
    return out;
  }

  /** A batch whose first error reply is thrown. */
  async all(reqs: readonly Request[]): Promise<any[]> {
    const replies = await this.batch(reqs);
    for (const r of replies) {
      if (r instanceof Error) {
        throw r;
      }
    }
    return replies;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, Math.max(ms, 0)));
  }

  /** Waits up to ms for a message on the shard channel (subscribing at the first wait); for `to` (a waiter's token), when given. */
  async wait(channel: string, ms: number, to: string | null = null): Promise<boolean> {
    let sub = this.subs.get(channel);
    if (sub === undefined) {
      sub = this.subscribe(channel, to);
      this.subs.set(channel, sub);
    }
    return (await sub).wait(ms);
  }

  /** The names of the primaries ([SERVER] for a standalone server). */
  async nodes(): Promise<string[]> {
    if (!this.cluster) {
      return [SERVER];
    }
    const cluster = this.client as Cluster;
    await ready(cluster);
    return cluster
      .nodes("master")
      .map(nodeName)
      .sort();
  }

  /** Whether the run subscribed to a channel (close() has something to end). */
  get subscribed(): boolean {
    return this.subs.size > 0;
  }

  /** Ends the run: hands its subscription to the runner (still subscribed) when it keeps none, closes the others. */
  async close(): Promise<void> {
    for (const sub of this.subs.values()) {
      let got: Subscription;
      try {
        got = await sub;
      } catch {
        continue; // a subscription that never opened has nothing to close
      }
      if (this.kept.idle === null) {
        got.park();
        this.kept.idle = got;
      } else {
        got.close();
      }
    }
    this.subs.clear();
  }

  private async subscribe(channel: string, to: string | null): Promise<Subscription> {
    let node = SERVER;
    if (this.cluster) {
      const cluster = this.client as Cluster;
      await ready(cluster);
      node = cluster.slots[slot(channel)]?.[0] ?? ANY;
    }
    const idle = this.kept.idle;
    if (idle !== null) {
      this.kept.idle = null;
      if (idle.channel === channel && idle.node === node && idle.takeOver(to)) {
        return idle;
      }
      idle.close();
    }
    const conn = this.cluster ? this.nodeConn(node).duplicate() : (this.client as Redis).duplicate();
    const sub = new Subscription(conn, channel, node, to);
    try {
      await conn.ssubscribe(channel);
    } catch (e) {
      sub.close();
      throw errorOf(null, e);
    }
    return sub;
  }

  private nodeConn(name: string): Redis {
    const cluster = this.client as Cluster;
    const masters = cluster.nodes("master");
    const found = name === ANY ? masters[0] : masters.find((n) => nodeName(n) === name);
    if (found === undefined) {
      throw new InvalidArgument("node", `${name} is not a primary of the cluster`, null);
    }
    return found;
  }

  /** Not async (its caller awaits): one promise fewer per request. */
  private send(req: Request): Promise<unknown> {
    const [name, args] = wireOf(req);
    if (req instanceof Cmd && req.node !== null && this.cluster) {
      const node = req.node;
      return ready(this.client as Cluster).then(() => this.nodeConn(node).callBuffer(name, args));
    }
    return this.client.callBuffer(name, args);
  }

  /** Loads a script where `key` lives (every primary of a cluster). */
  private async load(s: ScriptInfo, _key: Arg | null): Promise<void> {
    const src = source(s);
    if (!this.cluster) {
      checkedLoad(s, await this.client.callBuffer("SCRIPT", ["LOAD", src]));
      return;
    }
    const cluster = this.client as Cluster;
    await ready(cluster);
    for (const n of cluster.nodes("master")) {
      checkedLoad(s, await n.callBuffer("SCRIPT", ["LOAD", src]));
    }
  }

  /** One pipeline on one connection, with the NOSCRIPT tail sent again. */
  private async pipeline(conn: Redis | Cluster, reqs: readonly Request[]): Promise<any[]> {
    const done: any[] = [];
    let rest = reqs;
    while (rest.length > 0) {
      const p = conn.pipeline();
      for (const req of rest) {
        const [name, args] = wireOf(req);
        p.callBuffer(name, args);
      }
      const got = (await p.exec()) ?? [];
      const replies = got.map(([err, reply]) => (err === null ? reply : err));
      const first = replies.findIndex(isNoScript);
      const mapped = (upTo: number) =>
        replies.slice(0, upTo).map((r, i) => (r instanceof Error ? errorOf(infoOf(rest[i]), r) : r));
      if (first < 0) {
        return done.concat(mapped(replies.length));
      }
      for (let i = first; i < rest.length; i++) {
        if (!(rest[i] instanceof Call) || !isNoScript(replies[i])) {
          throw new PipelineInterrupted(done.length + first, done.length + rest.length);
        }
      }
      done.push(...mapped(first));
      const tail = rest.slice(first);
      const loads = new Map<string, ScriptInfo>();
      for (const req of tail) {
        const s = infoOf(req);
        if (s !== null) {
          loads.set(s.name, s);
        }
      }
      for (const s of loads.values()) {
        checkedLoad(s, await conn.callBuffer("SCRIPT", ["LOAD", source(s)]));
      }
      rest = tail;
    }
    return done;
  }
}

function nodeName(n: Redis): string {
  return `${n.options.host}:${n.options.port}`;
}

/** Resolves once the cluster knows its slots. */
async function ready(cluster: Cluster): Promise<void> {
  if (cluster.status === "ready") {
    return;
  }
  if (cluster.status === "wait") {
    await cluster.connect();
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const onReady = () => {
      cluster.off("end", onEnd);
      resolve();
    };
    const onEnd = () => {
      cluster.off("ready", onReady);
      reject(new Error("the cluster connection ended before it was ready"));
    };
    cluster.once("ready", onReady);
    cluster.once("end", onEnd);
  });
}

/** Runs operations on an ioredis Redis or Cluster. */
export class Runner {
  constructor(readonly client: Client) {
    if (client === null || typeof client !== "object" || typeof client.callBuffer !== "function") {
      throw new InvalidArgument("client", "must be an ioredis Redis or Cluster", null);
    }
    const options = client.options as { keyPrefix?: string; redisOptions?: { keyPrefix?: string } };
    if (options.keyPrefix || options.redisOptions?.keyPrefix) {
      throw new InvalidArgument(
        "client",
        "has a keyPrefix: the patterns name every key themselves (use their prefix settings) so that every language finds the same keys",
        null,
      );
    }
  }

  /**
   * Runs one operation with an Io of its own. Its subscriptions end with it,
   * without holding its result back: they are closed right after the caller
   * got it (closing cannot fail), so a woken waiter's acquire returns as soon
   * as its reply came.
   */
  async op<T>(body: (io: Io) => Promise<T>): Promise<T> {
    const io = new Io(this.client, keptFor(this.client));
    try {
      return await body(io);
    } finally {
      if (io.subscribed) {
        setImmediate(() => void io.close());
      }
    }
  }
}
