//! The conformance cases' operations, by name, on the Rust API: one arm per
//! `Class.op` of the description (`src/<pattern>/client.api`), its inputs
//! read from the case's JSON arguments by the description's names, its
//! result and errors turned into the JSON the cases expect.

use std::time::Duration;

use redis_patterns::analytics::{Analytics, Expr, Granularity, Period};
use redis_patterns::bloom::{Bloom, JsHashBloom, Load};
use redis_patterns::chrono::NaiveDate;
use redis_patterns::core::RequestId;
use redis_patterns::expiring_map::{EntriesPage, ExpiringMap, Path, Ttl};
use redis_patterns::keys::Prefix;
use redis_patterns::lease::WaitMode;
use redis_patterns::lock::{Lock, Replication};
use redis_patterns::login_log::{
    ActiveUser, Expiry, LoginLog, ReindexCursor, ReindexOptions, ReindexReport,
};
use redis_patterns::packed::{Bytes, Layout as PackedLayoutKind, PackedRecords};
use redis_patterns::rate_limit::{self, Limit, RateLimiter};
use redis_patterns::rolling::RollingStore;
use redis_patterns::rwlock::{Role, RwLease, RwLock};
use redis_patterns::semaphore::Semaphore;
use redis_patterns::sharded_hash::{
    ImportOptions, ListpackLimits, RejectReason, ShardedHash, Sharding,
};
use redis_patterns::signin::SignIn;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{Connection, Error, ErrorKind, Request, Retention};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::engine::{Ctx, Saved};

type Tz = redis_patterns::chrono::FixedOffset;

/// `(field, value)` pairs of bytes.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Every `Class.op` this dispatcher runs (the test compares it with the
/// description).
pub const OPERATIONS: &[&str] = &[
    "ExpiringMap.new",
    "ExpiringMap.shard_key",
    "ExpiringMap.put",
    "ExpiringMap.put_if_absent",
    "ExpiringMap.put_many",
    "ExpiringMap.put_if_absent_many",
    "ExpiringMap.get",
    "ExpiringMap.get_many",
    "ExpiringMap.remove",
    "ExpiringMap.ttl_of",
    "ExpiringMap.persist",
    "ExpiringMap.expire",
    "ExpiringMap.len",
    "ExpiringMap.sweep",
    "ExpiringMap.entries",
    "ExpiringMap.inspect",
    "ExpiringMap.claim_layout",
    "ExpiringMap.open",
    "Analytics.new",
    "Analytics.key",
    "Analytics.mark",
    "Analytics.mark_unique",
    "Analytics.mark_unique_string",
    "Analytics.count",
    "Analytics.query_count",
    "Analytics.query_contains",
    "Analytics.query_members",
    "Analytics.cohort",
    "Analytics.mark_string",
    "Analytics.count_uniques",
    "Analytics.streak",
    "Analytics.active_count",
    "Analytics.active_contains",
    "Analytics.active_members",
    "Lock.new",
    "Lock.try_acquire",
    "Lock.try_acquire_as",
    "Lock.acquire",
    "Lock.acquire_as",
    "Lock.release",
    "Lock.extend",
    "Lock.owned",
    "Lock.status",
    "Lock.hold",
    "Semaphore.new",
    "Semaphore.try_acquire",
    "Semaphore.try_acquire_as",
    "Semaphore.acquire",
    "Semaphore.acquire_as",
    "Semaphore.release",
    "Semaphore.extend",
    "Semaphore.hold",
    "RwLock.new",
    "RwLock.try_read",
    "RwLock.try_write",
    "RwLock.try_as",
    "RwLock.read",
    "RwLock.write",
    "RwLock.wait_as",
    "RwLock.release",
    "RwLock.extend",
    "RwLock.hold",
    "RateLimiter.new",
    "RateLimiter.key",
    "RateLimiter.throttle",
    "RateLimiter.peek",
    "RateLimiter.reset",
    "RateLimiter.throttle_once",
    "RateLimiter.allow_once_per",
    "ShardedHash.new",
    "ShardedHash.shard_key",
    "ShardedHash.set",
    "ShardedHash.set_if_absent",
    "ShardedHash.set_many",
    "ShardedHash.set_if_absent_many",
    "ShardedHash.get",
    "ShardedHash.get_many",
    "ShardedHash.delete",
    "ShardedHash.exists",
    "ShardedHash.incr",
    "ShardedHash.incr_once",
    "ShardedHash.len",
    "ShardedHash.is_empty",
    "ShardedHash.inspect",
    "ShardedHash.import_items",
    "ShardedHash.claim_layout",
    "ShardedHash.planned",
    "ShardedHash.listpack_limits",
    "ShardedHash.open",
    "PackedRecords.new",
    "PackedRecords.locate",
    "PackedRecords.get",
    "PackedRecords.get_many",
    "PackedRecords.set",
    "PackedRecords.set_many",
    "PackedRecords.add",
    "PackedRecords.add_once",
    "PackedRecords.compare_and_set",
    "PackedRecords.scan",
    "PackedRecords.count_by",
    "PackedRecords.claim_layout",
    "PackedRecords.stored_layout",
    "PackedRecords.open",
    "VisitCounter.new",
    "VisitCounter.counter_key",
    "VisitCounter.shard_key",
    "VisitCounter.day_of",
    "VisitCounter.member_from_string_id",
    "VisitCounter.add",
    "VisitCounter.add_now",
    "VisitCounter.add_at",
    "VisitCounter.add_pipelined",
    "VisitCounter.add_batch",
    "VisitCounter.count",
    "VisitCounter.final_count",
    "VisitCounter.contains",
    "VisitCounter.shard_sizes",
    "VisitCounter.distinct_over",
    "VisitCounter.distinct_between",
    "VisitCounter.stored_shards",
    "VisitCounter.stored_shards_between",
    "VisitCounter.planned",
    "LoginLog.new",
    "LoginLog.log_key",
    "LoginLog.index_key",
    "LoginLog.types_key",
    "LoginLog.month_of",
    "LoginLog.sync_months",
    "LoginLog.record",
    "LoginLog.logged_in_on",
    "LoginLog.logged_in_in_month",
    "LoginLog.days_in_month",
    "LoginLog.logged_in_between",
    "LoginLog.login_days",
    "LoginLog.active_users",
    "LoginLog.types_between",
    "LoginLog.all_active_users",
    "LoginLog.month_users",
    "LoginLog.month_logins",
    "LoginLog.mark_exported",
    "LoginLog.exports",
    "LoginLog.expire_month",
    "LoginLog.reindex",
    "LoginLog.reindex_page",
    "SignIn.new",
    "SignIn.key",
    "SignIn.sign_in",
    "SignIn.signed_in",
    "SignIn.count",
    "SignIn.active_any",
    "SignIn.active_every",
    "SignIn.count_any",
    "SignIn.count_every",
    "SignIn.days_signed_in",
    "SignIn.streak",
    "Bloom.create",
    "Bloom.open",
    "Bloom.locate",
    "Bloom.add",
    "Bloom.exists",
    "Bloom.multi_add",
    "Bloom.multi_exists",
    "Bloom.bits_set",
    "Bloom.approx_count",
    "Bloom.info",
    "Bloom.load",
    "Bloom.clear",
    "Bloom.destroy",
    "JsHashBloom.new",
    "JsHashBloom.offset",
    "JsHashBloom.add",
    "JsHashBloom.exists",
    "JsHashBloom.multi_add",
    "JsHashBloom.multi_exists",
    "JsHashBloom.load",
    "RollingStore.new",
    "RollingStore.meta_key",
    "RollingStore.add",
    "RollingStore.get",
    "RollingStore.recent",
    "RollingStore.len",
    "RollingStore.clear",
    "Layouts.claim",
    "Layouts.read",
];

/// An error as the cases see it: its kind, its data, its message.
#[derive(Debug)]
pub struct Failure {
    pub kind: String,
    pub data: Value,
    pub message: String,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let message = e.to_string();
        let (kind, data) = error_json(e.into_kind());
        Failure {
            kind: kind.to_string(),
            data,
            message,
        }
    }
}

