//! JSON text in and out for the client's state, memos and reports, and the
//! config object the metric families read: one way for the whole crate.
//! Natively it is serde_json; in the wasm build it is JS's own
//! `JSON.parse`/`JSON.stringify`, JS values read by the small deserializer
//! below (`js_de`) and written by serde-wasm-bindgen, so the wasm modules
//! link neither serde_json's parser nor a float printer.
//! (The numbers' text differs only in form: `1.0` natively, `1` in wasm;
//! both read back as the same number.)

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Parses `text` as a `T`; `None` if it is not JSON or not a `T`.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> Option<T> {
    serde_json::from_str(text).ok()
}

/// The value as JSON text; `None` if JSON cannot carry it (a non-finite
/// number, a non-string key).
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub(crate) fn to_string<T: Serialize>(value: &T) -> Option<String> {
    serde_json::to_string(value).ok()
}

/// Parses `text` as a `T`; `None` if it is not JSON or not a `T`.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> Option<T> {
    from_js(&js_sys::JSON::parse(text).ok()?)
}

/// The value as JSON text; `None` if JSON cannot carry it exactly (as
/// [`to_js`]).
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(crate) fn to_string<T: Serialize>(value: &T) -> Option<String> {
    js_sys::JSON::stringify(&to_js(value)?).ok().and_then(|s| s.as_string())
}

/// A JS value (plain JSON data) as a `T`.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(crate) fn from_js<T: DeserializeOwned>(value: &wasm_bindgen::JsValue) -> Option<T> {
    T::deserialize(js_de::JsDeserializer(value.clone())).ok()
}

/// The value as a plain JS object, as `JSON.parse` of its JSON text would
/// give it: objects for maps, numbers for integers, no `undefined` fields.
/// `None` if a number cannot be carried exactly (an integer above 2^53).
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(crate) fn to_js<T: Serialize>(value: &T) -> Option<wasm_bindgen::JsValue> {
    let serializer = serde_wasm_bindgen::Serializer::json_compatible();
    value.serialize(&serializer).ok()
}

/// A config object as the metric families read it: natively a parsed JSON
/// object, in the wasm build the (plain, JSON-compatible) JS object itself,
/// deserialized straight into each family's typed config by [`js_de`], so
/// that the wasm modules build no `serde_json::Value` tree.
pub(crate) struct ConfigObject {
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    object: serde_json::Map<String, serde_json::Value>,
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    object: js_sys::Object,
}

/// One field of a [`ConfigObject`], by its JSON type.
pub(crate) enum Field {
    /// The key is absent.
    Missing,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(f64),
    /// A string.
    Text(String),
    /// An object (not an array).
    Object(ConfigObject),
    /// `null` or an array.
    Other,
}

impl Field {
    /// The field as a non-negative integer (`None` for anything else).
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match *self {
            Field::Number(x) if x >= 0.0 && x.fract() == 0.0 && x < 18_446_744_073_709_551_616.0 => Some(x as u64),
            _ => None,
        }
    }
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
impl ConfigObject {
    /// The config as an object; `None` if it is not one.
    pub(crate) fn from_value(value: serde_json::Value) -> Option<Self> {
        match value {
            serde_json::Value::Object(object) => Some(ConfigObject { object }),
            _ => None,
        }
    }

    /// True when the object has `key`.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.object.contains_key(key)
    }

    /// The field `key`.
    pub(crate) fn get(&self, key: &str) -> Field {
        use serde_json::Value;
        match self.object.get(key) {
            None => Field::Missing,
            Some(Value::Bool(b)) => Field::Bool(*b),
            Some(Value::Number(n)) => Field::Number(n.as_f64().unwrap_or(f64::NAN)),
            Some(Value::String(s)) => Field::Text(s.clone()),
            Some(Value::Object(o)) => Field::Object(ConfigObject { object: o.clone() }),
            Some(_) => Field::Other,
        }
    }

    /// The object's keys.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.object.keys().cloned().collect()
    }

    /// Removes `key`; true if it was there.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        self.object.remove(key).is_some()
    }

    /// The object as a `T`, or a malformed-config error with serde's text.
    pub(crate) fn parse<T: DeserializeOwned>(self) -> crate::error::Result<T> {
        serde_json::from_value(serde_json::Value::Object(self.object))
            .map_err(|e| crate::error::Error::malformed(e.to_string()))
    }
}

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
impl ConfigObject {
    /// The config as an object; `None` if it is not one.
    pub(crate) fn from_value(value: serde_json::Value) -> Option<Self> {
        ConfigObject::from_js(&to_js(&value)?)
    }

