"use strict";
// Bitmap analytics (src/analytics, lua/analytics): marks in one bitmap per period, periods in UTC.
Object.defineProperty(exports, "__esModule", { value: true });
exports.Analytics = void 0;
exports.labels = labels;
const call_1 = require("../call");
const contract_1 = require("../contract");
const driver_1 = require("../driver");
const errors_1 = require("../errors");
const scripts = require("../scripts");
const MAX_OFFSET = 4294967295;
const ORDER = ["hour", "day", "week", "month", "year"];
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
class Analytics {
    prefix;
    tag;
    maxId;
    granularities;
    constructor(prefix, tag, maxId, granularities) {
        this.prefix = prefix;
        this.tag = tag;
        this.maxId = maxId;
        if (/\s/.test(prefix)) {
            throw bad("prefix", "must not contain whitespace");
        }
        if (prefix.includes("{") || prefix.includes("}")) {
            throw bad("prefix", "must not contain '{' or '}'");
        }
        if (maxId > MAX_OFFSET) {
            throw bad("max id", `${maxId} is above the largest bit offset ${MAX_OFFSET}`);
        }
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
        const values = [...keys.map(() => 0), id];
        return (0, driver_1.int)(await io.one(scripts.Analytics.mark(keys, this.maxId, values))) === 1;
    }
    async count(io, event, period) {
        return Math.max((0, driver_1.int)(await io.one((0, call_1.cmd)("BITCOUNT", this.key(event, period)))), 0);
    }
}
exports.Analytics = Analytics;