fn error_json(k: ErrorKind) -> (&'static str, Value) {
    use ErrorKind as K;
    match k {
        K::InvalidArgument {
            script,
            name,
            reason,
        } => (
            "InvalidArgument",
            json!({"name": name, "reason": reason, "script": script}),
        ),
        K::LockBusy {
            key,
            retry_after_ms,
        } => (
            "LockBusy",
            json!({"key": key, "retry_after_ms": retry_after_ms}),
        ),
        K::LockTimeout { key, waited_ms } => {
            ("LockTimeout", json!({"key": key, "waited_ms": waited_ms}))
        }
        K::NoPermit {
            key,
            retry_after_ms,
        } => (
            "NoPermit",
            json!({"key": key, "retry_after_ms": retry_after_ms}),
        ),
        K::LockLost { key, fence } => ("LockLost", json!({"key": key, "fence": fence})),
        K::NotReplicated {
            key,
            fence,
            acked,
            wanted,
        } => (
            "NotReplicated",
            json!({"key": key, "fence": fence, "acked": acked, "wanted": wanted}),
        ),
        K::RollingLayout { script, detail } => {
            ("RollingLayout", json!({"script": script, "detail": detail}))
        }
        K::RollingValue { field, source } => (
            "RollingValue",
            json!({"field": field, "detail": source.to_string()}),
        ),
        K::ListpackValueTooLong { what, len, limit } => (
            "ListpackValueTooLong",
            json!({"what": what, "len": len, "limit": limit}),
        ),
        K::ShardFull { script, detail } => {
            ("ShardFull", json!({"script": script, "detail": detail}))
        }
        K::BloomConfigMismatch { detail } => ("BloomConfigMismatch", json!({"detail": detail})),
        K::BloomMissing { detail } => ("BloomMissing", json!({"detail": detail})),
        K::LayoutMismatch {
            key,
            stored,
            requested,
        } => (
            "LayoutMismatch",
            json!({"key": key, "stored": stored, "requested": requested}),
        ),
        K::LayoutMissing { key } => ("LayoutMissing", json!({"key": key})),
        K::IdOutOfRange { id, max } => ("IdOutOfRange", json!({"id": id, "max": max})),
        K::Overflow { script, detail } => ("Overflow", json!({"script": script, "detail": detail})),
        K::UidOutOfRange { detail } => ("UidOutOfRange", json!({"detail": detail})),
        K::DayEnded { detail } => ("DayEnded", json!({"detail": detail})),
        K::DayOpen { detail } => ("DayOpen", json!({"detail": detail})),
        K::DayExpired { detail } => ("DayExpired", json!({"detail": detail})),
        K::NotEnoughMemory {
            what,
            needed,
            available,
            limit,
            script,
        } => (
            "NotEnoughMemory",
            json!({"what": what, "needed": needed, "available": available,
                   "limit": if matches!(limit, redis_patterns::MemoryLimit::Ceiling) { "ceiling" } else { "maxmemory" },
                   "script": script}),
        ),
        K::ShaMismatch {
            script,
            expected,
            server,
        } => (
            "ShaMismatch",
            json!({"script": script, "expected": expected, "server": server}),
        ),
        K::Script {
            script,
            code,
            detail,
        } => (
            "Script",
            json!({"script": script, "code": code, "detail": detail}),
        ),
        K::Server {
            code,
            message,
            script,
            ..
        } => (
            "Server",
            json!({"code": code, "message": message, "script": script}),
        ),
        K::PipelineInterrupted {
            ran_in_order,
            total,
        } => (
            "PipelineInterrupted",
            json!({"ran_in_order": ran_in_order, "total": total}),
        ),
        K::OutcomeUnknown {
            scripts,
            commands,
            cause,
        } => (
            "OutcomeUnknown",
            json!({"scripts": scripts, "commands": commands, "cause": cause}),
        ),
        K::NotDurable {
            acknowledged,
            wanted,
            timeout_ms,
        } => (
            "NotDurable",
            json!({"acknowledged": acknowledged, "wanted": wanted, "timeout_ms": timeout_ms}),
        ),
        K::UnexpectedReply { detail } => ("UnexpectedReply", json!({"detail": detail})),
        other => (
            "Server",
            json!({"code": "ERR", "message": other.to_string(), "script": null}),
        ),
    }
}

/// Runs an op (or any request) on `con`.
pub fn run<R: Request>(con: &mut Connection, req: R) -> Result<R::Output, Failure> {
    req.run(con).map_err(Failure::from)
}

fn refused(name: &str, reason: impl Into<String>) -> Failure {
    Failure::from(Error::invalid(name.to_string().leak(), reason.into()))
}

/// A handle a case made.
#[derive(Clone)]
pub enum Handle {
    Lock(Lock),
    Semaphore(Semaphore),
    RwLock(RwLock),
    Limiter(RateLimiter),
    Hash(ShardedHash),
    Expiring(ExpiringMap),
    Packed(PackedRecords<Bytes>),
    Visits(VisitCounter<Tz>),
    LoginLog(LoginLog),
    SignIn(SignIn),
    Analytics(Analytics),
    Bloom(Bloom),
    JsHash(JsHashBloom),
    Rolling(RollingStore),
}

impl Handle {
    pub fn class(&self) -> &'static str {
        match self {
            Handle::Lock(_) => "Lock",
            Handle::Semaphore(_) => "Semaphore",
            Handle::RwLock(_) => "RwLock",
            Handle::Limiter(_) => "RateLimiter",
            Handle::Hash(_) => "ShardedHash",
            Handle::Expiring(_) => "ExpiringMap",
            Handle::Packed(_) => "PackedRecords",
            Handle::Visits(_) => "VisitCounter",
            Handle::LoginLog(_) => "LoginLog",
            Handle::SignIn(_) => "SignIn",
            Handle::Analytics(_) => "Analytics",
            Handle::Bloom(_) => "Bloom",
            Handle::JsHash(_) => "JsHashBloom",
            Handle::Rolling(_) => "RollingStore",
        }
    }

    /// The handle's accessors (the description's `get` lines) as JSON.
    pub fn describe(&self) -> Value {
        match self {
            Handle::Lock(l) => {
                json!({"key": l.key(), "fence_key": l.fence_key(), "channel": l.channel(),
                       "queue_key": l.queue_key(), "places_key": l.places_key(),
                       "place_ms": l.place().as_millis() as u64})
            }
            Handle::Semaphore(s) => json!({"key": s.key(), "channel": s.channel(),
                                            "place_ms": s.place().as_millis() as u64}),
            Handle::RwLock(l) => {
                json!({"writer_key": l.writer_key(), "readers_key": l.readers_key(),
                                        "intents_key": l.intents_key(), "channel": l.channel(),
                                        "place_ms": l.place().as_millis() as u64})
            }
            Handle::Limiter(l) => json!({"prefix": l.prefix().as_str()}),
            Handle::Hash(h) => {
                json!({"base": h.base(), "shards": h.shards(), "meta_key": h.meta_key()})
            }
            Handle::Packed(p) => {
                json!({"base": p.base(), "width": p.width(), "ids_per_shard": p.ids_per_shard(),
                                        "shards": p.shards(), "meta_key": p.meta_key()})
            }
            Handle::Expiring(m) => json!({"base": m.base(), "shards": m.shards(), "cap": m.cap(),
                                          "path": m.path().name(), "meta_key": m.meta_key()}),
            Handle::Visits(v) => json!({"name": v.name(), "shards": v.shards()}),
            Handle::LoginLog(_) | Handle::SignIn(_) | Handle::Analytics(_) => json!({}),
            Handle::Bloom(b) => json!({"name": b.name(), "config_key": b.config_key(),
                                       "block_keys": b.block_keys(), "params": to_json(b.params())}),
            Handle::JsHash(b) => json!({"key": b.key()}),
            Handle::Rolling(r) => json!({"shards": r.shards(), "capacity": r.capacity()}),
        }
    }
}

pub fn to_json<T: Serialize>(v: T) -> Value {
    serde_json::to_value(v).expect("results serialize")
}

