"use strict";
// The monthly login log of the PHP recipe (src/login_log, lua/login_log).
Object.defineProperty(exports, "__esModule", { value: true });
exports.LoginLog = void 0;
exports.checkType = checkType;
const call_1 = require("../call");
const contract_1 = require("../contract");
const days_1 = require("../days");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
const signin_1 = require("./signin");
/** Before this day of the month a sync covers the previous month too. */
const LAST_MONTH_UNTIL_DAY = 8;
const MIN_RETENTION_DAYS = 32;
const TYPE = /^[A-Za-z0-9-]+$/;
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
function checkType(userType) {
    if (!TYPE.test(userType)) {
        throw bad("user type", `\`${userType}\` must be non-empty ASCII letters, digits or '-'`);
    }
}
function monthOf(year, month) {
    const d = (0, days_1.fromParts)(Number(year), month, 1);
    if (d === null) {
        throw bad("month", `${year}-${String(month).padStart(2, "0")} is not a valid month`);
    }
    return d;
}
function glob(s) {
    return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
class LoginLog {
    prefix;
    maxUid;
    retentionS;
    constructor(prefix, maxUid, retentionS) {
        this.prefix = prefix;
        this.maxUid = maxUid;
        this.retentionS = retentionS;
        (0, signin_1.checkSettings)(prefix, maxUid);
    }
    monthOf(day) {
        return (0, days_1.iso)((0, days_1.firstOfMonth)(day));
    }
    syncMonths(today) {
        const first = (0, days_1.firstOfMonth)(today);
        const before = (0, days_1.parts)(today).d < LAST_MONTH_UNTIL_DAY ? [(0, days_1.iso)((0, days_1.firstOfMonth)(first - 1))] : [];
        return [...before, (0, days_1.iso)(first)];
    }
    logKey(userType, uid, day) {
        return (0, contract_1.key)("login_log", "log", { prefix: this.prefix, type: userType, uid, "YYYY-MM": (0, days_1.monthLabel)(day) });
    }
    indexKey(userType, day) {
        return (0, contract_1.key)("login_log", "day_index", {
            prefix: this.prefix,
            type: userType,
            YYYYMMDD: (0, days_1.compact)(day),
            "YYYY-MM": (0, days_1.monthLabel)(day),
        });
    }
    typesKey(day) {
        return (0, contract_1.key)("login_log", "types", { prefix: this.prefix, "YYYY-MM": (0, days_1.monthLabel)(day) });
    }
    tag(day) {
        return `${this.prefix}{${(0, days_1.monthLabel)(day)}}`;
    }
    async record(io, userType, uid, day) {
        checkType(userType);
        (0, signin_1.checkUid)(uid, this.maxUid);
        const logExp = (0, days_1.expireAt)(this.retentionS, (0, days_1.nextMonth)(day));
        const indexExp = (0, days_1.expireAt)(this.retentionS, day + 1);
        const log = this.logKey(userType, uid, day);
        const index = this.indexKey(userType, day);
        const types = this.typesKey(day);
        const d = (0, days_1.parts)(day).d;
        if (!io.cluster || (0, driver_1.slot)(log) === (0, driver_1.slot)(index)) {
            const call = scripts.LoginLog.record(log, index, types, d, uid, this.maxUid, userType, logExp, indexExp);
            return (0, driver_1.int)(await io.one(call)) === 1;
        }
        const [first] = await io.all([
            scripts.LoginLog.mark(log, d, logExp),
            scripts.LoginLog.index(index, types, uid, this.maxUid, userType, indexExp),
        ]);
        return (0, driver_1.int)(first) === 1;
    }
    async loggedInOn(io, userType, uid, day) {
        checkType(userType);
        return (0, driver_1.int)(await io.one((0, call_1.cmd)("GETBIT", this.logKey(userType, uid, day), (0, days_1.parts)(day).d))) === 1;
    }
    async daysInMonth(io, userType, uid, year, month) {
        checkType(userType);
        return Math.max((0, driver_1.int)(await io.one((0, call_1.cmd)("BITCOUNT", this.logKey(userType, uid, monthOf(year, month))))), 0);
    }
    async loggedInInMonth(io, userType, uid, year, month) {
        return (await this.daysInMonth(io, userType, uid, year, month)) > 0;
    }
    async loggedInBetween(io, userType, uid, from, to) {
        checkType(userType);
        const ms = (0, days_1.months)(from, to);
        const got = await io.all(ms.map(([a, b]) => (0, call_1.cmd)("BITCOUNT", this.logKey(userType, uid, a), (0, days_1.parts)(a).d, (0, days_1.parts)(b).d, "BIT")));
        return got.some((n) => (0, driver_1.int)(n) > 0);
    }
    async loginDays(io, userType, uid, from, to) {
        checkType(userType);
        const ms = (0, days_1.months)(from, to);
        const replies = await io.all(ms.map(([a, b]) => scripts.LoginLog.days(this.logKey(userType, uid, a), (0, days_1.parts)(a).d, (0, days_1.parts)(b).d)));
        return ms.flatMap(([a], i) => replies[i].map((d) => (0, days_1.iso)(a - (0, days_1.parts)(a).d + (0, driver_1.int)(d))));
    }
    async union(io, userType, ms) {
        const groups = ms.map(([a, b]) => [
            this.tag(a),
            (0, days_1.days)(a, b).map((d) => this.indexKey(userType, d)),
        ]);
        return (0, days_1.fold)("OR", (await io.all((0, signin_1.readGroups)(io, "OR", groups))).map(driver_1.bytes));
    }
    async activeUsers(io, userType, from, to) {
        checkType(userType);
        return (0, days_1.decodeBits)(await this.union(io, userType, (0, days_1.months)(from, to)));
    }
    async types(io, ms) {
        const sets = await io.all(ms.map(([a]) => (0, call_1.cmd)("SMEMBERS", this.typesKey(a))));
        const all = new Set();
        for (const s of sets) {
            s.forEach((t) => all.add((0, driver_1.text)(t)));
        }
        return [...all].sort();
    }
    typesBetween(io, from, to) {
        return this.types(io, (0, days_1.months)(from, to));
    }
    async allActiveUsers(io, from, to) {
        const ms = (0, days_1.months)(from, to);
        const out = [];
        for (const t of await this.types(io, ms)) {
            for (const uid of (0, days_1.decodeBits)(await this.union(io, t, ms))) {
                out.push({ userType: t, uid });
            }
        }
        return out;
    }
    monthUsers(io, month) {
        const first = (0, days_1.firstOfMonth)(month);
        return this.allActiveUsers(io, first, (0, days_1.nextMonth)(first) - 1);
    }
    async monthLogins(io, month, users) {
        const first = (0, days_1.firstOfMonth)(month);
        if (users.length === 0) {
            return [];
        }
        const logs = await io.all(users.map((u) => (0, call_1.cmd)("GET", this.logKey(u.userType, u.uid, first))));
        const label = (0, days_1.monthLabel)(first);
        return users.map((u, i) => ({
            month: label,
            userType: u.userType,
            uid: u.uid,
            days: (0, days_1.decodeBits)((0, driver_1.bytes)(logs[i])).filter((d) => d >= 1 && d <= 31),
        }));
    }
    exportsKey() {
        return `${this.prefix}exports`;
    }
    async markExported(io, month, on) {
        await io.one((0, call_1.cmd)("HSET", this.exportsKey(), (0, days_1.monthLabel)(month), (0, days_1.iso)(on)));
    }
    async exports(io) {
        const out = [];
        for (const [m, d] of (0, driver_1.pairs)(await io.one((0, call_1.cmd)("HGETALL", this.exportsKey())))) {
            try {
                out.push([(0, days_1.iso)((0, days_1.parse)(`${m}-01`)), (0, days_1.iso)((0, days_1.parse)(d.toString("utf8")))]);
            }
            catch {
                continue;
            }
        }
        return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    }
    async expireMonth(io, month, keepDays, today) {
        if (keepDays < MIN_RETENTION_DAYS) {
            throw bad("retention", `must be at least ${MIN_RETENTION_DAYS} days after a month ends`);
        }
        const first = (0, days_1.firstOfMonth)(month);
        const end = (0, days_1.nextMonth)(first);
        const label = (0, days_1.monthLabel)(first);
        if (today - end < keepDays) {
            return { outcome: "kept", month: label, keys: null, lastExport: null };
        }
        const last = await io.one((0, call_1.cmd)("HGET", this.exportsKey(), label));
        const lastExport = last === null ? null : (0, driver_1.text)(last);
        if (lastExport === null || (0, days_1.parse)(lastExport) < end) {
            return { outcome: "not_exported", month: label, keys: null, lastExport };
        }
        const users = await this.monthUsers(io, first);
        const doomed = users.map((u) => this.logKey(u.userType, u.uid, first));
        for (const t of await this.types(io, [[first, first]])) {
            doomed.push(...(0, days_1.days)(first, end - 1).map((d) => this.indexKey(t, d)));
        }
        doomed.push(this.typesKey(first));
        const batch = [...doomed.map((k) => (0, call_1.cmd)("DEL", k)), (0, call_1.cmd)("HDEL", this.exportsKey(), label)];
        const got = await io.all(batch);
        const keys = got.slice(0, -1).reduce((n, x) => n + (0, driver_1.int)(x), 0);
        return { outcome: "deleted", month: label, keys, lastExport: null };
    }
    monthPrefix(year, month, count) {
        const first = monthOf(year, month);
        if (count === 0) {
            throw bad("count", "must be at least 1");
        }
        return [first, `${this.prefix}${(0, days_1.monthLabel)(first)}_`];
    }
    /** One page of a reindex: a SCAN on every node not done (`at` moves on: a cursor, or null when done), then the logs found: [logs, days, new, skipped]. */
    async page(io, first, monthPrefix, count, at) {
        const pattern = `${glob(monthPrefix)}*`;
        const todo = [...at].filter(([, c]) => c !== null).map(([n]) => n);
        const pages = await io.all(todo.map((n) => {
            const args = ["SCAN", at.get(n), "MATCH", pattern, "COUNT", String(count), "TYPE", "string"];
            return new call_1.Cmd(args, null, n === driver_1.SERVER ? null : n);
        }));
        const found = [];
        let skipped = 0;
        todo.forEach((n, i) => {
            const [next, keys] = pages[i];
            at.set(n, (0, driver_1.text)(next) === "0" ? null : (0, driver_1.text)(next));
            for (const k of keys) {
                const parsed = this.parseKey((0, driver_1.text)(k), monthPrefix);
                if (parsed === null) {
                    skipped += 1;
                }
                else {
                    found.push(parsed);
                }
            }
        });
        if (found.length === 0) {
            return [0, 0, 0, skipped];
        }
        const bits = await io.all(found.map(([k]) => (0, call_1.cmd)("GETRANGE", k, 0, 3)));
        const calls = [];
        found.forEach(([, userType, uid], i) => {
            for (const d of (0, days_1.decodeBits)((0, driver_1.bytes)(bits[i]))) {
                const p = (0, days_1.parts)(first);
                const day = d < 1 || d > 31 ? null : (0, days_1.fromParts)(p.y, p.m, d);
                if (day !== null) {
                    const exp = (0, days_1.expireAt)(this.retentionS, day + 1);
                    calls.push(scripts.LoginLog.index(this.indexKey(userType, day), this.typesKey(day), uid, this.maxUid, userType, exp));
                }
            }
        });
        const got = calls.length > 0 ? await io.all(calls) : [];
        return [found.length, got.length, got.reduce((n, x) => n + (0, driver_1.int)(x), 0), skipped];
    }
    async reindex(io, year, month, count) {
        const [first, monthPrefix] = this.monthPrefix(year, month, count);
        const at = new Map((await io.nodes()).map((n) => [n, "0"]));
        const total = [0, 0, 0, 0];
        while ([...at.values()].some((c) => c !== null)) {
            (await this.page(io, first, monthPrefix, count, at)).forEach((n, i) => {
                total[i] += n;
            });
        }
        const [logs, dayCount, fresh, skipped] = total;
        return { logs, days: dayCount, new: fresh, unknown: 0, skipped, done: true, cursor: cursorText(at) };
    }
    async reindexPage(io, year, month, cursor, count) {
        const named = cursorOf(cursor);
        const [first, monthPrefix] = this.monthPrefix(year, month, count);
        const at = new Map((await io.nodes()).map((n) => [n, named.has(n) ? named.get(n) : "0"]));
        const page = [...at.values()].some((c) => c !== null) ? await this.page(io, first, monthPrefix, count, at) : [0, 0, 0, 0];
        const [logs, dayCount, fresh, skipped] = page;
        const done = at.size > 0 && [...at.values()].every((c) => c === null);
        return { logs, days: dayCount, new: fresh, unknown: 0, skipped, done, cursor: cursorText(at) };
    }
    parseKey(k, monthPrefix) {
        if (!k.startsWith(monthPrefix)) {
            return null;
        }
        const rest = k.slice(monthPrefix.length);
        const at = rest.lastIndexOf("_");
        const userType = at < 0 ? "" : rest.slice(0, at);
        const uid = at < 0 ? rest : rest.slice(at + 1);
        if (!TYPE.test(userType)) {
            return null;
        }
        if (!/^[0-9]+$/.test(uid) || (uid.length > 1 && uid.startsWith("0"))) {
            return null;
        }
        const n = Number(uid);
        return n <= this.maxUid ? [k, userType, n] : null;
    }
}
exports.LoginLog = LoginLog;
/** A reindex cursor as text (Rust: ReindexCursor's Display): 0, or <node>@<cursor>|done joined by ",". */
function cursorText(at) {
    return at.size === 0 ? "0" : [...at].map(([n, c]) => `${n}@${c ?? "done"}`).join(",");
}
/** The nodes of a reindex cursor's text (Rust: ReindexCursor::from_str). */
function cursorOf(s) {
    const out = new Map();
    if (s === "0") {
        return out;
    }
    const refused = () => bad("reindex cursor", `${JSON.stringify(s)} is not 0 or <node>@<cursor>|done,...`);
    for (const part of s.split(",")) {
        const at = part.lastIndexOf("@");
        const node = at < 0 ? "" : part.slice(0, at);
        const c = part.slice(at + 1);
        if (node === "" || node.includes("@")) {
            throw refused();
        }
        if (c === "done") {
            out.set(node, null);
        }
        else if (/^[0-9]{1,20}$/.test(c) && BigInt(c) < 2n ** 64n) {
            out.set(node, c);
        }
        else {
            throw refused();
        }
    }
    return out;
}
