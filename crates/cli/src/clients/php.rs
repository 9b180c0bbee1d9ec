//! The PHP library (namespace `RedisPatterns`, PSR-4 below `src/`):
//! `src/Scripts/<Pattern>Scripts.php` (one typed static method per script,
//! from the registry), `src/Contract.php` (key templates, settings,
//! constants, from the contracts), `src/Errors/<Kind>.php` (one exception
//! per error kind), and the hand-written runtime and helpers in `php/`.

use std::fmt::Write as _;

use redis_patterns::contract::ERROR_CODES;
use redis_patterns::script::{ArgSpec, ArgType, ScriptInfo};
use redis_patterns::scripts::ALL;

use super::syntax::{Syntax, call_lists, checks, contract_tables};
use super::{File, bundle, camel, patterns};

/// The hand-written files, emitted as they are.
const ASSETS: &[(&str, &str)] = &[
    ("composer.json", include_str!("php/composer.json")),
    ("autoload.php", include_str!("php/autoload.php")),
    ("src/Runtime.php", include_str!("php/Runtime.php")),
    ("src/Call.php", include_str!("php/Call.php")),
    ("src/Hashing.php", include_str!("php/Hashing.php")),
    ("src/Lock.php", include_str!("php/Lock.php")),
    ("src/Visits.php", include_str!("php/Visits.php")),
    ("src/Bitmaps.php", include_str!("php/Bitmaps.php")),
    ("src/SignIn.php", include_str!("php/SignIn.php")),
    ("src/LoginLog.php", include_str!("php/LoginLog.php")),
    ("src/Rolling.php", include_str!("php/Rolling.php")),
    ("src/Bloom.php", include_str!("php/Bloom.php")),
    ("src/JsHashBloom.php", include_str!("php/JsHashBloom.php")),
    ("src/ShardedHash.php", include_str!("php/ShardedHash.php")),
    ("src/Packed.php", include_str!("php/Packed.php")),
    (
        "src/Errors/LockBusy.php",
        include_str!("php/Errors/LockBusy.php"),
    ),
    (
        "src/Errors/LockTimeout.php",
        include_str!("php/Errors/LockTimeout.php"),
    ),
    (
        "src/Errors/IdOutOfRange.php",
        include_str!("php/Errors/IdOutOfRange.php"),
    ),
    (
        "src/Errors/ListpackValueTooLong.php",
        include_str!("php/Errors/ListpackValueTooLong.php"),
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
    out.extend(errors());
    out.extend(bundle(""));
    out
}

/// PHP's spelling.
struct Php;

impl Syntax for Php {
    const NULL: &'static str = "null";
    const TRUE: &'static str = "true";
    const FALSE: &'static str = "false";
    const INT64_MIN: &'static str = "PHP_INT_MIN";
    const INT64_MAX: &'static str = "PHP_INT_MAX";

    fn string(s: &str) -> String {
        php_str(s)
    }

    fn map(entries: Vec<(String, String)>) -> String {
        let entries: Vec<String> = entries.iter().map(|(k, v)| format!("{k} => {v}")).collect();
        format!("[{}]", entries.join(", "))
    }

    fn words(words: Vec<String>) -> String {
        format!("[{}]", words.join(", "))
    }

    fn var(name: &str) -> String {
        format!("${name}")
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
            format!("        foreach (${name} as $item) {{\n"),
            "        }\n".into(),
        )
    }

    fn key_expr(name: &str, variadic: bool) -> String {
        if variadic {
            format!("...Runtime::keys(${name})")
        } else {
            format!("${name}")
        }
    }

    fn spread(a: &ArgSpec, encoded: String) -> String {
        format!(
            "...array_map(fn($item) => {encoded}, array_values(${}))",
            a.name
        )
    }

    fn check_call(pad: &str, check: &str, args: &[String]) -> String {
        format!("{pad}Runtime::{check}({});\n", args.join(", "))
    }
}

