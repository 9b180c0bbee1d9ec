//! The JSON form of an [`Expr`], the one every client takes (and the CLI's
//! `analytics query --json-expr`): a leaf is
//! `{"event": "active", "period": "D:2024-03-04"}` (period `"U"`: the unique
//! event), an operator `{"and": [...]}`, `{"or": [...]}`, `{"xor": [...]}`,
//! `{"one": [...]}`, `{"diff": [first, minus, ...]}`, `{"not": e}` (only
//! inside an `and`) or `{"at_least": n, "of": [...]}`.

use serde_json::{Value, json};

use super::Period;
use super::expr::Expr;
use crate::error::{Error, Result};

fn bad(why: String) -> Error {
    Error::invalid("expression", why)
}

fn list(v: &Value, op: &str) -> Result<Vec<Expr>> {
    v.as_array()
        .ok_or_else(|| bad(format!("`{op}` takes a list of expressions")))?
        .iter()
        .map(Expr::from_json)
        .collect()
}

impl Expr {
    /// Reads the JSON form (above); checked when it is queried.
    ///
    /// ```
    /// use redis_patterns::analytics::Expr;
    /// use serde_json::json;
    ///
    /// let e = Expr::from_json(&json!({"and": [
    ///     {"event": "active", "period": "D:2024-03-04"},
    ///     {"not": {"event": "churned", "period": "U"}}
    /// ]}))?;
    /// assert_eq!(e.to_string(), "(active@D:2024-03-04 AND NOT churned@U)");
    /// assert_eq!(Expr::from_json(&e.to_json())?, e);
    /// # Ok::<(), redis_patterns::Error>(())
    /// ```
    pub fn from_json(v: &Value) -> Result<Expr> {
        let Some(o) = v.as_object() else {
            return Err(bad(format!("{v} is not an object")));
        };
        if let Some(event) = o.get("event") {
            let (Some(event), Some(period)) =
                (event.as_str(), o.get("period").and_then(Value::as_str))
            else {
                return Err(bad(format!(
                    "{v}: an event takes a name and a period label"
                )));
            };
            return Ok(match period {
                "U" => Expr::unique(event),
                label => Expr::event(event, label.parse::<Period>()?),
            });
        }
        if let Some(n) = o.get("at_least") {
            let n = n
                .as_u64()
                .ok_or_else(|| bad(format!("{v}: at_least takes a count")))?;
            let of = o.get("of").unwrap_or(&Value::Null);
            return Ok(Expr::AtLeast(n as usize, list(of, "of")?));
        }
        let (op, arg) = match o.iter().next() {
            Some((k, a)) if o.len() == 1 => (k.as_str(), a),
            _ => return Err(bad(format!("{v}: one operator per object"))),
        };
        Ok(match op {
            "and" => Expr::And(list(arg, op)?),
            "or" => Expr::Or(list(arg, op)?),
            "xor" => Expr::Xor(list(arg, op)?),
            "one" => Expr::One(list(arg, op)?),
            "not" => Expr::Not(Box::new(Expr::from_json(arg)?)),
            "diff" => {
                let mut v = list(arg, op)?;
                if v.is_empty() {
                    return Err(bad("`diff` of nothing".into()));
                }
                let first = v.remove(0);
                Expr::Diff(Box::new(first), v)
            }
            other => return Err(bad(format!("unknown operator `{other}`"))),
        })
    }

    /// The JSON form (above).
    pub fn to_json(&self) -> Value {
        let all = |v: &[Expr]| Value::Array(v.iter().map(Expr::to_json).collect());
        match self {
            Expr::Event { event, period } => json!({
                "event": event,
                "period": period.map_or_else(|| "U".to_string(), |p| p.label()),
            }),
            Expr::And(v) => json!({ "and": all(v) }),
            Expr::Or(v) => json!({ "or": all(v) }),
            Expr::Xor(v) => json!({ "xor": all(v) }),
            Expr::One(v) => json!({ "one": all(v) }),
            Expr::Not(e) => json!({ "not": e.to_json() }),
            Expr::Diff(a, rest) => {
                let mut v = vec![a.to_json()];
                v.extend(rest.iter().map(Expr::to_json));
                json!({ "diff": v })
            }
            Expr::AtLeast(n, v) => json!({ "at_least": n, "of": all(v) }),
        }
    }
}
