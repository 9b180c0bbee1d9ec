"use strict";
// The hold idiom: `await lock.using(timeoutMs, async (held) => ...)` for a
// lock, a semaphore's permit and a read or write lease: take it (waiting as
// acquire does), renew its lease every lease/3 while the body runs (a
// timer), give it back after, and report a lost lease: held.lost turns true
// as soon as a renewal finds it gone or taken (or renewals failed for a
// whole lease since the last one that succeeded), and the body's end throws
// LockLost when it was lost and the body threw nothing itself. Each
// pattern's operations give a Holder (what to acquire, extend and release).
Object.defineProperty(exports, "__esModule", { value: true });
exports.hold = hold;
const errors_1 = require("./errors");
/** The lease a body holds: its token, fence and whether it was lost (live). */
class Holding {
    token;
    fence;
    lost = false;
    constructor(token, fence) {
        this.token = token;
        this.fence = fence;
    }
    toJSON() {
        return { token: this.token, fence: this.fence, lost: this.lost };
    }
}
async function hold(run, holder, body) {
    const lease = await run.op((io) => holder.acquire(io));
    const held = new Holding(holder.token(lease), holder.fence(lease));
    let stopped = false;
    let timer = null;
    let renewing = Promise.resolve();
    const every = holder.leaseMs / 3;
    let renewed = performance.now();
    const renew = async () => {
        try {
            if (!(await run.op((io) => holder.extend(io, lease)))) {
                held.lost = true;
                return;
            }
            renewed = performance.now();
        }
        catch {
            // A failed renewal (a lost connection) is tried again at the next
            // tick; failures for a whole lease since the last success lost it.
            if (performance.now() - renewed >= holder.leaseMs) {
                held.lost = true;
                return;
            }
        }
        schedule();
    };
    const schedule = () => {
        if (!stopped) {
            timer = setTimeout(() => {
                renewing = renew();
            }, every);
        }
    };
    schedule();
    let result;
    let failure = null;
    try {
        result = await body(held);
    }
    catch (error) {
        failure = { error };
    }
    stopped = true;
    if (timer !== null) {
        clearTimeout(timer);
    }
    await renewing;
    if (!held.lost) {
        // null: not known (a resend found it released): not a loss.
        held.lost = (await run.op((io) => holder.release(io, lease))) === false;
    }
    if (failure !== null) {
        throw failure.error;
    }
    if (held.lost) {
        throw new errors_1.LockLost(holder.key, held.fence ?? 0);
    }
    return result;
}
