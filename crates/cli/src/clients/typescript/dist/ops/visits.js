"use strict";
// The visit counter's operations (src/visits, lua/visits).
Object.defineProperty(exports, "__esModule", { value: true });
exports.VisitCounter = void 0;
exports.shardOf = shardOf;
exports.planShards = planShards;
const call_1 = require("../call");
const contract_1 = require("../contract");
const days_1 = require("../days");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const hashing_1 = require("../hashing");
const scripts = require("../scripts");
const MAX_GRACE_S = 366 * 86400;
const UNION_SETS = 512;
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
/** crc32 of the member's decimal text, mod shards. */
function shardOf(member, shards) {
    return (0, hashing_1.crc32)(String(member)) % shards;
}
class VisitCounter {
    name;
    shards;
    timeZone;
    prefix;
    retentionS;
    lateWindowS;
    zone;
    constructor(name, shards, timeZone, prefix, retentionS, lateWindowS) {
        this.name = name;
        this.shards = shards;
        this.timeZone = timeZone;
        this.prefix = prefix;
        this.retentionS = retentionS;
        this.lateWindowS = lateWindowS;
        if (retentionS !== null && retentionS > MAX_GRACE_S) {
            throw bad("retention", "must be whole seconds, at most 366 days");
        }
        if (lateWindowS !== null) {
            if (lateWindowS > MAX_GRACE_S) {
                throw bad("late window", "must be whole seconds, at most 366 days");
            }
            if (retentionS !== null && lateWindowS > retentionS) {
                throw bad("late window", `${lateWindowS} s is longer than the retention's grace of ${retentionS} s: late visits would find their day's keys gone`);
            }
        }
        this.zone = new days_1.Zone(timeZone);
    }
    vars(day) {
        return { prefix: this.prefix, name: this.name, "YYYY-MM-DD": (0, days_1.iso)(day) };
    }
    counterKey(day) {
        return (0, contract_1.key)("visits", "counter", this.vars(day));
    }
    metaKey(day) {
        return (0, contract_1.key)("visits", "meta", this.vars(day));
    }
    shardKey(day, index) {
        return (0, contract_1.key)("visits", "shard", { ...this.vars(day), shard: String(index) });
    }
    expireAt(day) {
        return this.retentionS === null ? 0 : (0, days_1.endOfDay)(day, this.zone) + this.retentionS;
    }
    acceptUntil(day) {
        return this.lateWindowS === null ? 0 : (0, days_1.endOfDay)(day, this.zone) + this.lateWindowS;
    }
    addCall(day, member) {
        return scripts.Visits.add(this.counterKey(day), this.shardKey(day, shardOf(member, this.shards)), this.metaKey(day), this.expireAt(day), this.acceptUntil(day), member, this.shards);
    }
    async add(io, day, member) {
        const [isNew, count] = (await io.one(this.addCall(day, member)));
        return { new: (0, driver_1.int)(isNew) === 1, count: Math.max((0, driver_1.int)(count), 0) };
    }
    addNow(io, member) {
        return this.add(io, this.zone.dayAt(Date.now()), member);
    }
    addAt(io, atMs, member) {
        return this.add(io, this.zone.dayAt(atMs), member);
    }
    dayOf(atMs) {
        return (0, days_1.iso)(this.zone.dayAt(atMs));
    }
    memberFromStringId(id) {
        const c = (0, hashing_1.crc32)(id);
        return c >= 2 ** 31 ? c - 2 ** 32 : c;
    }
    async addPipelined(io, day, members) {
        if (members.length === 0) {
            return [];
        }
        const replies = await io.all(members.map((m) => this.addCall(day, m)));
        return replies.map((r) => ({ new: (0, driver_1.int)(r[0]) === 1, count: Math.max((0, driver_1.int)(r[1]), 0) }));
    }
    async addBatch(io, day, members) {
        const expire = this.expireAt(day);
        const accept = this.acceptUntil(day);
        if (members.length === 0) {
            return { count: await this.count(io, day), new: [] };
        }
        const groups = new Map();
        const place = [];
        const seen = new Set();
        for (const m of members) {
            const id = String(m);
            if (seen.has(id)) {
                place.push(null);
                continue;
            }
            seen.add(id);
            const s = shardOf(m, this.shards);
            let g = groups.get(s);
            if (g === undefined) {
                g = [];
                groups.set(s, g);
            }
            g.push(m);
            place.push([s, g.length - 1]);
        }
        const offset = new Map();
        let at = 1;
        const args = [];
        for (const [s, g] of groups) {
            offset.set(s, at);
            at += g.length;
            args.push(g.length, ...g);
        }
        const reply = (await io.one(scripts.Visits.addBatch(this.counterKey(day), this.metaKey(day), [...groups.keys()].map((s) => this.shardKey(day, s)), expire, accept, this.shards, args)));
        const isNew = place.map((p) => (p === null ? false : (0, driver_1.int)(reply[offset.get(p[0]) + p[1]]) === 1));
        return { count: Math.max((0, driver_1.int)(reply[0]), 0), new: isNew };
    }
    async count(io, day) {
        const n = await io.one((0, call_1.cmd)("GET", this.counterKey(day)));
        return n === null ? 0 : Math.max((0, driver_1.int)(n), 0);
    }
    async finalCount(io, day) {
        const end = (0, days_1.endOfDay)(day, this.zone);
        const expire = this.retentionS === null ? null : end + this.retentionS;
        const accept = this.lateWindowS === null ? null : end + this.lateWindowS;
        const [nowReply, count] = await io.all([(0, call_1.nodeCmd)(driver_1.ANY, "TIME"), (0, call_1.cmd)("GET", this.counterKey(day))]);
        const now = (0, driver_1.int)(nowReply[0]);
        const when = (at) => new Date(at * 1000).toISOString().replace(".000Z", "+00:00");
        if (accept === null) {
            throw new errors_1.DayOpen(`${(0, days_1.iso)(day)} accepts visits as long as its keys live (the counter has no late window)`);
        }
        if (now < accept) {
            throw new errors_1.DayOpen(`${(0, days_1.iso)(day)} accepts visits until ${when(accept)} (its end plus the late window)`);
        }
        if (expire !== null && now >= expire) {
            throw new errors_1.DayExpired(`${(0, days_1.iso)(day)}'s keys expired at ${when(expire)} (its end plus the retention's grace)`);
        }
        return count === null ? 0 : Math.max((0, driver_1.int)(count), 0);
    }
    async contains(io, day, member) {
        const reply = (await io.one(scripts.Visits.contains(this.counterKey(day), this.shardKey(day, shardOf(member, this.shards)), member)));
        return reply !== null && reply.length > 0 && (0, driver_1.int)(reply[0]) === 1;
    }
    async shardSizes(io, day) {
        const batch = [];
        for (let i = 0; i < this.shards; i++) {
            batch.push((0, call_1.cmd)("SCARD", this.shardKey(day, i)));
        }
        return (await io.all(batch)).map(driver_1.int);
    }
    async distinctOver(io, over) {
        const distinct = [...new Set(over)].sort((a, b) => a - b);
        if (distinct.length === 0) {
            return 0;
        }
        if (distinct.length === 1) {
            return this.count(io, distinct[0]);
        }
        const per = Math.max(Math.floor(UNION_SETS / distinct.length), 1);
        let total = 0;
        for (let first = 0; first < this.shards; first += per) {
            const idx = [];
            for (let i = first; i < Math.min(first + per, this.shards); i++) {
                idx.push(i);
            }
            const sets = await io.all(idx.flatMap((i) => distinct.map((d) => (0, call_1.cmd)("SMEMBERS", this.shardKey(d, i)))));
            idx.forEach((_, j) => {
                const union = new Set();
                for (const s of sets.slice(j * distinct.length, (j + 1) * distinct.length)) {
                    s.forEach((m) => union.add((0, driver_1.text)(m)));
                }
                total += union.size;
            });
        }
        return total;
    }
    distinctBetween(io, from, to) {
        return this.distinctOver(io, (0, days_1.days)(from, to));
    }
    storedShards(io, day) {
        return this.storedShardsBetween(io, day, day);
    }
    async storedShardsBetween(io, from, to) {
        const keys = (0, days_1.days)(from, to).map((d) => this.metaKey(d));
        const got = await io.all(keys.map((k) => (0, call_1.cmd)("HGET", k, "shards")));
        let found = null;
        keys.forEach((k, i) => {
            if (got[i] === null) {
                return;
            }
            const n = (0, driver_1.int)(got[i]);
            if (found !== null && found[1] !== n) {
                throw new errors_1.LayoutMismatch(k, `shards=${n}`, `shards=${found[1]} (stored at ${found[0]})`);
            }
            found = found ?? [k, n];
        });
        return found === null ? null : found[1];
    }
    static async planned(io, name, expectedDailyUniques, timeZone) {
        if (expectedDailyUniques === 0) {
            throw bad("expected daily uniques", "must be at least 1");
        }
        let limit = 512;
        let source = "default_because_unreported";
        try {
            const got = (0, driver_1.pairs)(await io.one((0, call_1.nodeCmd)(driver_1.ANY, "CONFIG", "GET", "set-max-intset-entries")));
            if (got.length > 0) {
                limit = (0, driver_1.int)(got[0][1]);
                source = "server";
            }
        }
        catch (e) {
            if (!(e instanceof errors_1.RedisPatternsError)) {
                throw e;
            }
            source = "default_because_denied";
        }
        const shards = planShards(expectedDailyUniques, limit);
        return [
            new VisitCounter(name, shards, timeZone, "visits:", 172800, 300),
            { shards, maxIntsetEntries: limit, limitsSource: source },
        ];
    }
}
exports.VisitCounter = VisitCounter;
/** src/visits/shards.rs plan_shards: the mean m per shard with m + 4 sqrt(m) <= the limit. */
function planShards(expected, maxIntsetEntries) {
    if (maxIntsetEntries < 64) {
        throw bad("max intset entries", `${maxIntsetEntries} is too small to plan shards (at least 64)`);
    }
    const root = (-4 + Math.sqrt(16 + 4 * maxIntsetEntries)) / 2;
    const mean = Math.max(Math.floor(root * root), 1);
    const shards = Math.ceil(expected / mean);
    if (shards > 2 ** 20) {
        throw bad("expected daily uniques", `${expected} needs more than ${2 ** 20} shards`);
    }
    return Math.max(shards, 1);
}
