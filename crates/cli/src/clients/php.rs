//! The PHP library (namespace `RedisPatterns`, PSR-4 below `src/`, for
//! phpredis): generated from the API description — the classes
//! (`src/<Class>.php`), the records (`src/Records/`) and the errors
//! (`src/Errors/`), see [`spelling`] — and from the registry and the
//! contracts: `src/Scripts/<Pattern>Scripts.php` (one typed static method
//! per script) and `src/Contract.php` (key templates, settings, constants,
//! scripts, error codes); plus the hand-written runtime of `php/` (the
//! driver, the checks, notified waiting, the hold, days, hashing and each
//! pattern's operations) and `composer.json`.

use std::fmt::Write as _;

use redis_patterns::contract::ErrorCode;
use redis_patterns::script::{ArgSpec, ArgType, ScriptInfo};
use redis_patterns::scripts::ALL;

use super::surface::{self, Part};
use super::syntax::{Syntax, call_lists, calls, checks, contract_consts};
use super::{File, bundle, camel, pattern_op, patterns, scripts_of};

mod spelling;
use spelling::{FILE, PhpSurface};

/// The hand-written runtime, emitted as it is (below `src/`, but
/// `autoload.php`).
const ASSETS: &[(&str, &str)] = &[
    ("autoload.php", include_str!("php/autoload.php")),
    ("src/Call.php", include_str!("php/Call.php")),
    ("src/Runtime.php", include_str!("php/Runtime.php")),
    ("src/Hashing.php", include_str!("php/Hashing.php")),
    ("src/Holding.php", include_str!("php/Holding.php")),
    (
        "src/SideConnections.php",
        include_str!("php/SideConnections.php"),
    ),
    (
        "src/Errors/RedisPatternsError.php",
        include_str!("php/Errors/RedisPatternsError.php"),
    ),
    (
        "src/Internal/Runner.php",
        include_str!("php/Internal/Runner.php"),
    ),
    ("src/Internal/Cmd.php", include_str!("php/Internal/Cmd.php")),
    (
        "src/Internal/Pipeline.php",
        include_str!("php/Internal/Pipeline.php"),
    ),
    (
        "src/Internal/Slots.php",
        include_str!("php/Internal/Slots.php"),
    ),
    (
        "src/Internal/Wire.php",
        include_str!("php/Internal/Wire.php"),
    ),
    (
        "src/Internal/Endpoint.php",
        include_str!("php/Internal/Endpoint.php"),
    ),
    (
        "src/Internal/ErrorMap.php",
        include_str!("php/Internal/ErrorMap.php"),
    ),
    (
        "src/Internal/Subscription.php",
        include_str!("php/Internal/Subscription.php"),
    ),
    (
        "src/Internal/Renewer.php",
        include_str!("php/Internal/Renewer.php"),
    ),
    (
        "src/Internal/RenewerProcess.php",
        include_str!("php/Internal/RenewerProcess.php"),
    ),
    (
        "src/Internal/WireError.php",
        include_str!("php/Internal/WireError.php"),
    ),
    (
        "src/Internal/ReplyError.php",
        include_str!("php/Internal/ReplyError.php"),
    ),
    (
        "src/Internal/MovedError.php",
        include_str!("php/Internal/MovedError.php"),
    ),
    (
        "src/Internal/Ops/Plan.php",
        include_str!("php/Internal/Ops/Plan.php"),
    ),
    (
        "src/Internal/Checks.php",
        include_str!("php/Internal/Checks.php"),
    ),
    (
        "src/Internal/Days.php",
        include_str!("php/Internal/Days.php"),
    ),
    (
        "src/Internal/Waiting.php",
        include_str!("php/Internal/Waiting.php"),
    ),
    (
        "src/Internal/Holder.php",
        include_str!("php/Internal/Holder.php"),
    ),
    (
        "src/Internal/Hold.php",
        include_str!("php/Internal/Hold.php"),
    ),
    (
        "src/Internal/Ops/QueuedResource.php",
        include_str!("php/Internal/Ops/QueuedResource.php"),
    ),
    (
        "src/Internal/Ops/Lock.php",
        include_str!("php/Internal/Ops/Lock.php"),
    ),
    (
        "src/Internal/Ops/Semaphore.php",
        include_str!("php/Internal/Ops/Semaphore.php"),
    ),
    (
        "src/Internal/Ops/RwLock.php",
        include_str!("php/Internal/Ops/RwLock.php"),
    ),
    (
        "src/Internal/Ops/RateLimiter.php",
        include_str!("php/Internal/Ops/RateLimiter.php"),
    ),
    (
        "src/Internal/Ops/ShardedHash.php",
        include_str!("php/Internal/Ops/ShardedHash.php"),
    ),
    (
        "src/Internal/Ops/PackedRecords.php",
        include_str!("php/Internal/Ops/PackedRecords.php"),
    ),
    (
        "src/Internal/Ops/VisitCounter.php",
        include_str!("php/Internal/Ops/VisitCounter.php"),
    ),
    (
        "src/Internal/Ops/LoginLog.php",
        include_str!("php/Internal/Ops/LoginLog.php"),
    ),
    (
        "src/Internal/Expr.php",
        include_str!("php/Internal/Expr.php"),
    ),
    (
        "src/Internal/Ops/Analytics.php",
        include_str!("php/Internal/Ops/Analytics.php"),
    ),
    (
        "src/Internal/Ops/ExpiringMap.php",
        include_str!("php/Internal/Ops/ExpiringMap.php"),
    ),
    (
        "src/Internal/Ops/SignIn.php",
        include_str!("php/Internal/Ops/SignIn.php"),
    ),
    (
        "src/Internal/Ops/Bloom.php",
        include_str!("php/Internal/Ops/Bloom.php"),
    ),
    (
        "src/Internal/Ops/JsHashBloom.php",
        include_str!("php/Internal/Ops/JsHashBloom.php"),
    ),
    (
        "src/Internal/Ops/RollingStore.php",
        include_str!("php/Internal/Ops/RollingStore.php"),
    ),
    (
        "src/Internal/Ops/Layouts.php",
        include_str!("php/Internal/Ops/Layouts.php"),
    ),
    (
        "src/Internal/Ops/LayoutClaim.php",
        include_str!("php/Internal/Ops/LayoutClaim.php"),
    ),
];