/// Bytes as the cases write them: text when UTF-8, else `{"$hex": ...}`.
pub fn bytes_json(b: &[u8]) -> Value {
    match std::str::from_utf8(b) {
        Ok(s) => Value::from(s),
        Err(_) => json!({"$hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>()}),
    }
}

/// The canonical JSON of the bytes `hex` spells.
pub fn hex_value(hex: &str) -> Value {
    bytes_json(&unhex(hex).unwrap_or_default())
}

fn unhex(hex: &str) -> Option<Vec<u8>> {
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect()
}

/// A raw reply as JSON.
pub fn reply_json(v: redis::Value) -> Value {
    use redis::Value as V;
    match v {
        V::Nil => Value::Null,
        V::Int(i) => Value::from(i),
        V::BulkString(b) => bytes_json(&b),
        V::SimpleString(s) => Value::from(s),
        V::Okay => Value::from("OK"),
        V::Array(a) | V::Set(a) => Value::Array(a.into_iter().map(reply_json).collect()),
        V::Map(m) => Value::Array(
            m.into_iter()
                .flat_map(|(k, v)| [reply_json(k), reply_json(v)])
                .collect(),
        ),
        V::Double(d) => Value::from(d),
        V::Boolean(b) => Value::from(b),
        other => Value::from(format!("{other:?}")),
    }
}

/// A case's arguments, read by the description's names.
pub struct Args<'a>(pub &'a Map<String, Value>);

impl Args<'_> {
    fn get(&self, name: &str) -> Result<&Value, Failure> {
        self.0
            .get(name)
            .ok_or_else(|| refused(name, "is required by the case"))
    }

    fn has(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|v| !v.is_null())
    }

    /// `name` as `conv` reads it, refused with `must` when it cannot.
    fn typed<T>(
        &self,
        name: &str,
        must: &str,
        conv: impl FnOnce(&Value) -> Option<T>,
    ) -> Result<T, Failure> {
        conv(self.get(name)?).ok_or_else(|| refused(name, must))
    }

    /// `read` of `name`, or `default` when the case does not give it.
    fn or<T>(
        &self,
        name: &str,
        default: T,
        read: impl FnOnce(&Self, &str) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        if self.has(name) {
            read(self, name)
        } else {
            Ok(default)
        }
    }

    /// Each element of the list `name` as `each` reads it.
    fn each<T>(
        &self,
        name: &str,
        each: impl FnMut(&Value) -> Result<T, Failure>,
    ) -> Result<Vec<T>, Failure> {
        self.list(name)?.iter().map(each).collect()
    }

    fn s(&self, name: &str) -> Result<String, Failure> {
        self.typed(name, "must be a string", |v| v.as_str().map(str::to_string))
    }

    fn s_or(&self, name: &str, default: &str) -> Result<String, Failure> {
        self.or(name, default.to_string(), Self::s)
    }

    fn u(&self, name: &str) -> Result<u64, Failure> {
        self.typed(name, "must be a non-negative integer", Value::as_u64)
    }

    fn u_or(&self, name: &str, default: u64) -> Result<u64, Failure> {
        self.or(name, default, Self::u)
    }

    fn i(&self, name: &str) -> Result<i64, Failure> {
        self.typed(name, "must be an integer", Value::as_i64)
    }

    fn f(&self, name: &str) -> Result<f64, Failure> {
        self.typed(name, "must be a number", Value::as_f64)
    }

    fn b(&self, name: &str) -> Result<bool, Failure> {
        self.typed(name, "must be true or false", Value::as_bool)
    }

    fn b_or(&self, name: &str, default: bool) -> Result<bool, Failure> {
        self.or(name, default, Self::b)
    }

    fn ms(&self, name: &str) -> Result<Duration, Failure> {
        Ok(Duration::from_millis(self.u(name)?))
    }

    fn bytes(&self, name: &str) -> Result<Vec<u8>, Failure> {
        self.typed(name, "must be text or {\"$hex\": ...}", value_bytes)
    }

    fn list(&self, name: &str) -> Result<Vec<Value>, Failure> {
        self.typed(name, "must be a list", |v| v.as_array().cloned())
    }

    fn bytes_list(&self, name: &str) -> Result<Vec<Vec<u8>>, Failure> {
        self.each(name, |v| {
            value_bytes(v).ok_or_else(|| refused(name, "must be a list of text"))
        })
    }

    /// A list of bytes or nulls.
    fn opt_bytes_list(&self, name: &str) -> Result<Vec<Option<Vec<u8>>>, Failure> {
        self.each(name, |v| match v {
            Value::Null => Ok(None),
            v => value_bytes(v)
                .map(Some)
                .ok_or_else(|| refused(name, "must be a list of text or null")),
        })
    }

    fn pairs(&self, name: &str) -> Result<Pairs, Failure> {
        self.each(name, |p| match (value_bytes(&p[0]), value_bytes(&p[1])) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(refused(name, "must be a list of [field, value] pairs")),
        })
    }

    fn date(&self, name: &str) -> Result<NaiveDate, Failure> {
        parse_date(name, self.get(name)?)
    }

    fn dates(&self, name: &str) -> Result<Vec<NaiveDate>, Failure> {
        self.each(name, |v| parse_date(name, v))
    }

    fn role(&self, name: &str) -> Result<Role, Failure> {
        match self.s(name)?.as_str() {
            "read" => Ok(Role::Read),
            "write" => Ok(Role::Write),
            _ => Err(refused(name, "must be read or write")),
        }
    }

    /// An optional number of seconds (`null`: none), or `default` when absent.
    fn secs_opt(&self, name: &str, default: Option<u64>) -> Result<Option<Duration>, Failure> {
        match self.0.get(name) {
            None => Ok(default.map(Duration::from_secs)),
            Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(|s| Some(Duration::from_secs(s)))
                .ok_or_else(|| refused(name, "must be seconds or null")),
        }
    }

    fn request(&self) -> Result<RequestId, Failure> {
        let id = self.s("request_id")?;
        let ttl = self.u_or("request_ttl_ms", 3_600_000)?;
        Ok(RequestId::with_ttl(&id, Duration::from_millis(ttl))?)
    }
}

fn value_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.clone().into_bytes()),
        Value::Object(o) => unhex(o.get("$hex")?.as_str()?),
        _ => None,
    }
}

fn parse_date(name: &str, v: &Value) -> Result<NaiveDate, Failure> {
    v.as_str()
        .and_then(|s| {
            NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .filter(|_| s.len() == 10)
        })
        .ok_or_else(|| refused(name, "must be a date (YYYY-MM-DD)"))
}

fn day_json(d: NaiveDate) -> Value {
    Value::from(d.format("%Y-%m-%d").to_string())
}

fn prefix(s: &str) -> Result<Prefix, Failure> {
    if s.is_empty() {
        Ok(Prefix::none())
    } else {
        Ok(Prefix::new(s)?)
    }
}

fn wait_mode(a: &Args) -> Result<WaitMode, Failure> {
    match a.s_or("wait_mode", "notified")?.as_str() {
        "notified" => Ok(WaitMode::Notified),
        "polling" => Ok(WaitMode::Polling {
            interval: Duration::from_millis(a.u_or("poll_interval_ms", 50)?),
        }),
        _ => Err(refused("wait_mode", "must be notified or polling")),
    }
}

/// The time zone of a visit counter: `UTC` or a fixed offset `+HH:MM`.
fn time_zone(a: &Args) -> Result<Tz, Failure> {
    let tz = a.s_or("time_zone", "UTC")?;
    if tz == "UTC" {
        return Ok(Tz::east_opt(0).expect("UTC"));
    }
    tz.parse::<Tz>()
        .map_err(|_| refused("time_zone", "must be UTC or +HH:MM"))
}

fn retention(a: &Args, default: Option<u64>) -> Result<Retention, Failure> {
    Ok(match a.secs_opt("retention_s", default)? {
        None => Retention::Forever,
        Some(d) => Retention::After(d),
    })
}

/// Builder `b` of a lock, semaphore or read-write lock with the settings
/// they share, as the case `a` gives them: wait mode, fairness, lease,
/// place and prefix (the builders' common setters are one macro's, not a
/// trait's).
macro_rules! leasing {
    ($b:expr, $a:expr) => {{
        let a: &Args = $a;
        let mut b = $b.wait_mode(wait_mode(a)?).fair(a.b_or("fair", false)?);
        if a.has("lease_ms") {
            b = b.lease(a.ms("lease_ms")?);
        }
        if a.u_or("place_ms", 0)? > 0 {
            b = b.place(a.ms("place_ms")?);
        }
        if a.has("prefix") {
            b = b.prefix(prefix(&a.s("prefix")?)?);
        }
        b
    }};
}

/// Builder `b` of a login log or a sign-in with the settings they share,
/// as the case `a` gives them: retention, prefix and max uid.
macro_rules! uid_bitmaps {
    ($b:expr, $a:expr) => {{
        let a: &Args = $a;
        let mut b = $b.retention(retention(a, None)?);
        if a.has("prefix") {
            b = b.prefix(prefix(&a.s("prefix")?)?);
        }
        if a.has("max_uid") {
            b = b.max_uid(a.u("max_uid")?);
        }
        b
    }};
}

