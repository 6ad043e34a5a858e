//! The JavaScript face of localdp: the only wasm-bindgen code in the crate.
//!
//! Thin wrappers: configs and reports cross the boundary as JSON (so a report
//! made here is byte-for-byte the same object as a line of `localdp
//! randomize`), the core does the work, and its errors become real JS errors:
//! `TypeError` for wrong shapes, `RangeError` for out-of-range parameters or
//! values, with a `reason` property on rejected reports. No message contains a
//! raw value.

use crate::aggregate::RejectionCounts;
use crate::error::{Error, Rejection};
use crate::{Aggregator as CoreAggregator, Metric, PostProcessing, SecureRng};
use js_sys::{Reflect, JSON};
use serde::Serialize;
use serde_json::value::RawValue;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** A frequency protocol, as resolved and named in reports. */
export type FrequencyProtocol = "grr" | "sue" | "oue" | "blh" | "olh" | "hr" | "ss";

/** The same object as the CLI's CONFIG.json. */
export interface FrequencyConfig {
  /** A protocol, or "auto" for the smallest variance at this ε and domain. */
  protocol: FrequencyProtocol | "auto";
  /** ε of one report: 0 < ε ≤ 30. */
  epsilon: number;
  /** A size d (values are the integers 0..d) or a list of distinct strings. */
  domain: number | string[];
}

/** A numeric mechanism, as resolved and named in reports. */
export type NumericProtocol = "duchi" | "laplace" | "piecewise" | "hybrid" | "one_bit_mean";

/** A numeric metric: the mean of a bounded number, or of each attribute of a record. */
export interface NumericConfig {
  /** A mechanism, or "auto" for the smallest worst-case variance at this ε. */
  protocol: NumericProtocol | "auto";
  /** ε of one report (of one whole record): 0.01 ≤ ε ≤ 30. */
  epsilon: number;
  /** [lo, hi] for one number, or one [lo, hi] per attribute of a record. Values are clipped to it. */
  range: [number, number] | Array<[number, number]>;
}

/** Any config the package accepts. */
export type Config = FrequencyConfig | NumericConfig;

/** Any resolved protocol. */
export type Protocol = FrequencyProtocol | NumericProtocol;

/** One report: the same object as one line of `localdp randomize`. */
export interface Report {
  version: 1;
  protocol: Protocol;
  epsilon: number;
  /** Fingerprint of the domain or range. */
  domain: string;
  /** grr, hr: an index; blh, olh: the randomized bucket; numeric: an output index on the public grid. */
  value?: number;
  /** blh, olh: the 32-bit seed of the hash function. */
  seed?: number;
  /** sue, oue, ss: d bits as hex, bit i in byte i/8 at position i%8. */
  bits?: string;
  /** Numeric records: the sampled attributes, increasing. */
  attributes?: number[];
  /** Numeric records: each sampled attribute's output index. */
  values?: number[];
}

/** Why a report was rejected. */
export type RejectionReason =
  | "malformed" | "unsupported_version" | "config_mismatch"
  | "out_of_range" | "bad_length" | "bad_subset_size";

/** Rejected reports by reason (every reason present, zeros included). */
export type RejectionCounts = Record<RejectionReason, number>;

/** How `frequency` is post-processed; the unbiased numbers stay available. */
export type PostProcessing = "none" | "norm-sub" | "project";

export interface EstimateOptions {
  /** Default "none" (the unbiased estimate). */
  post?: PostProcessing;
}

export interface ValueEstimate {
  /** A number for a sized domain, else the label. */
  value: number | string;
  /** After post-processing. */
  frequency: number;
  unbiased_frequency: number;
  /** Standard error of the unbiased estimate. */
  std_error: number;
  /** 95% interval around the unbiased estimate. */
  ci95: [number, number];
}

/** The same object as `localdp aggregate --format json`. */
export interface FrequencyEstimate {
  protocol: FrequencyProtocol;
  epsilon: number;
  n: number;
  rejected: RejectionCounts;
  post: PostProcessing;
  estimates: ValueEstimate[];
}

/** One attribute's mean, in the range's units. */
export interface MeanEstimate {
  mean: number;
  std_error: number;
  ci95: [number, number];
}

/** The same object as `localdp aggregate --format json` for a numeric metric of one number. */
export interface NumericEstimate extends MeanEstimate {
  protocol: NumericProtocol;
  epsilon: number;
  n: number;
  rejected: RejectionCounts;
}

/** The same object as `localdp aggregate --format json` for a record metric. */
export interface RecordEstimate {
  protocol: NumericProtocol;
  epsilon: number;
  n: number;
  rejected: RejectionCounts;
  /** One entry per attribute, in the config's order. */
  attributes: MeanEstimate[];
}

/** Any estimate. */
export type Estimate = FrequencyEstimate | NumericEstimate | RecordEstimate;

/** The estimate an `Aggregator<C>` returns. */
export type EstimateFor<C extends Config> =
  C extends FrequencyConfig ? FrequencyEstimate
  : C extends { range: [number, number] } ? NumericEstimate
  : C extends { range: Array<[number, number]> } ? RecordEstimate
  : NumericEstimate | RecordEstimate;

