//! JSON text in and out for the client's state, memos and reports: one way
//! for the whole crate. Natively it is serde_json; in the wasm build it is
//! JS's own `JSON.parse`/`JSON.stringify` with serde-wasm-bindgen, so the
//! wasm modules link neither serde_json's parser nor its float printer.
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
    serde_wasm_bindgen::from_value(value.clone()).ok()
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
/// deserialized straight into each family's typed config with
/// serde-wasm-bindgen, so that the wasm modules build no
/// `serde_json::Value` tree.
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
            // An integer field keeps its exactness: `as_u64` reads it back.
            Some(Value::Number(n)) => match n.as_u64() {
                Some(u) => Field::Number(u as f64),
                None => Field::Number(n.as_f64().unwrap_or(f64::NAN)),
            },
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
        serde_wasm_bindgen::from_value(self.object.into()).map_err(|e| {
            let error = wasm_bindgen::JsValue::from(e);
            let message = js_sys::Reflect::get(&error, &"message".into()).ok().and_then(|m| m.as_string());
            crate::error::Error::malformed(message.unwrap_or_default())
        })
    }
}
