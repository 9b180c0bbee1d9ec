//! The Lua checks inserted between a script's header and its body.
//!
//! They run in one `do ... end` block (their locals do not leak into the
//! body) and return an error reply, having written nothing, on the first
//! problem: arity, then arguments (in [`ScriptSpec::check_order`]), then
//! ACL, then key types. The argument reasons are [`Arg::reason`], which the
//! typed Rust wrappers return too.

use std::fmt::Write as _;

use crate::{Arg, ArgType, Bound, KeyType, ScriptSpec, tail};

/// First line of the generated block (tests find the block by it).
pub const BEGIN: &str = "-- generated checks (crates/codegen, from the header above): arity, arguments, ACL and key types, before the body";
/// Last line of the generated block.
pub const END: &str = "-- end of generated checks";

/// A Lua string literal.
pub(crate) fn lit(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

fn badarg(name: &str, reason: &str) -> String {
    format!(
        "return redis.error_reply({})",
        lit(&format!("BADARG {name} {reason}"))
    )
}

/// A Lua condition that holds when `v` (a string) is a canonical decimal
/// integer from `lo` to `hi` (constants), by pattern and string comparison
/// (no number conversion for non-negative ranges).
fn const_range(v: &str, lo: i64, hi: i64) -> String {
    if lo < 0 {
        return format!(
            "(find({v}, '^%-?[1-9]%d*$') or {v} == '0') and tonumber({v}) >= {lo} and tonumber({v}) <= {hi}"
        );
    }
    if hi == 0 {
        return format!("{v} == '0'");
    }
    let mut parts = vec![format!("find({v}, '^[1-9]%d*$')")];
    if lo > 1 {
        let l = lo.to_string();
        parts.push(format!(
            "(#{v} > {} or #{v} == {} and {v} >= '{l}')",
            l.len(),
            l.len()
        ));
    }
    let h = hi.to_string();
    if h.len() == 1 {
        parts.push(format!("#{v} == 1 and {v} <= '{h}'"));
    } else if h.bytes().all(|b| b == b'9') {
        parts.push(format!("#{v} <= {}", h.len()));
    } else {
        parts.push(format!(
            "(#{v} < {} or #{v} == {} and {v} <= '{h}')",
            h.len(),
            h.len()
        ));
    }
    let positive = parts.join(" and ");
    if lo == 0 {
        format!("({v} == '0' or {positive})")
    } else {
        positive
    }
}

/// `#v >= L` and `v >= L` for canonical non-negative decimals: the Lua
/// condition that `v` is at least the decimal string in `l` (a literal in
/// quotes, or a local holding a string).
fn at_least(v: &str, l: &str, len: &str) -> String {
    format!("(#{v} > {len} or #{v} == {len} and {v} >= {l})")
}

fn at_most(v: &str, h: &str, len: &str) -> String {
    format!("(#{v} < {len} or #{v} == {len} and {v} <= {h})")
}

/// The smallest value a bound can take (a referenced argument at its own
/// minimum).
fn bound_min(spec: &ScriptSpec, b: &Bound) -> i64 {
    match b {
        Bound::Value(v) => *v,
        Bound::Arg { name, offset } => {
            let target = spec
                .args
                .iter()
                .find(|a| &a.name == name)
                .expect("resolved");
            match target.min {
                Some(Bound::Value(v)) => v + offset,
                _ => i64::MIN / 2,
            }
        }
    }
}

/// The Lua value of a bound: a literal, or a referenced argument's local.
fn bound_expr(b: &Bound) -> String {
    match b {
        Bound::Value(v) => v.to_string(),
        Bound::Arg { name, offset: 0 } => format!("n_{name}"),
        Bound::Arg { name, offset } if *offset > 0 => format!("n_{name} + {offset}"),
        Bound::Arg { name, offset } => format!("n_{name} - {}", -offset),
    }
}

/// The statements that check the string in local `v` against `arg`.
fn arg_check(out: &mut String, arg: &Arg, indent: &str) {
    let Some(reason) = arg.reason() else {
        return;
    };
    let fail = badarg(&arg.name, &reason);
    match arg.ty {
        ArgType::Integer => {
            let (lo, hi) = (
                arg.min.as_ref().expect("range"),
                arg.max.as_ref().expect("range"),
            );
            match (lo, hi) {
                (Bound::Value(lo), Bound::Value(hi)) => {
                    let _ = writeln!(
                        out,
                        "{indent}if not ({}) then {fail} end",
                        const_range("v", *lo, *hi)
                    );
                }
                _ => {
                    // A range naming another argument: compare numbers.
                    let canon = match lo {
                        Bound::Value(l) if *l >= 0 => "(v == '0' or find(v, '^[1-9]%d*$'))",
                        _ => "(v == '0' or find(v, '^%-?[1-9]%d*$'))",
                    };
                    let _ = writeln!(out, "{indent}x = {canon} and tonumber(v)");
                    let _ = writeln!(
                        out,
                        "{indent}if not x or x < {} or x > {} then {fail} end",
                        bound_expr(lo),
                        bound_expr(hi)
                    );
                }
            }
        }
        ArgType::Int64 => {
            let _ = writeln!(out, "{indent}if v ~= '0' then");
            let _ = writeln!(out, "{indent}  x = string.match(v, '^%-?([1-9]%d*)$')");
            let _ = writeln!(
                out,
                "{indent}  if not x or #x >= 19 and (#x > 19 or x > (#x == #v and '9223372036854775807' or '9223372036854775808')) then {fail} end"
            );
            let _ = writeln!(out, "{indent}end");
        }
        ArgType::Float => {
            let _ = writeln!(out, "{indent}x = tonumber(v)");
            let _ = writeln!(
                out,
                "{indent}if not x or x ~= x or x == math.huge or x == -math.huge then {fail} end"
            );
        }
        ArgType::Bool => {
            let _ = writeln!(out, "{indent}if v ~= '0' and v ~= '1' then {fail} end");
        }
        ArgType::Enum => {
            let cond: Vec<String> = arg
                .values
                .iter()
                .map(|w| format!("v ~= {}", lit(w)))
                .collect();
            let _ = writeln!(out, "{indent}if {} then {fail} end", cond.join(" and "));
        }
        ArgType::String | ArgType::Bytes if arg.tagged => {
            let _ = writeln!(
                out,
                "{indent}if v == '' or tag(v) ~= tag(KEYS[1]) then {fail} end"
            );
        }
        ArgType::String | ArgType::Bytes => {
            let _ = writeln!(out, "{indent}if v == '' then {fail} end");
        }
    }
}

/// `tag(name)`: the part of a name that picks its cluster slot (the first
/// non-empty `{...}`, else the whole name), for `tagged` arguments.
const TAG_FN: &str = "  local function tag(name)
    local open = string.find(name, '{', 1, true)
    if open then
      local close = string.find(name, '}', open + 1, true)
      if close and close > open + 1 then
        return string.sub(name, open + 1, close - 1)
      end
    end
    return name
  end
";

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

/// The generated block, ending with a newline.
pub fn lua_checks(spec: &ScriptSpec) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{BEGIN}");
    out.push_str("do\n");
    let fixed_keys = spec.fixed_keys();
    let key_tail = spec.keys.iter().any(|k| k.variadic);
    let key_names = names(spec.keys.iter().map(|k| tail(&k.name, k.variadic)));
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

    let fixed = spec.fixed_args();
    let arg_tail = spec.args.iter().any(|a| a.variadic);
    let arg_names = names(spec.args.iter().map(|a| tail(&a.name, a.variadic)));
    let missing = || {
        let list: Vec<String> = spec.args[..fixed].iter().map(|a| lit(&a.name)).collect();
        format!(
            "if n < {fixed} then return redis.error_reply('BADARG ' .. ({{{}}})[n + 1] .. ' missing') end",
            list.join(", ")
        )
    };
    if !arg_tail {
        out.push_str("  local n = #ARGV\n");
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
    } else {
        out.push_str("  local n = #ARGV\n");
        if fixed > 0 {
            let _ = writeln!(out, "  {}", missing());
        }
    }

    let checked: Vec<usize> = spec
        .check_order()
        .into_iter()
        .filter(|&i| spec.args[i].reason().is_some())
        .collect();
    if !checked.is_empty() {
        out.push_str("  local v, x\n");
    }
    if checked.iter().any(|&i| spec.args[i].tagged) {
        out.push_str(TAG_FN);
    }
    if checked
        .iter()
        .any(|&i| matches!(spec.args[i].ty, ArgType::Integer))
    {
        out.push_str("  local find = string.find\n");
    }
    for i in checked {
        let a = &spec.args[i];
        let refs = a.ty == ArgType::Integer && a.refs().next().is_some();
        let (lo, hi) = (a.min.as_ref(), a.max.as_ref());
        if a.variadic && refs && bound_min(spec, lo.expect("range")) >= 0 {
            // A tail whose range names another argument: the bounds as
            // decimal strings once, then per element a pattern and string
            // comparisons (no number conversion).
            let lo = lo.expect("range");
            let hi = hi.expect("range");
            let mut conds = Vec::new();
            let positive = bound_min(spec, lo) >= 1;
            conds.push(if positive {
                "find(v, '^[1-9]%d*$')".to_string()
            } else {
                "(v == '0' or find(v, '^[1-9]%d*$'))".to_string()
            });
            for (which, b) in [("lo", lo), ("hi", hi)] {
                let (s, len) = match b {
                    Bound::Value(v) => {
                        let text = v.to_string();
                        (format!("'{text}'"), text.len().to_string())
                    }
                    _ => {
                        let _ = writeln!(
                            out,
                            "  local {which} = string.format('%d', {})",
                            bound_expr(b)
                        );
                        (which.to_string(), format!("#{which}"))
                    }
                };
                if which == "lo" {
                    if !(matches!(b, Bound::Value(v) if *v <= 1) && positive
                        || matches!(b, Bound::Value(0)))
                    {
                        conds.push(at_least("v", &s, &len));
                    }
                } else {
                    conds.push(at_most("v", &s, &len));
                }
            }
            let never_empty = matches!(lo, Bound::Value(l) if bound_min(spec, hi) >= *l);
            if matches!(hi, Bound::Arg { .. }) && !never_empty {
                // An empty range (the bound below the other) takes nothing.
                let _ = writeln!(
                    out,
                    "  local empty = {} > {}",
                    bound_expr(lo),
                    bound_expr(hi)
                );
                conds.insert(0, "not empty".to_string());
            }
            let _ = writeln!(out, "  for i = {}, n do", i + 1);
            out.push_str("    v = ARGV[i]\n");
            let _ = writeln!(
                out,
                "    if not ({}) then {} end",
                conds.join(" and "),
                badarg(&a.name, &a.reason().expect("integers have a reason"))
            );
            out.push_str("  end\n");
        } else if a.variadic {
            let _ = writeln!(out, "  for i = {}, n do", i + 1);
            out.push_str("    v = ARGV[i]\n");
            arg_check(&mut out, a, "    ");
            out.push_str("  end\n");
        } else {
            let _ = writeln!(out, "  v = ARGV[{}]", i + 1);
            arg_check(&mut out, a, "  ");
            if spec.is_referenced(i) {
                let _ = writeln!(out, "  local n_{} = tonumber(v)", a.name);
            }
        }
    }

    if !spec.acl_checks.is_empty() {
        let guard = fixed_keys == 0;
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
            let message = format!(
                "NOPERM this user has no permissions to run the '{}' command",
                a.command.name.to_ascii_lowercase()
            );
            let _ = writeln!(
                out,
                "{indent}if not redis.acl_check_cmd({}) then return redis.error_reply({}) end",
                call.join(", "),
                lit(&message)
            );
        }
        if guard {
            out.push_str("  end\n");
        }
    }

    let typed: Vec<usize> = (0..spec.keys.len())
        .filter(|&i| spec.type_checked[i])
        .collect();
    if !typed.is_empty() {
        out.push_str("  local t\n");
    }
    for i in typed {
        let k = &spec.keys[i];
        let fail = |want: &str, at: &str| {
            format!(
                "return redis.error_reply({} .. {at} .. {} .. t .. {want})",
                lit(&format!("WRONGTYPE {} (KEYS[", k.name)),
                lit("]) holds a "),
            )
        };
        if !k.variadic {
            let want = k.types[0].name();
            let _ = writeln!(out, "  t = redis.call('TYPE', KEYS[{}])['ok']", i + 1);
            let _ = writeln!(
                out,
                "  if t ~= '{want}' and t ~= 'none' then return redis.error_reply({} .. t .. {}) end",
                lit(&format!("WRONGTYPE {} (KEYS[{}]) holds a ", k.name, i + 1)),
                lit(&format!(", expected a {want}"))
            );
            continue;
        }
        let start = i + 1;
        match k.types.as_slice() {
            [one] => {
                let want = one.name();
                let _ = writeln!(out, "  for i = {start}, #KEYS do");
                out.push_str("    t = redis.call('TYPE', KEYS[i])['ok']\n");
                let _ = writeln!(
                    out,
                    "    if t ~= '{want}' and t ~= 'none' then {} end",
                    fail(&lit(&format!(", expected a {want}")), "i")
                );
                out.push_str("  end\n");
            }
            cycle => {
                let list: Vec<String> = cycle.iter().map(|t| lit(t.name())).collect();
                let _ = writeln!(out, "  local want = {{{}}}", list.join(", "));
                let _ = writeln!(out, "  for i = {start}, #KEYS do");
                let _ = writeln!(
                    out,
                    "    local w = want[(i - {start}) % {} + 1]",
                    cycle.len()
                );
                out.push_str("    t = redis.call('TYPE', KEYS[i])['ok']\n");
                let any = cycle.contains(&KeyType::Any);
                let skip = if any { " and w ~= 'any'" } else { "" };
                let _ = writeln!(
                    out,
                    "    if t ~= w and t ~= 'none'{skip} then {} end",
                    fail("', expected a ' .. w", "i")
                );
                out.push_str("  end\n");
            }
        }
    }
    out.push_str("end\n");
    let _ = writeln!(out, "{END}");
    out
}
