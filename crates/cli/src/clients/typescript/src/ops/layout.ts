// Stored layouts (src/layout.rs, lua/layout/claim.lua).

import { cmd } from "../call";
import { Io, pairs, text } from "../driver";
import { LayoutMismatch } from "../errors";
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
}
