// Each pattern's operations, written once as async functions over an Io
// (see ../driver) on checked inputs; the generated classes of ../index run
// them.

export * as analytics from "./analytics";
export * as bloom from "./bloom";
export * as expiringMap from "./expiring_map";
export * as layout from "./layout";
export * as lock from "./lock";
export * as loginLog from "./login_log";
export * as packed from "./packed";
export * as rateLimit from "./rate_limit";
export * as rolling from "./rolling";
export * as rwlock from "./rwlock";
export * as semaphore from "./semaphore";
export * as shardedHash from "./sharded_hash";
export * as signin from "./signin";
export * as visits from "./visits";
