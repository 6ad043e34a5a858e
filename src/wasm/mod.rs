//! The JavaScript face of localdp: the only wasm-bindgen code in the crate.
//!
//! Thin wrappers: configs and reports cross the boundary as JSON (so a report
//! made here is byte-for-byte the same object as a line of `localdp
//! randomize`), the core does the work, and its errors become real JS errors:
//! `TypeError` for wrong shapes, `RangeError` for out-of-range parameters or
//! values, with a `reason` property on rejected reports. No message contains a
//! raw value.

use crate::aggregate::RejectionCounts;
use crate::error::{DomainKind, Error, ExpectedValue, Rejection};
use crate::metric::ValueKind;
use crate::names::ProtocolFamily;
use crate::privacy::number_text;
use crate::{Aggregator as CoreAggregator, Metric, PostProcessing, SecureRng};
use js_sys::{Reflect, JSON};
use serde::Serialize;
use serde_json::value::RawValue;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** A frequency protocol, as resolved and named in reports. */
export type FrequencyProtocol = FREQUENCY_PROTOCOLS;

/** The same object as the CLI's CONFIG.json. */
export interface FrequencyConfig {
  /** A protocol, or "auto" for the smallest variance at this ε and domain. */
  protocol: FrequencyProtocol | "auto";
  /** ε of one report: 0 < ε ≤ 30. */
  epsilon: number;
  /** A size d (values are the integers 0..d) or a list of distinct strings. */
  domain: number | string[];
  /** dbitflip only: buckets sampled per report (default 1). */
  d?: number;
}

/** A numeric mechanism, as resolved and named in reports. */
export type NumericProtocol = NUMERIC_PROTOCOLS;

/** A numeric metric: the mean of a bounded number, or of each attribute of a record. */
export interface NumericConfig {
  /** A mechanism, or "auto" for the smallest worst-case variance at this ε. */
  protocol: NumericProtocol | "auto";
  /** ε of one report (of one whole record): 0.01 ≤ ε ≤ 30. */
  epsilon: number;
  /** [lo, hi] for one number, or one [lo, hi] per attribute of a record. Values are clipped to it. */
  range: [number, number] | Array<[number, number]>;
}

/** RAPPOR over an open domain of strings; the defaults are the paper's. */
export interface RapporConfig {
  protocol: "rappor";
  /** Bloom filter bits k (default 128). */
  bits?: number;
  /** Hash functions h (default 2). */
  hashes?: number;
  /** Cohorts m (default 64). */
  cohorts?: number;
  /** Permanent response: a bit becomes a fair coin with probability f (default 0.5). */
  f?: number;
  /** Instantaneous response: P[1] for a 0 bit (default 0.5). */
  p?: number;
  /** Instantaneous response: P[1] for a 1 bit (default 0.75). */
  q?: number;
  /** The values to decode against (the aggregator's; clients ignore it). */
  candidates?: string[];
}

/** Client-only keys, on any config; the Aggregator ignores them. */
export interface RepeatedCollection {
  /** Draw one permanent response per value and resend it (frequency protocols, one_bit_mean). */
  memoize?: boolean;
  /** Refuse reports that would spend more than `epsilon` within `window` ("30s", "15m", "12h", "1d"). */
  budget?: { epsilon: number; window: string };
  /** Memoized one_bit_mean: steps of the α-point rounding grid (default 32). */
  granularity?: number;
}

/** Any config the package accepts. */
export type Config = (FrequencyConfig | NumericConfig | RapporConfig) & RepeatedCollection;

/** Web Storage's shape: `localStorage` works as is. */
export interface ClientStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export interface ClientOptions {
  /** Keeps the install's secret, memos and ledger across sessions (default: in memory). */
  storage?: ClientStorage;
  /** The ledger's clock in ms since 1970 (default `Date.now`). */
  now?: () => number;
}

/** Any resolved protocol. */
export type Protocol = FrequencyProtocol | NumericProtocol | OPEN_DOMAIN_PROTOCOLS;

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
  /** rappor: the install's cohort (with `bits`). */
  cohort?: number;
  /** Numeric records: the sampled attributes, increasing; dbitflip: the sampled buckets. */
  attributes?: number[];
  /** Numeric records: each sampled attribute's output index; dbitflip: each bucket's bit. */
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

