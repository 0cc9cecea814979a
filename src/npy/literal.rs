//! The Python literals of `.npy` headers, parsed in one left-to-right pass: dicts, lists,
//! tuples, strings (single or double quoted, with Python's backslash escapes), integers, `True`,
//! `False` and `None`; the values are `py_literal`'s. A hand-written parser rather than
//! `py_literal`'s own, whose backtracking grammar re-parses the last element of every list,
//! tuple and dict, so its time doubles (nearly triples for braces) with each nesting level: a
//! 200-byte header of nested brackets took minutes. Here every byte is looked at a bounded number
//! of times, nesting is limited to [`MAX_DEPTH`] levels (bounded recursion), and integers to
//! [`MAX_DIGITS`] digits (decimal conversion is quadratic).
//!
//! Whitespace between tokens is what `py_literal` accepts (space, tab, form feed). Floats,
//! complex numbers, bytes, sets, triple-quoted strings and `\N{...}` escapes never occur in a
//! `.npy` header and are refused.

use num_bigint::BigInt;
use py_literal::Value;

/// Deepest nesting of dicts, lists and tuples accepted. A NumPy header nests a few levels (the
/// dict, a record dtype's field list and field tuples, nested records, subarray shapes).
pub const MAX_DEPTH: usize = 32;

/// Longest integer accepted, in digits (Python's own limit for converting text to `int`).
pub const MAX_DIGITS: usize = 4300;

/// Parses `text`, which must hold exactly one literal (surrounding whitespace aside). The error
/// says what was wrong and at which character (counting from 1).
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser { text, pos: 0 };
    let value = p.value(0).and_then(|v| {
        p.skip_ws();
        match p.peek() {
            None => Ok(v),
            Some(_) => Err("unexpected text after the literal".to_string()),
        }
    });
    value.map_err(|e| format!("character {}: {e}", text[..p.pos].chars().count() + 1))
}

struct Parser<'a> {
    text: &'a str,
    /// Byte offset of the next unread character (always on a character boundary).
    pos: usize,
}

