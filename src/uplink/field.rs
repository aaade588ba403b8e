//! Where a reading's `seq`, `ts` and `fill_pct` are found in a decoded payload:
//! [`FieldNames`], three [`FieldPath`]s.
//!
//! A path is a member name (`fill_pct`, `fillLevel`; any text that does not start
//! with `/`), or an RFC 6901 JSON Pointer (`/level/fill_pct`, `/levels/0`), because
//! codecs nest their output: `{"level": {"fill_pct": 62}}`. A pointer is evaluated
//! from the decoded payload object (or from each element of its `readings` array);
//! a token reads a member of an object, or an element of an array when it is an
//! index (`0`, `17`; no sign, no leading zero). A pointer whose `~` is not followed
//! by `0` or `1` is malformed: [`Error::InvalidConfig`], reported when the worker
//! starts, never per reading.

use crate::dedupe::error::Error;
use crate::dedupe::json::{Json, Object};
use std::fmt;

/// A member name, or a JSON Pointer into the decoded payload (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    /// As configured: what messages name.
    text: String,
    /// The pointer's unescaped tokens; a member name is its one token.
    tokens: Vec<String>,
}

impl FieldPath {
    /// A path from its configured text.
    ///
    /// ```
    /// use reconnect_dedupe::uplink::FieldPath;
    /// assert!(FieldPath::parse("fillLevel").is_ok());
    /// assert!(FieldPath::parse("/level/fill_pct").is_ok());
    /// assert_eq!(FieldPath::parse("/level~2").unwrap_err().code(), "invalid_config");
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an empty text or a malformed pointer.
    pub fn parse(text: &str) -> Result<FieldPath, Error> {
        let Some(pointer) = text.strip_prefix('/') else {
            if text.is_empty() {
                return Err(Error::InvalidConfig(
                    "a field name must not be empty".into(),
                ));
            }
            return Ok(FieldPath::member(text));
        };
        let tokens = pointer
            .split('/')
            .map(unescape)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "{text:?} is not a JSON Pointer (RFC 6901): \"~\" must be followed by \
                     0 (for \"~\") or 1 (for \"/\")"
                ))
            })?;
        Ok(FieldPath {
            text: text.to_owned(),
            tokens,
        })
    }

    /// The member `name` of the decoded payload, taken literally.
    pub fn member(name: &str) -> FieldPath {
        FieldPath {
            text: name.to_owned(),
            tokens: vec![name.to_owned()],
        }
    }

    /// The path as configured.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The value at this path below `root`, if there is one.
    pub(super) fn find<'a>(&self, root: &'a Object<'a>) -> Option<&'a Json<'a>> {
        let (first, rest) = self.tokens.split_first()?;
        rest.iter().try_fold(root.get(first)?, |v, token| match v {
            Json::Object(o) => o.get(token),
            Json::Array(items) => index(token).and_then(|i| items.get(i)),
            _ => None,
        })
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `~1` → `/`, `~0` → `~`; `None` for any other `~`.
fn unescape(token: &str) -> Option<String> {
    if !token.contains('~') {
        return Some(token.to_owned());
    }
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('~'),
            Some('1') => out.push('/'),
            _ => return None,
        }
    }
    Some(out)
}

/// An RFC 6901 array index: `0`, or digits without a leading zero.
fn index(token: &str) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

/// Where the decoded payload holds each of a reading's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldNames {
    pub seq: FieldPath,
    pub ts: FieldPath,
    pub fill_pct: FieldPath,
}

impl Default for FieldNames {
    fn default() -> Self {
        FieldNames {
            seq: FieldPath::member("seq"),
            ts: FieldPath::member("ts"),
            fill_pct: FieldPath::member("fill_pct"),
        }
    }
}

impl FieldNames {
    /// The default names, each overridden by a configured path when given.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the option (`seqField`, `tsField`,
    /// `fillField`) whose path is empty or malformed.
    pub fn new(seq: Option<&str>, ts: Option<&str>, fill_pct: Option<&str>) -> Result<Self, Error> {
        let base = FieldNames::default();
        let path = |given: Option<&str>, option: &str, dflt: FieldPath| match given {
            None => Ok(dflt),
            Some(text) => FieldPath::parse(text).map_err(|e| match e {
                Error::InvalidConfig(why) => Error::InvalidConfig(format!("{option}: {why}")),
                other => other,
            }),
        };
        Ok(FieldNames {
            seq: path(seq, "seqField", base.seq)?,
            ts: path(ts, "tsField", base.ts)?,
            fill_pct: path(fill_pct, "fillField", base.fill_pct)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{with, CHIRPSTACK};
    use super::super::{plan, Format};
    use super::*;
    use crate::dedupe::json::{self, Reader};
    use serde_json::json;

    fn at(path: &str, body: &str) -> Option<String> {
        let root = json::read(body.as_bytes(), Reader::value).unwrap();
        let p = FieldPath::parse(path).unwrap();
        p.find(root.as_object().unwrap()).map(|v| format!("{v:?}"))
    }

    #[test]
    fn member_names_are_literal_and_pointers_descend() {
        let body = r#"{"a/b": 1, "level": {"fill_pct": 62, "m~n": 3, "": 4},
                       "levels": [10, 20], "x": "s"}"#;
        assert!(at("a/b", body).unwrap().contains('1'));
        assert!(at("/level/fill_pct", body).unwrap().contains("62"));
        assert!(at("/level/m~0n", body).unwrap().contains('3'));
        assert!(at("/level/", body).unwrap().contains('4'));
        assert!(at("/a~1b", body).unwrap().contains('1'));
        assert!(at("/levels/1", body).unwrap().contains("20"));
        for missing in [
            "/levels/01",
            "/levels/2",
            "/levels/-",
            "/levels/+1",
            "/x/0",
            "/nope",
            "level",
        ] {
            let found = at(missing, body);
            assert!(
                found.is_none() || missing == "level",
                "{missing}: {found:?}"
            );
        }
        assert!(at("level", body).unwrap().starts_with("Object"));
    }

    #[test]
    fn malformed_paths_are_configuration_errors() {
        for bad in ["", "/a~", "/a~2", "/~x/b"] {
            assert_eq!(
                FieldPath::parse(bad).unwrap_err().code(),
                "invalid_config",
                "{bad:?}"
            );
        }
        let e = FieldNames::new(None, None, Some("/level~")).unwrap_err();
        assert!(e.to_string().contains("fillField"), "{e}");
        let n = FieldNames::new(Some("/c/0"), None, None).unwrap();
        assert_eq!(n.seq.as_str(), "/c/0");
        assert_eq!(n.ts, FieldNames::default().ts);
    }

    #[test]
    fn json_pointers_read_nested_decoder_output() {
        let names = FieldNames::new(
            Some("/counter/value"),
            Some("/time"),
            Some("/level/fill_pct"),
        )
        .unwrap();
        let body = with(
            CHIRPSTACK,
            &["object"],
            json!({"level": {"fill_pct": 62}, "counter": {"value": 7}, "time": "2026-07-16T09:00:00Z"}),
        );
        let p = plan(Format::ChirpStack, body.as_bytes(), &names, 10).unwrap();
        let r = &p.devices[0].readings[0];
        assert_eq!((r.seq, r.fill_pct, r.frame.clone()), (7, 62.0, None));
        // The hint names the configured path.
        let p = plan(Format::ChirpStack, CHIRPSTACK.as_bytes(), &names, 10).unwrap();
        assert!(
            p.rejected[0]
                .rejection
                .message
                .contains("no \"/level/fill_pct\""),
            "{}",
            p.rejected[0].rejection.message
        );
    }
}