/** A RAPPOR candidate's estimate. */
export interface CandidateEstimate {
  value: string;
  frequency: number;
  std_error: number;
  ci95: [number, number];
}

/** The same object as `localdp aggregate --format json` for RAPPOR. */
export interface RapporEstimate {
  protocol: "rappor";
  /** ε of one report (ε_1). */
  epsilon: number;
  /** The long-run bound per value (ε_∞). */
  epsilon_infinity: number;
  n: number;
  rejected: RejectionCounts;
  /** The candidates the regression selected, most frequent first. */
  estimates: CandidateEstimate[];
  not_detected: string[];
}

/** Any estimate. */
export type Estimate = FrequencyEstimate | NumericEstimate | RecordEstimate | RapporEstimate;

/** The estimate an `Aggregator<C>` returns. */
export type EstimateFor<C extends Config> =
  C extends RapporConfig ? RapporEstimate
  : C extends FrequencyConfig ? FrequencyEstimate
  : C extends { range: [number, number] } ? NumericEstimate
  : C extends { range: Array<[number, number]> } ? RecordEstimate
  : NumericEstimate | RecordEstimate;

/** The values a `Client<C>` randomizes. */
export type ValueFor<C extends Config> =
  C extends RapporConfig ? string
  : C extends FrequencyConfig ? string | number
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
    /// A JS value typed as `ClientOptions` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "ClientOptions")]
    pub type ClientOptionsJs;
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

fn type_error(message: &str) -> JsValue {
    js_sys::TypeError::new(message).into()
}

fn range_error(message: &str) -> JsValue {
    js_sys::RangeError::new(message).into()
}

/// Sets `error[name] = value`; best effort, the error is thrown either way.
fn set_property(error: &JsValue, name: &str, value: JsValue) {
    let _ = Reflect::set(error, &name.into(), &value);
}

/// The core's error as the JS error a caller expects, with its typed fields
/// as properties where a caller may act on them: `key` (malformed configs),
/// `parameter` (invalid configs), `reason` (rejected reports), `cost`,
/// `spent` and `budget` (`PrivacyBudgetExceeded`).
fn js_error(error: Error) -> JsValue {
    let message = error.to_string();
    match error {
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
        Error::ValueNotInDomain { .. }
        | Error::InvalidValue { .. }
        | Error::MergeMismatch { .. }
        | Error::CorruptMemo
        | Error::State(_) => range_error(&message),
        Error::PrivacyBudgetExceeded { cost, spent, budget } => {
            let e = js_sys::Error::new(&message);
            e.set_name("PrivacyBudgetExceeded");
            let e: JsValue = e.into();
            set_property(&e, "cost", cost.into());
            set_property(&e, "spent", spent.into());
            set_property(&e, "budget", budget.into());
            e
        }
        Error::NoReports => {
            let e = js_sys::Error::new(&message);
            e.set_name("NoReports");
            let e: JsValue = e.into();
            set_property(&e, "reason", "no_reports".into());
            e
        }
        _ => js_sys::Error::new(&message).into(),
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
        let e = range_error("invalid configuration: epsilon must be a finite number > 0");
        set_property(&e, "parameter", "epsilon".into());
        return Err(e);
    }
    Metric::from_json(&stringify(config, "config")?).map_err(js_error)
}

/// A Rust value as a plain JS object, through JSON (the CLI's exact output).
fn to_js<T: Serialize>(value: &T) -> JsValue {
    let text = serde_json::to_string(value).expect("serializes");
    JSON::parse(&text).expect("valid JSON")
}

/// Where a client keeps its secret, memos and ledger: `localStorage`,
/// `sessionStorage`, or anything with `getItem`/`setItem`; in memory without.
struct Storage(Option<JsValue>);

impl Storage {
    fn get(&self, key: &str) -> Result<Option<String>, JsValue> {
        let Some(storage) = &self.0 else { return Ok(None) };
        let get: js_sys::Function = Reflect::get(storage, &"getItem".into())?.dyn_into()?;
        Ok(get.call1(storage, &key.into())?.as_string())
    }

