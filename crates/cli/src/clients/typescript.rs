//! The Node package `redis-patterns` (ioredis, standalone and Cluster):
//! TypeScript sources in `src/` (what `tsc --strict --noEmit` checks), the
//! CommonJS modules and their declarations in `dist/` (what `require`,
//! `import` and a TypeScript user load), the bundle's scripts in `lua/` and
//! the manifest.
//!
//! How `dist/` is made without node on the user's machine:
//!
//! * the generated modules (`errors`, `records`, `index`, `scripts`,
//!   `contract`) are written by this generator in all three spellings at
//!   once ([`emit::Mode`]), so they follow the description and the headers
//!   on every build;
//! * the hand-written runtime (`typescript/src/*.ts`: driver, checks,
//!   waiting, hold, days, hashing, each pattern's operations) ships with its
//!   `tsc` output (`typescript/dist/`, committed): the test
//!   `the_typescript_package_type_checks_and_its_runtime_is_tsc_output`
//!   compiles the exported sources with `tsc --strict` and fails when the
//!   shipped JavaScript or declarations differ from what tsc makes
//!   (`REDIS_PATTERNS_BLESS=1` rewrites them), so the shipped runtime is
//!   never hand-edited JavaScript.

use super::surface::{self, Part};
use super::{File, bundle};

mod emit;
mod scripts;
mod spelling;

use emit::Mode;
use spelling::TsSurface;

/// Each file of the hand-written runtime: its TypeScript (emitted into
/// `src/`) and its tsc output, JavaScript and declarations (into `dist/`).
macro_rules! runtime {
    ($($name:literal),* $(,)?) => {
        &[$((
            $name,
            include_str!(concat!("typescript/src/", $name, ".ts")),
            include_str!(concat!("typescript/dist/", $name, ".js")),
            include_str!(concat!("typescript/dist/", $name, ".d.ts")),
        )),*]
    };
}

/// The runtime: the drivers, the input checks, the protocols (notified
/// waiting, the hold's renewal, the rolling retry, hashing, day math) and
/// each pattern's operations over the generated surface.
pub const RUNTIME: &[(&str, &str, &str, &str)] = runtime!(
    "call",
    "checks",
    "days",
    "driver",
    "hashing",
    "hold",
    "wait",
    "expr",
    "ops/index",
    "ops/analytics",
    "ops/bloom",
    "ops/expiring_map",
    "ops/layout",
    "ops/lock",
    "ops/login_log",
    "ops/packed",
    "ops/rate_limit",
    "ops/rolling",
    "ops/rwlock",
    "ops/semaphore",
    "ops/sharded_hash",
    "ops/signin",
    "ops/visits",
);

/// The versions the package is built and tested with (`.ci/run` installs
/// the same).
pub const IOREDIS: &str = "5.9.3";
pub const TYPESCRIPT: &str = "5.9.3";

pub fn files() -> Vec<File> {
    let mut out = Vec::new();
    for (name, ts, js, dts) in RUNTIME {
        for (path, text) in [(Mode::Ts, ts), (Mode::Js, js), (Mode::Dts, dts)] {
            out.push(File {
                path: path.path(name),
                text: text.to_string(),
            });
        }
    }
    for mode in [Mode::Ts, Mode::Js, Mode::Dts] {
        let walk = |part| surface::emit(&mut TsSurface::new(mode), part);
        let generated = [
            ("scripts", scripts::scripts(mode)),
            ("contract", scripts::contract(mode)),
            ("errors", walk(Part::Errors)),
            ("records", walk(Part::Records)),
            ("index", walk(Part::Classes)),
        ];
        for (name, text) in generated {
            out.push(File {
                path: mode.path(name),
                text,
            });
        }
    }
    out.push(File {
        path: "package.json".into(),
        text: package_json(),
    });
    out.push(File {
        path: "tsconfig.json".into(),
        text: TSCONFIG.into(),
    });
    out.extend(bundle(""));
    out
}

fn package_json() -> String {
    let package = serde_json::json!({
        "name": "redis-patterns",
        "version": env!("CARGO_PKG_VERSION"),
        "description": "Compound Redis patterns as atomic Lua scripts for Node (ioredis): the generated client of the redis-patterns crate",
        "main": "dist/index.js",
        "types": "dist/index.d.ts",
        "exports": {
            ".": {
                "types": "./dist/index.d.ts",
                "default": "./dist/index.js"
            },
            "./package.json": "./package.json"
        },
        "files": ["dist", "src", "lua", "manifest.json", "tsconfig.json"],
        "engines": { "node": ">=18" },
        "peerDependencies": { "ioredis": ">=5.3.0" },
        "devDependencies": {
            "@types/node": ">=18",
            "ioredis": IOREDIS,
            "typescript": TYPESCRIPT
        },
        "scripts": {
            "build": "tsc -p .",
            "check": "tsc -p . --noEmit"
        },
        "sideEffects": false
    });
    serde_json::to_string_pretty(&package).expect("package.json serializes") + "\n"
}

/// `tsc -p DIR` compiles `src/` into `dist/` (the shipped `dist/` is what it makes).
const TSCONFIG: &str = r#"{
  "compilerOptions": {
    "target": "ES2022",
    "lib": ["ES2022"],
    "module": "commonjs",
    "strict": true,
    "declaration": true,
    "rootDir": "src",
    "outDir": "dist",
    "types": ["node"],
    "noEmitOnError": true,
    "newLine": "lf"
  },
  "include": ["src"]
}
"#;
