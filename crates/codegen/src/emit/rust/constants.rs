//! The constants of the declared integer ranges
//! (`scripts::lock::ACQUIRE_LEASE_MS_MAX`), for the library to refer to.

use std::fmt::Write as _;

use super::types::arg_decl;
use crate::header::Bound;
use crate::script::ScriptSpec;
use crate::types::ArgType;

/// A `<OP>_<ARG>_MIN` / `_MAX` constant for each constant bound of `s`.
pub(super) fn constants(out: &mut String, s: &ScriptSpec) {
    for a in s.args.iter().filter(|a| a.ty == ArgType::Integer) {
        for (end, b) in [("MIN", &a.min), ("MAX", &a.max)] {
            if let Some(Bound::Value(v)) = b {
                out.push('\n');
                let _ = writeln!(
                    out,
                    "    /// The {} `{}` of `{}` (its header: `{}`).",
                    if end == "MIN" { "smallest" } else { "largest" },
                    a.name,
                    s.name,
                    arg_decl(a)
                );
                let _ = writeln!(
                    out,
                    "    pub const {}_{}_{end}: i64 = {v};",
                    s.op.to_uppercase(),
                    a.name.to_uppercase()
                );
            }
        }
    }
}