/// Makes a handle with `Class(args)`.
pub fn new(class: &str, args: &Map<String, Value>) -> Result<Handle, Failure> {
    let a = &Args(args);
    Ok(match class {
        "Lock" => {
            let b = Lock::builder(&a.s("name")?).replication(replication(a)?);
            Handle::Lock(leasing!(b, a).build()?)
        }
        "Semaphore" => {
            let limit = u32::try_from(a.u("limit")?).map_err(|_| refused("limit", "too large"))?;
            let b = Semaphore::builder(&a.s("name")?, limit);
            Handle::Semaphore(leasing!(b, a).build()?)
        }
        "RwLock" => Handle::RwLock(leasing!(RwLock::builder(&a.s("name")?), a).build()?),
        "RateLimiter" => {
            let limit = match a.s("kind")?.as_str() {
                "gcra" => Limit::gcra(
                    a.u_or("max_burst", 0)?,
                    a.u_or("count_per_period", 0)?,
                    a.ms("period_ms")?,
                ),
                "sliding_counter" => {
                    Limit::sliding_counter(a.u_or("limit", 0)?, a.ms("window_ms")?)
                }
                "sliding_log" => Limit::sliding_log(a.u_or("limit", 0)?, a.ms("window_ms")?),
                _ => {
                    return Err(refused(
                        "kind",
                        "must be gcra, sliding_counter or sliding_log",
                    ));
                }
            };
            let mut b = RateLimiter::builder(limit);
            if a.has("prefix") {
                b = b.prefix(prefix(&a.s("prefix")?)?);
            }
            Handle::Limiter(b.build()?)
        }
        "ShardedHash" => Handle::Hash(sharded_hash(a)?),
        "ExpiringMap" => Handle::Expiring(expiring_map(a)?),
        "PackedRecords" => Handle::Packed(packed(a)?),
        "VisitCounter" => Handle::Visits(visits(a)?),
        "LoginLog" => Handle::LoginLog(uid_bitmaps!(LoginLog::builder(), a).build()?),
        "Analytics" => {
            let mut b = Analytics::builder();
            if a.has("prefix") {
                b = b.prefix(prefix(&a.s("prefix")?)?);
            }
            if a.has("max_id") {
                b = b.max_id(a.u("max_id")?);
            }
            if a.has("tag") && !a.get("tag")?.is_null() {
                b = b.tag(&a.s("tag")?);
            }
            if a.has("granularities") && !a.get("granularities")?.is_null() {
                let mut gs = Vec::new();
                for g in a.list("granularities")? {
                    let name = g
                        .as_str()
                        .ok_or_else(|| refused("granularities", "must be names"))?;
                    gs.push(Granularity::parse(name)?);
                }
                b = b.granularities(&gs);
            }
            if a.has("hll") {
                b = b.hll(a.b("hll")?);
            }
            Handle::Analytics(b.build()?)
        }
        "SignIn" => {
            let mut b = uid_bitmaps!(SignIn::builder(), a);
            if a.has("tag") {
                b = b.tag(&a.s("tag")?);
            }
            Handle::SignIn(b.build()?)
        }
        "JsHashBloom" => {
            let b = JsHashBloom::builder(&a.s("key")?)
                .prefix(prefix(&a.s_or("prefix", "")?)?)
                .limit_memory(a.b_or("limit_memory", true)?);
            Handle::JsHash(b.build()?)
        }
        "RollingStore" => {
            let mut b = RollingStore::builder(a.u("limit")?, a.u("shard_size")?, a.ms("ttl_ms")?);
            if a.has("prefix") {
                b = b.prefix(prefix(&a.s("prefix")?)?);
            }
            if a.has("index_margin_ms") {
                b = b.index_margin(a.ms("index_margin_ms")?);
            }
            Handle::Rolling(b.build()?)
        }
        other => return Err(refused("class", format!("{other} has no constructor"))),
    })
}

fn sharded_hash(a: &Args) -> Result<ShardedHash, Failure> {
    let sharding = if a.u_or("fields_per_shard", 0)? > 0 {
        Sharding::ById {
            fields_per_shard: a.u("fields_per_shard")?,
            max_id: a.u_or("max_id", 0)?,
        }
    } else {
        let shards =
            u32::try_from(a.u_or("shards", 0)?).map_err(|_| refused("shards", "too large"))?;
        Sharding::Crc32 { shards }
    };
    Ok(ShardedHash::builder(&a.s("base")?, sharding)
        .separator(&a.s_or("separator", ":")?)
        .strict(a.b_or("strict", true)?)
        .limits(ListpackLimits {
            entries: a.u_or("entries_limit", 512)?,
            value: a.u_or("value_limit", 64)?,
        })
        .record_layout(a.b_or("record_layout", false)?)
        .build()?)
}

fn expiring_map(a: &Args) -> Result<ExpiringMap, Failure> {
    let shards = u32::try_from(a.u("shards")?).map_err(|_| refused("shards", "too large"))?;
    let path = match a.s_or("path", "portable")?.as_str() {
        "portable" => Path::Portable,
        "native" => Path::Native,
        _ => return Err(refused("path", "must be portable or native")),
    };
    let mut b = ExpiringMap::builder(&a.s("base")?, shards)
        .path(path)
        .cap(a.u_or("cap", 0)?)
        .record_layout(a.b_or("record_layout", false)?)
        .limits(ListpackLimits {
            entries: a.u_or("entries_limit", 512)?,
            value: a.u_or("value_limit", 64)?,
        });
    if a.has("max_idle_ms") {
        b = b.max_idle(Some(a.ms("max_idle_ms")?));
    }
    Ok(b.build()?)
}

fn packed(a: &Args) -> Result<PackedRecords<Bytes>, Failure> {
    let width = usize::try_from(a.u("width")?).map_err(|_| refused("width", "too large"))?;
    let mut b = PackedRecords::builder(&a.s("base")?, Bytes(width), a.u("max_id")?)
        .record_layout(a.b_or("record_layout", false)?)
        .layout(match a.s_or("layout", "dense")?.as_str() {
            "dense" => PackedLayoutKind::Dense,
            "sparse" => PackedLayoutKind::Sparse,
            _ => return Err(refused("layout", "must be dense or sparse")),
        });
    if a.u_or("ids_per_shard", 0)? > 0 {
        b = b.ids_per_shard(a.u("ids_per_shard")?);
    }
    Ok(b.build()?)
}

fn visits(a: &Args) -> Result<VisitCounter<Tz>, Failure> {
    let shards = u32::try_from(a.u("shards")?).map_err(|_| refused("shards", "too large"))?;
    let mut b = VisitCounter::builder(&a.s("name")?, time_zone(a)?, shards);
    if a.has("prefix") {
        b = b.prefix(prefix(&a.s("prefix")?)?);
    }
    if a.0.contains_key("retention_s") {
        b = b.retention(retention(a, None)?);
    }
    if a.0.contains_key("late_window_s") {
        b = b.late_window(a.secs_opt("late_window_s", None)?);
    }
    Ok(b.build()?)
}

/// One operation of a case.
pub fn call(
    ctx: &mut Ctx,
    con: &mut Connection,
    class: &str,
    handle: Option<&Handle>,
    op: &str,
    args: &Map<String, Value>,
    step: &Value,
) -> Result<Saved, Failure> {
    let a = &Args(args);
    let v = |x: Value| Ok(Saved::Value(x));
    match (handle, class) {
        (Some(Handle::Lock(l)), _) => lock(ctx, con, l, op, a, step).and_then(v),
        (Some(Handle::Semaphore(s)), _) => semaphore(ctx, con, s, op, a, step).and_then(v),
        (Some(Handle::RwLock(l)), _) => rwlock(ctx, con, l, op, a, step).and_then(v),
        (Some(Handle::Limiter(l)), _) => limiter(con, l, op, a).and_then(v),
        (Some(Handle::Hash(h)), _) => hash(con, h, op, a).and_then(v),
        (Some(Handle::Expiring(m)), _) => expiring(con, m, op, a).and_then(v),
        (Some(Handle::Packed(p)), _) => packed_op(con, p, op, a).and_then(v),
        (Some(Handle::Visits(c)), _) => visits_op(con, c, op, a).and_then(v),
        (Some(Handle::LoginLog(l)), _) => login_log(con, l, op, a).and_then(v),
        (Some(Handle::SignIn(s)), _) => signin(con, s, op, a).and_then(v),
        (Some(Handle::Analytics(x)), _) => analytics(con, x, op, a).and_then(v),
        (Some(Handle::Bloom(b)), _) => bloom(con, b, op, a).and_then(v),
        (Some(Handle::JsHash(b)), _) => jshash(con, b, op, a).and_then(v),
        (Some(Handle::Rolling(r)), _) => rolling(con, r, op, a).and_then(v),
        (None, _) => statics(con, class, op, a),
    }
}

fn unknown(op: &str) -> Failure {
    refused(
        "operation",
        format!("{op} is not an operation of this class"),
    )
}

fn ok() -> Result<Value, Failure> {
    Ok(Value::Null)
}

/// The operations of a lock or a semaphore `r` that both have, by the same
/// names and arguments (one macro's, as their builders' setters are
/// [`leasing!`]'s): the answer to `op`, or `None` for another operation.
macro_rules! leased_op {
    ($con:expr, $r:expr, $op:expr, $a:expr) => {
        match $op {
            "try_acquire" => Some(to_json(run($con, $r.try_acquire())?)),
            "try_acquire_as" => Some(to_json(run($con, $r.try_acquire_as(&$a.s("token")?))?)),
            "acquire" => Some(to_json(run($con, $r.acquire($a.ms("timeout_ms")?))?)),
            "acquire_as" => Some(to_json(run(
                $con,
                $r.acquire_as(&$a.s("token")?, $a.ms("timeout_ms")?),
            )?)),
            "release" => Some(to_json(run($con, $r.release(&$a.s("token")?))?)),
            "extend" => Some(to_json(run(
                $con,
                $r.extend(&$a.s("token")?, $a.ms("lease_ms")?),
            )?)),
            _ => None,
        }
    };
}