type Res<T> = Result<T, String>;

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\x0c')) {
            self.pos += 1;
        }
    }

    /// One value; `depth` containers enclose it.
    fn value(&mut self, depth: usize) -> Res<Value> {
        self.skip_ws();
        match self.peek() {
            Some(b'{' | b'[' | b'(') if depth >= MAX_DEPTH => {
                Err(format!("dicts, lists and tuples nested more than {MAX_DEPTH} levels deep"))
            }
            Some(b'{') => self.dict(depth + 1),
            Some(b'[') => self.sequence(b']', depth + 1).map(|(items, _)| Value::List(items)),
            Some(b'(') => match self.sequence(b')', depth + 1)? {
                (items, comma) if comma || items.is_empty() => Ok(Value::Tuple(items)),
                _ => Err("a parenthesized value without a comma is not a tuple".into()),
            },
            Some(q @ (b'\'' | b'"')) => self.string(q),
            Some(b'+' | b'-' | b'0'..=b'9') => self.integer(),
            Some(c) if c.is_ascii_alphabetic() => self.word(),
            Some(_) => Err("expected a value".into()),
            None => Err("the text ends where a value was expected".into()),
        }
    }

    /// Items up to `close`, comma-separated, a trailing comma allowed. Also returns whether any
    /// comma was seen (a one-element tuple needs one).
    fn sequence(&mut self, close: u8, depth: usize) -> Res<(Vec<Value>, bool)> {
        self.pos += 1;
        let (mut items, mut comma) = (Vec::new(), false);
        loop {
            self.skip_ws();
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok((items, comma));
            }
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    comma = true;
                }
                Some(c) if c == close => {}
                _ => return Err(format!("expected ',' or '{}'", char::from(close))),
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Res<Value> {
        self.pos += 1;
        let mut entries = Vec::new();
        loop {
            self.skip_ws();
            if self.peek() == Some(b'}') {
                self.pos += 1;
                return Ok(Value::Dict(entries));
            }
            let key = self.value(depth)?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err("expected ':' after a dict key".into());
            }
            self.pos += 1;
            let value = self.value(depth)?;
            entries.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err("expected ',' or '}'".into()),
            }
        }
    }

    /// A string quoted by `q`, escapes interpreted as Python does.
    fn string(&mut self, q: u8) -> Res<Value> {
        let bytes = self.text.as_bytes();
        if bytes[self.pos..].starts_with(&[q, q, q]) {
            return Err("triple-quoted strings are not accepted in a .npy header".into());
        }
        self.pos += 1;
        let mut out = String::new();
        loop {
            // Copy up to the next quote, backslash or line end; all are ASCII, so the slice
            // boundaries are character boundaries.
            let run = bytes[self.pos..].iter().position(|&b| b == q || matches!(b, b'\\' | b'\n' | b'\r'));
            let Some(run) = run else { return Err("unterminated string".into()) };
            out.push_str(&self.text[self.pos..self.pos + run]);
            self.pos += run;
            match bytes[self.pos] {
                b'\\' => self.escape(&mut out)?,
                b'\n' | b'\r' => return Err("a line break inside a string".into()),
                _ => {
                    self.pos += 1;
                    return Ok(Value::String(out));
                }
            }
        }
    }

    /// The escape sequence at `pos` (a backslash), appended to `out`.
    fn escape(&mut self, out: &mut String) -> Res<()> {
        let bytes = self.text.as_bytes();
        let Some(&c) = bytes.get(self.pos + 1) else { return Err("unterminated string".into()) };
        self.pos += 2;
        let simple = match c {
            b'\\' => Some('\\'),
            b'\'' => Some('\''),
            b'"' => Some('"'),
            b'a' => Some('\x07'),
            b'b' => Some('\x08'),
            b'f' => Some('\x0c'),
            b'n' => Some('\n'),
            b'r' => Some('\r'),
            b't' => Some('\t'),
            b'v' => Some('\x0b'),
            _ => None,
        };
        if let Some(ch) = simple {
            out.push(ch);
            return Ok(());
        }
        let digits = |p: &Self, n: usize, radix: u32| -> Res<u32> {
            let s = p.text.get(p.pos..p.pos + n).filter(|s| s.chars().all(|ch| ch.is_digit(radix)));
            let s = s.ok_or_else(|| format!("a '\\{}' escape needs {n} hexadecimal digits", char::from(c)))?;
            u32::from_str_radix(s, radix).map_err(|e| e.to_string())
        };
        let code = match c {
            // Line continuation: the backslash and the line break vanish.
            b'\n' => return Ok(()),
            b'\r' => {
                if self.peek() == Some(b'\n') {
                    self.pos += 1;
                }
                return Ok(());
            }
            b'0'..=b'7' => {
                let n = 1 + bytes[self.pos..].iter().take(2).take_while(|b| (b'0'..=b'7').contains(b)).count();
                self.pos -= 1;
                let v = u32::from_str_radix(&self.text[self.pos..self.pos + n], 8).map_err(|e| e.to_string())?;
                self.pos += n;
                return push_code(out, v);
            }
            b'x' => (2, digits(self, 2, 16)?),
            b'u' => (4, digits(self, 4, 16)?),
            b'U' => (8, digits(self, 8, 16)?),
            b'N' => return Err("'\\N{...}' escapes are not accepted in a .npy header".into()),
            _ => {
                // An unknown escape keeps its backslash, as in Python. `c` may start a
                // multi-byte character: step back and copy that character whole.
                self.pos -= 1;
                let ch = self.text[self.pos..].chars().next().ok_or("unterminated string")?;
                out.push('\\');
                out.push(ch);
                self.pos += ch.len_utf8();
                return Ok(());
            }
        };
        self.pos += code.0;
        push_code(out, code.1)
    }

    /// An integer: signs, then decimal digits (single underscores between them allowed).
    fn integer(&mut self) -> Res<Value> {
        let mut negative = false;
        while let Some(s @ (b'+' | b'-')) = self.peek() {
            negative ^= s == b'-';
            self.pos += 1;
            self.skip_ws();
        }
        let bytes = self.text.as_bytes();
        let start = self.pos;
        while let Some(&b) = bytes.get(self.pos) {
            let digit_after_underscore =
                b == b'_' && self.pos > start && bytes.get(self.pos + 1).is_some_and(u8::is_ascii_digit);
            if !(b.is_ascii_digit() || digit_after_underscore) {
                break;
            }
            self.pos += 1;
        }
        if self.pos == start {
            return Err("expected digits".into());
        }
        if matches!(self.peek(), Some(b) if b.is_ascii_alphanumeric() || b == b'.' || b == b'_') {
            return Err("only decimal integers are accepted as numbers in a .npy header".into());
        }
        let digits: Vec<u8> = bytes[start..self.pos].iter().copied().filter(|&b| b != b'_').collect();
        if digits.len() > MAX_DIGITS {
            return Err(format!("an integer of more than {MAX_DIGITS} digits"));
        }
        let n = BigInt::parse_bytes(&digits, 10).ok_or("invalid integer")?;
        Ok(Value::Integer(if negative { -n } else { n }))
    }

    fn word(&mut self) -> Res<Value> {
        let bytes = self.text.as_bytes();
        let len = bytes[self.pos..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        let value = match &self.text[self.pos..self.pos + len] {
            "True" => Value::Boolean(true),
            "False" => Value::Boolean(false),
            "None" => Value::None,
            _ => return Err("expected a value (names other than True, False and None are not literals)".into()),
        };
        self.pos += len;
        Ok(value)
    }
}

