//! JSON in and out: configs, the client states (and their memos) of
//! earlier releases, and (in the
//! wasm build) reports, one way for the whole crate. Objects are read field
//! by field by hand-written readers ([`FromField`]) over a [`ConfigObject`]:
//! natively an object of this module's own parser ([`parse`]), in the wasm
//! build with wasm-bindgen a JS object's entries (`JSON.parse` for text).
//! (The GRR module, without wasm-bindgen, reads no config object: its page
//! reads the config's shape and passes typed arguments.) Values are written
//! by hand ([`write`]) in both builds (a report given to JS is built as a JS
//! object directly, `Report::to_js`). So neither build needs serde, and the
//! wasm modules link no JSON parser and no float printer of their own.

#[cfg(not(js))]
mod parse;
pub(crate) mod write;

#[cfg(js)]
use crate::js;
use crate::text::{put, text, Hex};
#[cfg(not(js))]
use parse::Value;
pub use write::MAX_SAFE_INTEGER;

/// Parses `text` as a JSON object; `None` if it is not one.
pub(crate) fn parse_object(text: &str) -> Option<ConfigObject> {
    parse_text(text).ok()?.object()
}

/// Parses `text` as one JSON value, or says what is wrong with it.
#[cfg(not(js))]
pub(crate) fn parse_text(text: &str) -> std::result::Result<Field, String> {
    parse::parse(text).map(|value| field(&value))
}

/// Parses `text` as one JSON value (`JSON.parse`), or says what is wrong
/// with it (the `SyntaxError`'s message).
#[cfg(js)]
pub(crate) fn parse_text(text: &str) -> std::result::Result<Field, String> {
    use wasm_bindgen::JsCast;
    match js::parse(&wasm_bindgen::JsValue::from_str(text)) {
        Ok(value) => Ok(field(&value)),
        Err(e) => Err(e.unchecked_into::<js::Error>().message()),
    }
}

/// A config object as the metric families read it: natively a parsed JSON
/// object, in the wasm build the (plain, JSON-compatible) JS object's own
/// entries, taken in one call (`Object.entries`; its values stay JS values,
/// read when asked for), read field by field into each family's typed
/// config ([`FromField`]), so that the wasm modules build no
/// `serde_json::Value` tree and link no derived deserializer.
#[derive(Clone)]
pub struct ConfigObject {
    #[cfg(not(js))]
    object: std::collections::BTreeMap<String, Value>,
    #[cfg(js)]
    entries: Vec<(String, wasm_bindgen::JsValue)>,
}

/// One field of a [`ConfigObject`], by its JSON type.
pub(crate) enum Field {
    /// The key is absent.
    Missing,
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, and its value as a `u64` if it is a whole number `≥ 0`
    /// that JS holds exactly (up to 2^53 − 1; natively also any larger
    /// integer written without a fraction, exactly, as serde_json reads it).
    Number(f64, Option<u64>),
    /// A string.
    Text(String),
    /// An object.
    Object(ConfigObject),
    /// An array.
    List(ConfigList),
}

/// An array, read one level at a time as a [`ConfigObject`] is: a reader
/// converts only as deep as the type it reads, so hostile nesting (which
/// `JSON.parse` takes a million levels deep) costs nothing.
pub(crate) struct ConfigList {
    #[cfg(not(js))]
    items: Vec<Value>,
    #[cfg(js)]
    items: js::Array,
}

impl ConfigList {
    /// The items, each as a field (their own arrays and objects unread).
    pub(crate) fn fields(&self) -> Vec<Field> {
        #[cfg(not(js))]
        return self.items.iter().map(field).collect();
        // A loop: a `collect` of a mapped range costs the module its
        // iterator adapters.
        #[cfg(js)]
        {
            let mut fields = Vec::new();
            for i in 0..self.items.length() {
                fields.push(field(&self.items.get(i)));
            }
            fields
        }
    }
}

