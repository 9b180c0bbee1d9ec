//! The argument checks: every argument against its declared type and
//! range, a variadic tail element by element, refusing with `BADARG <name>
//! <reason>`. Integers are checked as canonical decimal strings, by
//! pattern and string comparison where the range is constant.

use std::fmt::Write as _;

use crate::emit::lua_literal::lit;
use crate::header::{Arg, Bound};
use crate::script::ScriptSpec;
use crate::types::ArgType;

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

/// The comparison of the canonical non-negative decimal `v` with a bound
/// naming a canonical non-negative argument, by strings (`which`: `lo`
/// or `hi`; an offset of one makes it strict), if it is one.
fn string_cmp(spec: &ScriptSpec, b: &Bound, which: &str) -> Option<String> {
    let Bound::Arg { name, offset } = b else {
        return None;
    };
    let k = spec.args.iter().position(|a| &a.name == name)?;
    let t = &spec.args[k];
    let canonical =
        !t.variadic && t.ty == ArgType::Integer && matches!(t.min, Some(Bound::Value(m)) if m >= 0);
    if !canonical {
        return None;
    }
    let a = format!("ARGV[{}]", k + 1);
    match (which, offset) {
        ("hi", 0) => Some(at_most("v", &a, &format!("#{a}"))),
        ("hi", -1) => Some(format!("(#v < #{a} or #v == #{a} and v < {a})")),
        ("lo", 0) => Some(at_least("v", &a, &format!("#{a}"))),
        ("lo", 1) => Some(format!("(#v > #{a} or #v == #{a} and v > {a})")),
        // `v <= a + 1`: `v <= a` by strings, else (rarely) the one value
        // past it by numbers; `v >= a - 1` likewise.
        ("hi", 1) => Some(format!(
            "({} or tonumber(v) == tonumber({a}) + 1)",
            at_most("v", &a, &format!("#{a}"))
        )),
        ("lo", -1) => Some(format!(
            "({} or tonumber(v) == tonumber({a}) - 1)",
            at_least("v", &a, &format!("#{a}"))
        )),
        _ => None,
    }
}

/// For a fixed non-negative integer argument whose bounds are constants
/// or name canonical non-negative arguments ([`string_cmp`]), its check as
/// a pattern and string comparisons: no number converted.
fn string_range(spec: &ScriptSpec, arg: &Arg) -> Option<String> {
    let (lo, hi) = (arg.min.as_ref()?, arg.max.as_ref()?);
    if arg.variadic || arg.ty != ArgType::Integer || bound_min(spec, lo) < 0 {
        return None;
    }
    let mut conds = vec![if bound_min(spec, lo) >= 1 {
        "find(v, '^[1-9]%d*$')".to_string()
    } else {
        "(v == '0' or find(v, '^[1-9]%d*$'))".to_string()
    }];
    for (which, b) in [("lo", lo), ("hi", hi)] {
        conds.push(match b {
            Bound::Value(v) if which == "lo" && *v <= 1 => continue,
            Bound::Value(v) => {
                let t = v.to_string();
                let (s, len) = (format!("'{t}'"), t.len().to_string());
                match which {
                    "lo" => at_least("v", &s, &len),
                    _ => at_most("v", &s, &len),
                }
            }
            _ => string_cmp(spec, b, which)?,
        });
    }
    Some(conds.join(" and "))
}

/// The check of an integer in local `v` against its range.
fn integer_check(out: &mut String, spec: &ScriptSpec, arg: &Arg, indent: &str, fail: &str) {
    let (lo, hi) = (
        arg.min.as_ref().expect("range"),
        arg.max.as_ref().expect("range"),
    );
    if !matches!((lo, hi), (Bound::Value(_), Bound::Value(_)))
        && let Some(cond) = string_range(spec, arg)
    {
        let _ = writeln!(out, "{indent}if not ({cond}) then {fail} end");
        return;
    }
    if let (Bound::Value(lo), Bound::Value(hi)) = (lo, hi) {
        let _ = writeln!(
            out,
            "{indent}if not ({}) then {fail} end",
            const_range("v", *lo, *hi)
        );
        return;
    }
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

/// The statements that check the string in local `v` against `arg`.
fn arg_check(out: &mut String, spec: &ScriptSpec, arg: &Arg, indent: &str) {
    let Some(reason) = arg.reason() else {
        return;
    };
    let fail = badarg(&arg.name, &reason);
    match arg.ty {
        ArgType::Integer => integer_check(out, spec, arg, indent, &fail),
        ArgType::Int64 => {
            // The common case (at most 18 digits) costs one `find`, no
            // capture; a longer one is compared with the int64 bounds.
            let _ = writeln!(
                out,
                "{indent}if v ~= '0' and not (find(v, '^%-?[1-9]%d*$') and #v < 19) then"
            );
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
                "{indent}if v == '' or (match(v, {TAG}) or v) ~= (match(KEYS[1], {TAG}) or KEYS[1]) then {fail} end"
            );
        }
        ArgType::String | ArgType::Bytes => {
            let _ = writeln!(out, "{indent}if v == '' then {fail} end");
        }
    }
}

/// The pattern of the part of a name that picks its cluster slot, for
/// `tagged` arguments: `match(name, TAG) or name` is the first non-empty
/// `{...}`, else the whole name (up to the first `{`, then up to the first
/// `}` after it, at least one character between). Written inline, not as
/// a local function: a closure made on every call costs more than the
/// text.
const TAG: &str = "'^[^{]*{([^}]+)}'";

