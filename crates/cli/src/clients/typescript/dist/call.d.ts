/** A key or argument as sent: text (UTF-8) or bytes. */
export type Arg = string | Buffer;
/** One call of a bundled script with its keys and (encoded) arguments. */
export declare class Call {
    readonly script: string;
    readonly keys: Arg[];
    readonly args: Arg[];
    constructor(script: string, keys: Arg[], args: Arg[]);
}
/**
 * One plain command. `key` is the key that routes it on a cluster (null: a
 * keyless command); `node` sends it to that primary (a name from
 * Io.nodes(), or ANY for a keyless command any node answers).
 */
export declare class Cmd {
    readonly args: Arg[];
    readonly key: Arg | null;
    readonly node: string | null;
    constructor(args: Arg[], key: Arg | null, node?: string | null);
}
/** A plain command routed by its first argument after the name (its key). */
export declare function cmd(name: string, key: Arg, ...rest: (Arg | number)[]): Cmd;
/** A command for one node (SCAN of a primary, a keyless CONFIG GET or TIME). */
export declare function nodeCmd(node: string, ...args: (Arg | number)[]): Cmd;
export type Request = Call | Cmd;
export declare function int(name: string, v: unknown, lo: number | bigint, hi: number | bigint, reason: string): void;
export declare function float(name: string, v: unknown, reason: string): void;
export declare function bool(name: string, v: unknown, reason: string): void;
export declare function oneOf(name: string, v: unknown, words: readonly string[], reason: string): void;
export declare function text(name: string, v: unknown, nonEmpty: boolean, reason: string): void;
/** The part of a key that picks its cluster slot. */
export declare function hashTag(name: Arg): Buffer;
export declare function tagged(name: string, v: unknown, key: unknown, reason: string): void;
export declare function many<T>(name: string, v: readonly T[]): readonly T[];
export declare function key(name: string, k: unknown): Arg;
export declare function keys(name: string, ks: readonly Arg[]): Arg[];
/** A number or bigint as the script reads it. */
export declare function num(v: number | bigint): string;