    /// A plain JS object (no array); `None` for anything else.
    pub(crate) fn from_js(value: &wasm_bindgen::JsValue) -> Option<Self> {
        use wasm_bindgen::JsCast;
        (value.is_object() && !js_sys::Array::is_array(value))
            .then(|| ConfigObject { object: value.clone().unchecked_into() })
    }

    fn value(&self, key: &str) -> Option<wasm_bindgen::JsValue> {
        let key = wasm_bindgen::JsValue::from_str(key);
        if !js_sys::Object::has_own(&self.object, &key) {
            return None;
        }
        js_sys::Reflect::get(&self.object, &key).ok()
    }

    /// True when the object has `key`.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.value(key).is_some()
    }

    /// The field `key`.
    pub(crate) fn get(&self, key: &str) -> Field {
        let Some(value) = self.value(key) else { return Field::Missing };
        if let Some(b) = value.as_bool() {
            Field::Bool(b)
        } else if let Some(x) = value.as_f64() {
            Field::Number(x)
        } else if let Some(s) = value.as_string() {
            Field::Text(s)
        } else {
            ConfigObject::from_js(&value).map_or(Field::Other, Field::Object)
        }
    }

    /// The object's keys.
    pub(crate) fn keys(&self) -> Vec<String> {
        js_sys::Object::keys(&self.object).iter().filter_map(|k| k.as_string()).collect()
    }

    /// Removes `key`; true if it was there.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        let present = self.contains_key(key);
        if present {
            let _ = js_sys::Reflect::delete_property(&self.object, &wasm_bindgen::JsValue::from_str(key));
        }
        present
    }

    /// The object as a `T`, or a malformed-config error with serde's text.
    pub(crate) fn parse<T: DeserializeOwned>(self) -> crate::error::Result<T> {
        T::deserialize(js_de::JsDeserializer(self.object.into())).map_err(|e| crate::error::Error::malformed(e.0))
    }
}

