"use strict";
// Each pattern's operations, written once as async functions over an Io
// (see ../driver) on checked inputs; the generated classes of ../index run
// them.
Object.defineProperty(exports, "__esModule", { value: true });
exports.visits = exports.signin = exports.shardedHash = exports.semaphore = exports.rwlock = exports.rolling = exports.rateLimit = exports.packed = exports.loginLog = exports.lock = exports.layout = exports.expiringMap = exports.bloom = exports.analytics = void 0;
exports.analytics = require("./analytics");
exports.bloom = require("./bloom");
exports.expiringMap = require("./expiring_map");
exports.layout = require("./layout");
exports.lock = require("./lock");
exports.loginLog = require("./login_log");
exports.packed = require("./packed");
exports.rateLimit = require("./rate_limit");
exports.rolling = require("./rolling");
exports.rwlock = require("./rwlock");
exports.semaphore = require("./semaphore");
exports.shardedHash = require("./sharded_hash");
exports.signin = require("./signin");
exports.visits = require("./visits");
