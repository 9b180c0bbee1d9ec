"use strict";
// Notified waiting, written once for the lock, the semaphore and the
// read-write lock (the protocol of src/lock/wait.rs; manifest: the
// `acquire` protocols): after a refused attempt, subscribe to the
// resource's wake channel (a zero-timeout wait), try once more (a release
// in between is not missed), then wait for a release's message or for the
// holder's remaining lease (plus 1 ms), whichever comes first, and try
// again, until the timeout (LockTimeout). A lost message costs at most the
// holder's lease. Polling mode sleeps interval * uniform(0.5, 1.5) between
// attempts instead.
//
// Woken one at a time (the lock and the semaphore: `queue.to` is the
// waiter's token): a refused attempt keeps the waiter's place in the
// resource's queue, a release publishes the token of the next live waiter,
// and only a message naming this waiter (or `released`) ends its wait;
// every wait lasts at most maxWaitMs (half the place, which each attempt
// renews). A resource whose last acquire had to wait (`queue.contended`)
// subscribes before its first attempt. At the timeout `queue.leave` gives
// the place up.
Object.defineProperty(exports, "__esModule", { value: true });
exports.QueuedResource = void 0;
exports.busyMs = busyMs;
exports.defaultPlaceMs = defaultPlaceMs;
exports.newToken = newToken;
exports.untilAcquired = untilAcquired;
exports.once = once;
const crypto_1 = require("crypto");
const contract_1 = require("./contract");
const errors_1 = require("./errors");
/** The remaining lease of a refusal `-<ms>` (null: unknown). */
function busyMs(reply) {
    return reply < 0 ? -reply : null;
}
/**
 * How long a waiter keeps its place in the queue unless renewed, by default: a third of the
 * lease (at least 1 ms), so that a waiter that disappeared is skipped three times sooner than a
 * holder that did; a live waiter renews it every half place.
 */
function defaultPlaceMs(leaseMs) {
    return Math.max(Math.floor(leaseMs / 3), 1);
}
/** An unguessable owner token: 16 random bytes as lowercase hex. */
function newToken() {
    return (0, crypto_1.randomBytes)(16).toString("hex");
}
async function untilAcquired(io, w, timeoutMs, attempt, maxWaitMs = null, queue = null) {
    const started = performance.now();
    const to = queue === null ? null : queue.to;
    let subscribed = false;
    let refused = false;
    if (w.notified && timeoutMs > 0 && queue !== null && queue.contended.last) {
        subscribed = true;
        await io.wait(w.channel, 0, to);
    }
    for (;;) {
        const [got, hint] = await attempt();
        if (got !== null) {
            if (queue !== null) {
                queue.contended.last = refused;
            }
            return got;
        }
        refused = true;
        const waited = performance.now() - started;
        if (waited >= timeoutMs) {
            if (queue !== null) {
                await queue.leave().catch(() => undefined); // the place ends by itself otherwise
            }
            throw new errors_1.LockTimeout(w.key, Math.floor(waited));
        }
        const left = timeoutMs - waited;
        const most = maxWaitMs === null ? left : Math.min(left, maxWaitMs);
        if (!w.notified) {
            await io.sleep(Math.min(w.pollMs * (0.5 + Math.random()), most));
        }
        else if (!subscribed) {
            subscribed = true;
            await io.wait(w.channel, 0, to);
        }
        else {
            await io.wait(w.channel, hint === null ? most : Math.min(hint + 1, most), to);
        }
    }
}
/** The attempt's lease, or `busy(hint)` thrown (LockBusy, NoPermit) with the holder's remaining lease. */
async function once(attempt, busy) {
    const [got, hint] = await attempt;
    if (got === null) {
        throw busy(hint);
    }
    return got;
}
/**
 * What the lock, the semaphore and the read-write lock share: the wake channel, the queue of
 * waiters and their places (the pattern's `wake`, `queue` and `places` keys), how long a place
 * lasts, how to wait and whether the last acquire had to wait (the next one subscribes first).
 */
class QueuedResource {
    leaseMs;
    channel;
    queueKey;
    placesKey;
    /** How long a waiter keeps its place in the queue unless renewed (ms). */
    placeMs;
    settings;
    contended = { last: false };
    constructor(pattern, vars, waitKey, leaseMs, waitMode, pollIntervalMs, placeMs) {
        this.leaseMs = leaseMs;
        this.placeMs = placeMs || defaultPlaceMs(leaseMs);
        this.channel = (0, contract_1.key)(pattern, "wake", vars);
        this.queueKey = (0, contract_1.key)(pattern, "queue", vars);
        this.placesKey = (0, contract_1.key)(pattern, "places", vars);
        this.settings = { key: waitKey, channel: this.channel, notified: waitMode === "notified", pollMs: pollIntervalMs };
    }
    /** Attempts (each renewing the waiter's place) until one gets it; at the timeout `leave` gives the place up. */
    waitFor(io, token, timeoutMs, attempt, leave) {
        const queued = { to: token, leave, contended: this.contended };
        return untilAcquired(io, this.settings, timeoutMs, () => attempt(this.placeMs), Math.floor(this.placeMs / 2), queued);
    }
    /** A hold of the resource (`acquire` waiting), its lease renewed by `extend`, given back by `release`. */
    holding(acquire, extend, release, fence = () => null) {
        return { key: this.settings.key, leaseMs: this.leaseMs, acquire, extend, release, token: (l) => l.token, fence };
    }
}
exports.QueuedResource = QueuedResource;