pub fn files() -> Vec<File> {
    let mut out: Vec<File> = ASSETS
        .iter()
        .map(|(name, text)| File {
            path: name.to_string(),
            text: text.to_string(),
        })
        .collect();
    for p in patterns() {
        out.push(File {
            path: format!("src/Scripts/{}Scripts.php", camel(p)),
            text: scripts(p),
        });
    }
    out.push(File {
        path: "src/Contract.php".into(),
        text: contract(),
    });
    for part in [Part::Errors, Part::Records, Part::Classes] {
        out.extend(split(&surface::emit(&mut PhpSurface, part)));
    }
    out.push(File {
        path: "composer.json".into(),
        text: COMPOSER.to_string(),
    });
    out.extend(bundle(""));
    out
}

/// The files of a walk's text, each opened by a [`FILE`] line.
fn split(text: &str) -> Vec<File> {
    text.split(FILE)
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let (path, body) = piece.split_once('\n').expect("a FILE line");
            File {
                path: path.to_string(),
                text: body.to_string(),
            }
        })
        .collect()
}

/// `composer validate --strict` accepts it; `composer install` in a project
/// requiring it autoloads `RedisPatterns\` from `src/` (PSR-4).
const COMPOSER: &str = r#"{
    "name": "redis-patterns/redis-patterns",
    "description": "Compound Redis patterns as atomic Lua scripts: the PHP client (phpredis) generated by the redis-patterns crate",
    "type": "library",
    "license": "MIT",
    "keywords": ["redis", "lua", "lock", "bloom filter", "rate limit", "phpredis"],
    "require": {
        "php": ">=8.1",
        "ext-json": "*",
        "ext-redis": ">=5.3"
    },
    "suggest": {
        "ext-pcntl": "synchronized() renews the lease from a forked process while the body runs",
        "ext-posix": "the renewer process ends without running the application's shutdown code"
    },
    "autoload": {
        "psr-4": {
            "RedisPatterns\\": "src/"
        }
    }
}
"#;

