//! The full module's JavaScript face: the Aggregator, every protocol's name
//! for the TypeScript types, the accountant (`compose`, `shuffle`) and the
//! planner (`plan`), over `localdp`; and the client module's `ClientCore`
//! (`localdp-wasm-client`), so that one module does both. Compiled for
//! wasm32 only.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

pub use localdp_wasm_client::ClientCore;

use localdp_wasm_client::convert::{
    config_object, js_error, metric_from, range_error, type_error, AddManyResultJs, ConfigJs, EstimateJs,
    EstimateOptionsJs, RejectionCountsJs, ReportInputJs, ReportsJs, MAX_SAFE_INTEGER,
};
use localdp::aggregate::RejectionCounts;
use localdp::columnar::{Columns, Row, BATCH};
use localdp_core::json::{self, js_array};
use localdp_core::report::BitVector;
use localdp_core::names::ProtocolFamily;
use localdp::{Aggregator as CoreAggregator, PostProcessing};
use localdp_core::js;
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// A Rust value as a plain JS object, through serde_json's text (the CLI's
/// exact output: non-finite numbers become null as there).
fn to_js<T: Serialize>(value: &T) -> JsValue {
    serde_json::to_string(value).ok().and_then(|text| js::parse(&text.into()).ok()).unwrap_or(JsValue::NULL)
}

/// A report given to the Aggregator as the object it is read from: a JSON
/// line parsed by `JSON.parse` (the string never copied into the module;
/// `null` if it is not JSON), an object as it is.
fn report_object(report: JsValue) -> JsValue {
    if report.is_string() {
        return localdp_core::json::parse_js(&report).unwrap_or(JsValue::NULL);
    }
    report
}

/// A report given to the Aggregator, parsed: its object
/// ([`report_object`]) read as it is ([`localdp_core::Report::from_js`]).
fn parse(report: JsValue) -> localdp::Result<localdp::Report> {
    localdp_core::Report::from_js(&report_object(report))
}

/// Every protocol's name, by family (`{frequency, numeric, openDomain,
/// heavyHitter, distribution, keyValue, marginals}`):
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
        heavy_hitter: Vec<&'static str>,
        distribution: Vec<&'static str>,
        key_value: Vec<&'static str>,
        marginals: Vec<&'static str>,
    }
    to_js(&Families {
        frequency: names::<localdp::FrequencyProtocol>(),
        numeric: names::<localdp::NumericProtocol>(),
        open_domain: names::<localdp::OpenDomainProtocol>(),
        heavy_hitter: names::<localdp::HeavyHitterProtocol>(),
        distribution: names::<localdp::DistributionProtocol>(),
        key_value: names::<localdp::KeyValueProtocol>(),
        marginals: names::<localdp::MarginalsProtocol>(),
    })
}

#[wasm_bindgen(typescript_custom_section)]
const ACCOUNTING_TYPES: &str = r#"
/** `count` reports of one user at `epsilon` each (pure ε-DP), for `compose`. */
export interface ReportGroup {
  /** ε of each report of the group. */
  epsilon: number;
  /** A whole number ≥ 1. */
  count: number;
}

/** What `compose` returns: the same object as `localdp privacy compose`. */
export interface Composition {
  /** The least ε for which all the reports together are (ε, δ)-DP, rounded up. */
  epsilon: number;
  /** The δ asked for. */
  delta: number;
  /** The basic composition Σ ε (δ = 0), rounded up. */
  sum: number;
}

/** What `shuffle` takes: the CLI's `privacy shuffle` options. */
export interface ShuffleOptions {
  /** ε₀ of each local report. */
  epsilon: number;
  /** The number of reports shuffled together (a whole number ≥ 1). */
  n: number;
  /** The δ of the central guarantee, in (1e-200, 1). */
  delta: number;
  /** "grr" for k-ary randomized response's tighter bound (with `domain`); absent for any ε₀-DP randomizer. */
  protocol?: "grr";
  /** With `protocol: "grr"` only: the domain's size k ≥ 2 (a `TypeError` without a protocol). */
  domain?: number;
}

