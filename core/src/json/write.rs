//! JSON text written by hand: reports, a client's state and memos, the one
//! writer of both builds (so the client module links no serializer). Numbers
//! are written by [`number_text`] (`1.0`, `0.25`, `1e-7`) and strings escaped
//! as serde_json escapes them, so a text is the same natively and in wasm.

use crate::number::number_text;
use crate::text::{put, Hex};

/// JSON text being written; `exact` turns false when a value cannot be
/// carried (a non-finite number, or in the wasm build an integer above
/// 2^53, which JS would round). `last` keeps the last float written and its
/// text: a state's ledger repeats one ε, whose digits the wasm build
/// otherwise asks JS for again and again.
pub(crate) struct Writer {
    text: String,
    exact: bool,
    last: Option<(u64, String)>,
}

/// The largest integer a JS number holds exactly, 2^53 − 1: the largest a
/// JSON number carries from the module to JS and back unchanged.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A value that writes itself as JSON.
pub(crate) trait ToJson {
    /// Appends the value's JSON to `w`.
    fn write_json(&self, w: &mut Writer);
}

/// The value as JSON text; `None` if JSON cannot carry it exactly.
pub(crate) fn to_string<T: ToJson + ?Sized>(value: &T) -> Option<String> {
    let mut w = Writer { text: String::new(), exact: true, last: None };
    value.write_json(&mut w);
    w.exact.then_some(w.text)
}

impl Writer {
    /// Writes an object: `fields` adds its members ([`Members::field`]).
    pub(crate) fn object(&mut self, fields: impl FnOnce(&mut Members<'_>)) {
        self.text.push('{');
        fields(&mut Members { w: self, first: true });
        self.text.push('}');
    }

    /// Writes a string, escaped as JSON.
    pub(crate) fn string(&mut self, s: &str) {
        quote(&mut self.text, s, |c, out| match c {
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                out.push_str(if (c as u32) < 0x10 { "\\u000" } else { "\\u001" });
                put!(out, Hex(c as u64 & 0xf));
            }
            c => out.push(c),
        });
    }
}

/// `s` in double quotes, its quotes, backslashes, newlines, returns and
/// tabs escaped, and every other character written by `other` (JSON's
/// escapes and Rust's `{:?}` differ in the rest).
pub(crate) fn quote(out: &mut String, s: &str, other: impl Fn(char, &mut String)) {
    out.push('"');
    let mut rest = s;
    // Runs of printable ASCII other than quotes and backslashes (most of a
    // report's text) are copied whole.
    while let Some(at) = rest.bytes().position(|b| !(0x20..0x7f).contains(&b) || b == b'"' || b == b'\\') {
        out.push_str(&rest[..at]);
        let c = rest[at..].chars().next().unwrap_or_default();
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => other(c, out),
        }
        rest = &rest[at + c.len_utf8()..];
    }
    out.push_str(rest);
    out.push('"');
}

/// The members of an object being written.
pub(crate) struct Members<'a> {
    w: &'a mut Writer,
    first: bool,
}

impl Members<'_> {
    /// Writes `"key":value`.
    pub(crate) fn field<T: ToJson + ?Sized>(&mut self, key: &str, value: &T) {
        if !self.first {
            self.w.text.push(',');
        }
        self.first = false;
        self.w.string(key);
        self.w.text.push(':');
        value.write_json(self.w);
    }
}

impl ToJson for u64 {
    fn write_json(&self, w: &mut Writer) {
        if cfg!(all(target_arch = "wasm32", target_os = "unknown")) && *self > MAX_SAFE_INTEGER {
            w.exact = false;
        }
        put!(&mut w.text, *self);
    }
}

impl ToJson for f64 {
    fn write_json(&self, w: &mut Writer) {
        if self.is_finite() {
            let bits = self.to_bits();
            if w.last.as_ref().is_none_or(|(b, _)| *b != bits) {
                w.last = Some((bits, number_text(*self)));
            }
            if let Some((_, text)) = &w.last {
                w.text.push_str(text);
            }
        } else {
            w.exact = false;
            w.text.push_str("null");
        }
    }
}

impl ToJson for str {
    fn write_json(&self, w: &mut Writer) {
        w.string(self);
    }
}

impl ToJson for String {
    fn write_json(&self, w: &mut Writer) {
        w.string(self);
    }
}

impl<T: ToJson> ToJson for [T] {
    fn write_json(&self, w: &mut Writer) {
        w.text.push('[');
        for (i, item) in self.iter().enumerate() {
            if i > 0 {
                w.text.push(',');
            }
            item.write_json(w);
        }
        w.text.push(']');
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn write_json(&self, w: &mut Writer) {
        self.as_slice().write_json(w);
    }
}

#[cfg(all(test, feature = "serde"))]
mod tests {
    use super::*;

    #[test]
    fn writes_as_serde_json_does() {
        let text = "a\"b\\c\n\u{1}\u{1f}\u{8}\u{c}é";
        assert_eq!(to_string(text).unwrap(), serde_json::to_string(text).unwrap());
        let numbers: Vec<f64> = vec![0.5, 1e-7, 1.0, (1u64 << 40) as f64];
        assert_eq!(to_string(&numbers).unwrap(), serde_json::to_string(&numbers).unwrap());
        assert_eq!(to_string(&vec![1u64 << 40, 2]).unwrap(), "[1099511627776,2]");
        assert_eq!(to_string(&f64::NAN), None);
        let mut w = Writer { text: String::new(), exact: true, last: None };
        w.object(|m| {
            m.field("x", &1u64);
            m.field("s", "t");
        });
        assert_eq!(w.text, r#"{"x":1,"s":"t"}"#);
    }
}
