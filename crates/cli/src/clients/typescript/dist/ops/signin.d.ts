import { Request } from "../call";
import { Day } from "../days";
import { Io } from "../driver";
import type { Streak } from "../records";
export declare const MAX_OFFSET = 4294967295;
/** The settings of a bitmap pattern (sign-in, login log, analytics): a prefix that names keys, ids within a bitmap. */
export declare function checkSettings(prefix: string, maxUid: number, what?: string): void;
export declare function checkUid(uid: number, maxUid: number): void;
export declare function tmpKey(base: string): string;
/** The temporary key of one script over `keys`, or null when they must be fetched (cluster, other slots). */
export declare function combined(io: Io, base: string, keys: readonly string[]): string | null;
/** Per [base, keys] group: one signin.combine call, or a GET of each key. */
export declare function readGroups(io: Io, op: "OR" | "AND", groups: readonly [string, string[]][]): Request[];
export declare class SignIn {
    private readonly prefix;
    private readonly tag;
    private readonly maxUid;
    private readonly retentionS;
    constructor(prefix: string, tag: string | null, maxUid: number, retentionS: number | null);
    key(day: Day): string;
    private base;
    signIn(io: Io, uid: number, day: Day): Promise<boolean>;
    signedIn(io: Io, uid: number, day: Day): Promise<boolean>;
    count(io: Io, day: Day): Promise<number>;
    private users;
    private countOf;
    activeAny(io: Io, from: Day, to: Day): Promise<number[]>;
    activeEvery(io: Io, from: Day, to: Day): Promise<number[]>;
    countAny(io: Io, from: Day, to: Day): Promise<number>;
    countEvery(io: Io, from: Day, to: Day): Promise<number>;
    daysSignedInOn(io: Io, uid: number, from: Day, to: Day): Promise<Day[]>;
    daysSignedIn(io: Io, uid: number, from: Day, to: Day): Promise<string[]>;
    streak(io: Io, uid: number, from: Day, to: Day): Promise<Streak>;
}
