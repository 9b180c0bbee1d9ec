import { Io } from "../driver";
/** `shards=64, scheme=crc32, version=1` as the Rust crate prints a layout. */
export declare function describe(fields: ReadonlyMap<string, string>): string;
export declare class Layouts {
    static claim(io: Io, metaKey: string, fields: ReadonlyMap<string, string>): Promise<void>;
    static read(io: Io, metaKey: string): Promise<Record<string, string> | null>;
    /** The meta key of the pattern's instance `base` (an empty base: InvalidArgument) and its stored layout (null: none). */
    static stored(io: Io, pattern: string, base: string): Promise<[string, Record<string, string> | null]>;
    /** As stored(), a missing layout thrown (LayoutMissing). */
    static existing(io: Io, pattern: string, base: string): Promise<[string, Record<string, string>]>;
}
/**
 * The layout of one instance of a pattern in its meta key: claimed by the instance's first write
 * when it records its layout (the record_layout setting), or by claimLayout; every claim checks
 * the stored layout against the instance's.
 */
export declare class LayoutClaim {
    private readonly metaKey;
    private readonly fields;
    private readonly onFirstWrite;
    private claimed;
    constructor(metaKey: string, fields: () => ReadonlyMap<string, string>, onFirstWrite: boolean);
    /** Before a write: the first one claims the layout when the instance records it. */
    beforeWrite(io: Io): Promise<void>;
    claim(io: Io): Promise<void>;
}
