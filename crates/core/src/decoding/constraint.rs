//! What the output must be: JSON that matches a schema, any JSON object, or text a grammar
//! accepts (the server's `response_format`, the CLI's `--json-schema` and `--grammar`). The engine
//! compiles it with llguidance and masks the target's choices with it, drafting what it forces;
//! here it is only text, checked for size and form before anything runs.

use serde::{Deserialize, Serialize};

/// The longest schema or grammar taken, in bytes: far more than any real one (llguidance also
/// bounds what compiling and matching it may cost).
pub const MAX_CONSTRAINT_BYTES: usize = 1 << 20;

/// A constraint on the output.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Constraint {
    /// JSON that matches this JSON Schema (its text).
    JsonSchema { schema: String },
    /// Any JSON object (OpenAI's `json_object`).
    JsonObject,
    /// Text this grammar accepts: llguidance's Lark dialect (`start: …`), which also takes
    /// regular expressions (`/…/`) and JSON schemas inside (`%json {…}`).
    Lark { grammar: String },
}

impl Constraint {
    /// What is wrong with it before it is compiled: too long, or a schema that is not JSON (an
    /// object or a boolean).
    pub fn problem(&self) -> Option<String> {
        let text = match self {
            Constraint::JsonSchema { schema } => schema,
            Constraint::JsonObject => return None,
            Constraint::Lark { grammar } => grammar,
        };
        if text.len() > MAX_CONSTRAINT_BYTES {
            return Some(format!(
                "is {} KiB, but a schema or grammar may have at most {} KiB",
                text.len() >> 10,
                MAX_CONSTRAINT_BYTES >> 10
            ));
        }
        match self {
            Constraint::JsonSchema { schema } => match serde_json::from_str::<serde_json::Value>(schema) {
                Ok(serde_json::Value::Object(_) | serde_json::Value::Bool(_)) => None,
                Ok(_) => Some("is not a JSON Schema: a schema is a JSON object (or true/false)".into()),
                Err(e) => Some(format!("is not JSON: {e}")),
            },
            Constraint::Lark { grammar } if grammar.trim().is_empty() => Some("is an empty grammar".into()),
            _ => None,
        }
    }

    /// How reports and errors name it.
    pub fn describe(&self) -> &'static str {
        match self {
            Constraint::JsonSchema { .. } => "JSON matching a schema",
            Constraint::JsonObject => "a JSON object",
            Constraint::Lark { .. } => "text a grammar accepts",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_must_be_a_json_object_of_bounded_size() {
        let schema = |s: &str| Constraint::JsonSchema { schema: s.into() };
        assert_eq!(schema(r#"{"type": "object"}"#).problem(), None);
        assert_eq!(schema("true").problem(), None);
        assert!(schema("[1, 2]").problem().unwrap().contains("JSON object"));
        assert!(schema("{nope").problem().unwrap().contains("not JSON"));
        let huge = format!(r#"{{"description": "{}"}}"#, "x".repeat(MAX_CONSTRAINT_BYTES));
        assert!(schema(&huge).problem().unwrap().contains("at most 1024 KiB"));
        assert!(Constraint::Lark { grammar: " \n".into() }.problem().unwrap().contains("empty"));
        assert_eq!(Constraint::JsonObject.problem(), None);
    }

    #[test]
    fn travels_as_tagged_json() {
        let c = Constraint::JsonSchema { schema: "{}".into() };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v, serde_json::json!({"kind": "json_schema", "schema": "{}"}));
        assert_eq!(serde_json::from_value::<Constraint>(v).unwrap(), c);
        assert_eq!(
            serde_json::from_value::<Constraint>(serde_json::json!({"kind": "json_object"})).unwrap(),
            Constraint::JsonObject
        );
    }
}
