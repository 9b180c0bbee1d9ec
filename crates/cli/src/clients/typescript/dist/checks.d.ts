import { Day } from "./days";
export declare function str(name: string, v: unknown): string;
/** Not empty, no `{` or `}`. */
export declare function name(what: string, v: unknown): string;
export declare function token(what: string, v: unknown): string;
export declare function prefix(what: string, v: unknown): string;
/** Text (its UTF-8) or bytes, as a Buffer. */
export declare function bytes(name: string, v: unknown): Buffer;
/**
 * A signed 64-bit integer: a safe integer number, or a bigint for the whole
 * range. A number within ±(2^53 − 1) comes back as a number, a larger
 * bigint as a bigint.
 */
export declare function int(name: string, v: unknown): number | bigint;
/** An integer from lo to hi (numbers; a bigint in range is taken as its number). */
export declare function range(name: string, v: unknown, lo: number, hi: number): number;
/** A non-negative integer (at most 2^53 − 1). */
export declare function uint(name: string, v: unknown): number;
/** A duration in whole milliseconds, at least 1. */
export declare function ms(name: string, v: unknown): number;
export declare function float(name: string, v: unknown): number;
export declare function bool(name: string, v: unknown): boolean;
/**
 * A calendar day: 'YYYY-MM-DD', or a Date at midnight (UTC midnight, as
 * new Date('2026-01-02') makes, is that UTC day; local midnight, as
 * new Date(2026, 0, 2) makes, that local day). A Date with a time of day
 * is an instant, not a day, and is refused.
 */
export declare function date(name: string, v: unknown): Day;
/** A JSON value. */
export declare function json(name: string, v: unknown): unknown;
export declare function oneOf<T extends string>(name: string, v: unknown, words: readonly T[]): T;
export declare function opt<T>(v: unknown, each: (x: unknown) => T): T | null;
export declare function list<T>(name: string, v: unknown, each: (x: unknown) => T): T[];
export declare function pair<A, B>(name: string, v: unknown, first: (x: unknown) => A, second: (x: unknown) => B): [A, B];
/** A map: a Map or a plain object, as a Map. */
export declare function map<K, V>(name: string, v: unknown, key: (x: unknown) => K, value: (x: unknown) => V): Map<K, V>;
/** A record (a plain object with exactly these fields), each field checked. */
export declare function record<T>(name: string, v: unknown, fields: {
    [K in keyof T]: (x: unknown) => T[K];
}): T;
/** The options object of the optional inputs: an object (or undefined) naming only these. */
export declare function options<T extends object>(name: string, v: T | undefined, names: readonly string[]): Partial<T>;
/** A function (the body of `using`). */
export declare function fn<F extends (...args: never[]) => unknown>(name: string, v: F): F;
