//! The `TYPE` checks: a key that holds another type than declared is
//! refused with `WRONGTYPE` (a missing key is fine).

use std::fmt::Write as _;

use crate::emit::lua_literal::lit;
use crate::header::Key;
use crate::script::ScriptSpec;
use crate::types::KeyType;

/// The `TYPE` check of the fixed key `KEYS[n]`.
fn fixed(out: &mut String, k: &Key, n: usize) {
    let want = k.types[0].name();
    let _ = writeln!(out, "  t = redis.call('TYPE', KEYS[{n}])['ok']");
    let _ = writeln!(
        out,
        "  if t ~= '{want}' and t ~= 'none' then return redis.error_reply({} .. t .. {}) end",
        lit(&format!("WRONGTYPE {} (KEYS[{n}]) holds a ", k.name)),
        lit(&format!(", expected a {want}"))
    );
}

/// The `TYPE` checks of a variadic tail from `KEYS[start]`: one type, or
/// several its keys cycle through.
fn tail(out: &mut String, k: &Key, start: usize) {
    let fail = |want: &str| {
        format!(
            "return redis.error_reply({} .. i .. {} .. t .. {want})",
            lit(&format!("WRONGTYPE {} (KEYS[", k.name)),
            lit("]) holds a "),
        )
    };
    match k.types.as_slice() {
        [one] => {
            let want = one.name();
            let _ = writeln!(out, "  for i = {start}, #KEYS do");
            out.push_str("    t = redis.call('TYPE', KEYS[i])['ok']\n");
            let _ = writeln!(
                out,
                "    if t ~= '{want}' and t ~= 'none' then {} end",
                fail(&lit(&format!(", expected a {want}")))
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
            let skip = if cycle.contains(&KeyType::Any) {
                " and w ~= 'any'"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "    if t ~= w and t ~= 'none'{skip} then {} end",
                fail("', expected a ' .. w")
            );
            out.push_str("  end\n");
        }
    }
}

/// The `TYPE` checks of the places `checked` of a variadic tail from
/// `KEYS[start]` whose cycle the body's loops read in part: a loop per
/// place left to the checks, from its first key, stepping by the cycle.
fn tail_places(out: &mut String, k: &Key, start: usize, checked: &[bool]) {
    let step = k.types.len();
    for (j, t) in k.types.iter().enumerate().filter(|(j, _)| checked[*j]) {
        let want = t.name();
        let _ = writeln!(out, "  for i = {}, #KEYS, {step} do", start + j);
        out.push_str("    t = redis.call('TYPE', KEYS[i])['ok']\n");
        let _ = writeln!(
            out,
            "    if t ~= '{want}' and t ~= 'none' then return redis.error_reply({} .. i .. {} .. t .. {}) end",
            lit(&format!("WRONGTYPE {} (KEYS[", k.name)),
            lit("]) holds a "),
            lit(&format!(", expected a {want}"))
        );
        out.push_str("  end\n");
    }
}

/// The `TYPE` checks of the keys the analysis left to them.
pub(super) fn checks(out: &mut String, spec: &ScriptSpec) {
    let typed: Vec<usize> = (0..spec.keys.len())
        .filter(|&i| spec.type_checked[i])
        .collect();
    if !typed.is_empty() {
        out.push_str("  local t\n");
    }
    for i in typed {
        let k = &spec.keys[i];
        let every =
            (k.types.iter().zip(&spec.tail_type_checked)).all(|(t, c)| *c || *t == KeyType::Any);
        if k.variadic && every {
            tail(out, k, i + 1);
        } else if k.variadic {
            tail_places(out, k, i + 1, &spec.tail_type_checked);
        } else {
            fixed(out, k, i + 1);
        }
    }
}
