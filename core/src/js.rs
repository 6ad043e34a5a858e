//! The JS built-ins the wasm build calls, declared here rather than taken
//! from js-sys: a module that links js-sys carries about forty closure shims
//! (typed arrays' callbacks, promise tasks) that no code of ours calls,
//! because a module with trait objects keeps every function its table holds
//! (2.7 KB of the GRR client module).
//!
//! Every call that can throw on a caller's value (a getter, a revoked Proxy)
//! is declared to return what it throws: an exception must never unwind
//! through the module's frames, which would leave the object being called
//! unusable.

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// A JS array. Its `length` and items are read without a catch: only
    /// on arrays the module made or copied (`new`, `Array.from`,
    /// `Object.entries`), which cannot throw.
    pub type Array;
    /// `new Array()`.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Array;
    /// `array.length`.
    #[wasm_bindgen(method, getter)]
    pub fn length(this: &Array) -> u32;
    /// `array[index]`.
    #[wasm_bindgen(method, indexing_getter)]
    pub fn get(this: &Array, index: u32) -> JsValue;
    /// `array.push(value)`.
    #[wasm_bindgen(method)]
    pub fn push(this: &Array, value: &JsValue) -> u32;
    /// `Array.isArray(value)`.
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    pub fn is_array(value: &JsValue) -> Result<bool, JsValue>;
    /// `Array.from(value)`.
    #[wasm_bindgen(catch, js_namespace = Array, js_name = from)]
    pub fn from(value: &JsValue) -> Result<Array, JsValue>;
    /// `Object.entries(value)`.
    #[wasm_bindgen(catch, js_namespace = Object, js_name = entries)]
    pub fn entries(value: &JsValue) -> Result<Array, JsValue>;
    /// `JSON.parse(text)` of a JS string.
    #[wasm_bindgen(catch, js_namespace = JSON, js_name = parse)]
    pub fn parse(text: &JsValue) -> Result<JsValue, JsValue>;
    /// `JSON.stringify(value)`: a string, or `undefined` for a value JSON
    /// has no text for.
    #[wasm_bindgen(catch, js_namespace = JSON, js_name = stringify)]
    pub fn stringify(value: &JsValue) -> Result<JsValue, JsValue>;
    /// `Reflect.get(target, key)`.
    #[wasm_bindgen(catch, js_namespace = Reflect, js_name = get)]
    pub fn reflect_get(target: &JsValue, key: &JsValue) -> Result<JsValue, JsValue>;
    /// `Reflect.set(target, key, value)`.
    #[wasm_bindgen(catch, js_namespace = Reflect, js_name = set)]
    pub fn reflect_set(target: &JsValue, key: &JsValue, value: &JsValue) -> Result<bool, JsValue>;
    /// `String(x)`: JS's shortest round-trip text of a number.
    #[wasm_bindgen(js_name = String)]
    pub fn number_string(x: f64) -> String;
    /// `parseFloat(text)`.
    #[wasm_bindgen(js_name = parseFloat)]
    pub fn parse_float(text: &str) -> f64;
}

#[wasm_bindgen]
extern "C" {
    /// A plain object of the module's own making.
    pub type Object;
    /// `new Object()`.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Object;
    /// `object[key] = value`: on a plain object it cannot throw, so no
    /// exception handler is wrapped round it (`Reflect.set` cost a sixth of
    /// a report's time).
    #[wasm_bindgen(method, indexing_setter)]
    pub fn set(this: &Object, key: &JsValue, value: &JsValue);
}

#[wasm_bindgen]
extern "C" {
    /// A JS `Error`.
    pub type Error;
    /// `new Error(message)`.
    #[wasm_bindgen(constructor)]
    pub fn new(message: &str) -> Error;
    /// `error.name = name`.
    #[wasm_bindgen(method, setter)]
    pub fn set_name(this: &Error, name: &str);
    /// `error.message`.
    #[wasm_bindgen(method, getter)]
    pub fn message(this: &Error) -> String;
}

#[wasm_bindgen]
extern "C" {
    /// A JS `TypeError`.
    pub type TypeError;
    /// `new TypeError(message)`.
    #[wasm_bindgen(constructor)]
    pub fn new(message: &str) -> TypeError;
}

#[wasm_bindgen]
extern "C" {
    /// A JS `RangeError`.
    pub type RangeError;
    /// `new RangeError(message)`.
    #[wasm_bindgen(constructor)]
    pub fn new(message: &str) -> RangeError;
}

impl Array {
    /// The items, in order.
    pub fn items(&self) -> impl Iterator<Item = JsValue> + '_ {
        (0..self.length()).map(|i| self.get(i))
    }
}
