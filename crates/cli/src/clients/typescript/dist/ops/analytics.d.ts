import { Io } from "../driver";
/** The period labels of the UTC instant `atS`, one per granularity, finest first. */
export declare function labels(atS: number, granularities: readonly string[]): string[];
export declare class Analytics {
    private readonly prefix;
    private readonly tag;
    private readonly maxId;
    private readonly granularities;
    constructor(prefix: string, tag: string | null, maxId: number, granularities: readonly string[] | null);
    key(event: string, period: string): string;
    mark(io: Io, event: string, id: number, atS: number | bigint): Promise<boolean>;
    count(io: Io, event: string, period: string): Promise<number>;
}