impl Field {
    /// The field as a non-negative integer (`None` for anything else).
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match *self {
            Field::Number(_, whole) => whole,
            _ => None,
        }
    }

    /// A serde_json value as a field (in the wasm build its text, parsed
    /// by JS); `None` in the wasm build for a number JS cannot carry exactly.
    #[cfg(feature = "serde")]
    pub(crate) fn from_value(value: &serde_json::Value) -> Option<Field> {
        #[cfg(not(js))]
        return Some(field(&Value::from(value)));
        #[cfg(js)]
        return js::parse(&value.to_string().into()).ok().map(|value| field(&value));
    }

    /// The field as an object, if it is one.
    pub(crate) fn object(self) -> Option<ConfigObject> {
        match self {
            Field::Object(object) => Some(object),
            _ => None,
        }
    }

    /// A whole number's digits (`-1`, `4294967296`) if the field is one JS
    /// holds exactly, or a `u64`.
    fn integer(&self) -> Option<String> {
        match *self {
            Field::Number(_, Some(n)) => Some(text!(n)),
            Field::Number(x, None) if x.fract() == 0.0 && x.abs() <= MAX_SAFE_INTEGER as f64 => Some(text!(x as i64)),
            _ => None,
        }
    }

    /// What the field is, as a message says it (`string "many"`,
    /// `integer `3``, `sequence`), in serde's words.
    fn unexpected(&self) -> String {
        if let Some(digits) = self.integer() {
            return ["integer `", &digits, "`"].concat();
        }
        match self {
            Field::Missing | Field::Null => "null".into(),
            Field::Bool(b) => ["boolean `", if *b { "true" } else { "false" }, "`"].concat(),
            Field::Number(x, _) => ["floating point `", &crate::number::number_text(*x), "`"].concat(),
            Field::Text(s) => ["string ", &quoted(s)].concat(),
            Field::Object(_) => "map".into(),
            Field::List(_) => "sequence".into(),
        }
    }

    /// The message for a field that is not what a reader `expected`.
    pub(crate) fn invalid(&self, expected: &str) -> String {
        ["invalid type: ", &self.unexpected(), ", expected ", expected].concat()
    }

    /// The message of an integer reader: an integer out of its range is an
    /// invalid value (`invalid value: integer `-1`, expected u64`), anything
    /// else an invalid type.
    fn invalid_integer(&self, expected: &str) -> String {
        let kind = if self.integer().is_some() { "invalid value: " } else { "invalid type: " };
        [kind, &self.unexpected(), ", expected ", expected].concat()
    }
}


/// `x` as a `u64` if it is a whole number `≥ 0` that JS holds exactly (`2.0`
/// is 2, as it is in JS; `-0` is not, as serde_json reads it as a float).
#[doc(hidden)]
pub fn whole(x: f64) -> Option<u64> {
    (x.is_sign_positive() && x.fract() == 0.0 && x <= MAX_SAFE_INTEGER as f64).then_some(x as u64)
}

/// A string quoted as Rust's `{:?}` writes it (serde quotes strings so),
/// escaping quotes, backslashes and control characters; other characters
/// are written as they are (Rust's Unicode table of printable characters
/// would weigh more than every message here).
pub fn quoted(s: &str) -> String {
    let mut out = String::new();
    write::quote(&mut out, s, |c, out| match c {
        '\0' => out.push_str("\\0"),
        c if c.is_control() => put!(out, "\\u{", Hex(c as u64), "}"),
        c => out.push(c),
    });
    out
}

/// A type a config field is read as, by hand: how every family reads its
/// config (natively and in the wasm modules alike, which so link no derived
/// deserializer). Messages are in serde's words (`invalid type: string
/// "many", expected u64`), as they were when configs were derived.
pub(crate) trait FromField: Sized {
    /// The field (never [`Field::Missing`]) as this type, or what is wrong.
    fn from_field(field: Field) -> std::result::Result<Self, String>;

    /// What an absent required field says.
    fn missing(key: &str) -> String {
        ["missing field `", key, "`"].concat()
    }
}

impl FromField for f64 {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        match field {
            Field::Number(x, _) => Ok(x),
            other => Err(other.invalid("f64")),
        }
    }
}

impl FromField for u64 {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        field.as_u64().ok_or_else(|| field.invalid_integer("u64"))
    }
}

