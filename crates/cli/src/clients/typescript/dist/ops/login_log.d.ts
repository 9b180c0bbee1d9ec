import { Day } from "../days";
import { Io } from "../driver";
import type { ActiveUser, Expiry, MonthLogins, ReindexReport } from "../records";
export declare function checkType(userType: string): void;
export declare class LoginLog {
    private readonly prefix;
    private readonly maxUid;
    private readonly retentionS;
    constructor(prefix: string, maxUid: number, retentionS: number | null);
    monthOf(day: Day): string;
    syncMonths(today: Day): string[];
    logKey(userType: string, uid: number, day: Day): string;
    indexKey(userType: string, day: Day): string;
    typesKey(day: Day): string;
    private tag;
    record(io: Io, userType: string, uid: number, day: Day): Promise<boolean>;
    loggedInOn(io: Io, userType: string, uid: number, day: Day): Promise<boolean>;
    daysInMonth(io: Io, userType: string, uid: number, year: number | bigint, month: number): Promise<number>;
    loggedInInMonth(io: Io, userType: string, uid: number, year: number | bigint, month: number): Promise<boolean>;
    loggedInBetween(io: Io, userType: string, uid: number, from: Day, to: Day): Promise<boolean>;
    loginDays(io: Io, userType: string, uid: number, from: Day, to: Day): Promise<string[]>;
    private union;
    activeUsers(io: Io, userType: string, from: Day, to: Day): Promise<number[]>;
    private types;
    typesBetween(io: Io, from: Day, to: Day): Promise<string[]>;
    allActiveUsers(io: Io, from: Day, to: Day): Promise<ActiveUser[]>;
    monthUsers(io: Io, month: Day): Promise<ActiveUser[]>;
    monthLogins(io: Io, month: Day, users: readonly ActiveUser[]): Promise<MonthLogins[]>;
    private exportsKey;
    markExported(io: Io, month: Day, on: Day): Promise<void>;
    exports(io: Io): Promise<[string, string][]>;
    expireMonth(io: Io, month: Day, keepDays: number, today: Day): Promise<Expiry>;
    private monthPrefix;
    /** One page of a reindex: a SCAN on every node not done (`at` moves on: a cursor, or null when done), then the logs found: [logs, days, new, skipped]. */
    private page;
    reindex(io: Io, year: number | bigint, month: number, count: number): Promise<ReindexReport>;
    reindexPage(io: Io, year: number | bigint, month: number, cursor: string, count: number): Promise<ReindexReport>;
    private parseKey;
}
