import { Io } from "../driver";
import type { BloomInfo, BloomParams, LoadProgress } from "../records";
export declare class Bloom {
    readonly name: string;
    private readonly prefix;
    readonly params: BloomParams;
    private readonly spread;
    private readonly pText;
    readonly configKey: string;
    readonly blockKeys: string[];
    constructor(name: string, prefix: string, params: BloomParams, spread: boolean, pText: string);
    private createCall;
    private initBlocks;
    /** Block j of a spread filter holding another type (WRONGTYPE) is the config of the filter `<name>:<j>`: refused naming both. */
    private blockTaken;
    static create(io: Io, name: string, expected: number, fpRate: number, prefix: string, spreadBlocks: boolean, maxMemory: number): Promise<Bloom>;
    private static fromConfig;
    static open(io: Io, name: string, prefix: string): Promise<Bloom>;
    locate(v: Buffer): [number, number[]];
    private items;
    add(io: Io, v: Buffer): Promise<boolean>;
    exists(io: Io, v: Buffer): Promise<boolean>;
    multiAdd(io: Io, items: readonly Buffer[]): Promise<boolean[]>;
    multiExists(io: Io, items: readonly Buffer[]): Promise<boolean[]>;
    bitsSet(io: Io): Promise<number[]>;
    private estimate;
    approxCount(io: Io): Promise<number>;
    info(io: Io): Promise<BloomInfo>;
    clear(io: Io): Promise<void>;
    load(io: Io, items: readonly (Buffer | null)[], batch: number, start: number): Promise<LoadProgress>;
    destroy(io: Io): Promise<void>;
}
export declare class JsHashBloom {
    private readonly limitMemory;
    readonly key: string;
    constructor(key: string, prefix: string, limitMemory: boolean);
    offset(v: Buffer): number;
    multiAdd(io: Io, items: readonly Buffer[]): Promise<boolean[]>;
    multiExists(io: Io, items: readonly Buffer[]): Promise<boolean[]>;
    add(io: Io, v: Buffer): Promise<boolean>;
    exists(io: Io, v: Buffer): Promise<boolean>;
    load(io: Io, items: readonly (Buffer | null)[], batch: number, start: number): Promise<LoadProgress>;
}
