import type { Cluster, Redis } from "ioredis";
import { Arg, Request } from "./call";
import { ScriptInfo } from "./scripts";
/** An ioredis client: a standalone Redis or a Cluster. */
export type Client = Redis | Cluster;
/** The node name of a keyless command any node answers (CONFIG GET, TIME). */
export declare const ANY = "any";
/** The one node of a standalone server. */
export declare const SERVER = "server";
/** The shipped script, as SCRIPT LOAD gets it. */
export declare function source(script: ScriptInfo): Buffer;
/** A reply as text. */
export declare function text(v: unknown): string;
/** A reply as an integer. */
export declare function int(v: unknown): number;
/** A reply as bytes (null stays null). */
export declare function bytes(v: unknown): Buffer | null;
/** The field-value pairs of a HGETALL-like reply (an array, or ioredis's object). */
export declare function pairs(v: unknown): [string, Buffer][];
/** The cluster slot of a key (or channel). */
export declare function slot(key: Arg): number;
/** The error of an error reply to a call of `script` (null: a command). */
export declare function errorOf(script: ScriptInfo | null, e: unknown): unknown;
/** The message that wakes every waiter (a release with no waiter queued). */
export declare const BROADCAST = "released";
/** The subscription of one run to one shard channel (on `node`: a cluster's primary of its slot, or SERVER). */
declare class Subscription {
    private readonly conn;
    readonly channel: string;
    readonly node: string;
    private to;
    private pending;
    private waker;
    constructor(conn: Redis, channel: string, node: string, to: string | null);
    wait(ms: number): Promise<boolean>;
    /**
     * Taken over by a run that waits on the same channel (for `to`): the
     * messages that came while it was idle are read past (they were sent
     * before that run's next attempt, which sees what they announced).
     * False when its connection is not up (the run makes a new one).
     */
    takeOver(to: string | null): boolean;
    /** Kept idle by the runner: its socket holds no process up. */
    park(): void;
    close(): void;
}
/** What the runs on one client keep between them: the last run's subscription, still subscribed. */
export interface Kept {
    idle: Subscription | null;
}
/** The I/O of one run of an operation. */
export declare class Io {
    private readonly client;
    private readonly kept;
    readonly cluster: boolean;
    private readonly subs;
    constructor(client: Client, kept?: Kept);
    /** One request: its reply; an error reply thrown as its errors.ts class. */
    one(req: Request): Promise<any>;
    /** One pipeline per node: the replies in order, error replies as Error objects in place. */
    batch(reqs: readonly Request[]): Promise<any[]>;
    /** A batch whose first error reply is thrown. */
    all(reqs: readonly Request[]): Promise<any[]>;
    sleep(ms: number): Promise<void>;
    /** Waits up to ms for a message on the shard channel (subscribing at the first wait); for `to` (a waiter's token), when given. */
    wait(channel: string, ms: number, to?: string | null): Promise<boolean>;
    /** The names of the primaries ([SERVER] for a standalone server). */
    nodes(): Promise<string[]>;
    /** Whether the run subscribed to a channel (close() has something to end). */
    get subscribed(): boolean;
    /** Ends the run: hands its subscription to the runner (still subscribed) when it keeps none, closes the others. */
    close(): Promise<void>;
    private subscribe;
    private nodeConn;
    /** Not async (its caller awaits): one promise fewer per request. */
    private send;
    /** Loads a script where `key` lives (every primary of a cluster). */
    private load;
    /** One pipeline on one connection, with the NOSCRIPT tail sent again. */
    private pipeline;
}
/** Runs operations on an ioredis Redis or Cluster. */
export declare class Runner {
    readonly client: Client;
    constructor(client: Client);
    /**
     * Runs one operation with an Io of its own. Its subscriptions end with it,
     * without holding its result back: they are closed right after the caller
     * got it (closing cannot fail), so a woken waiter's acquire returns as soon
     * as its reply came.
     */
    op<T>(body: (io: Io) => Promise<T>): Promise<T>;
}
export {};
