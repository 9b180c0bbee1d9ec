// The hold idiom: `await lock.using(timeoutMs, async (held) => ...)` for a
// lock, a semaphore's permit and a read or write lease: take it (waiting as
// acquire does), renew its lease every lease/3 while the body runs (a
// timer), give it back after, and report a lost lease: held.lost turns true
// as soon as a renewal finds it gone or taken (or renewals failed for a
// whole lease since the last one that succeeded), and the body's end throws
// LockLost when it was lost and the body threw nothing itself. Each
// pattern's operations give a Holder (what to acquire, extend and release).

import type { Io, Runner } from "./driver";
import { LockLost } from "./errors";
import type { Held } from "./records";

export interface Holder<L> {
  key: string;
  leaseMs: number;
  acquire(io: Io): Promise<L>;
  extend(io: Io, lease: L): Promise<boolean>;
  release(io: Io, lease: L): Promise<boolean | null>;
  token(lease: L): string;
  /** A lock's fencing token; null for a permit or a read-write lease. */
  fence(lease: L): number | null;
}

/** The lease a body holds: its token, fence and whether it was lost (live). */
class Holding implements Held {
  lost = false;
  constructor(
    readonly token: string,
    readonly fence: number | null,
  ) {}

  toJSON(): Held {
    return { token: this.token, fence: this.fence, lost: this.lost };
  }
}

export async function hold<L, T>(run: Runner, holder: Holder<L>, body: (held: Held) => Promise<T>): Promise<T> {
  const lease = await run.op((io) => holder.acquire(io));
  const held = new Holding(holder.token(lease), holder.fence(lease));
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let renewing: Promise<void> = Promise.resolve();
  const every = holder.leaseMs / 3;
  let renewed = performance.now();
  const renew = async (): Promise<void> => {
    try {
      if (!(await run.op((io) => holder.extend(io, lease)))) {
        held.lost = true;
        return;
      }
      renewed = performance.now();
    } catch {
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
  let result: T | undefined;
  let failure: { error: unknown } | null = null;
  try {
    result = await body(held);
  } catch (error) {
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
    throw new LockLost(holder.key, held.fence ?? 0);
  }
  return result as T;
}
