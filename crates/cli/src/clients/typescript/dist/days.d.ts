export type Day = number;
export declare const MAX_RANGE_DAYS = 3660;
/** The day of year-month-day, or null when there is no such day. */
export declare function fromParts(y: number, m: number, d: number): Day | null;
/** 'YYYY-MM-DD', or a Date at UTC or local midnight, as a Day (null: not a day). */
export declare function dayOf(v: unknown): Day | null;
export interface Parts {
    y: number;
    m: number;
    d: number;
}
export declare function parts(day: Day): Parts;
/** YYYY-MM-DD */
export declare function iso(day: Day): string;
/** YYYYMMDD */
export declare function compact(day: Day): string;
/** YYYY-MM */
export declare function monthLabel(day: Day): string;
/** 'YYYY-MM-DD' as a Day (throws on anything else). */
export declare function parse(text: string): Day;
export declare function firstOfMonth(day: Day): Day;
export declare function nextMonth(day: Day): Day;
/** Every day of first..last (never reversed, at most 3660 days). */
export declare function days(first: Day, last: Day): Day[];
/** [first day, last day] of each calendar month of first..last, cut to the range. */
export declare function months(first: Day, last: Day): [Day, Day][];
/** 0 when kept forever, else 00:00 UTC of periodEnd plus the retention, in unix seconds. */
export declare function expireAt(retentionS: number | null, periodEnd: Day): number;
/** A time zone: UTC, a fixed offset +HH:MM, or an IANA zone name. */
export declare class Zone {
    readonly name: string;
    private readonly fixedMs;
    private readonly format;
    constructor(name: string);
    /** The zone's offset from UTC at an instant, in ms. */
    offsetAt(instantMs: number): number;
    /** The local calendar day of an instant. */
    dayAt(instantMs: number): Day;
}
/**
 * The first instant of the day after `day` in `zone`, as unix seconds (a
 * DST gap at midnight: the first valid local time after it; ambiguous: the
 * earlier).
 */
export declare function endOfDay(day: Day, zone: Zone): number;
/** The offsets of the set bits, ascending (bit 0: the high bit of byte 0). */
export declare function decodeBits(bitmap: Buffer | null): number[];
/** OR or AND of bitmaps, as BITOP (a missing key is empty). */
export declare function fold(op: "OR" | "AND", bitmaps: readonly (Buffer | null)[]): Buffer;
