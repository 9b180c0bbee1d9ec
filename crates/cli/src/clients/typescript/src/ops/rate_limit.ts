// The rate limiters' operations (src/rate_limit, lua/rate_limit).

import { name as checkName } from "../checks";
import { cmd } from "../call";
import { key } from "../contract";
import { Io, int } from "../driver";
import { InvalidArgument } from "../errors";
import type { Decision } from "../records";
import * as scripts from "../scripts";

const MAX_TOLERANCE_US = 10 ** 15;

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

function decision(reply: unknown[]): Decision {
  const [limited, limit, remaining, retry, reset] = reply.map(int);
  return { limited: limited === 1, limit, remaining, retryAfterMs: retry === -1 ? null : retry, resetAfterMs: reset };
}

const ROLES: Record<string, string> = { gcra: "tat", sliding_counter: "counter", sliding_log: "log" };

export class RateLimiter {
  private readonly gcra: [number, number, number];
  private readonly window: [number, number];
  private readonly maxQuantity: number;

  constructor(
    readonly kind: "gcra" | "sliding_counter" | "sliding_log",
    limit: number,
    windowMs: number,
    maxBurst: number,
    countPerPeriod: number,
    periodMs: number,
    readonly prefix: string,
  ) {
    if (kind === "gcra") {
      if (maxBurst > 999_999_999) {
        throw bad("max_burst", "must be from 0 to 999999999");
      }
      if (countPerPeriod < 1 || countPerPeriod > 999_999_999) {
        throw bad("count_per_period", "must be from 1 to 999999999");
      }
      if (periodMs < 1 || periodMs > 999_999_999_999) {
        throw bad("period", "must be from 1 to 999999999999 ms");
      }
      if (countPerPeriod > periodMs * 1000) {
        throw bad("count_per_period", `must be at most one per microsecond of the period (${periodMs * 1000})`);
      }
      const interval = Math.ceil((periodMs * 1000) / countPerPeriod);
      if (interval * (maxBurst + 1) > MAX_TOLERANCE_US) {
        throw bad("max_burst", "(max_burst + 1) emission intervals must not exceed 10^15 microseconds");
      }
      this.gcra = [maxBurst, countPerPeriod, periodMs];
      this.window = [0, 0];
      this.maxQuantity = maxBurst + 1;
    } else {
      const most = kind === "sliding_counter" ? 1_000_000 : 100_000;
      const longest = kind === "sliding_counter" ? 2_592_000_000 : 999_999_999_999;
      if (limit < 1 || limit > most) {
        throw bad("limit", `must be from 1 to ${most}`);
      }
      if (windowMs < 1 || windowMs > longest) {
        throw bad("window", `must be from 1 to ${longest} ms`);
      }
      this.gcra = [0, 0, 0];
      this.window = [limit, windowMs];
      this.maxQuantity = limit;
    }
  }

  key(subject: string): string {
    return key("rate_limit", ROLES[this.kind], { prefix: this.prefix, subject: checkName("subject", subject) });
  }

  async throttle(io: Io, subject: string, quantity: number): Promise<Decision> {
    const k = this.key(subject);
    if (quantity > this.maxQuantity) {
      throw bad("quantity", `must be at most ${this.maxQuantity}, the most one call may take`);
    }
    const [burst, count, period] = this.gcra;
    const [limit, window] = this.window;
    const call =
      this.kind === "gcra"
        ? scripts.RateLimit.throttle(k, burst, count, period, quantity, [])
        : this.kind === "sliding_counter"
          ? scripts.RateLimit.windowCounter(k, limit, window, quantity, [])
          : scripts.RateLimit.windowLog(k, limit, window, quantity, []);
    return decision(await io.one(call));
  }

  peek(io: Io, subject: string): Promise<Decision> {
    return this.throttle(io, subject, 0);
  }

  async reset(io: Io, subject: string): Promise<boolean> {
    return int(await io.one(cmd("DEL", this.key(subject)))) > 0;
  }

  static throttleOnce(
    io: Io,
    subject: string,
    maxBurst: number,
    countPerPeriod: number,
    periodMs: number,
    quantity: number,
  ): Promise<Decision> {
    return new RateLimiter("gcra", 0, 0, maxBurst, countPerPeriod, periodMs, "rate:").throttle(io, subject, quantity);
  }

  static allowOncePer(io: Io, subject: string, intervalMs: number): Promise<Decision> {
    return new RateLimiter("gcra", 0, 0, 0, 1, intervalMs, "rate:").throttle(io, subject, 1);
  }
}
