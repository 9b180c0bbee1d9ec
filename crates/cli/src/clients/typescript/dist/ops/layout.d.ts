import { Io } from "../driver";
/** `shards=64, scheme=crc32, version=1` as the Rust crate prints a layout. */
export declare function describe(fields: ReadonlyMap<string, string>): string;
export declare class Layouts {
    static claim(io: Io, metaKey: string, fields: ReadonlyMap<string, string>): Promise<void>;
    static read(io: Io, metaKey: string): Promise<Record<string, string> | null>;
}
