import type { Io, Runner } from "./driver";
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
export declare function hold<L, T>(run: Runner, holder: Holder<L>, body: (held: Held) => Promise<T>): Promise<T>;
