//! The scripts' domain error codes as the contract publishes them: the
//! table lives with the error type ([`ErrorCode`]), here so that every
//! surface reads one.

pub use crate::core::error_codes::ErrorCode;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_code_has_a_meaning_and_its_kind() {
        for s in crate::scripts::ALL {
            for code in s.errors {
                assert!(ErrorCode::of(code).is_some(), "{}: {code}", s.name);
            }
        }
        for e in ErrorCode::ALL {
            assert!(
                crate::scripts::ALL
                    .iter()
                    .any(|s| s.errors.contains(&e.code)),
                "{} is declared by no script",
                e.code
            );
            // The kind the Rust API maps the code to (its variant name).
            let kind = format!(
                "{:?}",
                crate::core::error_codes::from_script("p.op", e.code, "d")
            );
            assert!(
                kind.starts_with(&format!("{} ", e.kind)),
                "{}: {kind}",
                e.code
            );
        }
    }
}
