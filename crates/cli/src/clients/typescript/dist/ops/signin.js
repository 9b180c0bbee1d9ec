"use strict";
// Daily sign-in bitmaps (src/signin, src/bitmap, lua/signin).
Object.defineProperty(exports, "__esModule", { value: true });
exports.SignIn = exports.MAX_OFFSET = void 0;
exports.checkSettings = checkSettings;
exports.checkUid = checkUid;
exports.tmpKey = tmpKey;
exports.combined = combined;
exports.readGroups = readGroups;
const crypto_1 = require("crypto");
const call_1 = require("../call");
const contract_1 = require("../contract");
const days_1 = require("../days");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
exports.MAX_OFFSET = 4294967295;
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
/** The settings of a bitmap pattern (sign-in, login log, analytics): a prefix that names keys, ids within a bitmap. */
function checkSettings(prefix, maxUid, what = "max uid") {
    if (/\s/.test(prefix)) {
        throw bad("prefix", "must not contain whitespace");
    }
    if (prefix.includes("{") || prefix.includes("}")) {
        throw bad("prefix", "must not contain '{' or '}'");
    }
    if (maxUid > exports.MAX_OFFSET) {
        throw bad(what, `${maxUid} is above the largest bit offset ${exports.MAX_OFFSET}`);
    }
}
function checkUid(uid, maxUid) {
    if (uid > maxUid) {
        throw new errors_1.UidOutOfRange(`uid ${uid} is above the configured maximum ${maxUid}`);
    }
}
function tmpKey(base) {
    return `${base}:tmp:${(0, crypto_1.randomBytes)(8).toString("hex")}`;
}
/** The temporary key of one script over `keys`, or null when they must be fetched (cluster, other slots). */
function combined(io, base, keys) {
    const tmp = tmpKey(base);
    if (!io.cluster) {
        return tmp;
    }
    const s = (0, driver_1.slot)(tmp);
    return keys.every((k) => (0, driver_1.slot)(k) === s) ? tmp : null;
}
/** Per [base, keys] group: one signin.combine call, or a GET of each key. */
function readGroups(io, op, groups) {
    const batch = [];
    for (const [base, keys] of groups) {
        const tmp = combined(io, base, keys);
        if (tmp !== null) {
            batch.push(scripts.Signin.combine(tmp, keys, op));
        }
        else {
            batch.push(...keys.map((k) => (0, call_1.cmd)("GET", k)));
        }
    }
    return batch;
}
class SignIn {
    prefix;
    tag;
    maxUid;
    retentionS;
    constructor(prefix, tag, maxUid, retentionS) {
        this.prefix = prefix;
        this.tag = tag;
        this.maxUid = maxUid;
        this.retentionS = retentionS;
        checkSettings(prefix, maxUid);
    }
    key(day) {
        const d = (0, days_1.compact)(day);
        return this.tag === null
            ? (0, contract_1.key)("signin", "day", { prefix: this.prefix, YYYYMMDD: d })
            : (0, contract_1.key)("signin", "day_tagged", { prefix: this.prefix, tag: this.tag, YYYYMMDD: d });
    }
    base() {
        if (this.tag !== null) {
            return `${this.prefix}{${this.tag}}`;
        }
        return this.prefix.replace(/:+$/, "") || "signin";
    }
    async signIn(io, uid, day) {
        checkUid(uid, this.maxUid);
        const expire = (0, days_1.expireAt)(this.retentionS, day + 1);
        return (0, driver_1.int)(await io.one(scripts.Signin.mark(this.key(day), uid, this.maxUid, expire))) === 1;
    }
    async signedIn(io, uid, day) {
        if (uid > this.maxUid) {
            return false;
        }
        return (0, driver_1.int)(await io.one((0, call_1.cmd)("GETBIT", this.key(day), uid))) === 1;
    }
    async count(io, day) {
        return Math.max((0, driver_1.int)(await io.one((0, call_1.cmd)("BITCOUNT", this.key(day)))), 0);
    }
    async users(io, op, from, to) {
        const keys = (0, days_1.days)(from, to).map((d) => this.key(d));
        const replies = await io.all(readGroups(io, op, [[this.base(), keys]]));
        return (0, days_1.decodeBits)((0, days_1.fold)(op, replies.map(driver_1.bytes)));
    }
    async countOf(io, op, from, to) {
        const keys = (0, days_1.days)(from, to).map((d) => this.key(d));
        const tmp = combined(io, this.base(), keys);
        if (tmp !== null) {
            return Math.max((0, driver_1.int)(await io.one(scripts.Signin.count(tmp, keys, op))), 0);
        }
        const replies = await io.all(keys.map((k) => (0, call_1.cmd)("GET", k)));
        return (0, days_1.decodeBits)((0, days_1.fold)(op, replies.map(driver_1.bytes))).length;
    }
    activeAny(io, from, to) {
        return this.users(io, "OR", from, to);
    }
    activeEvery(io, from, to) {
        return this.users(io, "AND", from, to);
    }
    countAny(io, from, to) {
        return this.countOf(io, "OR", from, to);
    }
    countEvery(io, from, to) {
        return this.countOf(io, "AND", from, to);
    }
    async daysSignedInOn(io, uid, from, to) {
        const range = (0, days_1.days)(from, to);
        checkUid(uid, this.maxUid);
        const bits = await io.all(range.map((d) => (0, call_1.cmd)("GETBIT", this.key(d), uid)));
        return range.filter((_, i) => (0, driver_1.int)(bits[i]) === 1);
    }
    async daysSignedIn(io, uid, from, to) {
        return (await this.daysSignedInOn(io, uid, from, to)).map(days_1.iso);
    }
    async streak(io, uid, from, to) {
        const signed = await this.daysSignedInOn(io, uid, from, to);
        let longest = 0;
        let ends = null;
        let run = 0;
        let prev = null;
        for (const d of signed) {
            run = prev !== null && prev + 1 === d ? run + 1 : 1;
            if (run > longest) {
                longest = run;
                ends = d;
            }
            prev = d;
        }
        return { longest, longestEnds: ends === null ? null : (0, days_1.iso)(ends), current: prev === to ? run : 0 };
    }
}
exports.SignIn = SignIn;
