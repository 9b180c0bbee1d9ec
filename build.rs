//! Reads every `lua/<pattern>/<op>.lua`, checks its header (grammar in the
//! `redis-patterns-codegen` crate, `crates/codegen`) and writes the script
//! registry and the typed wrappers to `$OUT_DIR/scripts.rs`, which
//! `src/scripts.rs` includes. A malformed header fails the build with
//! `lua/<file>:<line>: <message>`.

use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("lua");
    // A directory path makes cargo rerun when any file below it is added,
    // removed or changed (include_dir alone does not notice added files).
    println!("cargo:rerun-if-changed=lua");
    let specs = match redis_patterns_codegen::parse_dir(&root) {
        Ok(specs) => specs,
        Err(e) => {
            eprintln!("error: {e}");
            println!("cargo:warning={e}");
            std::process::exit(1);
        }
    };
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("scripts.rs");
    let code = redis_patterns_codegen::generate(&specs);
    // Write only on change so dependants do not rebuild needlessly.
    if std::fs::read_to_string(&out).ok().as_deref() != Some(code.as_str()) {
        std::fs::write(&out, code).expect("write generated scripts.rs");
    }
}
