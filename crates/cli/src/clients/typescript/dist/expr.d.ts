export declare const MAX_LEAVES = 1000;
export declare const MAX_AT_LEAST = 32;
export declare const LABEL: RegExp;
/** A checked node. */
export type Node = {
    op: "event";
    key: string;
} | {
    op: "and" | "or" | "xor" | "one" | "diff";
    of: Node[];
} | {
    op: "not";
    x: Node;
} | {
    op: "at_least";
    n: number;
    of: Node[];
};
type KeyOf = (event: string, period: string) => string;
/** The checked expression and the key of each leaf, in order. */
export declare function read(v: unknown, keyOf: KeyOf): [Node, string[]];
/** An operand: the result (-1), a register (r >= 0) or an input ("i" + index). */
type Operand = number | string;
/** The BITOP steps of analytics.query over KEYS indices: 1 the result, then the registers, then the inputs. */
export declare class Program {
    readonly inputs: string[];
    registers: number;
    private readonly raw;
    private readonly free;
    private reg;
    private release;
    private step;
    private leaf;
    private operand;
    private nary;
    eval(n: Node, dst: Operand): void;
    /** a AND NOT (OR rest) as a XOR (a AND (OR rest)). */
    private diff;
    /** In exactly one: ones XOR-ed, twos OR-ed from ones AND x, then ones AND NOT twos. */
    private one;
    /** at[j]: the ids in at least j+1 of the operands so far; at[n-1] is dst. */
    private atLeast;
    steps(): string[];
}
export declare function compile(node: Node): Program;
/** The bitmap of n over fetched bitmaps of one length. */
export declare function evaluate(n: Node, bitmapOf: Map<string, Buffer>, len: number): Buffer;
/** How many bits are set. */
export declare function popcount(b: Buffer): number;
/** The reply analytics.query gives for the result bitmap. */
export declare function answer(result: Buffer, what: string, at: number, limit: number): number[];
/** Fetched bitmaps (null: missing) padded to one length, and that length. */
export declare function padded(blobs: (Buffer | null)[]): [Buffer[], number];
export {};
