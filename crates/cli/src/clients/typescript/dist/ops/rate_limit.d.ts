import { Io } from "../driver";
import type { Decision } from "../records";
export declare class RateLimiter {
    readonly kind: "gcra" | "sliding_counter" | "sliding_log";
    readonly prefix: string;
    private readonly gcra;
    private readonly window;
    private readonly maxQuantity;
    constructor(kind: "gcra" | "sliding_counter" | "sliding_log", limit: number, windowMs: number, maxBurst: number, countPerPeriod: number, periodMs: number, prefix: string);
    key(subject: string): string;
    throttle(io: Io, subject: string, quantity: number): Promise<Decision>;
    peek(io: Io, subject: string): Promise<Decision>;
    reset(io: Io, subject: string): Promise<boolean>;
    static throttleOnce(io: Io, subject: string, maxBurst: number, countPerPeriod: number, periodMs: number, quantity: number): Promise<Decision>;
    static allowOncePer(io: Io, subject: string, intervalMs: number): Promise<Decision>;
}
