//! The number of keys and of arguments: `BADARG keys ...`, `BADARG <name>
//! missing`, `BADARG argv ...`.

use std::fmt::Write as _;

use crate::emit::lua_literal::lit;
use crate::emit::variadic_text::variadic_text;
use crate::script::ScriptSpec;

/// `1 key`, `2 keys`, `no arguments`.
fn count(n: usize, what: &str) -> String {
    match n {
        0 => format!("no {what}s"),
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

fn names(list: impl Iterator<Item = String>) -> String {
    list.collect::<Vec<_>>().join(" ")
}

/// The check of `#KEYS`: exactly the fixed keys, or at least them before a
/// variadic tail.
pub(super) fn keys(out: &mut String, spec: &ScriptSpec) {
    let fixed_keys = spec.fixed_keys();
    let key_tail = spec.keys.iter().any(|k| k.variadic);
    let key_names = names(spec.keys.iter().map(|k| variadic_text(&k.name, k.variadic)));
    if !key_tail {
        let _ = writeln!(
            out,
            "  if #KEYS ~= {fixed_keys} then return redis.error_reply({} .. #KEYS) end",
            lit(&format!(
                "BADARG keys expected {} ({key_names}), got ",
                count(fixed_keys, "key")
            ))
        );
    } else if fixed_keys > 0 {
        let _ = writeln!(
            out,
            "  if #KEYS < {fixed_keys} then return redis.error_reply({} .. #KEYS) end",
            lit(&format!(
                "BADARG keys expected at least {} ({key_names}), got ",
                count(fixed_keys, "key")
            ))
        );
    }
}

/// The check of `#ARGV` (its count in local `n`): a missing argument by
/// name, then too many.
pub(super) fn args(out: &mut String, spec: &ScriptSpec) {
    let fixed = spec.fixed_args();
    let arg_tail = spec.args.iter().any(|a| a.variadic);
    let arg_names = names(spec.args.iter().map(|a| variadic_text(&a.name, a.variadic)));
    let missing = || {
        let list: Vec<String> = spec.args[..fixed].iter().map(|a| lit(&a.name)).collect();
        format!(
            "if n < {fixed} then return redis.error_reply('BADARG ' .. ({{{}}})[n + 1] .. ' missing') end",
            list.join(", ")
        )
    };
    out.push_str("  local n = #ARGV\n");
    if arg_tail {
        if fixed > 0 {
            let _ = writeln!(out, "  {}", missing());
        }
        return;
    }
    let _ = writeln!(out, "  if n ~= {fixed} then");
    if fixed > 0 {
        let _ = writeln!(out, "    {}", missing());
    }
    let _ = writeln!(
        out,
        "    return redis.error_reply({} .. n)",
        lit(&format!(
            "BADARG argv expected {} ({arg_names}), got ",
            count(fixed, "argument")
        ))
    );
    out.push_str("  end\n");
}