impl FromField for u32 {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        field.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| field.invalid_integer("u32"))
    }
}

impl<A: FromField, B: FromField> FromField for (A, B) {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        match field {
            Field::List(list) => match <[Field; 2]>::try_from(list.fields()) {
                Ok([a, b]) => Ok((A::from_field(a)?, B::from_field(b)?)),
                Err(items) => Err(text!("invalid length ", items.len(), ", expected an array of length 2")),
            },
            other => Err(other.invalid("an array of length 2")),
        }
    }
}

impl FromField for bool {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        match field {
            Field::Bool(b) => Ok(b),
            other => Err(other.invalid("a boolean")),
        }
    }
}

impl FromField for String {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        match field {
            Field::Text(s) => Ok(s),
            other => Err(other.invalid("a string")),
        }
    }
}

impl<T: FromField> FromField for Vec<T> {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        match field {
            Field::List(list) => {
                // A loop: a `collect` through a `Result` adapter would be
                // instantiated, larger, for every item type.
                let mut items = Vec::new();
                for item in list.fields() {
                    items.push(T::from_field(item)?);
                }
                Ok(items)
            }
            other => Err(other.invalid("a sequence")),
        }
    }
}

impl FromField for [f64; 2] {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        <(f64, f64)>::from_field(field).map(|(lo, hi)| [lo, hi])
    }
}


#[cfg(not(js))]
impl ConfigObject {
    /// True when the object has `key`.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.object.contains_key(key)
    }

    /// The field `key`.
    pub(crate) fn get(&self, key: &str) -> Field {
        self.object.get(key).map_or(Field::Missing, field)
    }

    /// The object's keys.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.object.keys().cloned().collect()
    }

    /// The object's keys and fields, in one pass.
    pub(crate) fn fields(&self) -> Vec<(String, Field)> {
        self.object.iter().map(|(k, v)| (k.clone(), field(v))).collect()
    }

    /// Removes `key`; true if it was there.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        self.object.remove(key).is_some()
    }

    /// Sets `key` to a string (the planner's variants of a config).
    #[doc(hidden)]
    pub fn set_text(&mut self, key: &str, value: &str) {
        self.object.insert(key.to_string(), Value::Text(value.to_string()));
    }

    /// Sets `key` to a number.
    #[doc(hidden)]
    pub fn set_number(&mut self, key: &str, value: f64) {
        self.object.insert(key.to_string(), Value::Number(value, None));
    }

}

/// A parsed value as a [`Field`]. A number `-0` is `0`, as the wasm build
/// reads it (through `JSON.stringify`, which writes `0`), so that a config
/// has one fingerprint and one answer in both.
#[cfg(not(js))]
fn field(value: &Value) -> Field {
    match value {
        Value::Null => Field::Null,
        Value::Bool(b) => Field::Bool(*b),
        Value::Number(x, exact) => {
            let x = *x + 0.0;
            Field::Number(x, exact.or(whole(x)))
        }
        Value::Text(s) => Field::Text(s.clone()),
        Value::Object(o) => Field::Object(ConfigObject { object: o.clone() }),
        Value::List(items) => Field::List(ConfigList { items: items.clone() }),
    }
}

#[cfg(js)]
impl ConfigObject {
    /// A plain JS object (no array); `None` for anything else.
    #[doc(hidden)]
    pub fn from_js(value: &wasm_bindgen::JsValue) -> Option<Self> {
        js_entries(value).map(|entries| ConfigObject::from_entries(&entries))
    }

    /// The object of these entries ([`js_entries`]).
    pub(crate) fn from_entries(entries: &js::Array) -> Self {
        use wasm_bindgen::JsCast;
        // A loop, as in ConfigList::fields.
        let mut object = ConfigObject { entries: Vec::new() };
        for i in 0..entries.length() {
            let entry: js::Array = entries.get(i).unchecked_into();
            object.entries.push((entry.get(0).as_string().unwrap_or_default(), entry.get(1)));
        }
        object
    }

