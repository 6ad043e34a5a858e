//! What both modules' exports share at the JS boundary: the typed JS
//! values of the declarations, configs read from JS objects, and the
//! core's errors as the JS errors a caller expects.

use localdp_core::error::{Error, ExpectedValue, FieldProblem, Rejection};
use localdp_core::json::ConfigObject;
use localdp_core::metric::Metric;
use localdp_core::text::text;
use localdp_core::js;
use wasm_bindgen::prelude::*;

/// JS's `Number.MAX_SAFE_INTEGER` as a JS number: the core's
/// [`localdp_core::json::MAX_SAFE_INTEGER`].
pub const MAX_SAFE_INTEGER: f64 = localdp_core::json::MAX_SAFE_INTEGER as f64;

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

/// The core's error as the JS error a caller expects, with its typed fields
/// as properties where a caller may act on them: `key` (malformed configs),
/// `parameter` (invalid configs), `reason` (rejected reports), `cost`,
/// `spent` and `budget` (`PrivacyBudgetExceeded`); and on every one its
/// stable `code` and its `params` as text ([`Error::code`], [`Error::params`]).
///
/// The full module writes the message. The client module leaves it empty:
/// the JS `Client` writes it from `code` and `params` (js/messages.mjs), so
/// that no message text is in the client's wasm.
pub fn js_error(error: Error) -> JsValue {
    #[cfg(feature = "messages")]
    let message = text!(error);
    #[cfg(not(feature = "messages"))]
    let message = String::new();
    let code = error.code();
    let params = js::Array::new();
    error.each_param(&mut |p| {
        params.push(&text!(p).into());
    });
    let e = match error {
        Error::MalformedConfig { key, .. } => {
            let e = type_error(&message);
            if let Some(key) = key {
                set_property(&e, "key", key.into());
            }
            e
        }
        Error::InvalidConfig { parameter, .. } => {
            let e = range_error(&message);
            set_property(&e, "parameter", parameter.into());
            e
        }
        Error::Rejected { reason, .. } => {
            let e = if reason == Rejection::Malformed {
                type_error(&message)
            } else {
                range_error(&message)
            };
            set_property(&e, "reason", reason.as_str().into());
            e
        }
        Error::InvalidField { field, problem } => {
            let e = if problem == FieldProblem::NotInDomain { range_error(&message) } else { type_error(&message) };
            set_property(&e, "field", field.into());
            e
        }
        // An event with a key the metric lacks: a wrong shape, as a missing
        // field is (neither names the event's key).
        Error::InvalidValue { expected: ExpectedValue::KnownFields { .. } } => type_error(&message),
        Error::ValueNotInDomain { .. }
        | Error::InvalidValue { .. }
        | Error::MergeMismatch { .. }
        | Error::CorruptMemo
        | Error::State(_) => range_error(&message),
        Error::PrivacyBudgetExceeded { cost, spent, budget } => {
            let e = js::Error::new(&message);
            e.set_name("PrivacyBudgetExceeded");
            let e: JsValue = e.into();
            set_property(&e, "cost", cost.into());
            set_property(&e, "spent", spent.into());
            set_property(&e, "budget", budget.into());
            e
        }
        Error::NoReports => {
            let e = js::Error::new(&message);
            e.set_name("NoReports");
            let e: JsValue = e.into();
            set_property(&e, "reason", "no_reports".into());
            e
        }
        _ => js::Error::new(&message).into(),
    };
    set_property(&e, "code", code.into());
    set_property(&e, "params", params.into());
    e
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

