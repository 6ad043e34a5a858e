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
