import { Day } from "../days";
import { Io } from "../driver";
import type { BatchVisits, ShardPlan, Visit } from "../records";
type Member = number | bigint;
/** crc32 of the member's decimal text, mod shards. */
export declare function shardOf(member: Member, shards: number): number;
export declare class VisitCounter {
    readonly name: string;
    readonly shards: number;
    readonly timeZone: string;
    private readonly prefix;
    private readonly retentionS;
    private readonly lateWindowS;
    private readonly zone;
    constructor(name: string, shards: number, timeZone: string, prefix: string, retentionS: number | null, lateWindowS: number | null);
    private vars;
    counterKey(day: Day): string;
    metaKey(day: Day): string;
    shardKey(day: Day, index: number): string;
    private expireAt;
    private acceptUntil;
    private addCall;
    add(io: Io, day: Day, member: Member): Promise<Visit>;
    addNow(io: Io, member: Member): Promise<Visit>;
    addAt(io: Io, atMs: number, member: Member): Promise<Visit>;
    dayOf(atMs: number): string;
    memberFromStringId(id: string): number;
    addPipelined(io: Io, day: Day, members: readonly Member[]): Promise<Visit[]>;
    addBatch(io: Io, day: Day, members: readonly Member[]): Promise<BatchVisits>;
    count(io: Io, day: Day): Promise<number>;
    finalCount(io: Io, day: Day): Promise<number>;
    contains(io: Io, day: Day, member: Member): Promise<boolean>;
    shardSizes(io: Io, day: Day): Promise<number[]>;
    distinctOver(io: Io, over: readonly Day[]): Promise<number>;
    distinctBetween(io: Io, from: Day, to: Day): Promise<number>;
    storedShards(io: Io, day: Day): Promise<number | null>;
    storedShardsBetween(io: Io, from: Day, to: Day): Promise<number | null>;
    static planned(io: Io, name: string, expectedDailyUniques: number, timeZone: string): Promise<[VisitCounter, ShardPlan]>;
}
/** src/visits/shards.rs plan_shards: the mean m per shard with m + 4 sqrt(m) <= the limit. */
export declare function planShards(expected: number, maxIntsetEntries: number): number;
export {};
