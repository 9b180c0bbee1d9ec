//! Reads every `lua/<pattern>/<op>.lua`, checks its header (grammar in the
//! `redis-patterns-codegen` crate, `crates/codegen`), writes the shipped
//! scripts ("generated checks + the file's body") to `$OUT_DIR/lua/`, which
//! `src/scripts.rs` embeds, and the script registry and the typed wrappers
//! to `$OUT_DIR/scripts.rs`, which it includes, and the Redis Functions
//! library of the same scripts to `$OUT_DIR/functions.lua`, which
//! `src/functions.rs` embeds, and the key and argument types of the
//! headers (the generator's own definition) to `$OUT_DIR/header_types.rs`,
//! which `src/core/script.rs` includes. A malformed header fails
//! the build with `lua/<file>:<line>: <message>`. It also writes the guide's
//! chapters (`docs/`, listed by `docs/SUMMARY.md`) as rustdoc to
//! `$OUT_DIR/guide/` and their modules to `$OUT_DIR/guide.rs`, which
//! `src/guide.rs` includes.

use std::path::Path;

/// Writes `text` to `path` only when it differs, so that dependants do not
/// rebuild needlessly.
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create a directory in OUT_DIR");
        }
        std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("lua");
    // A directory path makes cargo rerun when any file below it is added,
    // removed or changed.
    println!("cargo:rerun-if-changed=lua");
    let specs = match redis_patterns_codegen::parse_dir(&root) {
        Ok(specs) => specs,
        Err(e) => {
            eprintln!("error: {e}");
            println!("cargo:warning={e}");
            std::process::exit(1);
        }
    };
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let shipped = out.join("lua");
    // Only the current scripts: a script removed from lua/ must not stay embedded.
    if shipped.exists() {
        for dir in std::fs::read_dir(&shipped)
            .expect("read OUT_DIR/lua")
            .flatten()
        {
            for file in std::fs::read_dir(dir.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let rel = format!(
                    "{}/{}",
                    dir.file_name().to_string_lossy(),
                    file.file_name().to_string_lossy()
                );
                if !specs.iter().any(|s| s.header.file == rel) {
                    std::fs::remove_file(file.path()).expect("remove a stale shipped script");
                }
            }
        }
    }
    for s in &specs {
        write_if_changed(&shipped.join(&s.header.file), &s.shipped());
    }
    // The key and argument types, one definition with the generator's.
    write_if_changed(
        &out.join("header_types.rs"),
        redis_patterns_codegen::HEADER_TYPES,
    );
    write_if_changed(
        &out.join("scripts.rs"),
        &redis_patterns_codegen::generate(&specs),
    );
    match redis_patterns_codegen::library(&specs) {
        Ok(library) => write_if_changed(&out.join("functions.lua"), &library),
        Err(e) => {
            eprintln!("error: {e}");
            println!("cargo:warning={e}");
            std::process::exit(1);
        }
    }
    guide(Path::new(&manifest), &out);
}

/// The guide's chapters as rustdoc (see `redis_patterns_codegen::guide`).
fn guide(manifest: &Path, out: &Path) {
    use redis_patterns_codegen::guide;
    println!("cargo:rerun-if-changed=docs");
    let docs = manifest.join("docs");
    let summary =
        std::fs::read_to_string(docs.join("SUMMARY.md")).expect("docs/SUMMARY.md lists the guide");
    let chapters = guide::chapters(&summary);
    for c in &chapters {
        let text = std::fs::read_to_string(docs.join(&c.file))
            .unwrap_or_else(|e| panic!("docs/SUMMARY.md lists docs/{}: {e}", c.file));
        write_if_changed(
            &out.join("guide").join(&c.file),
            &guide::rustdoc_chapter(&c.file, &text, &chapters),
        );
    }
    write_if_changed(&out.join("guide.rs"), &guide::modules(&chapters));
}
