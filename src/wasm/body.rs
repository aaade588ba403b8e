//! The request bodies the worker checks itself (a device's configuration, an
//! operator's `forget`), read by the core's one JSON reader (`dedupe::json`), so they
//! follow the rules of every other body: `readObject`.

use crate::dedupe::error::Error;
use crate::dedupe::json::{number_scalar, read_object, Json};
use crate::dedupe::reading::Scalar;
use serde::Serialize;
use tsify::Tsify;
use wasm_bindgen::prelude::*;

use super::js_value::{type_name, u8_arg};
use super::{to_js, to_value};

/// What `readObject` makes of a body: its members in body order, or why its shape is
/// not the one asked for (`refused`: not an object, an unknown member, one given twice).
#[derive(Serialize, Tsify)]
#[serde(untagged)]
pub enum ObjectBody {
    Members { members: Vec<BodyMember> },
    Refused { refused: String },
}

/// One member of a body read by `readObject`.
#[derive(Serialize, Tsify)]
pub struct BodyMember {
    /// The member's name.
    name: String,
    /// The JSON type of the value.
    #[tsify(type = r#""null" | "boolean" | "number" | "string" | "array" | "object""#)]
    kind: &'static str,
    /// The value of a boolean, a number (the nearest double: `1e400` is Infinity,
    /// which is not `whole`) or a string; absent for null, an array or an object.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[tsify(optional)]
    value: Option<BodyScalar>,
    /// A number whose text is a whole number, decided by its digits as the core
    /// decides for `seq` (`1.0`, `1e3` and `-0` are; `1.5`, `1e-400` and
    /// `100.000000000000001` are not).
    whole: bool,
    /// The value as written in the body.
    text: String,
}

/// A scalar member's value.
#[derive(Serialize, Tsify)]
#[serde(untagged)]
pub enum BodyScalar {
    Bool(bool),
    Number(f64),
    Text(String),
}

/// Reads `body` (UTF-8 bytes) as a JSON object of no other members than `members`
/// (their names), none given twice. Returns an {@link ObjectBody}. Throws
/// `invalid_json` for a body that is not JSON by the rules of every request body (a
/// byte order mark, bytes that are not UTF-8, a lone surrogate escape, nesting over
/// 128 levels, a member given twice deeper in it), or `invalid_burst` for arguments
/// of another type.
#[wasm_bindgen(js_name = readObject, unchecked_return_type = "ObjectBody")]
pub fn read_object_js(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array")] body: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string[]")] members: JsValue,
) -> Result<JsValue, JsValue> {
    let bytes = u8_arg(&body, "the body").unwrap_or_else(|| {
        Err(to_js(Error::BadArgument(format!(
            "the body must be a Uint8Array, got {}",
            type_name(&body)
        ))))
    })?;
    let names: Vec<String> = serde_wasm_bindgen::from_value(members).map_err(|e| {
        to_js(Error::BadArgument(format!(
            "the members must be an array of names: {e}"
        )))
    })?;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let out = match read_object(&bytes, &names).map_err(to_js)? {
        Err(refused) => ObjectBody::Refused { refused },
        Ok(list) => ObjectBody::Members {
            members: list
                .into_iter()
                .map(|m| member(m.name.into_owned(), &m.value, m.text))
                .collect(),
        },
    };
    to_value(&out)
}

/// A member's value for JavaScript.
fn member(name: String, value: &Json<'_>, text: &str) -> BodyMember {
    let (kind, value, whole) = match value {
        Json::Null => ("null", None, false),
        Json::Bool(b) => ("boolean", Some(BodyScalar::Bool(*b)), false),
        Json::Str(s) => ("string", Some(BodyScalar::Text(s.to_string())), false),
        Json::Array(_) => ("array", None, false),
        Json::Object(_) => ("object", None, false),
        Json::Number(n) => {
            let (number, whole) = match number_scalar(n) {
                Scalar::Int(i) => (i as f64, true),
                Scalar::Float(f) => (f, f.is_finite() && f.fract() == 0.0),
                Scalar::Fractional(f) => (f, false),
                // `number_scalar` makes numbers only.
                _ => (f64::NAN, false),
            };
            ("number", Some(BodyScalar::Number(number)), whole)
        }
    };
    BodyMember {
        name,
        kind,
        value,
        whole,
        text: text.to_owned(),
    }
}