fn lock(
    ctx: &mut Ctx,
    con: &mut Connection,
    l: &Lock,
    op: &str,
    a: &Args,
    step: &Value,
) -> Result<Value, Failure> {
    if let Some(v) = leased_op!(con, l, op, a) {
        return Ok(v);
    }
    Ok(match op {
        "owned" => match run(con, l.owned(&a.s("token")?))? {
            None => Value::Null,
            Some(d) if d == Duration::MAX => json!(-1),
            Some(d) => json!(d.as_millis() as u64),
        },
        "status" => to_json(run(con, l.status())?),
        "hold" => return hold(ctx, con, l, |g| Some(g.fence()), a, step),
        _ => return Err(unknown(op)),
    })
}

/// A lock's replication setting: `replication` none, acknowledged (with
/// `replicas` and `replication_timeout_ms`) or auto.
fn replication(a: &Args) -> Result<Replication, Failure> {
    Ok(match a.s_or("replication", "none")?.as_str() {
        "none" => Replication::None,
        "auto" => Replication::Auto,
        "acknowledged" => Replication::Acknowledged {
            replicas: u32::try_from(a.u_or("replicas", 1)?)
                .map_err(|_| refused("replicas", "too large"))?,
            timeout: Duration::from_millis(a.u_or("replication_timeout_ms", 1000)?),
        },
        _ => return Err(refused("replication", "must be none, acknowledged or auto")),
    })
}

/// `hold`: the guard on a connection of its own, the body's steps on the
/// case's connection meanwhile; a lost lease is LockLost at the end.
fn hold<R: redis_patterns::lease::Leasable>(
    ctx: &mut Ctx,
    con: &mut Connection,
    resource: &R,
    fence: impl Fn(&redis_patterns::lease::Guard<'_, R>) -> Option<u64>,
    a: &Args,
    step: &Value,
) -> Result<Value, Failure> {
    let mut own = ctx.target.connect();
    let guard = redis_patterns::lease::Guard::acquire(resource, &mut own, a.ms("timeout_ms")?)?;
    let (token, fence) = (guard.token().to_string(), fence(&guard));
    let body = step["body"].as_array().cloned().unwrap_or_default();
    let outcome = ctx.steps(con, &body);
    let lost = guard.check();
    drop(guard);
    outcome.map_err(|e| refused("body", e))?;
    lost?;
    Ok(json!({"token": token, "fence": fence, "lost": false}))
}

fn semaphore(
    ctx: &mut Ctx,
    con: &mut Connection,
    s: &Semaphore,
    op: &str,
    a: &Args,
    step: &Value,
) -> Result<Value, Failure> {
    match op {
        "hold" => hold(ctx, con, s, |_| None, a, step),
        _ => leased_op!(con, s, op, a).ok_or_else(|| unknown(op)),
    }
}

fn rw_lease(a: &Args) -> Result<RwLease, Failure> {
    let l = a.get("lease")?;
    let role = match l["role"].as_str() {
        Some("read") => Role::Read,
        Some("write") => Role::Write,
        _ => return Err(refused("lease", "must have a role read or write")),
    };
    let token = l["token"]
        .as_str()
        .ok_or_else(|| refused("lease", "must have a token"))?;
    Ok(RwLease {
        token: token.to_string(),
        role,
    })
}

fn rwlock(
    ctx: &mut Ctx,
    con: &mut Connection,
    l: &RwLock,
    op: &str,
    a: &Args,
    step: &Value,
) -> Result<Value, Failure> {
    let lease = |r: RwLease| json!({"token": r.token, "role": if r.role == Role::Read { "read" } else { "write" }});
    Ok(match op {
        "try_read" => lease(run(con, l.try_read())?),
        "try_write" => lease(run(con, l.try_write())?),
        "try_as" => lease(run(con, l.try_as(a.role("role")?, &a.s("token")?))?),
        "read" => lease(run(con, l.read(a.ms("timeout_ms")?))?),
        "write" => lease(run(con, l.write(a.ms("timeout_ms")?))?),
        "wait_as" => lease(run(
            con,
            l.wait_as(a.role("role")?, &a.s("token")?, a.ms("timeout_ms")?),
        )?),
        "release" => to_json(run(con, l.release(&rw_lease(a)?))?),
        "extend" => to_json(run(con, l.extend(&rw_lease(a)?, a.ms("duration_ms")?))?),
        "hold" => {
            let side = match a.role("role")? {
                Role::Read => l.reading(),
                Role::Write => l.writing(),
            };
            return hold(ctx, con, &side, |_| None, a, step);
        }
        _ => return Err(unknown(op)),
    })
}

fn limiter(con: &mut Connection, l: &RateLimiter, op: &str, a: &Args) -> Result<Value, Failure> {
    Ok(match op {
        "key" => Value::from(l.key(&a.s("subject")?)?),
        "throttle" => to_json(run(
            con,
            l.throttle(&a.s("subject")?, a.u_or("quantity", 1)?),
        )?),
        "peek" => to_json(run(con, l.peek(&a.s("subject")?))?),
        "reset" => to_json(run(con, l.reset(&a.s("subject")?))?),
        _ => return Err(unknown(op)),
    })
}

fn opt_bytes(v: Option<Vec<u8>>) -> Value {
    v.map_or(Value::Null, |b| bytes_json(&b))
}

fn hash(con: &mut Connection, h: &ShardedHash, op: &str, a: &Args) -> Result<Value, Failure> {
    Ok(match op {
        "shard_key" => Value::from(h.shard_key(&a.bytes("field")?)?),
        "set" => to_json(run(con, h.set(a.bytes("field")?, a.bytes("value")?))?),
        "set_if_absent" => to_json(run(
            con,
            h.set_if_absent(a.bytes("field")?, a.bytes("value")?),
        )?),
        "set_many" => to_json(run(con, h.set_many(&a.pairs("pairs")?))?),
        "set_if_absent_many" => to_json(run(con, h.set_if_absent_many(&a.pairs("pairs")?))?),
        "get" => opt_bytes(run(con, h.get::<Vec<u8>>(a.bytes("field")?))?),
        "get_many" => {
            let got: Vec<Option<Vec<u8>>> = run(con, h.get_many(&a.bytes_list("fields")?))?;
            Value::Array(got.into_iter().map(opt_bytes).collect())
        }
        "delete" => to_json(run(con, h.delete(a.bytes("field")?))?),
        "exists" => to_json(run(con, h.exists(a.bytes("field")?))?),
        "incr" => to_json(run(con, h.incr(a.bytes("field")?, a.i("delta")?))?),
        "incr_once" => to_json(run(
            con,
            h.incr_once(a.bytes("field")?, a.i("delta")?, &a.request()?),
        )?),
        "len" => to_json(run(con, h.len())?),
        "is_empty" => to_json(run(con, h.is_empty())?),
        "inspect" => to_json(run(con, h.inspect(a.u("sample")?))?),
        "import_items" => {
            let options = ImportOptions {
                batch: a.u_or("batch", 1000)? as usize,
                ..ImportOptions::default()
            };
            let r = run(con, h.import(a.pairs("items")?, options))?;
            let rejections: Vec<Value> = r
                .rejections
                .iter()
                .map(|x| json!({"position": x.position, "reason": reject_reason(&x.reason)}))
                .collect();
            json!({"items": r.items, "inserted": r.inserted, "present": r.present, "unknown": r.unknown,
                   "rejected": r.rejected, "rejections": rejections})
        }
        "claim_layout" => {
            run(con, h.claim_layout())?;
            Value::Null
        }
        _ => return Err(unknown(op)),
    })
}

/// A time to live in milliseconds, `null` for none.
fn ttl_arg(a: &Args) -> Result<Option<Duration>, Failure> {
    if a.has("ttl_ms") {
        Ok(Some(a.ms("ttl_ms")?))
    } else {
        Ok(None)
    }
}

fn entries_json(page: EntriesPage) -> Value {
    let entries: Vec<Value> = page
        .entries
        .into_iter()
        .map(|e| json!({"field": bytes_json(&e.field), "value": bytes_json(&e.value), "expires_at_ms": e.expires_at_ms}))
        .collect();
    json!({"entries": entries, "next": page.next})
}

fn expiring(con: &mut Connection, m: &ExpiringMap, op: &str, a: &Args) -> Result<Value, Failure> {
    let field = || a.bytes("field");
    Ok(match op {
        "shard_key" => Value::from(m.shard_key(&field()?)),
        "claim_layout" => {
            run(con, m.claim_layout())?;
            Value::Null
        }
        "put" => to_json(run(con, m.put(field()?, a.bytes("value")?, ttl_arg(a)?))?),
        "put_if_absent" => to_json(run(
            con,
            m.put_if_absent(field()?, a.bytes("value")?, ttl_arg(a)?),
        )?),
        "put_many" => to_json(run(con, m.put_many(&a.pairs("pairs")?, ttl_arg(a)?))?),
        "put_if_absent_many" => to_json(run(
            con,
            m.put_if_absent_many(&a.pairs("pairs")?, ttl_arg(a)?),
        )?),
        "get" => opt_bytes(run(con, m.get::<Vec<u8>>(field()?))?),
        "get_many" => {
            let got: Vec<Option<Vec<u8>>> = run(con, m.get_many(&a.bytes_list("fields")?))?;
            Value::Array(got.into_iter().map(opt_bytes).collect())
        }
        "remove" => to_json(run(con, m.remove(field()?))?),
        "ttl_of" => Value::from(match run(con, m.ttl_of(field()?))? {
            Ttl::Missing => -2,
            Ttl::Persistent => -1,
            Ttl::Expires(d) => d.as_millis() as i64,
        }),
        "persist" => to_json(run(con, m.persist(field()?))?),
        "expire" => to_json(run(con, m.expire(field()?, a.ms("ttl_ms")?))?),
        "len" => to_json(run(con, m.len())?),
        "sweep" => to_json(run(
            con,
            m.sweep(a.u_or("from_shard", 0)?, a.u_or("count", 64)?),
        )?),
        "entries" => entries_json(run(
            con,
            m.entries(a.u_or("from_shard", 0)?, a.u_or("count", 64)?),
        )?),
        "inspect" => to_json(run(con, m.inspect(a.u("sample")?))?),
        _ => return Err(unknown(op)),
    })
}

/// A rejection's reason as the description names it.
fn reject_reason(r: &RejectReason) -> &'static str {
    match r {
        RejectReason::BadField(_) => "bad_field",
        RejectReason::ValueTooLong(_) => "value_too_long",
        RejectReason::ShardFull => "shard_full",
    }
}