/// `lease_ms` -> `leaseMs`, `init_block` -> `initBlock`.
fn camel_lower(name: &str) -> String {
    let c = camel(name);
    let mut chars = c.chars();
    chars
        .next()
        .map(|f| f.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// PHP's spelling.
struct Php;

impl Syntax for Php {
    const NULL: &'static str = "null";
    const TRUE: &'static str = "true";
    const FALSE: &'static str = "false";
    const INT64_MIN: &'static str = "PHP_INT_MIN";
    const INT64_MAX: &'static str = "PHP_INT_MAX";

    const MAP: [&'static str; 3] = ["[", " => ", "]"];
    const WORDS: [&'static str; 2] = ["[", "]"];

    fn string(s: &str) -> String {
        php_str(s)
    }

    fn var(name: &str) -> String {
        format!("${}", camel_lower(name))
    }

    fn encode(a: &ArgSpec, v: &str) -> String {
        match a.ty {
            ArgType::Integer | ArgType::Int64 => format!("(string) {v}"),
            ArgType::Float => format!("Runtime::floatText({v})"),
            ArgType::Bool => format!("({v} ? '1' : '0')"),
            _ => v.to_string(),
        }
    }

    const ITEM: &'static str = "$item";

    fn each_item(name: &str) -> (String, String) {
        (
            format!("        foreach (${} as $item) {{\n", camel_lower(name)),
            "        }\n".into(),
        )
    }

    fn key_expr(name: &str, variadic: bool) -> String {
        if variadic {
            format!("...Runtime::keys(${})", camel_lower(name))
        } else {
            format!("${}", camel_lower(name))
        }
    }

    fn spread(a: &ArgSpec, encoded: String) -> String {
        // an empty list (an optional argument left out, the common case)
        // costs no closure and no call
        let v = camel_lower(a.name);
        format!("...(${v} === [] ? [] : array_map(fn($item) => {encoded}, array_values(${v})))")
    }

    /// The checks a call makes most (integer ranges, strings, booleans,
    /// enums) are written inline, as `Runtime::int()` and the others check:
    /// a static call per argument cost more than the rest of building the
    /// call. `float` and `tagged` (its cache) stay calls.
    fn check_call(pad: &str, check: &str, args: &[String]) -> String {
        let refuse = |cond: String, name: &str, reason: &str| {
            format!(
                "{pad}if ({cond}) {{\n{pad}    throw new \\RedisPatterns\\Errors\\InvalidArgument({name}, {reason}, null);\n{pad}}}\n"
            )
        };
        match (check, args) {
            ("int", [name, v, lo, hi, reason]) => refuse(
                format!("!is_int({v}) || {v} < {lo} || {v} > {hi}"),
                name,
                reason,
            ),
            ("text", [name, v, non_empty, reason]) => {
                let mut out = refuse(format!("!is_string({v})"), name, "'must be a string'");
                if non_empty == Self::TRUE {
                    out.push_str(&refuse(format!("{v} === ''"), name, reason));
                }
                out
            }
            ("bool", [name, v, reason]) => refuse(format!("!is_bool({v})"), name, reason),
            ("enum", [name, v, words, reason]) => {
                refuse(format!("!in_array({v}, {words}, true)"), name, reason)
            }
            _ => format!("{pad}Runtime::{check}({});\n", args.join(", ")),
        }
    }
}

fn php_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The positions in ARGV of the arguments that name a channel or key
/// (`tagged`): a client prefix (phpredis OPT_PREFIX) applies to them as to
/// the keys.
fn tagged_positions(s: &ScriptInfo) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, a) in s.args.iter().enumerate() {
        if a.tagged {
            assert!(
                s.args[..i].iter().all(|b| !b.variadic),
                "{}: a tagged argument after a variadic one",
                s.name
            );
            out.push(i);
        }
    }
    out
}

fn method(out: &mut String, s: &ScriptInfo) {
    let (_, op) = pattern_op(s);
    let mut params = Vec::new();
    let _ = writeln!(out, "    /**\n     * {}\n     *", s.summary);
    for k in s.keys {
        params.push(if k.variadic {
            format!("array ${}", camel_lower(k.name))
        } else {
            format!("string ${}", camel_lower(k.name))
        });
        let _ = writeln!(
            out,
            "     * @param {} ${} {}",
            if k.variadic { "list<string>" } else { "string" },
            camel_lower(k.name),
            k.doc
        );
    }
    for a in s.args {
        let ty = match (a.variadic, a.ty) {
            (true, _) => "array",
            (false, ArgType::Integer | ArgType::Int64) => "int",
            (false, ArgType::Float) => "float",
            (false, ArgType::Bool) => "bool",
            (false, _) => "string",
        };
        params.push(format!("{ty} ${}", camel_lower(a.name)));
        let _ = writeln!(
            out,
            "     * @param {ty} ${} ({}) {}",
            camel_lower(a.name),
            a.ty.name(),
            a.doc
        );
    }
    let _ = writeln!(
        out,
        "     * @return Call ({}): {}\n     * Domain errors: {}. Refuses an argument outside its declaration with\n     * InvalidArgument before anything is sent.\n     */",
        s.returns,
        s.returns_doc,
        s.errors.join(", ")
    );
    let _ = writeln!(
        out,
        "    public static function {}({}): Call\n    {{",
        camel_lower(op),
        params.join(", ")
    );
    out.push_str(&checks::<Php>(s));
    let (keys, args) = call_lists::<Php>(s);
    let tagged: Vec<String> = tagged_positions(s).iter().map(usize::to_string).collect();
    let _ = writeln!(
        out,
        "        return new Call({}, [{}], [{}], [{}]);\n    }}\n",
        php_str(s.name),
        keys.join(", "),
        args.join(", "),
        tagged.join(", ")
    );
}

fn scripts(pattern: &str) -> String {
    let mut out = format!(
        "<?php\n// Generated from the script headers by `redis-patterns export --lang php`. Do not edit.\n\ndeclare(strict_types=1);\n\nnamespace RedisPatterns\\Scripts;\n\nuse RedisPatterns\\Call;\nuse RedisPatterns\\Runtime;\n\n/**\n * The `{pattern}` scripts (lua/{pattern}/): one typed method per script, checking\n * its arguments like the header says; Runtime::run($client, $call) sends the Call.\n */\nfinal class {}Scripts\n{{\n",
        camel(pattern)
    );
    for s in scripts_of(pattern) {
        method(&mut out, s);
    }
    out.push_str("}\n");
    out
}

fn contract() -> String {
    let mut out = String::from(
        "<?php\n// Generated from redis_patterns::contract by `redis-patterns export --lang php`. Do not edit.\n\ndeclare(strict_types=1);\n\nnamespace RedisPatterns;\n\n/** Key templates, settings, constants, scripts and error codes of every pattern. */\nfinal class Contract\n{\n",
    );
    out.push_str(&contract_consts::<Php>("        ", |doc, name, lines| {
        format!("    /** {doc} */\n    public const {name} = [\n{lines}    ];\n\n")
    }));
    out.push_str(
        "    /** Every script of the bundle by name: [sha1, file below lua/, read-only, its error codes, its key names, its argument names]. */\n    public const SCRIPTS = [\n",
    );
    for s in ALL {
        let errors = Php::words(s.errors.iter().map(|e| php_str(e)).collect());
        let _ = writeln!(
            out,
            "        {} => [{}, {}, {}, {errors}, {}],",
            php_str(s.name),
            php_str(s.sha1),
            php_str(s.file),
            s.read_only,
            calls::<Php>(s),
        );
    }
    out.push_str("    ];\n\n    /** The error kind of each domain error code of the scripts. */\n    public const ERRORS = [\n");
    for e in ErrorCode::ALL {
        let _ = writeln!(out, "        {} => {},", php_str(e.code), php_str(e.kind));
    }
    out.push_str("    ];\n\n");
    out.push_str(
        "    /** `$template` with every `<var>` replaced by its value. */\n    public static function render(string $template, array $values): string\n    {\n        return (string) preg_replace_callback('/<([^>]+)>/', function (array $m) use ($values, $template): string {\n            if (!array_key_exists($m[1], $values)) {\n                throw new \\LogicException(\"template $template needs <{$m[1]}>\");\n            }\n            return (string) $values[$m[1]];\n        }, $template);\n    }\n\n    /** The key of `$role` in `$pattern`, rendered from its template. */\n    public static function key(string $pattern, string $role, array $values): string\n    {\n        return self::render(self::KEYS[$pattern][$role], $values);\n    }\n}\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_record_and_error_gets_its_own_file() {
        let files = files();
        let has = |p: &str| files.iter().any(|f| f.path == p);
        for p in [
            "src/Lock.php",
            "src/Records/Lease.php",
            "src/Errors/LockBusy.php",
            "src/Errors/RedisPatternsError.php",
            "src/Scripts/LockScripts.php",
            "composer.json",
        ] {
            assert!(has(p), "{p}");
        }
        for f in files.iter().filter(|f| f.path.ends_with(".php")) {
            assert!(
                f.text.starts_with("<?php\n"),
                "{} does not open with <?php",
                f.path
            );
            assert!(!f.text.contains(FILE), "{}", f.path);
        }
        assert_eq!(camel_lower("lease_ms"), "leaseMs");
        assert_eq!(camel_lower("init_block"), "initBlock");
    }
}
