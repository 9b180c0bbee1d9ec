import { Io } from "../driver";
import type { Cohort, EventStreak, Page } from "../records";
/** The period labels of the UTC instant `atS`, one per granularity, finest first. */
export declare function labels(atS: number, granularities: readonly string[]): string[];
/** The label of the period n periods after the one labelled label (hour, day, ISO week, month or year). */
export declare function offset(label: string, n: number): string;
/** Where the period labelled label starts (unix seconds, UTC). */
export declare function start(label: string, name: string): number;
export declare class Analytics {
    private readonly prefix;
    private readonly tag;
    private readonly maxId;
    private readonly hll;
    private readonly granularities;
    constructor(prefix: string, tag: string | null, maxId: number, granularities: readonly string[] | null, hll?: boolean);
    key(event: string, period: string): string;
    mark(io: Io, event: string, id: number, atS: number | bigint): Promise<boolean>;
    markString(io: Io, event: string, id: string, atS: number | bigint): Promise<boolean>;
    markUniqueString(io: Io, event: string, id: string): Promise<boolean>;
    countUniques(io: Io, event: string, first: string, last: string | null): Promise<number>;
    streak(io: Io, event: string, id: number, first: string, last: string): Promise<EventStreak>;
    activeCount(io: Io, event: string, atLeast: number, ofLast: number, last: string): Promise<number>;
    activeContains(io: Io, event: string, atLeast: number, ofLast: number, last: string, id: number): Promise<boolean>;
    activeMembers(io: Io, event: string, atLeast: number, ofLast: number, last: string, from: number, limit: number): Promise<Page>;
    markUnique(io: Io, event: string, id: number): Promise<boolean>;
    count(io: Io, event: string, period: string): Promise<number>;
    private base;
    private query;
    queryCount(io: Io, e: unknown, cache: string | null, ttlMs: number): Promise<number>;
    queryContains(io: Io, e: unknown, id: number, cache: string | null, ttlMs: number): Promise<boolean>;
    queryMembers(io: Io, e: unknown, from: number, limit: number, cache: string | null, ttlMs: number): Promise<Page>;
    cohort(io: Io, cohortEvent: string, returnEvent: string, first: string, rows: number, columns: number): Promise<Cohort>;
}