/** What `shuffle` returns: the same object as `localdp privacy shuffle`. */
export interface Amplification {
  /** An upper bound on the central ε of the shuffled reports. */
  epsilon: number;
  /** A lower bound on the ε the numerical method certifies. */
  lower: number;
  /** The paper's closed form where its condition holds, else null. */
  closed_form: number | null;
}
"#;

#[wasm_bindgen(typescript_custom_section)]
const PLAN_TYPES: &str = r#"
/** What `plan` plans for. */
export interface PlanOptions {
  /** The users, one report each: a whole number ≥ 1. */
  users: number;
  /** A target 95% half-width, in the first error's units (a share for frequencies and ranks, the range's units for a mean). */
  targetError?: number;
}

/** One expected error of a protocol at the planned users. */
export interface PlanError {
  /** What is estimated, and for which population. */
  quantity: string;
  /** The expected standard error; null where there is no closed form (Square Wave). */
  std_error: number | null;
  /** 1.96 × the standard error. */
  half_width: number | null;
}

/** The planner's numbers for one protocol. */
export interface ProtocolPlan {
  /** The protocol this row plans. */
  protocol: Protocol;
  /** True for the protocol "auto" (or "distribution", "heavy_hitters") resolves to. */
  auto: boolean;
  /** True for the protocol the config resolves to. */
  configured: boolean;
  /** The errors at the planned users; the first is the one targets and min_users refer to. */
  errors: PlanError[];
  /** Mean bytes of a JSON report. */
  bytes: number;
  /** Work per report, counted from the protocol's definition (not timed). */
  cost: {
    /** Exact random draws on the device per report (coins and uniform integers). */
    client_coins: number;
    /** Hashes a client computes per report. */
    client_hashes: number;
    /** Counters the aggregator adds to per report (expected). */
    aggregation_counters: number;
    /** Hashes the aggregator computes per report. */
    aggregation_hashes: number;
  };
  /** The users at which the first error's 95% half-width falls to 0.05 (of the users, or of the range for a mean). */
  min_users: number;
  /** Users needed for the target at the config's ε (null without a target). */
  users_needed: number | null;
  /** The smallest ε reaching the target at the planned users (null without a target, or out of reach even at ε = 30). */
  epsilon_needed: number | null;
}

/** The planner's answer: the same object as `localdp plan --format json`. */
export interface Plan {
  /** The config's family. */
  family: "frequency" | "numeric" | "distribution" | "marginals" | "key_value" | "heavy-hitter" | "rappor";
  /** The users planned for (one report each). */
  users: number;
  /** The config's ε of one report. */
  epsilon: number;
  /** What all reports of one value spend in the long run (RAPPOR's ε∞; a memoized metric's epsilon above its instantaneous ε); otherwise epsilon. */
  long_run_epsilon: number;
  /** The ε the configured protocol's channel realizes; below long_run_epsilon, the config pays for privacy budget it does not use. */
  realized_epsilon: number;
  /** The target 95% half-width, or null. */
  target_error: number | null;
  /** The protocol the config resolves to. */
  configured: Protocol;
  /** The protocol the family's automatic choice resolves to, or null. */
  auto: Protocol | null;
  /** The rule behind min_users. */
  rule: string;
  /** One row per protocol the family allows for this config. */
  protocols: ProtocolPlan[];
}
"#;

#[wasm_bindgen]
extern "C" {
    /// A JS value typed as `ReportGroup[]` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "ReportGroup[]")]
    pub type ReportGroupsJs;
    /// A JS value typed as `Composition` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "Composition")]
    pub type CompositionJs;
    /// A JS value typed as `ShuffleOptions` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "ShuffleOptions")]
    pub type ShuffleOptionsJs;
    /// A JS value typed as `Amplification` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "Amplification")]
    pub type AmplificationJs;
    /// A JS value typed as `PlanOptions` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "PlanOptions")]
    pub type PlanOptionsJs;
    /// A JS value typed as `Plan` in the TypeScript declarations.
    #[wasm_bindgen(typescript_type = "Plan")]
    pub type PlanJs;
}