fn php_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn method(out: &mut String, s: &ScriptInfo) {
    let op = s.name.split('.').nth(1).expect("pattern.op");
    let mut params = Vec::new();
    let _ = writeln!(out, "    /**\n     * {}\n     *", s.summary);
    for k in s.keys {
        params.push(if k.variadic {
            format!("array ${}", k.name)
        } else {
            format!("string ${}", k.name)
        });
        let _ = writeln!(
            out,
            "     * @param {} ${} {}",
            if k.variadic { "string[]" } else { "string" },
            k.name,
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
        params.push(format!("{ty} ${}", a.name));
        let _ = writeln!(
            out,
            "     * @param {ty} ${} ({}) {}",
            a.name,
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
        "    public static function {op}({}): Call\n    {{",
        params.join(", ")
    );
    out.push_str(&checks::<Php>(s));
    let (keys, args) = call_lists::<Php>(s);
    let _ = writeln!(
        out,
        "        return new Call({}, {}, {}, {}, [{}], [{}]);\n    }}\n",
        php_str(s.name),
        php_str(s.sha1),
        php_str(s.file),
        if s.read_only { "true" } else { "false" },
        keys.join(", "),
        args.join(", ")
    );
}

fn scripts(pattern: &str) -> String {
    let mut out = format!(
        "<?php\n// Generated from the script headers by `redis-patterns export --lang php`. Do not edit.\n\ndeclare(strict_types=1);\n\nnamespace RedisPatterns\\Scripts;\n\nuse RedisPatterns\\Call;\nuse RedisPatterns\\Runtime;\n\n/**\n * The `{pattern}` scripts (lua/{pattern}/): one typed method per script, checking\n * its arguments like the header says; run the Call with Runtime::run().\n */\nfinal class {}Scripts\n{{\n",
        camel(pattern)
    );
    let mut codes: Vec<&str> = Vec::new();
    for s in ALL
        .iter()
        .filter(|s| s.name.split('.').next() == Some(pattern))
    {
        method(&mut out, s);
        codes.extend(s.errors.iter().copied());
    }
    out.push_str("}\n");
    out
}

fn contract() -> String {
    let mut out = String::from(
        "<?php\n// Generated from redis_patterns::contract by `redis-patterns export --lang php`. Do not edit.\n\ndeclare(strict_types=1);\n\nnamespace RedisPatterns;\n\n/** Key templates, settings, constants and error codes of every pattern. */\nfinal class Contract\n{\n",
    );
    for table in contract_tables() {
        let _ = writeln!(
            out,
            "    /** {} */\n    public const {} = [",
            table.doc::<Php>(),
            table.name
        );
        for (pattern, entries) in table.rows::<Php>() {
            let _ = writeln!(out, "        {pattern} => {entries},");
        }
        out.push_str("    ];\n\n");
    }
    out.push_str(
        "    /** The exception class of each domain error code. */\n    public const ERRORS = [\n",
    );
    for e in ERROR_CODES {
        let _ = writeln!(
            out,
            "        {} => Errors\\{}::class,",
            php_str(e.code),
            e.kind
        );
    }
    out.push_str("    ];\n\n");
    out.push_str(
        "    /** `$template` with every `<var>` replaced by its value. */\n    public static function render(string $template, array $values): string\n    {\n        return preg_replace_callback('/<([^>]+)>/', function ($m) use ($values, $template) {\n            if (!array_key_exists($m[1], $values)) {\n                throw new \\LogicException(\"template $template needs <{$m[1]}>\");\n            }\n            return (string) $values[$m[1]];\n        }, $template);\n    }\n\n    /** The key of `$role` in `$pattern`, rendered from its template. */\n    public static function key(string $pattern, string $role, array $values): string\n    {\n        return self::render(self::KEYS[$pattern][$role], $values);\n    }\n}\n",
    );
    out
}

fn errors() -> Vec<File> {
    let mut out = vec![File {
        path: "src/Errors/RedisPatternsError.php".into(),
        text: "<?php\n// Generated by `redis-patterns export --lang php`. Do not edit.\n\ndeclare(strict_types=1);\n\nnamespace RedisPatterns\\Errors;\n\n/** Every error of this library. */\nclass RedisPatternsError extends \\RuntimeException\n{\n}\n".into(),
    }];
    out.push(File {
        path: "src/Errors/ScriptError.php".into(),
        text: "<?php\n// Generated by `redis-patterns export --lang php`. Do not edit.\n\ndeclare(strict_types=1);\n\nnamespace RedisPatterns\\Errors;\n\n/** A script answered with one of its domain error codes. */\nclass ScriptError extends RedisPatternsError\n{\n    public const CODE = '';\n\n    public function __construct(public readonly ?string $script, public readonly string $detail)\n    {\n        parent::__construct(($script !== null ? \"script $script: \" : '') . static::CODE . ' ' . $detail);\n    }\n}\n".into(),
    });
    out.push(File {
        path: "src/Errors/ServerError.php".into(),
        text: "<?php\n// Generated by `redis-patterns export --lang php`. Do not edit.\n\ndeclare(strict_types=1);\n\nnamespace RedisPatterns\\Errors;\n\n/** The server refused a command with one of its own codes (OOM, WRONGTYPE, NOPERM, ...). */\nclass ServerError extends RedisPatternsError\n{\n    public function __construct(public readonly string $redisCode, public readonly string $detail, public readonly ?string $script = null)\n    {\n        parent::__construct(($script !== null ? \"script $script: \" : '') . $redisCode . ' ' . $detail);\n    }\n}\n".into(),
    });
    for e in ERROR_CODES {
        let text = if e.code == "BADARG" {
            format!(
                "<?php\n// Generated by `redis-patterns export --lang php`. Do not edit.\n\ndeclare(strict_types=1);\n\nnamespace RedisPatterns\\Errors;\n\n/**\n * An argument was refused: by this library before anything was sent ($script\n * null), or by a script's own checks (BADARG) before its first write.\n */\nfinal class InvalidArgument extends RedisPatternsError\n{{\n    public const CODE = {};\n\n    public function __construct(public readonly string $name, public readonly string $reason, public readonly ?string $script = null)\n    {{\n        parent::__construct(($script !== null ? \"script $script: \" : '') . \"invalid $name: $reason\");\n    }}\n}}\n",
                php_str(e.code)
            )
        } else {
            format!(
                "<?php\n// Generated by `redis-patterns export --lang php`. Do not edit.\n\ndeclare(strict_types=1);\n\nnamespace RedisPatterns\\Errors;\n\n/**\n * {} ({}: {})\n */\nfinal class {} extends ScriptError\n{{\n    public const CODE = {};\n}}\n",
                e.meaning.replace("*/", "* /"),
                e.code,
                e.detail,
                e.kind,
                php_str(e.code)
            )
        };
        out.push(File {
            path: format!("src/Errors/{}.php", e.kind),
            text,
        });
    }
    out
}