/// For a tail's upper bound naming a non-negative argument (a canonical
/// decimal once checked), `arg` or `arg-1`: the argument's index and
/// whether the comparison is strict (`v <= arg-1` is `v < arg`), so that no
/// number is converted or formatted.
fn string_bound(spec: &ScriptSpec, b: &Bound, which: &str) -> Option<(usize, bool)> {
    let Bound::Arg { name, offset } = b else {
        return None;
    };
    let i = spec.args.iter().position(|a| &a.name == name)?;
    let target = &spec.args[i];
    let canonical = !target.variadic && matches!(target.min, Some(Bound::Value(m)) if m >= 0);
    (which == "hi" && canonical && (*offset == 0 || *offset == -1)).then_some((i, *offset == -1))
}

/// Whether argument `i` is needed as a number (a local `n_<name>`): some
/// range refers to it other than by [`string_bound`].
fn needs_number(spec: &ScriptSpec, i: usize) -> bool {
    let name = &spec.args[i].name;
    spec.args.iter().any(|a| {
        let (Some(lo), Some(hi)) = (&a.min, &a.max) else {
            return false;
        };
        let tail = a.variadic && a.ty == ArgType::Integer && bound_min(spec, lo) >= 0;
        let fixed = string_range(spec, a).is_some();
        let by_string = |b: &Bound, which| fixed || tail && string_bound(spec, b, which).is_some();
        (lo.arg() == Some(name) && !by_string(lo, "lo"))
            || (hi.arg() == Some(name) && !by_string(hi, "hi"))
            || (tail && a.refs().any(|r| r == name) && may_be_empty(spec, lo, hi))
    })
}

/// Whether a tail's range may be empty (its upper bound an argument that
/// may go below the lower one): checked once, numerically.
fn may_be_empty(spec: &ScriptSpec, lo: &Bound, hi: &Bound) -> bool {
    let never_empty = matches!(lo, Bound::Value(l) if bound_min(spec, hi) >= *l);
    matches!(hi, Bound::Arg { .. }) && !never_empty
}

/// The element conditions of a tail whose range names another argument
/// (and cannot go below 0): the bounds as decimal strings once (locals
/// written to `out`), then per element a pattern and string comparisons.
fn tail_conditions(out: &mut String, spec: &ScriptSpec, lo: &Bound, hi: &Bound) -> Vec<String> {
    let positive = bound_min(spec, lo) >= 1;
    let mut conds = vec![if positive {
        "find(v, '^[1-9]%d*$')".to_string()
    } else {
        "(v == '0' or find(v, '^[1-9]%d*$'))".to_string()
    }];
    for (which, b) in [("lo", lo), ("hi", hi)] {
        if let Some((k, strict)) = string_bound(spec, b, which) {
            let _ = writeln!(out, "  local hi = ARGV[{}]", k + 1);
            conds.push(match strict {
                true => "(#v < #hi or #v == #hi and v < hi)".to_string(),
                false => at_most("v", "hi", "#hi"),
            });
            continue;
        }
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
        if which == "hi" {
            conds.push(at_most("v", &s, &len));
        } else if !(matches!(b, Bound::Value(v) if *v <= 1) && positive
            || matches!(b, Bound::Value(0)))
        {
            conds.push(at_least("v", &s, &len));
        }
    }
    if may_be_empty(spec, lo, hi) {
        // An empty range (the bound below the other) takes nothing.
        let _ = writeln!(
            out,
            "  local empty = {} > {}",
            bound_expr(lo),
            bound_expr(hi)
        );
        conds.insert(0, "not empty".to_string());
    }
    conds
}

/// The check of argument `i` (of `spec`), after those it refers to.
fn check(out: &mut String, spec: &ScriptSpec, i: usize) {
    let a = &spec.args[i];
    let refs = a.ty == ArgType::Integer && a.refs().next().is_some();
    if a.variadic && refs && bound_min(spec, a.min.as_ref().expect("range")) >= 0 {
        let (lo, hi) = (
            a.min.as_ref().expect("range"),
            a.max.as_ref().expect("range"),
        );
        let conds = tail_conditions(out, spec, lo, hi);
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
        arg_check(out, spec, a, "    ");
        out.push_str("  end\n");
    } else {
        let _ = writeln!(out, "  v = ARGV[{}]", i + 1);
        arg_check(out, spec, a, "  ");
        if needs_number(spec, i) {
            let _ = writeln!(out, "  local n_{} = tonumber(v)", a.name);
        }
    }
}

/// The checks of every argument that not every value fits, in
/// [`ScriptSpec::check_order`], after the locals they share.
pub(super) fn checks(out: &mut String, spec: &ScriptSpec) {
    let checked: Vec<usize> = spec
        .check_order()
        .into_iter()
        .filter(|&i| spec.args[i].reason().is_some())
        .collect();
    if !checked.is_empty() {
        out.push_str("  local v, x\n");
    }
    if checked.iter().any(|&i| spec.args[i].tagged) {
        out.push_str("  local match = string.match\n");
    }
    if checked
        .iter()
        .any(|&i| matches!(spec.args[i].ty, ArgType::Integer | ArgType::Int64))
    {
        out.push_str("  local find = string.find\n");
    }
    for i in checked {
        check(out, spec, i);
    }
}
