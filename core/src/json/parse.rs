//! JSON text read natively (in a module with wasm-bindgen `JSON.parse`
//! reads it; the GRR module, without, reads none): a
//! strict RFC 8259 parser into a [`Value`] tree, whose objects keep their
//! keys in order (the last of a repeated key wins) and whose numbers keep
//! a whole number's exact `u64`, as serde_json reads them.

use crate::text::text;
use std::collections::BTreeMap;

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, and its exact value if it is written as a whole number in
    /// `0..2^64` (`2.0` is not: it is read as a float, and `-0` too).
    Number(f64, Option<u64>),
    /// A string.
    Text(String),
    /// An array.
    List(Vec<Value>),
    /// An object.
    Object(BTreeMap<String, Value>),
}

/// A serde_json value as the same text reads here (serde_json reads a
/// whole number's exact `u64` as this parser does).
#[cfg(feature = "serde")]
impl From<&serde_json::Value> for Value {
    fn from(value: &serde_json::Value) -> Value {
        match value {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN), n.as_u64()),
            serde_json::Value::String(s) => Value::Text(s.clone()),
            serde_json::Value::Array(items) => Value::List(items.iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), Value::from(v))).collect()),
        }
    }
}

/// Nesting deeper than this is refused (serde_json's limit), so hostile
/// text cannot exhaust the stack.
const DEPTH: usize = 128;

/// Parses one JSON value, with nothing but whitespace around it. The error
/// says what is wrong and where (`expected value at line 1 column 1`).
pub(crate) fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser { bytes: text.as_bytes(), at: 0 };
    let value = p.value(0)?;
    p.space();
    if p.at < p.bytes.len() {
        return Err(p.error("trailing characters"));
    }
    Ok(value)
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> String {
        let before = &self.bytes[..self.at.min(self.bytes.len())];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        text!(what, " at line ", line, " column ", column)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, String> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.error("expected value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        self.space();
        match self.peek() {
            None => Err(self.error("EOF while parsing a value")),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'"') => self.string().map(Value::Text),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'[' | b'{') if depth >= DEPTH => Err(self.error("recursion limit exceeded")),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.eat(b']') {
                    return Ok(Value::List(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.space();
                    if self.eat(b']') {
                        return Ok(Value::List(items));
                    }
                    if !self.eat(b',') {
                        return Err(self.error("expected `,` or `]`"));
                    }
                }
            }
            Some(b'{') => {
                self.at += 1;
                let mut object = BTreeMap::new();
                self.space();
                if self.eat(b'}') {
                    return Ok(Value::Object(object));
                }
                loop {
                    self.space();
                    if self.peek() != Some(b'"') {
                        return Err(self.error("key must be a string"));
                    }
                    let key = self.string()?;
                    self.space();
                    if !self.eat(b':') {
                        return Err(self.error("expected `:`"));
                    }
                    object.insert(key, self.value(depth + 1)?);
                    self.space();
                    if self.eat(b'}') {
                        return Ok(Value::Object(object));
                    }
                    if !self.eat(b',') {
                        return Err(self.error("expected `,` or `}`"));
                    }
                }
            }
            Some(_) => Err(self.error("expected value")),
        }
    }

    /// A string, its opening quote at `at`.
    fn string(&mut self) -> Result<String, String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let start = self.at;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.at += 1;
            }
            // The text is a `str`, and the run stops at ASCII bytes only.
            out.push_str(std::str::from_utf8(&self.bytes[start..self.at]).map_err(|_| self.error("invalid UTF-8"))?);
            match self.peek() {
                None => return Err(self.error("EOF while parsing a string")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let escaped = self.peek().ok_or_else(|| self.error("EOF while parsing a string"))?;
                    self.at += 1;
                    match escaped {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode_escape()?),
                        _ => return Err(self.error("invalid escape")),
                    }
                }
                Some(_) => return Err(self.error("control character (\\u0000-\\u001F) found while parsing a string")),
            }
        }
    }

    /// The character of a `\u` escape (after the `u`), a surrogate pair
    /// taking two.
    fn unicode_escape(&mut self) -> Result<char, String> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if !(self.eat(b'\\') && self.eat(b'u')) {
                    return Err(self.error("unexpected end of hex escape"));
                }
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.error("lone leading surrogate in hex escape"));
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.error("lone leading surrogate in hex escape")),
            code => code,
        };
        char::from_u32(code).ok_or_else(|| self.error("invalid unicode code point"))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.bytes.get(self.at..self.at + 4).ok_or_else(|| self.error("EOF while parsing a string"))?;
        let mut code = 0;
        for &d in digits {
            let digit = (d as char).to_digit(16).ok_or_else(|| self.error("invalid escape"))?;
            code = code * 16 + digit;
        }
        self.at += 4;
        Ok(code)
    }

    /// A number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Result<Value, String> {
        let start = self.at;
        let negative = self.eat(b'-');
        let digits = |p: &mut Self| {
            let from = p.at;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.at += 1;
            }
            p.at - from
        };
        let int_start = self.at;
        let int_digits = digits(self);
        if int_digits == 0 || (int_digits > 1 && self.bytes[int_start] == b'0') {
            return Err(self.error("invalid number"));
        }
        let mut whole = true;
        if self.eat(b'.') {
            whole = false;
            if digits(self) == 0 {
                return Err(self.error("invalid number"));
            }
        }
        if self.eat(b'e') || self.eat(b'E') {
            whole = false;
            let _ = self.eat(b'+') || self.eat(b'-');
            if digits(self) == 0 {
                return Err(self.error("invalid number"));
            }
        }
        // The text is ASCII digits and signs.
        let number = std::str::from_utf8(&self.bytes[start..self.at]).unwrap_or_default();
        if whole && !negative {
            if let Ok(n) = number.parse::<u64>() {
                return Ok(Value::Number(n as f64, Some(n)));
            }
        }
        match number.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Value::Number(x, None)),
            _ => Err(self.error("number out of range")),
        }
    }
}