fn packed_op(
    con: &mut Connection,
    p: &PackedRecords<Bytes>,
    op: &str,
    a: &Args,
) -> Result<Value, Failure> {
    let field = || -> Result<redis_patterns::packed::IntField, Failure> {
        Ok(redis_patterns::packed::IntField {
            offset: a.u("offset")? as usize,
            size: a.u("size")? as usize,
            signed: a.b("signed")?,
        })
    };
    Ok(match op {
        "locate" => {
            let (key, off) = p.locate(a.u("id")?)?;
            json!([key, off])
        }
        "get" => bytes_json(&run(con, p.get(a.u("id")?))?),
        "get_many" => {
            let ids: Vec<u64> = a.list("ids")?.iter().filter_map(Value::as_u64).collect();
            Value::Array(
                run(con, p.get_many(&ids))?
                    .iter()
                    .map(|b| bytes_json(b))
                    .collect(),
            )
        }
        "set" => {
            run(con, p.set(a.u("id")?, &a.bytes("value")?))?;
            Value::Null
        }
        "set_many" => {
            let items = a
                .list("items")?
                .iter()
                .map(|p| match (p[0].as_u64(), value_bytes(&p[1])) {
                    (Some(id), Some(v)) => Ok((id, v)),
                    _ => Err(refused("items", "must be [id, bytes] pairs")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            run(con, p.set_many(&items))?;
            Value::Null
        }
        "add" => to_json(run(con, p.add(a.u("id")?, field()?, a.i("delta")?))?),
        "add_once" => to_json(run(
            con,
            p.add_once(a.u("id")?, field()?, a.i("delta")?, &a.request()?),
        )?),
        "compare_and_set" => match run(
            con,
            p.compare_and_set(a.u("id")?, &a.bytes("expected")?, &a.bytes("new")?),
        )? {
            Ok(()) => Value::Null,
            Err(current) => bytes_json(&current),
        },
        "scan" => {
            let all = run(
                con,
                p.scan(Vec::new(), |acc: &mut Vec<Value>, id, rec: Vec<u8>| {
                    acc.push(json!([id, bytes_json(&rec)]))
                }),
            )?;
            Value::Array(all)
        }
        "count_by" => {
            let f = redis_patterns::packed::IntField {
                offset: a.u("offset")? as usize,
                size: a.u("size")? as usize,
                signed: a.b_or("signed", false)?,
            };
            f.check(p.width() as u64)?;
            let counts = run(
                con,
                p.count_by(move |r: &Vec<u8>| {
                    r.iter().any(|b| *b != 0).then(|| f.read(r)).flatten()
                }),
            )?;
            let mut counts: Vec<(i64, u64)> = counts.into_iter().collect();
            counts.sort_unstable();
            to_json(counts)
        }
        "claim_layout" => {
            run(con, p.claim_layout())?;
            Value::Null
        }
        _ => return Err(unknown(op)),
    })
}

fn visits_op(
    con: &mut Connection,
    c: &VisitCounter<Tz>,
    op: &str,
    a: &Args,
) -> Result<Value, Failure> {
    let members = || -> Result<Vec<i64>, Failure> {
        a.list("members")?
            .iter()
            .map(|v| {
                v.as_i64()
                    .ok_or_else(|| refused("members", "must be integers"))
            })
            .collect()
    };
    Ok(match op {
        "counter_key" => Value::from(c.counter_key(a.date("day")?)),
        "day_of" => {
            let at = redis_patterns::chrono::DateTime::from_timestamp_millis(a.i("at_ms")?)
                .ok_or_else(|| refused("at_ms", "out of chrono's range"))?;
            day_json(c.day_of(&at))
        }
        "member_from_string_id" => Value::from(
            redis_patterns::visits::VisitCounter::member_from_string_id(&a.s("id")?),
        ),
        "shard_key" => Value::from(c.shard_key(a.date("day")?, a.u("index")? as u32)),
        "add" => to_json(run(con, c.add(a.date("day")?, a.i("member")?))?),
        "add_now" => to_json(run(
            con,
            c.add_at(&redis_patterns::chrono::Utc::now(), a.i("member")?),
        )?),
        "add_at" => {
            let at = redis_patterns::chrono::DateTime::from_timestamp_millis(a.i("at_ms")?)
                .ok_or_else(|| refused("at_ms", "out of chrono's range"))?;
            to_json(run(con, c.add_at(&at, a.i("member")?))?)
        }
        "add_pipelined" => to_json(run(con, c.add_pipelined(a.date("day")?, &members()?))?),
        "add_batch" => to_json(run(con, c.add_batch(a.date("day")?, &members()?))?),
        "count" => to_json(run(con, c.count(a.date("day")?))?),
        "final_count" => to_json(run(con, c.final_count(a.date("day")?))?),
        "contains" => to_json(run(con, c.contains(a.date("day")?, a.i("member")?))?),
        "shard_sizes" => to_json(run(con, c.shard_sizes(a.date("day")?))?),
        "distinct_over" => to_json(run(con, c.distinct_over(&a.dates("days")?))?),
        "distinct_between" => to_json(run(
            con,
            c.distinct_between(a.date("from")?, a.date("to")?),
        )?),
        "stored_shards" => to_json(run(con, c.stored_shards(a.date("day")?))?),
        "stored_shards_between" => to_json(run(
            con,
            c.stored_shards_between(a.date("from")?, a.date("to")?),
        )?),
        _ => return Err(unknown(op)),
    })
}

fn users(a: &Args) -> Result<Vec<ActiveUser>, Failure> {
    a.list("users")?
        .iter()
        .map(|u| match (u["user_type"].as_str(), u["uid"].as_u64()) {
            (Some(t), Some(uid)) => Ok(ActiveUser {
                user_type: t.to_string(),
                uid,
            }),
            _ => Err(refused("users", "must be {user_type, uid} records")),
        })
        .collect()
}

fn month_of(a: &Args) -> Result<(i32, u32), Failure> {
    let month = a.u("month")?;
    Ok((
        a.i("year")? as i32,
        u32::try_from(month).map_err(|_| refused("month", "1 to 12"))?,
    ))
}

fn login_log(con: &mut Connection, l: &LoginLog, op: &str, a: &Args) -> Result<Value, Failure> {
    let days = |d: Vec<NaiveDate>| Value::Array(d.into_iter().map(day_json).collect());
    Ok(match op {
        "log_key" => Value::from(l.log_key(&a.s("user_type")?, a.u("uid")?, a.date("day")?)),
        "index_key" => Value::from(l.index_key(&a.s("user_type")?, a.date("day")?)),
        "types_key" => Value::from(l.types_key(a.date("day")?)),
        "month_of" => day_json(redis_patterns::login_log::LoginLog::month_of(
            a.date("day")?,
        )),
        "sync_months" => days(redis_patterns::login_log::LoginLog::sync_months(
            a.date("today")?,
        )),
        "record" => to_json(run(
            con,
            l.record(&a.s("user_type")?, a.u("uid")?, a.date("day")?),
        )?),
        "logged_in_on" => to_json(run(
            con,
            l.logged_in_on(&a.s("user_type")?, a.u("uid")?, a.date("day")?),
        )?),
        "logged_in_in_month" => {
            let (y, m) = month_of(a)?;
            to_json(run(
                con,
                l.logged_in_in_month(&a.s("user_type")?, a.u("uid")?, y, m),
            )?)
        }
        "days_in_month" => {
            let (y, m) = month_of(a)?;
            to_json(run(
                con,
                l.days_in_month(&a.s("user_type")?, a.u("uid")?, y, m),
            )?)
        }
        "logged_in_between" => to_json(run(
            con,
            l.logged_in_between(
                &a.s("user_type")?,
                a.u("uid")?,
                a.date("from")?,
                a.date("to")?,
            ),
        )?),
        "login_days" => days(run(
            con,
            l.login_days(
                &a.s("user_type")?,
                a.u("uid")?,
                a.date("from")?,
                a.date("to")?,
            ),
        )?),
        "active_users" => to_json(run(
            con,
            l.active_users(&a.s("user_type")?, a.date("from")?, a.date("to")?),
        )?),
        "types_between" => to_json(run(con, l.types_between(a.date("from")?, a.date("to")?))?),
        "all_active_users" => to_json(run(
            con,
            l.all_active_users(a.date("from")?, a.date("to")?),
        )?),
        "month_users" => to_json(run(con, l.month_users(a.date("month")?))?),
        "month_logins" => to_json(run(con, l.month_logins(a.date("month")?, &users(a)?))?),
        "mark_exported" => {
            run(con, l.mark_exported(a.date("month")?, a.date("on")?))?;
            Value::Null
        }
        "exports" => Value::Array(
            run(con, l.exports())?
                .into_iter()
                .map(|(m, d)| json!([day_json(m), day_json(d)]))
                .collect(),
        ),
        "expire_month" => {
            let e = run(
                con,
                l.expire_month(a.date("month")?, a.u("keep_days")? as u32, a.date("today")?),
            )?;
            match e {
                Expiry::Deleted { month, keys } => {
                    json!({"outcome": "deleted", "month": month, "keys": keys, "last_export": null})
                }
                Expiry::Kept { month } => {
                    json!({"outcome": "kept", "month": month, "keys": null, "last_export": null})
                }
                Expiry::NotExported { month, last_export } => {
                    json!({"outcome": "not_exported", "month": month, "keys": null, "last_export": last_export})
                }
            }
        }
        "reindex" => {
            let (y, m) = month_of(a)?;
            let options = ReindexOptions {
                count: a.u_or("count", 1000)? as u32,
                ..ReindexOptions::default()
            };
            reindex_json(run(con, l.reindex(y, m, options))?)
        }
        "reindex_page" => {
            let (y, m) = month_of(a)?;
            let cursor: ReindexCursor = a.s_or("cursor", "0")?.parse()?;
            let count = a.u_or("count", 1000)? as u32;
            reindex_json(run(con, l.reindex_page(y, m, &cursor, count))?)
        }
        _ => return Err(unknown(op)),
    })
}

fn reindex_json(r: ReindexReport) -> Value {
    json!({"logs": r.logs, "days": r.days, "new": r.new, "unknown": r.unknown, "skipped": r.skipped,
           "done": r.cursor.is_done(), "cursor": r.cursor.to_string()})
}

fn analytics(con: &mut Connection, x: &Analytics, op: &str, a: &Args) -> Result<Value, Failure> {
    // `U` names the unique event's bitmap, any other label a period.
    let period = || -> Result<Option<Period>, Failure> {
        match a.s("period")?.as_str() {
            "U" => Ok(None),
            label => Ok(Some(label.parse::<Period>()?)),
        }
    };
    if let Some(answer) = op.strip_prefix("query_") {
        return analytics_query(con, x, answer, a);
    }
    if let Some(answer) = op.strip_prefix("active_") {
        let last = a.s("last")?.parse::<Period>()?;
        let (n, m) = (a.u("at_least")? as usize, a.u("of_last")? as usize);
        let q = x.active_in_last(&a.s("event")?, n, m, last);
        return query_answer(con, q, answer, a);
    }
    if op == "cohort" {
        let first = a.s("first")?.parse::<Period>()?;
        let (rows, columns) = (a.u("rows")? as usize, a.u("columns")? as usize);
        let t = run(
            con,
            x.cohort(
                &a.s("cohort_event")?,
                &a.s("return_event")?,
                first,
                rows,
                columns,
            ),
        )?;
        return Ok(to_json(t));
    }
    let event = a.s("event")?;
    Ok(match op {
        "key" => Value::from(match period()? {
            Some(p) => x.key(&event, p),
            None => x.unique_key(&event),
        }),
        "mark" => {
            let at = chrono::DateTime::from_timestamp(a.i("at_s")?, 0)
                .ok_or_else(|| refused("at_s", "is outside the calendar"))?;
            to_json(run(con, x.mark(&event, a.u("id")?, &at))?)
        }
        "mark_unique" => to_json(run(con, x.mark_unique(&event, a.u("id")?))?),
        "mark_string" => {
            let at = chrono::DateTime::from_timestamp(a.i("at_s")?, 0)
                .ok_or_else(|| refused("at_s", "is outside the calendar"))?;
            to_json(run(con, x.mark_string(&event, &a.s("id")?, &at))?)
        }
        "mark_unique_string" => to_json(run(con, x.mark_unique_string(&event, &a.s("id")?))?),
        "count_uniques" if a.s("first")? == "U" || (a.has("last") && a.get("last")? == "U") => {
            // The unique event's HyperLogLog: no range.
            let last = if a.has("last") {
                a.get("last")?.clone()
            } else {
                Value::Null
            };
            if a.s("first")? != "U" || !(last.is_null() || last == "U") {
                return Err(refused(
                    "range",
                    "the unique event (U) is no range: first U, last null or U",
                ));
            }
            to_json(run(con, x.count_unique_approx(&event))?)
        }
        "count_uniques" => {
            let first = a.s("first")?.parse::<Period>()?;
            let last = if a.has("last") && !a.get("last")?.is_null() {
                a.s("last")?.parse::<Period>()?
            } else {
                first
            };
            to_json(run(con, x.count_uniques_range(&event, first, last))?)
        }
        "streak" => {
            let (first, last) = (a.s("first")?.parse()?, a.s("last")?.parse()?);
            to_json(run(con, x.streak(&event, a.u("id")?, first, last))?)
        }
        "count" => to_json(match period()? {
            Some(p) => run(con, x.count(&event, p))?,
            None => run(con, x.count_unique(&event))?,
        }),
        _ => return Err(unknown(op)),
    })
}

/// `query_count`, `query_contains`, `query_members`: the expression's JSON
/// form, optionally cached.
fn analytics_query(
    con: &mut Connection,
    x: &Analytics,
    answer: &str,
    a: &Args,
) -> Result<Value, Failure> {
    let mut q = x.query(Expr::from_json(a.get("expr")?)?);
    if a.has("cache") {
        q = q.cache(
            &a.s("cache")?,
            Duration::from_millis(a.u_or("ttl_ms", 60_000)?),
        );
    }
    query_answer(con, q, answer, a)
}

/// A query's `count`, `contains` (`id`) or `members` (`from`, `limit`).
fn query_answer(
    con: &mut Connection,
    q: redis_patterns::analytics::Query,
    answer: &str,
    a: &Args,
) -> Result<Value, Failure> {
    Ok(match answer {
        "count" => to_json(run(con, q.count())?),
        "contains" => to_json(run(con, q.contains(a.u("id")?))?),
        "members" => {
            let limit = a.u_or("limit", 1000)? as usize;
            to_json(run(con, q.members(a.u_or("from", 0)?, limit))?)
        }
        _ => return Err(unknown(answer)),
    })
}

fn signin(con: &mut Connection, s: &SignIn, op: &str, a: &Args) -> Result<Value, Failure> {
    Ok(match op {
        "key" => Value::from(s.key(a.date("day")?)),
        "sign_in" => to_json(run(con, s.sign_in(a.u("uid")?, a.date("day")?))?),
        "signed_in" => to_json(run(con, s.signed_in(a.u("uid")?, a.date("day")?))?),
        "count" => to_json(run(con, s.count(a.date("day")?))?),
        "active_any" => to_json(run(con, s.active_any(a.date("from")?, a.date("to")?))?),
        "active_every" => to_json(run(con, s.active_every(a.date("from")?, a.date("to")?))?),
        "count_any" => to_json(run(con, s.count_any(a.date("from")?, a.date("to")?))?),
        "count_every" => to_json(run(con, s.count_every(a.date("from")?, a.date("to")?))?),
        "days_signed_in" => Value::Array(
            run(
                con,
                s.days_signed_in(a.u("uid")?, a.date("from")?, a.date("to")?),
            )?
            .into_iter()
            .map(day_json)
            .collect(),
        ),
        "streak" => to_json(run(
            con,
            s.streak(a.u("uid")?, a.date("from")?, a.date("to")?),
        )?),
        _ => return Err(unknown(op)),
    })
}

fn bools(v: Vec<bool>) -> Value {
    to_json(v)
}

fn bloom(con: &mut Connection, b: &Bloom, op: &str, a: &Args) -> Result<Value, Failure> {
    Ok(match op {
        "locate" => to_json(b.locate(&a.bytes("item")?)),
        "add" => to_json(run(con, b.add(a.bytes("item")?))?),
        "exists" => to_json(run(con, b.exists(a.bytes("item")?))?),
        "multi_add" => to_json(run(con, b.multi_add(&a.bytes_list("items")?))?),
        "multi_exists" => bools(run(con, b.multi_exists(&a.bytes_list("items")?))?),
        "load" => load(con, b.load(a.opt_bytes_list("items")?), a)?,
        "bits_set" => to_json(run(con, b.bits_set())?),
        "approx_count" => to_json(run(con, b.approx_count())?),
        "info" => to_json(run(con, b.info())?),
        "clear" => {
            run(con, b.clear())?;
            return ok();
        }
        "destroy" => {
            run(con, b.destroy())?;
            return ok();
        }
        _ => return Err(unknown(op)),
    })
}

fn jshash(con: &mut Connection, b: &JsHashBloom, op: &str, a: &Args) -> Result<Value, Failure> {
    Ok(match op {
        "offset" => to_json(b.offset(&a.bytes("item")?)?),
        "add" => to_json(run(con, b.add(a.bytes("item")?))?),
        "exists" => to_json(run(con, b.exists(a.bytes("item")?))?),
        "multi_add" => to_json(run(con, b.multi_add(&a.bytes_list("items")?))?),
        "multi_exists" => bools(run(con, b.multi_exists(&a.bytes_list("items")?))?),
        "load" => load(con, b.load(a.opt_bytes_list("items")?), a)?,
        _ => return Err(unknown(op)),
    })
}

/// A bulk load of either filter, as one op, with the case's batch and start.
fn load(
    con: &mut Connection,
    l: Load<std::vec::IntoIter<Option<Vec<u8>>>>,
    a: &Args,
) -> Result<Value, Failure> {
    let l = l
        .batch(a.u_or("batch", 1000)? as usize)
        .start(a.u_or("start", 0)?);
    Ok(to_json(run(con, l.into_op(|_| {}))?))
}

fn rolling(con: &mut Connection, r: &RollingStore, op: &str, a: &Args) -> Result<Value, Failure> {
    Ok(match op {
        "meta_key" => Value::from(r.meta_key(&a.s("key")?)?),
        "add" => to_json(run(
            con,
            r.add(&a.s("key")?, &a.s("field")?, a.get("value")?),
        )?),
        "get" => to_json(run(con, r.get::<Value>(&a.s("key")?, &a.s("field")?))?),
        "recent" => to_json(run(
            con,
            r.recent::<Value>(&a.s("key")?, a.u("n")? as usize),
        )?),
        "len" => to_json(run(con, r.len(&a.s("key")?))?),
        "clear" => to_json(run(con, r.clear(&a.s("key")?))?),
        _ => return Err(unknown(op)),
    })
}

/// Class-level operations (some return a handle).
fn statics(con: &mut Connection, class: &str, op: &str, a: &Args) -> Result<Saved, Failure> {
    let v = |x: Value| Ok(Saved::Value(x));
    match (class, op) {
        ("RateLimiter", "throttle_once") => v(to_json(run(
            con,
            rate_limit::throttle(
                &a.s("subject")?,
                a.u("max_burst")?,
                a.u("count_per_period")?,
                a.ms("period_ms")?,
                a.u_or("quantity", 1)?,
            ),
        )?)),
        ("RateLimiter", "allow_once_per") => v(to_json(run(
            con,
            rate_limit::allow_once_per(&a.s("subject")?, a.ms("interval_ms")?),
        )?)),
        ("ShardedHash", "planned") => {
            let (h, plan) = run(con, ShardedHash::planned(&a.s("base")?, a.u("expected")?))?;
            let source = to_json(plan.limits_source);
            let plan = json!({"shards": plan.shards, "expected": plan.expected, "entries_limit": plan.limits.entries,
                              "value_limit": plan.limits.value, "limits_source": snake(&source),
                              "mean_per_shard": plan.mean_per_shard, "overflow_bound": plan.overflow_bound});
            v(json!([Handle::Hash(h).describe(), plan]))
        }
        ("ShardedHash", "listpack_limits") => v(to_json(run(con, ListpackLimits::query())?)),
        ("ExpiringMap", "open") => Ok(Saved::Handle(Handle::Expiring(run(
            con,
            ExpiringMap::open(&a.s("base")?),
        )?))),
        ("ShardedHash", "open") => Ok(Saved::Handle(Handle::Hash(run(
            con,
            ShardedHash::open(&a.s("base")?),
        )?))),
        ("PackedRecords", "stored_layout") => {
            let l = run(con, PackedRecords::<Bytes>::stored_layout(&a.s("base")?))?;
            v(l.map_or(
                Value::Null,
                |l| json!({"width": l.width, "ids_per_shard": l.ids_per_shard}),
            ))
        }
        ("PackedRecords", "open") => {
            let width = a.u("width")? as usize;
            Ok(Saved::Handle(Handle::Packed(run(
                con,
                PackedRecords::open(&a.s("base")?, Bytes(width), a.u("max_id")?),
            )?)))
        }
        ("VisitCounter", "planned") => {
            let (c, plan) = run(
                con,
                VisitCounter::planned(&a.s("name")?, time_zone(a)?, a.u("expected_daily_uniques")?),
            )?;
            let source = to_json(plan.limits_source);
            let plan = json!({"shards": plan.shards, "max_intset_entries": plan.max_intset_entries, "limits_source": snake(&source)});
            v(json!([Handle::Visits(c).describe(), plan]))
        }
        ("Bloom", "create") => {
            let b = Bloom::builder(&a.s("name")?)
                .expected(a.u("expected")?)
                .fp_rate(a.f("fp_rate")?)
                .prefix(prefix(&a.s_or("prefix", "bloom:")?)?)
                .spread_blocks(a.b_or("spread_blocks", false)?)
                .max_memory(a.u_or("max_memory", 4 << 30)?);
            Ok(Saved::Handle(Handle::Bloom(run(con, b.create())?)))
        }
        ("Bloom", "open") => {
            let b = Bloom::builder(&a.s("name")?).prefix(prefix(&a.s_or("prefix", "bloom:")?)?);
            Ok(Saved::Handle(Handle::Bloom(run(con, b.open())?)))
        }
        ("Layouts", "claim") => {
            let fields = a
                .get("fields")?
                .as_object()
                .ok_or_else(|| refused("fields", "must be an object"))?;
            let pattern = fields
                .get("pattern")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let version = fields
                .get("version")
                .and_then(Value::as_str)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut layout = redis_patterns::layout::Layout::new(pattern, version);
            for (k, val) in fields {
                if k != "pattern" && k != "version" {
                    layout = layout.with(k, val.as_str().unwrap_or_default());
                }
            }
            run(
                con,
                redis_patterns::layout::Layout::claim(&a.s("meta_key")?, &layout),
            )?;
            v(Value::Null)
        }
        ("Layouts", "read") => {
            let l = run(con, redis_patterns::layout::Layout::read(&a.s("meta_key")?))?;
            v(l.map_or(Value::Null, |l| {
                Value::Object(
                    l.fields()
                        .map(|(k, v)| (k.to_string(), Value::from(v)))
                        .collect(),
                )
            }))
        }
        _ => Err(refused(
            "operation",
            format!("{class}.{op} is not a class operation"),
        )),
    }
}

/// A serialized unit variant (`"DefaultBecauseDenied"`) in snake case.
fn snake(v: &Value) -> Value {
    let s = v.as_str().unwrap_or_default();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    Value::from(out)
}