/// A serde deserializer over plain JSON data in JS values (what
/// `JSON.parse` gives), read as serde_json reads the same JSON: integers up
/// to 2^53 as integers, other numbers as floats. Its errors carry serde's
/// messages with numbers written from JS's digits, so that neither
/// serde-wasm-bindgen's deserializer nor core's float formatting is linked
/// into the wasm modules.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod js_de {
    use serde::de::{self, DeserializeSeed, IntoDeserializer, Unexpected, Visitor};
    use std::fmt;
    use wasm_bindgen::{JsCast, JsValue};

    /// A deserialization error: its message.
    #[derive(Debug)]
    pub(crate) struct Error(pub(crate) String);

    impl fmt::Display for Error {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Error {}

    impl de::Error for Error {
        fn custom<T: fmt::Display>(message: T) -> Self {
            Error(message.to_string())
        }
        fn invalid_type(unexpected: Unexpected<'_>, expected: &dyn de::Expected) -> Self {
            Error(["invalid type: ", &unexpected_text(unexpected), ", expected ", &expected.to_string()].concat())
        }
        fn invalid_value(unexpected: Unexpected<'_>, expected: &dyn de::Expected) -> Self {
            Error(["invalid value: ", &unexpected_text(unexpected), ", expected ", &expected.to_string()].concat())
        }
    }

    /// serde's text of an `Unexpected`, a float written as Rust's `{}` with
    /// a decimal point (`1.0`, `0.0000001`).
    fn unexpected_text(unexpected: Unexpected<'_>) -> String {
        let (kind, value) = match unexpected {
            Unexpected::Float(x) => ("floating point `", float_text(x)),
            Unexpected::Unsigned(n) => ("integer `", n.to_string()),
            Unexpected::Signed(n) => ("integer `", n.to_string()),
            Unexpected::Bool(b) => ("boolean `", b.to_string()),
            Unexpected::Char(c) => ("character `", c.to_string()),
            Unexpected::Str(s) => return ["string ", &debug_str(s)].concat(),
            Unexpected::Other(other) => return other.to_string(),
            other => {
                return match other {
                    Unexpected::Bytes(_) => "byte array",
                    Unexpected::Unit => "unit value",
                    Unexpected::Option => "Option value",
                    Unexpected::NewtypeStruct => "newtype struct",
                    Unexpected::Seq => "sequence",
                    Unexpected::Map => "map",
                    Unexpected::Enum => "enum",
                    Unexpected::UnitVariant => "unit variant",
                    Unexpected::NewtypeVariant => "newtype variant",
                    Unexpected::TupleVariant => "tuple variant",
                    _ => "struct variant",
                }
                .to_string()
            }
        };
        [kind, &value, "`"].concat()
    }

    /// A string quoted as Rust's `{:?}` writes it (serde quotes strings so),
    /// escaping quotes, backslashes and control characters; other characters
    /// are written as they are (Rust's Unicode table of printable characters
    /// would weigh more than every message here).
    fn debug_str(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\0' => out.push_str("\\0"),
                c if c.is_control() => {
                    let _ = fmt::Write::write_fmt(&mut out, format_args!("\\u{{{:x}}}", c as u32));
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    /// A finite float as Rust's `{}` writes it (no exponent), with `.0`
    /// after an integer, from JS's shortest round-trip digits.
    fn float_text(x: f64) -> String {
        let js = js_sys::Number::from(x).to_string_with_radix(10).map(String::from).unwrap_or_default();
        let (sign, js) = js.strip_prefix('-').map_or(("", js.as_str()), |rest| ("-", rest));
        let (mantissa, exponent) = js.split_once('e').unwrap_or((js, "0"));
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits = [int, frac].concat();
        let point = int.len() as i64 + exponent.trim_start_matches('+').parse::<i64>().unwrap_or(0);
        let zeros = |n: i64| "0".repeat(n.max(0) as usize);
        let body = if point <= 0 {
            ["0.", &zeros(-point), &digits].concat()
        } else if point as usize >= digits.len() {
            [digits.as_str(), &zeros(point - digits.len() as i64), ".0"].concat()
        } else {
            let (a, b) = digits.split_at(point as usize);
            [a, ".", b].concat()
        };
        [sign, &body].concat()
    }

    /// A JS value holding plain JSON data.
    pub(crate) struct JsDeserializer(pub(crate) JsValue);

    const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

    /// What a JS number is to serde: an integer up to 2^53 in magnitude,
    /// else a float (as serde_json reads the same number's JSON).
    enum Number {
        Unsigned(u64),
        Signed(i64),
        Float(f64),
    }

    fn number(x: f64) -> Number {
        if x.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&x) {
            Number::Unsigned(x as u64)
        } else if x.fract() == 0.0 && (-MAX_SAFE_INTEGER..0.0).contains(&x) {
            Number::Signed(x as i64)
        } else {
            Number::Float(x)
        }
    }

    impl JsDeserializer {
        /// The error for a value of the wrong type.
        fn invalid(&self, expected: &dyn de::Expected) -> Error {
            let text;
            let unexpected = if let Some(b) = self.0.as_bool() {
                Unexpected::Bool(b)
            } else if let Some(x) = self.0.as_f64() {
                match number(x) {
                    Number::Unsigned(n) => Unexpected::Unsigned(n),
                    Number::Signed(n) => Unexpected::Signed(n),
                    Number::Float(x) => Unexpected::Float(x),
                }
            } else if let Some(s) = self.0.as_string() {
                text = s;
                Unexpected::Str(&text)
            } else if js_sys::Array::is_array(&self.0) {
                Unexpected::Seq
            } else if self.0.is_object() {
                Unexpected::Map
            } else {
                Unexpected::Unit
            };
            de::Error::invalid_type(unexpected, expected)
        }

        fn seq<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            let array: js_sys::Array = self.0.unchecked_into();
            visitor.visit_seq(Seq { array, next: 0 })
        }

        fn map<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            let entries = js_sys::Object::entries(self.0.unchecked_ref());
            visitor.visit_map(Map { entries, next: 0, value: None })
        }

        fn integer<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0.as_f64().map(number) {
                Some(Number::Unsigned(n)) => visitor.visit_u64(n),
                Some(Number::Signed(n)) => visitor.visit_i64(n),
                _ => Err(self.invalid(&visitor)),
            }
        }
    }

    /// Deserializer methods that read an integer ([`JsDeserializer::integer`]).
    macro_rules! integers {
        ($($method:ident)*) => {$(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.integer(visitor)
            }
        )*};
    }

    /// Each typed request calls only the visitor methods its type needs
    /// (a struct from an object, a string from a string), so that no
    /// visitor is instantiated for every JSON type; `deserialize_any`
    /// serves untagged enums.
    impl<'de> de::Deserializer<'de> for JsDeserializer {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if self.0.is_null() || self.0.is_undefined() {
                visitor.visit_unit()
            } else if let Some(b) = self.0.as_bool() {
                visitor.visit_bool(b)
            } else if let Some(x) = self.0.as_f64() {
                match number(x) {
                    Number::Unsigned(n) => visitor.visit_u64(n),
                    Number::Signed(n) => visitor.visit_i64(n),
                    Number::Float(x) => visitor.visit_f64(x),
                }
            } else if let Some(text) = self.0.as_string() {
                visitor.visit_string(text)
            } else if js_sys::Array::is_array(&self.0) {
                self.seq(visitor)
            } else if self.0.is_object() {
                self.map(visitor)
            } else {
                Err(self.invalid(&visitor))
            }
        }

        fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0.as_bool() {
                Some(b) => visitor.visit_bool(b),
                None => Err(self.invalid(&visitor)),
            }
        }

        fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0.as_f64() {
                Some(x) => visitor.visit_f64(x),
                None => Err(self.invalid(&visitor)),
            }
        }

        fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_f64(visitor)
        }

        fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0.as_string() {
                Some(text) => visitor.visit_string(text),
                None => Err(self.invalid(&visitor)),
            }
        }

        fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_string(visitor)
        }

        fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_string(visitor)
        }

        fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_string(visitor)
        }

        fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if js_sys::Array::is_array(&self.0) {
                self.seq(visitor)
            } else {
                Err(self.invalid(&visitor))
            }
        }

        fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_seq(visitor)
        }

        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _len: usize,
            visitor: V,
        ) -> Result<V::Value, Error> {
            self.deserialize_seq(visitor)
        }

        fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if self.0.is_object() && !js_sys::Array::is_array(&self.0) {
                self.map(visitor)
            } else {
                Err(self.invalid(&visitor))
            }
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            self.deserialize_map(visitor)
        }

        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if self.0.is_null() || self.0.is_undefined() {
                visitor.visit_none()
            } else {
                visitor.visit_some(self)
            }
        }

        fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if self.0.is_null() || self.0.is_undefined() {
                visitor.visit_unit()
            } else {
                Err(self.invalid(&visitor))
            }
        }

        fn deserialize_unit_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_unit(visitor)
        }

        fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_unit()
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_newtype_struct(self)
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            // Unit variants, as JSON strings.
            match self.0.as_string() {
                Some(variant) => visitor.visit_enum(variant.into_deserializer()),
                None => Err(self.invalid(&"a string")),
            }
        }

        integers! { deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 }
        integers! { deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 }

        serde::forward_to_deserialize_any! { i128 u128 bytes byte_buf }
    }

    struct Seq {
        array: js_sys::Array,
        next: u32,
    }

    impl<'de> de::SeqAccess<'de> for Seq {
        type Error = Error;
        fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
            if self.next >= self.array.length() {
                return Ok(None);
            }
            self.next += 1;
            seed.deserialize(JsDeserializer(self.array.get(self.next - 1))).map(Some)
        }
        fn size_hint(&self) -> Option<usize> {
            Some((self.array.length() - self.next) as usize)
        }
    }

    struct Map {
        entries: js_sys::Array,
        next: u32,
        value: Option<JsValue>,
    }

    impl<'de> de::MapAccess<'de> for Map {
        type Error = Error;
        fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
            if self.next >= self.entries.length() {
                return Ok(None);
            }
            let entry: js_sys::Array = self.entries.get(self.next).unchecked_into();
            self.next += 1;
            self.value = Some(entry.get(1));
            seed.deserialize(JsDeserializer(entry.get(0))).map(Some)
        }
        fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
            seed.deserialize(JsDeserializer(self.value.take().unwrap_or(JsValue::UNDEFINED)))
        }
    }
}