#[cfg(all(test, feature = "serde"))]
mod tests {
    use super::*;

    /// The value serde_json reads, as this parser's tree.
    fn serde_tree(text: &str) -> Option<Value> {
        serde_json::from_str::<serde_json::Value>(text).ok().map(|v| Value::from(&v))
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let texts = [
            r#"{"protocol":"grr","epsilon":1,"domain":["a","b"],"x":null,"t":true,"f":false}"#,
            r#" [ 1 , -2 , 2.0 , -0 , 1e3 , 1.5E-7 , 18446744073709551615 , 18446744073709551616 , -9223372036854775809 ] "#,
            r#"{"a":{"b":[{}, []]},"a":"last wins"}"#,
            r#""\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00é""#,
            "0.1", "9007199254740993", "123456789012345678901234567890", "5e-324", "1.7976931348623157e308",
        ];
        for text in texts {
            assert_eq!(parse(text).ok(), serde_tree(text), "{text}");
        }
        let refused = [
            "", " ", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "nul", "[1 2]", "{1:2}", "\"\u{1}\"",
            "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "1e400", "[1] x", "NaN", "{\"a\" 1}", "\"abc",
        ];
        for text in refused {
            assert!(parse(text).is_err() && serde_tree(text).is_none(), "{text:?}");
        }
        let deep = "[".repeat(DEPTH) + &"]".repeat(DEPTH);
        assert!(parse(&deep).is_ok());
        let deeper = "[".repeat(DEPTH + 1) + &"]".repeat(DEPTH + 1);
        assert_eq!(parse(&deeper).unwrap_err(), "recursion limit exceeded at line 1 column 129");
        assert_eq!(parse("{\n  \"a\": ?}").unwrap_err(), "expected value at line 2 column 8");
    }
}
