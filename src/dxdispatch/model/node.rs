//! Walking a model's JSON: a value with the key path that reached it, read as the type a key
//! needs, and the errors that name that path.

use anyhow::{anyhow, Result};
use serde_json::{Map, Value};

/// A JSON value and the key path that reached it, for messages.
#[derive(Clone, Copy)]
pub(super) struct Node<'a, 'p> {
    pub(super) v: &'a Value,
    pub(super) path: &'p str,
}

/// An error about the value at `path`.
pub(super) fn err(path: &str, msg: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("{path}: {msg}")
}

/// `parent.key`, or `key` at the top.
pub(super) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

impl<'a> Node<'a, '_> {
    pub(super) fn object(&self) -> Result<&'a Map<String, Value>> {
        self.v.as_object().ok_or_else(|| err(self.path, format!("expected an object, found {}", kind(self.v))))
    }
    pub(super) fn str(&self) -> Result<&'a str> {
        self.v.as_str().ok_or_else(|| err(self.path, format!("expected a string, found {}", kind(self.v))))
    }
    pub(super) fn array(&self) -> Result<&'a Vec<Value>> {
        self.v.as_array().ok_or_else(|| err(self.path, format!("expected an array, found {}", kind(self.v))))
    }
    pub(super) fn u64(&self) -> Result<u64> {
        self.v.as_u64().ok_or_else(|| err(self.path, format!("expected an unsigned integer, found {}", show(self.v))))
    }
    pub(super) fn u32(&self) -> Result<u32> {
        let n = self.u64()?;
        u32::try_from(n).map_err(|_| err(self.path, format!("{n} does not fit in 32 bits (at most 4294967295)")))
    }
    pub(super) fn u32_array(&self) -> Result<Vec<u32>> {
        let items = self.array()?;
        items.iter().enumerate().map(|(i, v)| Node { v, path: &format!("{}[{i}]", self.path) }.u32()).collect()
    }
}

/// What kind of JSON value `v` is, for a message.
pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value for a message: short ones as written, long ones by kind.
pub(super) fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 40 {
        s
    } else {
        kind(v).to_string()
    }
}

/// `obj[key]` with its path, if present.
pub(super) fn get<'a>(obj: &'a Map<String, Value>, parent: &str, key: &str) -> Option<(&'a Value, String)> {
    obj.get(key).map(|v| (v, join(parent, key)))
}

/// `obj[key]` with its path, an error if absent.
pub(super) fn required<'a>(obj: &'a Map<String, Value>, parent: &str, key: &str) -> Result<(&'a Value, String)> {
    get(obj, parent, key).ok_or_else(|| err(&join(parent, key), "required, but missing"))
}
