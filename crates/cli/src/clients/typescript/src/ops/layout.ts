// Stored layouts (src/layout.rs, lua/layout/claim.lua).

import { cmd } from "../call";
import { key } from "../contract";
import { Io, pairs, text } from "../driver";
import { InvalidArgument, LayoutMismatch, LayoutMissing } from "../errors";
import * as scripts from "../scripts";

/** `shards=64, scheme=crc32, version=1` as the Rust crate prints a layout. */
export function describe(fields: ReadonlyMap<string, string>): string {
  const parts = [...fields.keys()]
    .filter((k) => k !== "pattern" && k !== "version")
    .sort()
    .map((k) => `${k}=${fields.get(k)}`);
  if (fields.has("version")) {
    parts.push(`version=${fields.get("version")}`);
  }
  return parts.join(", ");
}

function same(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
}

export class Layouts {
  static async claim(io: Io, metaKey: string, fields: ReadonlyMap<string, string>): Promise<void> {
    const flat = [...fields.keys()].sort().flatMap((k) => [k, fields.get(k) as string]);
    const reply = (await io.one(scripts.Layout.claim(metaKey, flat))) as unknown[];
    const stored = new Map<string, string>();
    for (let i = 0; i + 1 < reply.length; i += 2) {
      stored.set(text(reply[i]), text(reply[i + 1]));
    }
    if (!same(stored, fields)) {
      throw new LayoutMismatch(metaKey, describe(stored), describe(fields));
    }
  }

  static async read(io: Io, metaKey: string): Promise<Record<string, string> | null> {
    const got = pairs(await io.one(cmd("HGETALL", metaKey)));
    return got.length === 0 ? null : Object.fromEntries(got.map(([k, v]) => [k, v.toString("utf8")]));
  }

  /** The meta key of the pattern's instance `base` (an empty base: InvalidArgument) and its stored layout (null: none). */
  static async stored(io: Io, pattern: string, base: string): Promise<[string, Record<string, string> | null]> {
    if (!base) {
      throw new InvalidArgument("base", "must not be empty", null);
    }
    const meta = key(pattern, "meta", { base });
    return [meta, await Layouts.read(io, meta)];
  }

  /** As stored(), a missing layout thrown (LayoutMissing). */
  static async existing(io: Io, pattern: string, base: string): Promise<[string, Record<string, string>]> {
    const [meta, stored] = await Layouts.stored(io, pattern, base);
    if (stored === null) {
      throw new LayoutMissing(meta);
    }
    return [meta, stored];
  }
}

/**
 * The layout of one instance of a pattern in its meta key: claimed by the instance's first write
 * when it records its layout (the record_layout setting), or by claimLayout; every claim checks
 * the stored layout against the instance's.
 */
export class LayoutClaim {
  private claimed = false;

  constructor(
    private readonly metaKey: string,
    private readonly fields: () => ReadonlyMap<string, string>,
    private readonly onFirstWrite: boolean,
  ) {}

  /** Before a write: the first one claims the layout when the instance records it. */
  async beforeWrite(io: Io): Promise<void> {
    if (this.onFirstWrite && !this.claimed) {
      await this.claim(io);
    }
  }

  async claim(io: Io): Promise<void> {
    await Layouts.claim(io, this.metaKey, this.fields());
    this.claimed = true;
  }
}