    /// Writes, or throws: a client must not release a report whose memo or
    /// ledger entry could not be kept.
    fn set(&self, key: &str, value: &str) -> Result<(), JsValue> {
        let Some(storage) = &self.0 else { return Ok(()) };
        let set: js_sys::Function = Reflect::get(storage, &"setItem".into())?.dyn_into()?;
        set.call2(storage, &key.into(), &value.into()).map(drop)
    }
}

/// The client: randomizes values on this device with `crypto.getRandomValues`,
/// memoizing and keeping its privacy ledger as the config asks.
#[wasm_bindgen]
pub struct Client {
    core: crate::client::Client,
    storage: Storage,
    state_key: String,
    resets: u64,
    now: Option<js_sys::Function>,
    rng: SecureRng,
}

#[wasm_bindgen]
impl Client {
    /// `new Client(config, { storage, now })`: `config` is the CLI's
    /// CONFIG.json object; `storage` (e.g. `localStorage`) keeps the
    /// install's secret, memos and ledger across sessions; `now` (ms, default
    /// `Date.now`) is the ledger's clock.
    #[wasm_bindgen(constructor)]
    pub fn new(config: ConfigJs, options: Option<ClientOptionsJs>) -> Result<Client, JsValue> {
        let config: JsValue = config.into();
        let id = metric_from(&config)?.id();
        let text = stringify(&config, "config")?;
        let options: JsValue = options.map_or(JsValue::UNDEFINED, Into::into);
        let get = |key: &str| -> Result<JsValue, JsValue> {
            if options.is_object() { Reflect::get(&options, &key.into()) } else { Ok(JsValue::UNDEFINED) }
        };
        let storage = get("storage")?;
        let storage = if storage.is_undefined() || storage.is_null() {
            Storage(None)
        } else if Reflect::get(&storage, &"getItem".into())?.is_function() && Reflect::get(&storage, &"setItem".into())?.is_function() {
            Storage(Some(storage))
        } else {
            return Err(type_error("options.storage must have getItem and setItem (like localStorage)"));
        };
        let now = get("now")?;
        let now = if now.is_undefined() { None } else { Some(now.dyn_into::<js_sys::Function>().map_err(|_| type_error("options.now must be a function"))?) };
        let mut rng = SecureRng::new().map_err(js_error)?;
        let mut resets = 0;
        let secret = match storage.get(SECRET_KEY)? {
            Some(s) if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => s,
            found => {
                resets += u64::from(found.is_some());
                let s = crate::client::new_secret(&mut rng);
                storage.set(SECRET_KEY, &s)?;
                s
            }
        };
        let state_key = format!("localdp:state:{id}");
        let resets_key = format!("localdp:resets:{id}");
        let core = crate::client::Client::new(&text, &secret, storage.get(&state_key)?.as_deref()).map_err(js_error)?;
        resets += core.resets();
        let earlier: u64 = storage.get(&resets_key)?.and_then(|r| r.parse().ok()).unwrap_or(0);
        if resets > 0 {
            storage.set(&resets_key, &(earlier + resets).to_string())?;
            storage.set(&state_key, &core.state_json())?;
        }
        Ok(Client { core, storage, state_key, resets: earlier + resets, now, rng })
    }

    /// The resolved protocol (what `"auto"` chose).
    #[wasm_bindgen(getter, unchecked_return_type = "Protocol")]
    pub fn protocol(&self) -> String {
        self.core.metric().protocol().name().to_string()
    }

    /// ε of one report.
    #[wasm_bindgen(getter)]
    pub fn epsilon(&self) -> f64 {
        self.core.metric().epsilon()
    }

    /// True when the secret, memos and ledger live in a storage; false when
    /// they last only as long as this object (each new client is a reset).
    #[wasm_bindgen(getter)]
    pub fn persistent(&self) -> bool {
        self.storage.0.is_some()
    }

