//! The ACL probes: `redis.acl_check_cmd` for each command the analysis
//! chose, refusing with the server's own `NOPERM` text followed by the
//! key or channel the probe named.

use std::fmt::Write as _;

use crate::emit::lua_literal::lit;
use crate::script::ScriptSpec;

/// One probe line per ACL check, under its guard (inside `if #KEYS > 0` when the script has
/// no fixed key to name; a probe naming a key of the variadic tail runs only
/// when the call passed that key, so a call with a short tail reaches the
/// body's own refusal instead of failing inside the probe).
pub(super) fn probes(out: &mut String, spec: &ScriptSpec) {
    if spec.acl_checks.is_empty() {
        return;
    }
    let guard = spec.fixed_keys() == 0;
    let indent = if guard { "    " } else { "  " };
    if guard {
        out.push_str("  if #KEYS > 0 then\n");
    }
    for a in &spec.acl_checks {
        let mut call = vec![lit(a.command.name)];
        call.extend(
            a.command
                .probe
                .iter()
                .map(|p| if *p == "$K" { a.key.clone() } else { lit(p) }),
        );
        // The probe fails when the command or its key (channel) is denied:
        // the message names both, the key or channel by its value (its
        // control characters as `?`).
        let message = format!(
            "NOPERM this user has no permissions to run the '{}' command on the {} ",
            a.command.name.to_ascii_lowercase(),
            if a.command.channel { "channel" } else { "key" }
        );
        // A guarded probe runs when one of its calls can run at all.
        let when = match &a.guard {
            Some(g) if g.contains(" or ") => format!("({g}) and "),
            Some(g) => format!("{g} and "),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "{indent}if {when}{}not redis.acl_check_cmd({}) then return redis.error_reply({} .. {}) end",
            tail_guard(&a.key, spec.fixed_keys()),
            call.join(", "),
            lit(&message),
            // Control characters would end the error reply's line.
            format_args!("(string.gsub({}, '%c', '?'))", a.key)
        );
    }
    if guard {
        out.push_str("  end\n");
    }
}

/// `KEYS[n] and ` when the probe names `KEYS[n]` beyond the fixed keys
/// (a key of the variadic tail the call may not have passed), else nothing.
fn tail_guard(key: &str, fixed: usize) -> String {
    let n = key
        .strip_prefix("KEYS[")
        .and_then(|k| k.strip_suffix(']'))
        .and_then(|k| k.parse::<usize>().ok());
    match n {
        Some(n) if n > fixed.max(1) => format!("{key} and "),
        _ => String::new(),
    }
}
