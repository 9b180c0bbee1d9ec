// Bitmap analytics (src/analytics, lua/analytics): marks in one bitmap per period, periods in UTC.

import { cmd } from "../call";
import { key } from "../contract";
import { Io, int } from "../driver";
import { InvalidArgument, UidOutOfRange } from "../errors";
import * as scripts from "../scripts";

const MAX_OFFSET = 4294967295;
const ORDER = ["hour", "day", "week", "month", "year"];

function bad(name: string, reason: string): InvalidArgument {
  return new InvalidArgument(name, reason, null);
}

const pad = (n: number, w = 2): string => String(n).padStart(w, "0");

/** The period labels of the UTC instant `atS`, one per granularity, finest first. */
export function labels(atS: number, granularities: readonly string[]): string[] {
  const t = new Date(atS * 1000);
  const [y, m, d, h] = [t.getUTCFullYear(), t.getUTCMonth() + 1, t.getUTCDate(), t.getUTCHours()];
  const day = `${pad(y, 4)}-${pad(m)}-${pad(d)}`;
  // ISO week: the week of the Thursday of this week.
  const thursday = new Date(Date.UTC(y, m - 1, d + 3 - ((t.getUTCDay() + 6) % 7)));
  const isoYear = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - Date.UTC(isoYear, 0, 1)) / 86400000 / 7) + 1;
  const by: Record<string, string> = {
    hour: `H:${day}T${pad(h)}`,
    day: `D:${day}`,
    week: `W:${pad(isoYear, 4)}-W${pad(week)}`,
    month: `M:${pad(y, 4)}-${pad(m)}`,
    year: `Y:${pad(y, 4)}`,
  };
  return granularities.map((g) => by[g]);
}

export class Analytics {
  private readonly granularities: string[];

  constructor(
    private readonly prefix: string,
    private readonly tag: string | null,
    private readonly maxId: number,
    granularities: readonly string[] | null,
  ) {
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

  key(event: string, period: string): string {
    if (/\s/.test(event)) {
      throw bad("event", `\`${event}\` must not contain whitespace`);
    }
    return this.tag === null
      ? key("analytics", "event", { prefix: this.prefix, event, period })
      : key("analytics", "event_tagged", { prefix: this.prefix, tag: this.tag, event, period });
  }

  async mark(io: Io, event: string, id: number, atS: number | bigint): Promise<boolean> {
    const keys = labels(Number(atS), this.granularities).map((p) => this.key(event, p));
    if (id > this.maxId) {
      throw new UidOutOfRange(`id ${id} is above the configured maximum ${this.maxId}`);
    }
    const values = [...keys.map(() => 0), id];
    return int(await io.one(scripts.Analytics.mark(keys, this.maxId, values))) === 1;
  }

  async count(io: Io, event: string, period: string): Promise<number> {
    return Math.max(int(await io.one(cmd("BITCOUNT", this.key(event, period)))), 0);
  }
}