/// `object[key]` as a number, or a TypeError naming `what`.
fn number(object: &JsValue, key: &str, what: &str) -> Result<f64, JsValue> {
    js::reflect_get(object, &key.into())?.as_f64().ok_or_else(|| type_error(what))
}

/// A whole number in `0..=Number.MAX_SAFE_INTEGER`, or a TypeError naming `what`.
fn whole(x: f64, what: &str) -> Result<u64, JsValue> {
    if x.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&x) {
        Ok(x as u64)
    } else {
        Err(type_error(what))
    }
}

/// The optimal composition of one user's pure ε-DP reports at `delta`
/// (`reports`: `[{ epsilon: 0.1, count: 365 }, …]`): the same object and
/// numbers as `localdp privacy compose --delta δ 0.1x365 …`. Throws a
/// `RangeError` (with `parameter`) for an ε, count or δ out of range.
#[wasm_bindgen(js_name = compose)]
pub fn compose(reports: ReportGroupsJs, delta: f64) -> Result<CompositionJs, JsValue> {
    let reports: JsValue = reports.into();
    if !js::Array::is_array(&reports)? {
        return Err(type_error("reports must be an array of { epsilon, count }"));
    }
    let what = "each report group must be { epsilon: number, count: a whole number }";
    let groups = js::Array::from(&reports)?
        .items()
        .map(|group| Ok((number(&group, "epsilon", what)?, whole(number(&group, "count", what)?, what)?)))
        .collect::<Result<Vec<_>, JsValue>>()?;
    Ok(to_js(&localdp::accounting::compose(&groups, delta).map_err(js_error)?).unchecked_into())
}

/// Amplification by shuffling: an upper bound on the central ε of `n`
/// shuffled ε₀-DP reports at δ, for any randomizer or, with `protocol:
/// "grr"` and `domain`, k-ary randomized response: the same object and
/// numbers as `localdp privacy shuffle`. Throws a `RangeError` (with
/// `parameter`) for a number out of range, and a `TypeError` for a
/// `domain` without a `protocol` (as the CLI refuses `--domain` alone).
#[wasm_bindgen(js_name = shuffle)]
pub fn shuffle(options: ShuffleOptionsJs) -> Result<AmplificationJs, JsValue> {
    let options: JsValue = options.into();
    if !options.is_object() {
        return Err(type_error("shuffle takes { epsilon, n, delta, protocol?, domain? }"));
    }
    let epsilon = number(&options, "epsilon", "options.epsilon must be a number")?;
    let n = whole(number(&options, "n", "options.n must be a whole number")?, "options.n must be a whole number")?;
    let delta = number(&options, "delta", "options.delta must be a number")?;
    let protocol = js::reflect_get(&options, &"protocol".into())?;
    let amplification = if protocol.is_undefined() {
        // As `privacy shuffle --domain` without `--protocol`: refused, not
        // silently ignored (the bound asked for would not be the one given).
        if !js::reflect_get(&options, &"domain".into())?.is_undefined() {
            return Err(type_error("options.domain goes with protocol: \"grr\" (without a protocol, no domain)"));
        }
        localdp::accounting::shuffle(epsilon, n, delta)
    } else if protocol.as_string().as_deref() == Some("grr") {
        let what = "options.domain must be a whole number (the domain's size)";
        let k = whole(number(&options, "domain", what)?, what)?;
        localdp::accounting::shuffle_randomized_response(epsilon, k, n, delta)
    } else {
        return Err(type_error("options.protocol must be \"grr\" or absent"));
    };
    Ok(to_js(&amplification.map_err(js_error)?).unchecked_into())
}

