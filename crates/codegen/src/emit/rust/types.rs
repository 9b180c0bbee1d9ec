//! How header types read in the generated Rust: parameter types, reply
//! types, variant names, bounds, and the condition under which a wrapper
//! refuses a value.

use crate::header::{Arg, Bound, ReturnType};
use crate::types::{ArgType, KeyType};

/// The variant's name in the generated Rust (`KeyType::Zset`).
pub(super) fn key_variant(t: KeyType) -> String {
    format!("{t:?}")
}

/// The variant's name in the generated Rust (`ArgType::Int64`).
pub(super) fn arg_variant(t: ArgType) -> String {
    format!("{t:?}")
}

/// The Rust type a wrapper decodes a reply of type `r` to.
pub(super) fn reply_type(r: ReturnType) -> &'static str {
    match r {
        ReturnType::Integer => "i64",
        ReturnType::Integers => "Vec<i64>",
        ReturnType::Bulk => "Option<Vec<u8>>",
        ReturnType::Bulks => "Vec<Option<Vec<u8>>>",
        ReturnType::Status => "String",
        ReturnType::Array => "redis::Value",
    }
}

/// A fixed argument's parameter type.
pub(super) fn rust_one(ty: ArgType) -> &'static str {
    match ty {
        ArgType::Integer | ArgType::Int64 => "i64",
        ArgType::Float => "f64",
        ArgType::Bool => "bool",
        ArgType::Enum | ArgType::String => "&str",
        ArgType::Bytes => "&[u8]",
    }
}

/// A variadic tail's parameter: a slice of [`rust_one`]'s type, or for a
/// borrowed one (`&str`) a slice of anything that lends it (`&[String]` as
/// well as `&[&str]`).
pub(super) fn rust_many(ty: ArgType) -> String {
    let one = rust_one(ty);
    match one.strip_prefix('&') {
        Some(lent) => format!("&[impl AsRef<{lent}>]"),
        None => format!("&[{one}]"),
    }
}

/// A bound as a Rust expression over the wrapper's parameters.
fn bound_rust(b: &Bound) -> String {
    match b {
        Bound::Value(v) => v.to_string(),
        Bound::Arg { name, offset: 0 } => name.clone(),
        Bound::Arg { name, offset } if *offset > 0 => format!("{name} + {offset}"),
        Bound::Arg { name, offset } => format!("{name} - {}", -offset),
    }
}

/// The header's declaration of an argument, as in `list` (`integer 1..9`).
pub(super) fn arg_decl(a: &Arg) -> String {
    match a.ty {
        ArgType::Integer => format!(
            "integer {}..{}",
            a.min.as_ref().expect("range").text(),
            a.max.as_ref().expect("range").text()
        ),
        ArgType::Enum => format!("enum {}", a.values.join("|")),
        ArgType::String | ArgType::Bytes if a.tagged => format!("{} tagged", a.ty.name()),
        ArgType::String | ArgType::Bytes if a.non_empty => format!("{} nonempty", a.ty.name()),
        ty => ty.name().to_string(),
    }
}

/// The Rust condition under which the value `v` (an expression of the
/// parameter's element type) is refused; `None` when every value fits.
/// `first_key` is the wrapper's parameter for `KEYS[1]`.
pub(super) fn refused(a: &Arg, v: &str, first_key: &str) -> Option<String> {
    match a.ty {
        ArgType::String | ArgType::Bytes if a.tagged => {
            let bytes = if a.ty == ArgType::String {
                format!("{v}.as_bytes()")
            } else {
                v.to_string()
            };
            Some(format!(
                "{v}.is_empty() || crate::keys::hash_tag({bytes}) != crate::keys::hash_tag({first_key}.as_bytes())"
            ))
        }
        ArgType::Integer => Some(format!(
            "!({}..={}).contains({v})",
            bound_rust(a.min.as_ref().expect("range")),
            bound_rust(a.max.as_ref().expect("range"))
        )),
        ArgType::Float => Some(format!("!{v}.is_finite()")),
        ArgType::Enum => {
            let words: Vec<String> = a.values.iter().map(|w| super::rust_str(w)).collect();
            Some(format!("!matches!({v}, {})", words.join(" | ")))
        }
        ArgType::String | ArgType::Bytes if a.non_empty => Some(format!("{v}.is_empty()")),
        _ => None,
    }
}
