//! What a client in another language needs beyond the script headers, in
//! one place: per pattern, how every key is named (templates), the
//! client-side functions with exact definitions, the constants they use, the
//! multi-step protocols, and the meaning of every error code.
//!
//! The headers say what each script takes and checks; this module says how
//! a client computes the keys and arguments it passes. Each pattern's
//! contract lives next to its code (`src/<pattern>/contract.rs`), and the
//! tests prove that the pattern's Rust code agrees with it (the key a
//! template renders for a name is the key the pattern computes). The
//! manifest ([`crate::manifest`]), the README and the generated Python and
//! PHP clients all read it from here.
//!
//! # Key templates
//!
//! A template is the key's text with `<var>` placeholders: `<var>` is
//! replaced by the variable's text, everything else is literal (braces are
//! the Redis Cluster hash tag). [`KeyTemplate::render`] does it:
//!
//! ```
//! use redis_patterns::contract::KeyTemplate;
//!
//! let key = KeyTemplate::render("<prefix>{<name>}:fence", &[("prefix", "redis:lock:"), ("name", "job")]);
//! assert_eq!(key, "redis:lock:{job}:fence");
//! ```

pub mod api;
mod errors;
pub(crate) mod parts;

pub use errors::ErrorCode;
pub use parts::{Constant, Function, KeyTemplate, Param, PatternContract, Protocol};
#[allow(unused_imports)] // for contracts written against these paths
pub(crate) use parts::{
    constant, function, key, lines, name_param, param, prefix_param, protocol, scripts_of, shared,
};

impl PatternContract {
    /// The contract of every pattern, sorted by name.
    pub fn all() -> Vec<PatternContract> {
        let mut out = vec![
            crate::analytics::contract(),
            crate::bloom::contract(),
            crate::expiring_map::contract(),
            crate::layout::contract(),
            crate::lock::contract(),
            crate::login_log::contract(),
            crate::packed::contract(),
            crate::rate_limit::contract(),
            crate::rolling::contract(),
            crate::rwlock::contract(),
            crate::semaphore::contract(),
            crate::sharded_hash::contract(),
            crate::signin::contract(),
            crate::visits::contract(),
        ];
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::parts::template_vars;

    #[test]
    fn templates_render_and_list_their_variables() {
        let t = "<prefix>{<name>:<YYYY-MM-DD>}:<shard>";
        assert_eq!(template_vars(t), ["prefix", "name", "YYYY-MM-DD", "shard"]);
        assert_eq!(
            KeyTemplate::render(
                t,
                &[
                    ("prefix", "visits:"),
                    ("name", "site"),
                    ("YYYY-MM-DD", "2024-02-29"),
                    ("shard", "7")
                ]
            ),
            "visits:{site:2024-02-29}:7"
        );
    }

    #[test]
    fn every_contract_is_complete() {
        let all = PatternContract::all();
        let mut patterns: Vec<&str> = crate::scripts::ALL
            .iter()
            .filter_map(|s| s.name.split('.').next())
            .collect();
        patterns.dedup();
        let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, patterns, "one contract per pattern");
        for c in &all {
            assert_eq!(c.scripts, scripts_of(&c.name));
            assert!(!c.keys.is_empty(), "{}", c.name);
            for k in &c.keys {
                // Every template variable is a parameter of the pattern or
                // named in the template list of variables below.
                for var in template_vars(&k.template) {
                    assert!(
                        c.params.iter().any(|p| p.name == var) || KNOWN_VARS.contains(&var),
                        "{}: key {} uses <{var}>, which is neither a param nor a known variable",
                        c.name,
                        k.role
                    );
                }
            }
            for s in crate::scripts::ALL
                .iter()
                .filter(|s| c.scripts.iter().any(|n| n == s.name))
            {
                for k in s.keys {
                    assert!(
                        c.keys.iter().any(|t| t.role == k.name) || VARIABLE_ROLES.contains(&k.name),
                        "{}: key {} of {} has no template",
                        c.name,
                        k.name,
                        s.name
                    );
                }
            }
        }
    }

    /// Template variables that are not settings: computed per call.
    const KNOWN_VARS: &[&str] = &[
        "name",
        "YYYY-MM-DD",
        "YYYY-MM",
        "YYYYMMDD",
        "shard",
        "slot",
        "j",
        "key",
        "type",
        "uid",
        "hex16",
        "base",
        "tag",
        "request_id",
        "event",
        "period",
    ];

    /// Script key roles that stand for several templated keys (variadic
    /// tails whose keys each have a template of another role).
    const VARIABLE_ROLES: &[&str] = &[
        "shards", "slots", "hashes", "blocks", "block", "days", "counter", "bitmap", "day",
        "bitmaps", "operands",
    ];
}
