//! What both modules' exports share at the JS boundary: the typed JS
//! values of the declarations, configs read from JS objects, and the
//! core's errors as the JS errors a caller expects.

use crate::face::{Class, Failure, Sink};
use localdp_core::error::Error;
use localdp_core::json::ConfigObject;
use localdp_core::metric::Metric;
use localdp_core::js;
use wasm_bindgen::prelude::*;

pub use crate::face::MAX_SAFE_INTEGER;

#[wasm_bindgen]
extern "C" {
    /// A JS value typed as `Config` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "Config")]
    pub type ConfigJs;
    /// A JS value typed as `Report` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "Report")]
    pub type ReportJs;
    /// A JS value typed as `Report | string` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "Report | string")]
    pub type ReportInputJs;
    /// A JS value typed as `Iterable<Report | string>` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "Iterable<Report | string>")]
    pub type ReportsJs;
    /// A JS value typed as `string | number | number[]` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "string | number | number[]")]
    pub type ValueJs;
    /// A JS value typed as `EstimateOptions` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "EstimateOptions")]
    pub type EstimateOptionsJs;
    /// A JS value typed as `Estimate` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "Estimate")]
    pub type EstimateJs;
    /// A JS value typed as `AddManyResult` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "AddManyResult")]
    pub type AddManyResultJs;
    /// A JS value typed as `RejectionCounts` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "RejectionCounts")]
    pub type RejectionCountsJs;
}

pub fn type_error(message: &str) -> JsValue {
    js::TypeError::new(message).into()
}

pub fn range_error(message: &str) -> JsValue {
    js::RangeError::new(message).into()
}

/// Sets `error[name] = value`; best effort, the error is thrown either way.
pub fn set_property(error: &JsValue, name: &str, value: JsValue) {
    let _ = js::reflect_set(error, &name.into(), &value);
}

/// The JS error a [`Failure`] describes ([`crate::face`]).
pub fn js_failure(failure: Failure) -> JsValue {
    let mut error = JsError(JsValue::UNDEFINED, js::Array::new());
    failure.describe(&mut error);
    error.0
}

/// The core's error as the JS error a caller expects ([`crate::face::describe`]).
pub fn js_error(error: Error) -> JsValue {
    js_failure(Failure::Core(error))
}

/// A JS error, as [`Sink`] writes it, and its params.
struct JsError(JsValue, js::Array);

impl Sink for JsError {
    fn open(&mut self, class: Class, message: &str) {
        self.0 = match class {
            Class::Type => type_error(message),
            Class::Range => range_error(message),
            Class::Error(name) => {
                let e = js::Error::new(message);
                if let Some(name) = name {
                    e.set_name(name);
                }
                e.into()
            }
        };
    }
    fn text(&mut self, key: &'static str, value: &str) {
        set_property(&self.0, key, value.into());
    }
    fn number(&mut self, key: &'static str, value: f64) {
        set_property(&self.0, key, value.into());
    }
    fn param(&mut self, text: &str) {
        self.1.push(&text.into());
    }
    fn params(&mut self) {
        set_property(&self.0, "params", self.1.clone());
    }
}

/// `JSON.stringify(value)`, or a TypeError with `message`.
pub fn stringify(value: &JsValue, message: &str) -> Result<String, JsValue> {
    js::stringify(value).ok().and_then(|s| s.as_string()).ok_or_else(|| type_error(message))
}

/// A config object as the core reads it: exactly what its JSON text says
/// (`JSON.parse(JSON.stringify(config))`, so `undefined` keys drop out as
/// they always did), with no JSON text parsed in Rust.
pub fn config_object(config: &JsValue) -> Result<ConfigObject, JsValue> {
    if !config.is_object() {
        return Err(type_error("config must be an object"));
    }
    // JSON has no NaN or Infinity; catch them before JSON.stringify turns
    // them into null.
    let epsilon = js::reflect_get(config, &"epsilon".into())?;
    if epsilon.as_f64().is_some_and(|e| !e.is_finite()) {
        let e = range_error("invalid configuration: epsilon must be a finite number > 0");
        set_property(&e, "parameter", "epsilon".into());
        return Err(e);
    }
    let plain = js::parse(&stringify(config, "config must be a JSON object")?.into())?;
    ConfigObject::from_js(&plain).ok_or_else(|| type_error("config must be a JSON object"))
}

/// The metric of a config object.
pub fn metric_from(config: &JsValue) -> Result<Metric, JsValue> {
    Metric::from_config(config_object(config)?).map_err(js_error)
}

