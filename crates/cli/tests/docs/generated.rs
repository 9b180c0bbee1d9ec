//! The text of the pages that changes with the build, and the generator
//! that writes it. A generated region stands between `<!-- NAME -->` and
//! `<!-- /NAME -->`; [`regions`] says what each holds. A SHA1 (40 hex
//! digits) may stand anywhere, on a line that names its script
//! (`lock.acquire`): the generator writes the script's current SHA1 there.
//! `UPDATE_DOCS=1 cargo test -p redis-patterns-cli --test docs` rewrites
//! the pages; without it the tests fail on stale text, naming the place.

use redis_patterns::scripts::ALL;

use super::pages::Page;

/// A generated region of a page: its name and its current text.
pub struct Region {
    pub name: &'static str,
    pub text: String,
}

/// `redis-patterns list`, as the scripts table shows it.
fn scripts_table() -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_redis-patterns"))
        .arg("list")
        .output()
        .expect("redis-patterns list");
    assert!(out.status.success());
    format!("```text\n{}```\n", String::from_utf8(out.stdout).unwrap())
}

/// Every key template of every pattern's contract.
fn key_templates() -> String {
    let mut out = String::from("| pattern | key | template | type |\n| --- | --- | --- | --- |\n");
    for c in redis_patterns::contract::PatternContract::all() {
        for k in &c.keys {
            out.push_str(&format!(
                "| {} | {} | `{}` | {} |\n",
                c.name, k.role, k.template, k.ty
            ));
        }
    }
    out
}

/// The README's table of patterns: each with its chapter, its contract's
/// summary and its scripts.
fn patterns_table() -> String {
    let mut out = String::from("| pattern | what it is | scripts |\n| --- | --- | --- |\n");
    for c in redis_patterns::contract::PatternContract::all() {
        let chapter = format!("docs/patterns/{}.md", c.name);
        assert!(
            super::pages::root().join(&chapter).exists(),
            "the pattern {} has no chapter {chapter}",
            c.name
        );
        out.push_str(&format!(
            "| [{}]({chapter}) | {} | {} |\n",
            c.name,
            c.summary,
            c.scripts.len()
        ));
    }
    out
}

/// The grammar of a script's header, as the rustdoc of
/// `crates/codegen/src/header/mod.rs` writes it (its one copy).
fn header_grammar() -> String {
    super::rustdoc::to_markdown(
        &super::rustdoc::module_docs("crates/codegen/src/header/mod.rs"),
        2,
        true,
    )
}

/// The text between `<!-- name -->` and `<!-- /name -->` of `page`.
pub fn region_of<'a>(page: &'a str, name: &str) -> Option<&'a str> {
    let begin = format!("<!-- {name} -->\n");
    let end = format!("<!-- /{name} -->");
    let start = page.find(&begin)? + begin.len();
    let len = page[start..].find(&end)?;
    Some(&page[start..start + len])
}

/// The regions a page may hold, with their current text. A copy region
/// (`copy:<page>#<region>`) holds the text of another page's hand-written
/// region, and a rustdoc region (`rustdoc:<file>`) a module's rustdoc, so
/// that one fact is written once and shown twice.
pub fn regions(pages: &[Page]) -> Vec<Region> {
    let mut out = vec![
        Region {
            name: "scripts-table",
            text: scripts_table(),
        },
        Region {
            name: "key-templates",
            text: key_templates(),
        },
        Region {
            name: "patterns-table",
            text: patterns_table(),
        },
        Region {
            name: "acl-rules",
            text: format!(
                "```text\n{}```\n",
                redis_patterns::acl::AclGroup::rules_text("svc")
            ),
        },
        Region {
            name: "header-grammar",
            text: header_grammar(),
        },
    ];
    // A module's rustdoc, shown in its chapter: `<!-- rustdoc:src/lock/mod.rs -->`.
    let mut modules: Vec<&str> = pages
        .iter()
        .flat_map(|p| p.text.split("<!-- rustdoc:").skip(1))
        .filter_map(|rest| rest.split(" -->").next())
        .collect();
    modules.sort();
    modules.dedup();
    for path in modules {
        let name: &'static str = Box::leak(format!("rustdoc:{path}").into_boxed_str());
        out.push(Region {
            name,
            text: super::rustdoc::to_markdown(&super::rustdoc::module_docs(path), 1, false),
        });
    }
    for (name, from, region) in COPIES {
        let source = pages
            .iter()
            .find(|p| p.name == *from)
            .unwrap_or_else(|| panic!("no page {from}"));
        let text = region_of(&source.text, region)
            .unwrap_or_else(|| panic!("{from} has no region {region}"));
        out.push(Region {
            name,
            text: text.to_string(),
        });
    }
    out
}

