//! The Lua checks inserted between a script's header and its body.
//!
//! They run in one `do ... end` block (their locals do not leak into the
//! body) and return an error reply, having written nothing, on the first
//! problem: arity ([`arity`]), then arguments ([`arguments`], in
//! [`ScriptSpec::check_order`]), then ACL ([`acl`]), then key types
//! ([`key_types`]). The argument reasons are [`Arg::reason`](crate::Arg::reason),
//! which the typed Rust wrappers return too.

mod acl;
mod arguments;
mod arity;
mod key_types;

use std::fmt::Write as _;

use crate::script::ScriptSpec;

/// First line of the generated block (tests find the block by it).
pub const BEGIN: &str = "-- generated checks (crates/codegen, from the header above): arity, arguments, ACL and key types, before the body";
/// Last line of the generated block.
pub const END: &str = "-- end of generated checks";

/// The generated block, ending with a newline.
pub(crate) fn lua_checks(spec: &ScriptSpec) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{BEGIN}");
    out.push_str("do\n");
    arity::keys(&mut out, spec);
    arity::args(&mut out, spec);
    arguments::checks(&mut out, spec);
    acl::probes(&mut out, spec);
    key_types::checks(&mut out, spec);
    out.push_str("end\n");
    let _ = writeln!(out, "{END}");
    out
}