    /// How many times the stored state was found corrupt and started afresh.
    /// Each reset means new permanent responses: a value reported across `r`
    /// resets has cost `(r+1)·ε`.
    #[wasm_bindgen(getter)]
    pub fn resets(&self) -> f64 {
        self.resets as f64
    }

    /// ε spent in the budget window ending now.
    #[wasm_bindgen(getter)]
    pub fn spent(&self) -> Result<f64, JsValue> {
        Ok(self.core.spent(self.now_ms()?))
    }

    /// Randomizes one value into a report ready to send: a string, or an
    /// integer for a sized domain; a number for a numeric metric (clipped to
    /// its range), an array of numbers for a record. Only the report leaves
    /// the device. Throws `PrivacyBudgetExceeded` (an `Error` of that name)
    /// when the budget is spent, releasing nothing.
    pub fn randomize(&mut self, value: ValueJs) -> Result<ReportJs, JsValue> {
        let value: JsValue = value.into();
        let now = self.now_ms()?;
        let text = match self.core.metric().value_kind() {
            ValueKind::Text => value.as_string().ok_or_else(|| type_error("a value of this metric must be a string"))?,
            ValueKind::Index { size } => {
                if let Some(s) = value.as_string() {
                    s
                } else if let Some(n) = value.as_f64() {
                    if size.is_none() {
                        return Err(type_error("this domain's values are strings"));
                    }
                    if n.fract() != 0.0 || n < 0.0 || !n.is_finite() {
                        return Err(js_error(Error::ValueNotInDomain { domain: DomainKind::Size(size.unwrap_or(0)) }));
                    }
                    (n as u64).to_string()
                } else {
                    return Err(type_error("a value must be a string or a number"));
                }
            }
            ValueKind::Numbers { .. } => {
                let numbers: Vec<f64> = if let Some(n) = value.as_f64() {
                    vec![n]
                } else if js_sys::Array::is_array(&value) {
                    js_sys::Array::from(&value)
                        .iter()
                        .map(|v| v.as_f64().ok_or_else(|| type_error("a record must be an array of numbers")))
                        .collect::<Result<_, _>>()?
                } else {
                    return Err(type_error("a numeric value must be a number (or an array of numbers for a record)"));
                };
                if numbers.iter().any(|x| !x.is_finite()) {
                    return Err(js_error(Error::InvalidValue { expected: ExpectedValue::FiniteNumber }));
                }
                numbers.iter().map(|&x| number_text(x)).collect::<Vec<_>>().join(",")
            }
        };
        let report = self.core.randomize_text(&text, now, &mut self.rng)
        .map_err(js_error)?;
        if self.persistent() {
            self.storage.set(&self.state_key, &self.core.state_json())?;
        }
        Ok(JSON::parse(&report.to_json()).expect("valid JSON").unchecked_into())
    }

    fn now_ms(&self) -> Result<u64, JsValue> {
        let ms = match &self.now {
            Some(f) => f.call0(&JsValue::NULL)?.as_f64().ok_or_else(|| type_error("options.now must return a number"))?,
            None => js_sys::Date::now(),
        };
        if !(ms.is_finite() && ms >= 0.0) {
            return Err(range_error("the clock must give a time in ms since 1970"));
        }
        Ok(ms as u64)
    }
}

/// Every protocol's name, by family (`{frequency, numeric, openDomain}`):
/// the names the library declares once, which the build also writes into
/// the TypeScript types.
#[wasm_bindgen(js_name = protocols)]
pub fn protocols() -> JsValue {
    fn names<P: ProtocolFamily>() -> Vec<&'static str> {
        P::ALL.iter().map(|p| p.name()).collect()
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Families {
        frequency: Vec<&'static str>,
        numeric: Vec<&'static str>,
        open_domain: Vec<&'static str>,
    }
    to_js(&Families {
        frequency: names::<crate::FrequencyProtocol>(),
        numeric: names::<crate::NumericProtocol>(),
        open_domain: names::<crate::OpenDomainProtocol>(),
    })
}

/// The storage key of the per-install secret.
const SECRET_KEY: &str = "localdp:secret";

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
        self.inner.protocol().name().to_string()
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