fn push_code(out: &mut String, code: u32) -> Res<()> {
    let ch = char::from_u32(code).ok_or_else(|| format!("escape of an invalid code point U+{code:X}"))?;
    out.push(ch);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    fn int(n: i64) -> Value {
        Value::Integer(n.into())
    }

    #[test]
    fn parses_what_numpy_writes() {
        let v = parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }").unwrap();
        let want = Value::Dict(vec![
            (s("descr"), s("<f4")),
            (s("fortran_order"), Value::Boolean(false)),
            (s("shape"), Value::Tuple(vec![int(2), int(3)])),
        ]);
        assert_eq!(v, want);
        assert_eq!(parse("()").unwrap(), Value::Tuple(vec![]));
        assert_eq!(parse("(5,)").unwrap(), Value::Tuple(vec![int(5)]));
        let fields = parse("[('x', '<f4', (2,)), (\"it's\", [('y', '|u1')])]").unwrap();
        let want = Value::List(vec![
            Value::Tuple(vec![s("x"), s("<f4"), Value::Tuple(vec![int(2)])]),
            Value::Tuple(vec![s("it's"), Value::List(vec![Value::Tuple(vec![s("y"), s("|u1")])])]),
        ]);
        assert_eq!(fields, want);
        assert_eq!(parse(" -12 ").unwrap(), int(-12));
        assert_eq!(parse("- -1_000").unwrap(), int(1000));
        assert_eq!(parse("None").unwrap(), Value::None);
        let big = parse("18446744073709551616").unwrap();
        assert_eq!(big, Value::Integer(BigInt::from(u64::MAX) + 1));
    }

    #[test]
    fn interprets_escapes_like_python() {
        assert_eq!(parse(r"'a\'b\\c\x41\u00e9\U0001F600\101\0\q'").unwrap(), s("a'b\\cAé😀A\0\\q"));
        assert_eq!(parse("'a\\\nb'").unwrap(), s("ab"));
        assert_eq!(parse("\"é'\"").unwrap(), s("é'"));
        assert_eq!(parse(r"'\é'").unwrap(), s("\\é"));
        assert_eq!(parse(r#"'\"\a\b\f\n\r\t\v'"#).unwrap(), s("\"\x07\x08\x0c\n\r\t\x0b"));
        // Line continuations: backslash then \n, \r\n or a lone \r; the line break vanishes.
        assert_eq!(parse("'a\\\r\nb\\\rc'").unwrap(), s("abc"));
        assert!(parse("'a\rb'").unwrap_err().contains("a line break inside a string"));
    }

    #[test]
    fn refuses_other_literals_and_malformed_text() {
        for bad in [
            "",
            "{",
            "{'a' 1}",
            "{'a': 1",
            "[1 2]",
            "(1)",
            "(,)",
            "'abc",
            "'a\nb'",
            "'''a'''",
            "1.5",
            "2j",
            "0x10",
            "3L",
            "b'x'",
            "{1, 2}",
            "nan",
            "'\\x4'",
            "'\\ud800'",
            "'\\N{DASH}'",
            "1 2",
            "{'a': 1}}",
            "1_",
            "_1",
            "-_1",
            "+ _1",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        let e = parse("{'a': [1, 2 3]}").unwrap_err();
        assert!(e.starts_with("character 13:"), "{e}");
        // The reason names what was found: a name that is not a literal, or no value at all.
        assert!(parse("{'a': inf}").unwrap_err().contains("names other than True, False and None"));
        let e = parse("{'a': @}").unwrap_err();
        assert!(e.ends_with("expected a value"), "{e}");
    }

    #[test]
    fn nesting_is_limited_and_linear() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(parse(&deep).unwrap_err().contains("nested more than"));
        assert!(parse(&"(".repeat(1 << 20)).is_err());
        // py_literal needed minutes for these (time doubling or tripling per level).
        let start = Instant::now();
        for (open, close) in [("[", "]"), ("{", "}"), ("(1, ", ")"), ("{1: ", "}")] {
            for closed in [true, false] {
                let text = format!("{}0{}", open.repeat(MAX_DEPTH), if closed { close } else { "" }.repeat(MAX_DEPTH));
                let _ = parse(&text);
            }
        }
        assert!(start.elapsed() < Duration::from_secs(1), "{:?}", start.elapsed());
    }

    #[test]
    fn long_integers_are_refused_before_conversion() {
        assert!(parse(&"9".repeat(MAX_DIGITS)).is_ok());
        assert!(parse(&"9".repeat(MAX_DIGITS + 1)).unwrap_err().contains("digits"));
    }
}