    fn value(&self, key: &str) -> Option<&wasm_bindgen::JsValue> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// True when the object has `key`.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.value(key).is_some()
    }

    /// The field `key`.
    pub(crate) fn get(&self, key: &str) -> Field {
        self.value(key).map_or(Field::Missing, field)
    }

    /// The object's keys.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.entries.iter().map(|(k, _)| k.clone()).collect()
    }

    /// The object's keys and fields, in one pass.
    pub(crate) fn fields(&self) -> Vec<(String, Field)> {
        self.entries.iter().map(|(k, v)| (k.clone(), field(v))).collect()
    }

    /// Removes `key`; true if it was there.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        let before = self.entries.len();
        self.entries.retain(|(k, _)| k != key);
        self.entries.len() < before
    }

    /// Sets `key` to a string (the planner's variants of a config).
    #[doc(hidden)]
    pub fn set_text(&mut self, key: &str, value: &str) {
        self.remove(key);
        self.entries.push((key.to_string(), wasm_bindgen::JsValue::from_str(value)));
    }

    /// Sets `key` to a number.
    #[doc(hidden)]
    pub fn set_number(&mut self, key: &str, value: f64) {
        self.remove(key);
        self.entries.push((key.to_string(), wasm_bindgen::JsValue::from_f64(value)));
    }
}

/// A JS value as a [`Field`], as its JSON would read: `undefined`, a
/// non-finite number and anything JSON has no form for are `null`.
#[cfg(js)]
fn field(value: &wasm_bindgen::JsValue) -> Field {
    if let Some(b) = value.as_bool() {
        Field::Bool(b)
    } else if let Some(x) = value.as_f64().filter(|x| x.is_finite()) {
        Field::Number(x, whole(x))
    } else if let Some(s) = value.as_string() {
        Field::Text(s)
    } else if let Some(items) = js_array(value) {
        Field::List(ConfigList { items })
    } else {
        // An array that throws is no object either: null.
        ConfigObject::from_js(value).map_or(Field::Null, Field::Object)
    }
}

/// A plain JS object's own enumerable entries (`Object.entries`), each a
/// `[key, value]` array: what [`ConfigObject::from_js`] reads; `None` for
/// anything but an object, an array, or an object that throws.
#[cfg(js)]
#[doc(hidden)]
pub fn js_entries(value: &wasm_bindgen::JsValue) -> Option<js::Array> {
    if !value.is_object() || js::Array::is_array(value).unwrap_or(true) {
        return None;
    }
    // A caller's object may throw (a getter, a revoked Proxy): then it is
    // not an object here, and nothing throws through the module.
    js::entries(value).ok()
}

/// A JS array as a field reads it: a copy (`Array.from`), whose items can
/// be read without throwing; `None` for anything else or an array that
/// throws.
#[cfg(js)]
#[doc(hidden)]
pub fn js_array(value: &wasm_bindgen::JsValue) -> Option<js::Array> {
    js::Array::is_array(value).unwrap_or(false).then(|| js::Array::from(value).ok()).flatten()
}

/// A plain JS object of these fields, in this order; each key is made a JS
/// string once per module instance (a report's keys are the same few
/// strings, and decoding them from the module's memory on every report
/// halved the client's speed).
#[cfg(js)]
pub(crate) fn js_object(fields: impl IntoIterator<Item = (&'static str, wasm_bindgen::JsValue)>) -> js::Object {
    use wasm_bindgen::JsValue;
    thread_local!(static KEYS: std::cell::RefCell<Vec<(&'static str, JsValue)>> = const { std::cell::RefCell::new(Vec::new()) });
    let object = js::Object::new();
    KEYS.with(|keys| {
        let mut keys = keys.borrow_mut();
        for (name, value) in fields {
            let at = match keys.iter().position(|(k, _)| *k == name) {
                Some(at) => at,
                None => {
                    keys.push((name, JsValue::from_str(name)));
                    keys.len() - 1
                }
            };
            object.set(&keys[at].1, &value);
        }
    });
    object
}

/// `JSON.parse` of a JS string, without copying it into the module.
#[cfg(js)]
#[doc(hidden)]
pub fn parse_js(text: &wasm_bindgen::JsValue) -> Option<wasm_bindgen::JsValue> {
    js::parse(text).ok()
}