/** The values a `Client<C>` randomizes. */
export type ValueFor<C extends Config> =
  C extends FrequencyConfig ? string | number
  : C extends { range: [number, number] } ? number
  : C extends { range: Array<[number, number]> } ? number[]
  : number | number[];

/** What `addMany` accepted and rejected in this call. */
export interface AddManyResult {
  accepted: number;
  rejected: RejectionCounts;
}
"#;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(typescript_type = "Config")]
    pub type ConfigJs;
    #[wasm_bindgen(typescript_type = "Report")]
    pub type ReportJs;
    #[wasm_bindgen(typescript_type = "Report | string")]
    pub type ReportInputJs;
    #[wasm_bindgen(typescript_type = "Iterable<Report | string>")]
    pub type ReportsJs;
    #[wasm_bindgen(typescript_type = "string | number | number[]")]
    pub type ValueJs;
    #[wasm_bindgen(typescript_type = "EstimateOptions")]
    pub type EstimateOptionsJs;
    #[wasm_bindgen(typescript_type = "Estimate")]
    pub type EstimateJs;
    #[wasm_bindgen(typescript_type = "AddManyResult")]
    pub type AddManyResultJs;
    #[wasm_bindgen(typescript_type = "RejectionCounts")]
    pub type RejectionCountsJs;
}

fn type_error(message: &str) -> JsValue {
    js_sys::TypeError::new(message).into()
}

fn range_error(message: &str) -> JsValue {
    js_sys::RangeError::new(message).into()
}

/// The core's error as the JS error a caller expects.
fn js_error(error: Error) -> JsValue {
    let message = error.to_string();
    match error {
        Error::MalformedConfig(_) => type_error(&message),
        Error::Rejected { reason, .. } => {
            let e = if reason == Rejection::Malformed {
                type_error(&message)
            } else {
                range_error(&message)
            };
            // Best effort: the error is thrown either way.
            let _ = Reflect::set(&e, &"reason".into(), &reason.as_str().into());
            e
        }
        Error::InvalidConfig(_) | Error::ValueNotInDomain(_) | Error::InvalidValue(_) | Error::MergeMismatch(_) => {
            range_error(&message)
        }
        Error::NoReports | Error::Randomness(_) => js_sys::Error::new(&message).into(),
    }
}

/// `JSON.stringify(value)`, or a TypeError naming `what`.
fn stringify(value: &JsValue, what: &str) -> Result<String, JsValue> {
    JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .ok_or_else(|| type_error(&format!("{what} must be a JSON object")))
}

fn metric_from(config: &JsValue) -> Result<Metric, JsValue> {
    if !config.is_object() {
        return Err(type_error("config must be an object"));
    }
    // JSON has no NaN or Infinity; catch them before JSON.stringify turns
    // them into null.
    let epsilon = Reflect::get(config, &"epsilon".into())?;
    if epsilon.as_f64().is_some_and(|e| !e.is_finite()) {
        return Err(range_error(
            "invalid configuration: epsilon must be a finite number > 0",
        ));
    }
    Metric::from_json(&stringify(config, "config")?).map_err(js_error)
}

/// A Rust value as a plain JS object, through JSON (the CLI's exact output).
fn to_js<T: Serialize>(value: &T) -> JsValue {
    let text = serde_json::to_string(value).expect("serializes");
    JSON::parse(&text).expect("valid JSON")
}

/// The client: randomizes values on this device with `crypto.getRandomValues`.
#[wasm_bindgen]
pub struct Client {
    metric: Metric,
    rng: SecureRng,
}

#[wasm_bindgen]
impl Client {
    /// `new Client(config)`: `config` is the CLI's CONFIG.json object.
    #[wasm_bindgen(constructor)]
    pub fn new(config: ConfigJs) -> Result<Client, JsValue> {
        let metric = metric_from(&config)?;
        Ok(Client { metric, rng: SecureRng::new().map_err(js_error)? })
    }

    /// The resolved protocol (what `"auto"` chose).
    #[wasm_bindgen(getter, unchecked_return_type = "Protocol")]
    pub fn protocol(&self) -> String {
        self.metric.protocol_name().to_string()
    }

    /// ε of one report.
    #[wasm_bindgen(getter)]
    pub fn epsilon(&self) -> f64 {
        self.metric.epsilon()
    }