/// Plans a config before collecting: for every protocol its family allows,
/// the expected standard error and 95% half-width at `users`, bytes and
/// counted work per report, the users below which an estimate means nothing
/// (`min_users`), and with `targetError` the users and the ε it needs.
/// The same object as `localdp plan --format json` (docs/choosing-epsilon.md).
///
/// ```js
/// const p = plan({ protocol: 'auto', epsilon: 1, domain: 16 }, { users: 10000, targetError: 0.02 });
/// p.protocols.find((row) => row.auto).protocol; // 'ss'
/// ```
#[wasm_bindgen(js_name = plan)]
pub fn plan(config: ConfigJs, options: PlanOptionsJs) -> Result<PlanJs, JsValue> {
    let config = config_object(&config)?;
    let options: JsValue = options.into();
    if !options.is_object() {
        return Err(type_error("options must be an object: { users, targetError? }"));
    }
    let users = js::reflect_get(&options, &"users".into())?.as_f64();
    let users = match users {
        Some(u) if u >= 1.0 && u <= MAX_SAFE_INTEGER && u.fract() == 0.0 => u as u64,
        _ => return Err(range_error("options.users must be a whole number from 1 to 2^53 - 1")),
    };
    let target = js::reflect_get(&options, &"targetError".into())?;
    let target_error = match target.as_f64() {
        Some(e) => Some(e),
        None if target.is_undefined() || target.is_null() => None,
        None => return Err(type_error("options.targetError must be a number")),
    };
    let request = localdp::plan::PlanRequest { users, target_error };
    Ok(to_js(&localdp::plan::plan_object(&config, &request).map_err(js_error)?).unchecked_into())
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
        self.inner.add_parsed(parse(report.into())).map_err(js_error)
    }

    /// Adds many reports (an array or any iterable of objects or JSON lines).
    /// Bad reports are counted, never thrown.
    #[wasm_bindgen(js_name = addMany)]
    pub fn add_many(&mut self, reports: ReportsJs) -> Result<AddManyResultJs, JsValue> {
        let reports: JsValue = reports.into();
        if !reports.is_object() {
            return Err(type_error("reports must be an array or an iterable"));
        }
        let array = js::Array::from(&reports)?;
        let before_n = self.inner.n();
        let before = *self.inner.rejected();
        // Each element read on its own (a JSON line by JS's JSON.parse), so
        // one bad element costs only itself: a report of this metric's
        // envelope whose fields have their types goes into columns, counted
        // a batch at a time by the kernels; anything else is read and
        // counted alone, as `add` does.
        let mut reader = ObjectColumns::new(&self.inner);
        for item in array.items() {
            let entries = localdp_core::json::js_entries(&report_object(item));
            if !entries.as_ref().is_some_and(|entries| reader.read(entries, &mut self.inner)) {
                let _ = self.inner.add_parsed(localdp_core::Report::from_js_entries(entries.as_ref()));
            }
            if reader.columns.len() == BATCH {
                self.inner.add_columns(&mut reader.columns);
            }
        }
        self.inner.add_columns(&mut reader.columns);
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
                let post = js::reflect_get(&options, &"post".into())?;
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

/// The wire fields of a report, in the order a client writes them: the
/// envelope's four, then the payload's.
const FIELDS: [&str; 10] = ["version", "protocol", "epsilon", "domain", "seed", "value", "bits", "cohort", "attributes", "values"];

/// Reads report objects of one metric into [`Columns`]: an object whose
/// keys are wire fields, whose envelope is the metric's, exactly (the JS
/// strings compared as JS compares them, ε bit for bit), and whose payload
/// fields have their wire types (whole numbers JS holds exactly, seeds and
/// cohorts below 2^32, bits in hex, lists of such numbers) becomes a row;
/// the batch then validates and counts its rows as
/// [`localdp::Aggregator::add`] would each report. Any other object is left
/// to the object reader ([`localdp_core::Report::from_js_entries`]), so what is
/// refused, and why, is decided as for one report at a time.
struct ObjectColumns {
    /// [`FIELDS`] as JS strings, made once.
    keys: Vec<JsValue>,
    /// The metric's envelope as JS values: version, protocol, ε and
    /// fingerprint (JS's `===` of two numbers, neither of them 0 or NaN, is
    /// their equality bit for bit).
    envelope: [JsValue; 4],
    columns: Columns,
    /// The current row's `attributes` (as read, and narrowed) and `values`.
    read_attributes: Vec<u64>,
    attributes: Vec<u32>,
    values: Vec<u64>,
}

impl ObjectColumns {
    fn new(aggregator: &CoreAggregator) -> ObjectColumns {
        let envelope = localdp_core::metric::envelope(aggregator.metric().kind(), localdp_core::report::Payload::Index(0));
        ObjectColumns {
            keys: FIELDS.iter().map(|&key| JsValue::from_str(key)).collect(),
            envelope: [
                JsValue::from(envelope.version),
                JsValue::from_str(envelope.protocol.name()),
                JsValue::from(envelope.epsilon),
                JsValue::from_str(&envelope.domain),
            ],
            columns: Columns::default(),
            read_attributes: Vec::new(),
            attributes: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Reads an object's entries into a row (counting the rows before it
    /// into `aggregator` if it cannot join them); false (nothing read) if
    /// they are not a report of this metric as the columns carry it.
    fn read(&mut self, entries: &js::Array, aggregator: &mut CoreAggregator) -> bool {
        let (mut seen, mut next) = (0u16, 0);
        // seed, value and cohort; bits; attributes and values.
        let mut numbers = [None; 3];
        let mut bits = None;
        let mut lists = [false; 2];
        for i in 0..entries.length() {
            let entry: js::Array = entries.get(i).unchecked_into();
            let key = entry.get(0);
            // Clients write the fields in order: the next one is tried first.
            let Some(k) = (next..FIELDS.len()).chain(0..next).find(|&k| self.keys[k] == key) else {
                return false;
            };
            (seen, next) = (seen | 1 << k, k + 1);
            let value = entry.get(1);
            let read = match k {
                0..=3 => value == self.envelope[k],
                4 | 5 | 7 => {
                    numbers[(k - 4).min(2)] = value.as_f64().and_then(json::whole);
                    numbers[(k - 4).min(2)].is_some()
                }
                // Odd or not hex: the object reader says which.
                6 => {
                    bits = value.as_string().and_then(|hex| BitVector::from_hex(&hex).ok());
                    bits.is_some()
                }
                8 => {
                    lists[0] = whole_numbers(&value, &mut self.read_attributes)
                        && narrow(&self.read_attributes, &mut self.attributes);
                    lists[0]
                }
                _ => {
                    lists[1] = whole_numbers(&value, &mut self.values);
                    lists[1]
                }
            };
            if !read {
                return false;
            }
        }
        let [seed, value, cohort] = numbers;
        let (Ok(seed), Ok(cohort)) = (seed.map(u32::try_from).transpose(), cohort.map(u32::try_from).transpose()) else {
            return false;
        };
        let row = Row {
            value,
            seed,
            cohort,
            bits: bits.as_ref().map(BitVector::as_bytes),
            attributes: lists[0].then_some(&self.attributes[..]),
            values: lists[1].then_some(&self.values[..]),
        };
        seen & 0b1111 == 0b1111
            && (self.columns.push(row) || {
                aggregator.add_columns(&mut self.columns);
                self.columns.push(row)
            })
    }
}

/// A JS array of whole numbers JS holds exactly, into `out`; false for
/// anything else.
fn whole_numbers(value: &JsValue, out: &mut Vec<u64>) -> bool {
    out.clear();
    js_array(value).is_some_and(|items| {
        items.items().all(|item| item.as_f64().and_then(json::whole).map(|n| out.push(n)).is_some())
    })
}

/// `numbers` into `out` if every one fits a `u32`.
fn narrow(numbers: &[u64], out: &mut Vec<u32>) -> bool {
    out.clear();
    numbers.iter().all(|&n| u32::try_from(n).map(|n| out.push(n)).is_ok())
}
