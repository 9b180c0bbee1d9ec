"use strict";
// Bitmap analytics (src/analytics, lua/analytics): marks in one bitmap per period, periods in UTC.
Object.defineProperty(exports, "__esModule", { value: true });
exports.Analytics = void 0;
exports.labels = labels;
exports.offset = offset;
exports.start = start;
const crypto_1 = require("crypto");
const call_1 = require("../call");
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const expr = require("../expr");
const scripts = require("../scripts");
const signin_1 = require("./signin");
const MAX_RANGE = 1000;
const ORDER = ["hour", "day", "week", "month", "year"];
const GRANULARITY = { H: "hour", D: "day", W: "week", M: "month", Y: "year" };
function bad(name, reason) {
    return new errors_1.InvalidArgument(name, reason, null);
}
const pad = (n, w = 2) => String(n).padStart(w, "0");
/** The period labels of the UTC instant `atS`, one per granularity, finest first. */
function labels(atS, granularities) {
    const t = new Date(atS * 1000);
    const [y, m, d, h] = [t.getUTCFullYear(), t.getUTCMonth() + 1, t.getUTCDate(), t.getUTCHours()];
    const day = `${pad(y, 4)}-${pad(m)}-${pad(d)}`;
    // ISO week: the week of the Thursday of this week.
    const thursday = new Date(Date.UTC(y, m - 1, d + 3 - ((t.getUTCDay() + 6) % 7)));
    const isoYear = thursday.getUTCFullYear();
    const week = Math.floor((thursday.getTime() - Date.UTC(isoYear, 0, 1)) / 86400000 / 7) + 1;
    const by = {
        hour: `H:${day}T${pad(h)}`,
        day: `D:${day}`,
        week: `W:${pad(isoYear, 4)}-W${pad(week)}`,
        month: `M:${pad(y, 4)}-${pad(m)}`,
        year: `Y:${pad(y, 4)}`,
    };
    return granularities.map((g) => by[g]);
}
/** The label of the period n periods after the one labelled label (hour, day, ISO week, month or year). */
function offset(label, n) {
    const m = /^([HDWMY]):(\d{4})(?:-W?(\d{2}))?(?:-(\d{2}))?(?:T(\d{2}))?$/.exec(label);
    if (!expr.LABEL.test(label) || m === null) {
        throw bad("first", `\`${label}\` is not a period label (H:, D:, W:, M: or Y:)`);
    }
    const [kind, y, a, b, h] = [m[1], Number(m[2]), Number(m[3] ?? 1), Number(m[4] ?? 1), Number(m[5] ?? 0)];
    const fmtDay = (t) => `${pad(t.getUTCFullYear(), 4)}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}`;
    const valid = (t) => t.getUTCFullYear() === y && t.getUTCMonth() + 1 === a && t.getUTCDate() === b;
    switch (kind) {
        case "H":
        case "D": {
            const t = new Date(Date.UTC(y, a - 1, b, h));
            if (!valid(t) || h > 23) {
                throw bad("first", `\`${label}\` is not a period of the calendar`);
            }
            if (kind === "D") {
                return `D:${fmtDay(new Date(Date.UTC(y, a - 1, b + n)))}`;
            }
            const moved = new Date(t.getTime() + n * 3600000);
            return `H:${fmtDay(moved)}T${pad(moved.getUTCHours())}`;
        }
        case "W": {
            // The Monday of ISO week a: the week of January 4th, then a-1 weeks on.
            const jan4 = new Date(Date.UTC(y, 0, 4));
            const monday = (weeks) => Date.UTC(y, 0, 4 - ((jan4.getUTCDay() + 6) % 7) + 7 * (a - 1 + weeks)) / 1000;
            if (a < 1 || labels(monday(0), ["week"])[0] !== label) {
                throw bad("first", `\`${label}\` is not a period of the calendar`);
            }
            return labels(monday(n), ["week"])[0];
        }
        case "M": {
            if (a < 1 || a > 12) {
                throw bad("first", `\`${label}\` is not a period of the calendar`);
            }
            const months = y * 12 + a - 1 + n;
            return `M:${pad(Math.floor(months / 12), 4)}-${pad((months % 12) + 1)}`;
        }
        default:
            return `Y:${pad(y + n, 4)}`;
    }
}
/** Where the period labelled label starts (unix seconds, UTC). */
function start(label, name) {
    const m = /^([HDWMY]):(\d{4})(?:-W?(\d{2}))?(?:-(\d{2}))?(?:T(\d{2}))?$/.exec(label);
    if (!expr.LABEL.test(label) || m === null) {
        throw bad(name, `\`${label}\` is not a period label (H:, D:, W:, M: or Y:)`);
    }
    // offset() checks the label against the calendar.
    offset(label, 0);
    const [kind, y, a, b, h] = [m[1], Number(m[2]), Number(m[3] ?? 1), Number(m[4] ?? 1), Number(m[5] ?? 0)];
    switch (kind) {
        case "H":
        case "D":
            return Date.UTC(y, a - 1, b, h) / 1000;
        case "W": {
            const jan4 = new Date(Date.UTC(y, 0, 4));
            return Date.UTC(y, 0, 4 - ((jan4.getUTCDay() + 6) % 7) + 7 * (a - 1)) / 1000;
        }
        case "M":
            return Date.UTC(y, a - 1, 1) / 1000;
        default:
            return Date.UTC(y, 0, 1) / 1000;
    }
}
/** The labels from first to last inclusive (one granularity, at most MAX_RANGE). */
function periods(first, last) {
    if (start(first, "range") > start(last, "range")) {
        throw bad("range", `${first} is after ${last}`);
    }
    if (first[0] !== last[0]) {
        throw bad("range", `${first} and ${last} are periods of different granularities`);
    }
    const out = [first];
    while (out[out.length - 1] !== last) {
        if (out.length === MAX_RANGE) {
            throw bad("range", `${first} to ${last} is more than ${MAX_RANGE} periods`);
        }
        out.push(offset(out[out.length - 1], 1));
    }
    return out;
}
/** Whether every period of granularity coarse is made of whole periods of fine. */
function divides(fine, coarse) {
    const [f, c] = [ORDER.indexOf(fine), ORDER.indexOf(coarse)];
    return f === c || (f < c && (fine === "hour" || fine === "day" || (fine === "month" && coarse === "year")));
}
/** The expression of "at least atLeast of the ofLast periods ending with last" (AND when they are equal). */
function active(event, atLeast, ofLast, last) {
    const leaves = Array.from({ length: ofLast }, (_, i) => ({ event, period: offset(last, i - ofLast + 1) }));
    return atLeast === ofLast ? { and: leaves } : { at_least: atLeast, of: leaves };
}
function tmpKey(base) {
    return `${base}:tmp:${(0, crypto_1.randomBytes)(8).toString("hex")}`;
}
/** The table of analytics.cohort's reply: every return bitmap's count, then per row its size and cells. */
function table(periods, rows, columns, flat) {
    const returns = rows + columns - 1;
    let at = returns;
    const [sizes, counts] = [[], []];
    for (let i = 0; i < rows; i++) {
        const size = Math.max(flat[at], 0);
        at += 1;
        const cells = Math.min(columns, returns - i);
        const row = [];
        for (let k = 0; k < cells; k++) {
            row.push(size > 0 && flat[i + k] > 0 ? Math.max(flat[at + k], 0) : null);
        }
        at += cells;
        sizes.push(size);
        counts.push(row);
    }
    return { periods, sizes, counts };
}
class Analytics {
    prefix;
    tag;
    maxId;
    hll;
    granularities;
    constructor(prefix, tag, maxId, granularities, hll = false) {
        this.prefix = prefix;
        this.tag = tag;
        this.maxId = maxId;
        this.hll = hll;
        (0, signin_1.checkSettings)(prefix, maxId, "max id");
        const gs = granularities ?? ["day", "week", "month"];
        this.granularities = ORDER.filter((g) => gs.includes(g));
        if (this.granularities.length === 0) {
            throw bad("granularities", "must not be empty");
        }
    }
    key(event, period) {
        if (/\s/.test(event)) {
            throw bad("event", `\`${event}\` must not contain whitespace`);
        }
        return this.tag === null
            ? (0, contract_1.key)("analytics", "event", { prefix: this.prefix, event, period })
            : (0, contract_1.key)("analytics", "event_tagged", { prefix: this.prefix, tag: this.tag, event, period });
    }
    async mark(io, event, id, atS) {
        const keys = labels(Number(atS), this.granularities).map((p) => this.key(event, p));
        if (id > this.maxId) {
            throw new errors_1.UidOutOfRange(`id ${id} is above the configured maximum ${this.maxId}`);
        }
        if (this.hll) {
            const values = [...keys.map(() => "0"), "0", String(id)];
            const reply = (await io.one(scripts.Analytics.markHll(`${keys[0]}:hll`, keys, this.maxId, values)));
            return (0, driver_1.int)(reply[1]) === 1;
        }
        const values = [...keys.map(() => 0), id];
        return (0, driver_1.int)(await io.one(scripts.Analytics.mark(keys, this.maxId, values))) === 1;
    }
    async markString(io, event, id, atS) {
        const finest = this.key(event, labels(Number(atS), this.granularities)[0]);
        const reply = (await io.one(scripts.Analytics.markHll(`${finest}:hll`, [], this.maxId, ["0", id])));
        return (0, driver_1.int)(reply[0]) === 1;
    }
    async markUniqueString(io, event, id) {
        const unique = this.key(event, "U");
        const reply = (await io.one(scripts.Analytics.markHll(`${unique}:hll`, [], this.maxId, ["0", id])));
        return (0, driver_1.int)(reply[0]) === 1;
    }
    async countUniques(io, event, first, last) {
        if (first === "U" || last === "U") {
            if (first !== "U" || (last !== null && last !== "U")) {
                throw bad("range", "the unique event (U) is no range: first U, last null or U");
            }
            return Math.max((0, driver_1.int)(await io.one((0, call_1.cmd)("PFCOUNT", `${this.key(event, "U")}:hll`))), 0);
        }
        const to = last ?? first;
        if (first.slice(0, 1) !== to.slice(0, 1)) {
            throw bad("range", `${first} and ${to} are periods of different granularities`);
        }
        const [begin, end] = [start(first, "range"), start(offset(to, 1), "range")];
        if (begin > start(to, "range")) {
            throw bad("range", `${first} is after ${to}`);
        }
        const finest = this.granularities[0];
        if (!divides(finest, GRANULARITY[first[0]])) {
            throw bad("period", `${first} is not made of whole periods of the finest granularity (${finest}), where the HyperLogLogs are`);
        }
        const keys = [];
        for (let p = labels(begin, [finest])[0]; start(p, "range") < end; p = offset(p, 1)) {
            if (keys.length === MAX_RANGE) {
                throw bad("range", `${first} to ${to} is more than ${MAX_RANGE} ${finest} periods`);
            }
            keys.push(`${this.key(event, p)}:hll`);
        }
        return Math.max((0, driver_1.int)(await io.one((0, call_1.cmd)("PFCOUNT", keys[0], ...keys.slice(1)))), 0);
    }
    async streak(io, event, id, first, last) {
        this.key(event, first);
        const ps = periods(first, last);
        if (id > this.maxId) {
            return { longest: 0, longestEnds: null, current: 0, marked: 0 };
        }
        const call = scripts.Analytics.streak(ps.map((p) => this.key(event, p)), id);
        const r = (await io.one(call)).map(driver_1.int);
        return { longest: r[0], longestEnds: r[1] > 0 ? ps[r[1] - 1] : null, current: r[2], marked: r[3] };
    }
    async activeCount(io, event, atLeast, ofLast, last) {
        return this.queryCount(io, active(event, atLeast, ofLast, last), null, 60000);
    }
    async activeContains(io, event, atLeast, ofLast, last, id) {
        return this.queryContains(io, active(event, atLeast, ofLast, last), id, null, 60000);
    }
    async activeMembers(io, event, atLeast, ofLast, last, from, limit) {
        return this.queryMembers(io, active(event, atLeast, ofLast, last), from, limit, null, 60000);
    }
    async markUnique(io, event, id) {
        const keys = [this.key(event, "U")];
        if (id > this.maxId) {
            throw new errors_1.UidOutOfRange(`id ${id} is above the configured maximum ${this.maxId}`);
        }
        if (this.hll) {
            const reply = (await io.one(scripts.Analytics.markHll(`${keys[0]}:hll`, keys, this.maxId, ["0", "0", String(id)])));
            return (0, driver_1.int)(reply[1]) === 1;
        }
        return (0, driver_1.int)(await io.one(scripts.Analytics.mark(keys, this.maxId, [0, id]))) === 1;
    }
    async count(io, event, period) {
        return Math.max((0, driver_1.int)(await io.one((0, call_1.cmd)("BITCOUNT", this.key(event, period)))), 0);
    }
    base(event) {
        return `${this.prefix}{${this.tag ?? event}}`;
    }
    async query(io, e, answer, at, limit, cache, ttlMs) {
        const events = [];
        const [node, leaves] = expr.read(e, (event, period) => {
            if (event === "" || event.includes("{") || event.includes("}")) {
                throw bad("event", "must not be empty and must not contain '{' or '}'");
            }
            events.push(event);
            return this.key(event, period);
        });
        const base = this.base(events[0]);
        if (cache !== null && /\s/.test(cache)) {
            throw bad("cache", `\`${cache}\` must not contain whitespace`);
        }
        const [result, ttl] = cache !== null ? [`${base}:cache:${cache}`, ttlMs] : [tmpKey(base), 0];
        if (!io.cluster || leaves.every((k) => (0, driver_1.slot)(k) === (0, driver_1.slot)(result))) {
            const p = expr.compile(node);
            const operands = [...Array.from({ length: p.registers }, () => tmpKey(base)), ...p.inputs];
            const call = scripts.Analytics.query(result, operands, false, p.registers, answer, at, limit, ttl, p.steps());
            return (await io.one(call)).map(driver_1.int);
        }
        const keys = [...new Set(leaves)].sort();
        const [bitmaps, len] = expr.padded((await io.all(keys.map((k) => (0, call_1.cmd)("GET", k)))).map(driver_1.bytes));
        const of = new Map(keys.map((k, i) => [k, bitmaps[i]]));
        return expr.answer(expr.evaluate(node, of, len), answer, at, limit);
    }
    async queryCount(io, e, cache, ttlMs) {
        return Math.max((await this.query(io, e, "COUNT", 0, 0, cache, ttlMs))[0], 0);
    }
    async queryContains(io, e, id, cache, ttlMs) {
        if (id > signin_1.MAX_OFFSET) {
            expr.read(e, (event, period) => this.key(event, period));
            return false;
        }
        return (await this.query(io, e, "MEMBER", id, 0, cache, ttlMs))[0] === 1;
    }
    async queryMembers(io, e, from, limit, cache, ttlMs) {
        if (from > signin_1.MAX_OFFSET) {
            expr.read(e, (event, period) => this.key(event, period));
            return { ids: [], next: null };
        }
        const reply = await this.query(io, e, "MEMBERS", from, limit, cache, ttlMs);
        return { ids: reply.slice(1), next: reply[0] >= 0 ? reply[0] : null };
    }
    async cohort(io, cohortEvent, returnEvent, first, rows, columns) {
        const periods = Array.from({ length: rows + columns - 1 }, (_, i) => offset(first, i));
        const bitmaps = [
            ...periods.slice(0, rows).map((p) => this.key(cohortEvent, p)),
            ...periods.map((p) => this.key(returnEvent, p)),
        ];
        const tmp = tmpKey(this.base(cohortEvent));
        if (!io.cluster || bitmaps.every((k) => (0, driver_1.slot)(k) === (0, driver_1.slot)(tmp))) {
            const flat = (await io.one(scripts.Analytics.cohort(tmp, bitmaps, rows, columns))).map(driver_1.int);
            return table(periods.slice(0, rows), rows, columns, flat);
        }
        const [blobs] = expr.padded((await io.all(bitmaps.map((k) => (0, call_1.cmd)("GET", k)))).map(driver_1.bytes));
        const [cohorts, back] = [blobs.slice(0, rows), blobs.slice(rows)];
        const flat = back.map(expr.popcount);
        cohorts.forEach((c, i) => {
            flat.push(expr.popcount(c));
            for (const r of back.slice(i, i + columns)) {
                flat.push(expr.popcount(Buffer.from(c.map((x, j) => x & r[j]))));
            }
        });
        return table(periods.slice(0, rows), rows, columns, flat);
    }
}
exports.Analytics = Analytics;
