//! The model file's JSON dialect: standard JSON plus what DxDispatch's parser (RapidJSON with
//! comments and trailing commas enabled) also takes, `//` and `/* */` comments and a comma
//! before `]` or `}`. A pre-pass blanks those out, keeping every byte offset, so that
//! `serde_json` parses the rest and its line and column numbers point into the file as written.
//! Text after the first value is not read, as DxDispatch stops there. Nesting is bounded by `serde_json`'s recursion limit: a hostile file cannot exhaust the stack.

use anyhow::{anyhow, Result};
use serde_json::Value;

/// Parses `text` (the model's contents) as DxDispatch does.
pub fn parse(text: &str) -> Result<Value> {
    let cleaned = blank_extensions(text).map_err(|(line, col, what)| anyhow!("line {line}, column {col}: {what}"))?;
    // Like DxDispatch's parser, stop after the first value: what follows it is not read.
    let mut values = serde_json::Deserializer::from_str(&cleaned).into_iter::<Value>();
    match values.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(anyhow!("line {}, column {}: {}", e.line(), e.column(), describe(&e))),
        None => Err(anyhow!("the file holds no JSON value")),
    }
}

/// serde_json's message without its own " at line L column C" suffix.
fn describe(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// `text` with comments and trailing commas replaced by spaces (newlines kept), or where an
/// unterminated comment starts (line, column, message).
fn blank_extensions(text: &str) -> Result<String, (usize, usize, &'static str)> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    // The position of the last comma outside strings not yet followed by a value.
    let mut pending_comma: Option<usize> = None;
    // The last byte outside comments and whitespace: a comma right after `[`, `{`, `:` or
    // another comma follows no value, and is left for the parser to refuse.
    let mut prev = b' ';
    let position = |at: usize| {
        let before = &b[..at];
        let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
        let col = at - before.iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1) + 1;
        (line, col)
    };
    while i < b.len() {
        match b[i] {
            b'"' => {
                pending_comma = None;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                prev = b'"';
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let start = i;
                let Some(len) = text[i + 2..].find("*/") else {
                    let (line, col) = position(start);
                    return Err((line, col, "a /* comment is never closed"));
                };
                let end = i + 2 + len + 2;
                for c in &mut out[i..end] {
                    if *c != b'\n' && *c != b'\r' {
                        *c = b' ';
                    }
                }
                i = end;
            }
            b',' => {
                pending_comma = (!matches!(prev, b'[' | b'{' | b':' | b',')).then_some(i);
                prev = b',';
                i += 1;
            }
            c @ (b']' | b'}') => {
                if let Some(c) = pending_comma.take() {
                    out[c] = b' ';
                }
                prev = c;
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            c => {
                pending_comma = None;
                prev = c;
                i += 1;
            }
        }
    }
    // Only ASCII bytes outside strings were replaced by ASCII spaces: still UTF-8.
    String::from_utf8(out).map_err(|_| (1, 1, "the file is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_and_trailing_commas_are_accepted() {
        let v = parse("// head\n{ \"a\": [1, 2, /* two */ ], \"s\": \"// not a comment, \", }\n").unwrap();
        assert_eq!(v, json!({"a": [1, 2], "s": "// not a comment, "}));
        let v = parse("{\"a\": \"x\\\" ,}\" , }").unwrap();
        assert_eq!(v, json!({"a": "x\" ,}"}));
    }

    #[test]
    fn errors_point_into_the_file_as_written() {
        let e = parse("{\n  // c\n  \"a\": [1 2]\n}").unwrap_err().to_string();
        assert!(e.starts_with("line 3, column"), "{e}");
        let e = parse("{ /* open").unwrap_err().to_string();
        assert_eq!(e, "line 1, column 3: a /* comment is never closed");
        // A lone comma is still an error: only one before a closing bracket is dropped.
        assert!(parse("[,]").is_err());
        assert!(parse("[1,,]").is_err());
        assert!(parse("  // only a comment").is_err());
    }

    #[test]
    fn text_after_the_model_is_not_read() {
        assert_eq!(parse("{\"a\": 1} trailing words").unwrap(), json!({"a": 1}));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert!(parse(&deep).is_err());
    }
}