/// Regions that copy a hand-written region of another page: (the copy's
/// name, the page, the source region).
const COPIES: &[(&str, &str, &str)] = &[
    ("copy:README.md#what-it-is", "README.md", "what-it-is"),
    (
        "copy:docs/languages.md#three-tasks",
        "docs/languages.md",
        "three-tasks",
    ),
    (
        "copy:docs/servers.md#servers-table",
        "docs/servers.md",
        "servers-table",
    ),
];

/// A region's text for `page`: a copy of a README region shown in a
/// page under `docs/` has its links made relative to `docs/`.
fn rebased(text: &str, region: &str, page: &str) -> String {
    if region.starts_with("copy:README.md#") && page.starts_with("docs/") {
        text.replace("](docs/", "](")
            .replace("](tests/", "](../tests/")
    } else {
        text.to_string()
    }
}

/// A stale place of a page: where and what it should say.
pub struct Stale {
    pub page: String,
    pub line: usize,
    pub what: String,
}

/// `page`'s text as the generator writes it, and what was stale.
pub fn generate(page: &Page, regions: &[Region]) -> (String, Vec<Stale>) {
    let mut text = page.text.clone();
    let mut stale = Vec::new();
    for r in regions {
        let begin = format!("<!-- {} -->\n", r.name);
        let end = format!("<!-- /{} -->", r.name);
        let Some(at) = text.find(&begin) else {
            continue;
        };
        let start = at + begin.len();
        let len = text[start..]
            .find(&end)
            .unwrap_or_else(|| panic!("{}: {begin} is not closed by {end}", page.name));
        let want = rebased(&r.text, r.name, &page.name);
        if text[start..start + len] != want {
            stale.push(Stale {
                page: page.name.clone(),
                line: page.line_of(at.min(page.text.len())),
                what: format!("the region {} is stale", r.name),
            });
            text.replace_range(start..start + len, &want);
        }
    }
    let (text, shas) = sha1s(&page.name, &text);
    stale.extend(shas);
    (text, stale)
}

/// Whether `w` is 40 lowercase hex digits.
fn is_sha1(w: &str) -> bool {
    w.len() == 40
        && w.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The 40-hex words of `line`, with their byte offsets.
pub fn sha1_words(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_hexdigit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
            let end = (i..bytes.len())
                .find(|&j| !bytes[j].is_ascii_alphanumeric())
                .unwrap_or(bytes.len());
            if is_sha1(&line[i..end]) {
                out.push((i, &line[i..end]));
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// The scripts whose names `line` mentions as words (`lock.acquire`).
fn scripts_named(line: &str) -> Vec<&'static redis_patterns::ScriptInfo> {
    ALL.iter()
        .copied()
        .filter(|s| {
            line.match_indices(s.name).any(|(i, _)| {
                let before = line[..i].chars().next_back();
                let after = line[i + s.name.len()..].chars().next();
                let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !word(before) && !word(after)
            })
        })
        .collect()
}

/// Every SHA1 of `text` set to that of the script its line names.
fn sha1s(page: &str, text: &str) -> (String, Vec<Stale>) {
    let mut out = String::with_capacity(text.len());
    let mut stale = Vec::new();
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let words = sha1_words(line);
        if words.is_empty() {
            out.push_str(line);
            continue;
        }
        let named = scripts_named(line);
        let [script] = named.as_slice() else {
            stale.push(Stale {
                page: page.to_string(),
                line: n + 1,
                what: format!(
                    "a SHA1 on a line that names {} scripts: name exactly one (`lock.acquire`) on its line, so that the generator can write its SHA1",
                    named.len()
                ),
            });
            out.push_str(line);
            continue;
        };
        let mut fixed = line.to_string();
        for (at, word) in words {
            if word != script.sha1 {
                stale.push(Stale {
                    page: page.to_string(),
                    line: n + 1,
                    what: format!(
                        "{word} is not the SHA1 of {} ({})",
                        script.name, script.sha1
                    ),
                });
                fixed.replace_range(at..at + 40, script.sha1);
            }
        }
        out.push_str(&fixed);
    }
    (out, stale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_sha1_is_rewritten_from_the_script_its_line_names() {
        let s = ALL.iter().find(|s| s.name == "lock.acquire").unwrap();
        let old = "0123456789abcdef0123456789abcdef01234567";
        let text = format!("$ redis-cli EVALSHA {old} 2 k f t 1   # lock.acquire\n");
        let (fixed, stale) = sha1s("x.md", &text);
        assert_eq!(fixed, text.replace(old, s.sha1));
        assert_eq!(stale.len(), 1);
        // Unnamed: reported, left alone.
        let text = format!("$ redis-cli EVALSHA {old} 0\n");
        let (same, stale) = sha1s("x.md", &text);
        assert_eq!(same, text);
        assert!(stale[0].what.contains("names 0 scripts"));
        // `lock.acquire_x` is not `lock.acquire`.
        assert!(scripts_named("lock.acquired").is_empty());
    }
}
