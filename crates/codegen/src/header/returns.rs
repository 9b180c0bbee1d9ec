//! The `RETURNS <type>: <meaning>` line.

/// The reply type of a script, and the Rust type its wrapper decodes it to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnType {
    Integer,
    Integers,
    Bulk,
    Bulks,
    Status,
    Array,
}

impl ReturnType {
    const ALL: [ReturnType; 6] = [
        Self::Integer,
        Self::Integers,
        Self::Bulk,
        Self::Bulks,
        Self::Status,
        Self::Array,
    ];

    /// The name used in headers and in the manifest.
    pub fn name(self) -> &'static str {
        match self {
            Self::Integer => "integer",
            Self::Integers => "integers",
            Self::Bulk => "bulk",
            Self::Bulks => "bulks",
            Self::Status => "status",
            Self::Array => "array",
        }
    }

    /// The type and the meaning of the line `-- RETURNS<rest>`.
    pub(crate) fn declared(rest: &str) -> Result<(Self, String), String> {
        let (ty, doc) = rest
            .split_once(':')
            .ok_or("expected `RETURNS <type>: <meaning>`")?;
        let ty = Self::ALL
            .into_iter()
            .find(|t| t.name() == ty.trim())
            .ok_or_else(|| {
                format!(
                    "unknown return type `{}` (integer | integers | bulk | bulks | status | array)",
                    ty.trim()
                )
            })?;
        if doc.trim().is_empty() {
            return Err("the meaning must not be empty".into());
        }
        Ok((ty, doc.trim().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::ReturnType;

    #[test]
    fn returns_names_a_reply_type_and_its_meaning() {
        for ty in ReturnType::ALL {
            let (parsed, doc) =
                ReturnType::declared(&format!(" {}: what it means ", ty.name())).expect("valid");
            assert_eq!((parsed, doc.as_str()), (ty, "what it means"));
        }
        let refused = |rest: &str| ReturnType::declared(rest).unwrap_err();
        assert!(refused(" integer the count").contains("expected `RETURNS <type>: <meaning>`"));
        assert!(refused(" number: x").contains("unknown return type `number`"));
        assert!(refused(" integer: ").contains("must not be empty"));
    }
}