    /// Randomizes one value into a report ready to send: a string, or an
    /// integer for a sized domain; a number for a numeric metric (clipped to
    /// its range), an array of numbers for a record. Only the report leaves
    /// the device.
    pub fn randomize(&mut self, value: ValueJs) -> Result<ReportJs, JsValue> {
        let value: JsValue = value.into();
        let report = match &self.metric {
            Metric::Frequency(oracle) => {
                let text = if let Some(s) = value.as_string() {
                    s
                } else if let Some(n) = value.as_f64() {
                    if !matches!(oracle.domain(), crate::Domain::Size(_)) {
                        return Err(type_error("this domain's values are strings"));
                    }
                    if n.fract() != 0.0 || n < 0.0 || !n.is_finite() {
                        return Err(js_error(Error::ValueNotInDomain(format!(
                            "expected an integer in 0..{}",
                            oracle.domain().len()
                        ))));
                    }
                    (n as u64).to_string()
                } else {
                    return Err(type_error("a value must be a string or a number"));
                };
                oracle.randomize(&text, &mut self.rng)
            }
            Metric::Numeric(numeric) => {
                let values: Vec<f64> = if let Some(n) = value.as_f64() {
                    vec![n]
                } else if js_sys::Array::is_array(&value) {
                    js_sys::Array::from(&value)
                        .iter()
                        .map(|v| v.as_f64().ok_or_else(|| type_error("a record must be an array of numbers")))
                        .collect::<Result<_, _>>()?
                } else {
                    return Err(type_error("a numeric value must be a number (or an array of numbers for a record)"));
                };
                numeric.randomize(&values, &mut self.rng)
            }
        }
        .map_err(js_error)?;
        Ok(JSON::parse(&report.to_json()).expect("valid JSON").unchecked_into())
    }
}

/// The aggregator: validates and counts reports, merges, and estimates.
#[wasm_bindgen]
pub struct Aggregator {
    inner: CoreAggregator,
}

#[wasm_bindgen]
impl Aggregator {
    /// `new Aggregator(config)`, with the clients' config.
    #[wasm_bindgen(constructor)]
    pub fn new(config: ConfigJs) -> Result<Aggregator, JsValue> {
        Ok(Aggregator {
            inner: CoreAggregator::new(metric_from(&config)?),
        })
    }

    /// The resolved protocol.
    #[wasm_bindgen(getter, unchecked_return_type = "Protocol")]
    pub fn protocol(&self) -> String {
        self.inner.protocol_name().to_string()
    }

    /// Accepted reports so far.
    #[wasm_bindgen(getter)]
    pub fn n(&self) -> f64 {
        self.inner.n() as f64
    }

    /// Rejected reports so far, by reason.
    #[wasm_bindgen(getter)]
    pub fn rejected(&self) -> RejectionCountsJs {
        to_js(self.inner.rejected()).unchecked_into()
    }

    /// Adds one report (an object, or one JSON line). A bad report throws a
    /// `TypeError` (malformed) or `RangeError` (mismatched, out of range) with
    /// a `reason` property, and is still counted under `rejected`.
    pub fn add(&mut self, report: ReportInputJs) -> Result<(), JsValue> {
        let report: JsValue = report.into();
        let text = match report.as_string() {
            Some(line) => line,
            None => stringify(&report, "a report").unwrap_or_default(),
        };
        self.inner.add_json(text).map_err(js_error)
    }

    /// Adds many reports (an array or any iterable of objects or JSON lines).
    /// Bad reports are counted, never thrown.
    #[wasm_bindgen(js_name = addMany)]
    pub fn add_many(&mut self, reports: ReportsJs) -> Result<AddManyResultJs, JsValue> {
        let reports: JsValue = reports.into();
        if !reports.is_object() {
            return Err(type_error("reports must be an array or an iterable"));
        }
        let array = js_sys::Array::from(&reports);
        let before_n = self.inner.n();
        let before = *self.inner.rejected();
        // One JSON.stringify for the whole batch; each element is then parsed
        // and validated on its own, so one bad element costs only itself.
        let text = stringify(&array, "reports")?;
        let items: Vec<&RawValue> =
            serde_json::from_str(&text).map_err(|_| type_error("reports must be an array"))?;
        for item in items {
            let line: String;
            let json = match serde_json::from_str::<String>(item.get()) {
                Ok(s) => {
                    line = s;
                    line.as_str()
                }
                Err(_) => item.get(),
            };
            let _ = self.inner.add_json(json);
        }
        let rejected = self.inner.rejected().since(&before);
        #[derive(Serialize)]
        struct AddMany {
            accepted: u64,
            rejected: RejectionCounts,
        }
        Ok(to_js(&AddMany {
            accepted: self.inner.n() - before_n,
            rejected,
        })
        .unchecked_into())
    }

    /// Adds everything `other` accepted and rejected (same config only).
    pub fn merge(&mut self, other: &Aggregator) -> Result<(), JsValue> {
        self.inner.merge(&other.inner).map_err(js_error)
    }

    /// The estimate: the same object as `localdp aggregate --format json`.
    pub fn estimate(&self, options: Option<EstimateOptionsJs>) -> Result<EstimateJs, JsValue> {
        let post = match options {
            None => PostProcessing::None,
            Some(options) => {
                let post = Reflect::get(&options, &"post".into())?;
                match post.as_string() {
                    Some(name) => name.parse().map_err(|e: String| range_error(&e))?,
                    None if post.is_undefined() => PostProcessing::None,
                    None => return Err(type_error("options.post must be a string")),
                }
            }
        };
        Ok(to_js(&self.inner.estimate(post).map_err(js_error)?).unchecked_into())
    }
}
