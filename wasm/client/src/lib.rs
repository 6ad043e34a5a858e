//! The client module's JavaScript face (`ClientCore`), over
//! `localdp-core` alone; the full module (`localdp-wasm`) links it with the
//! Aggregator. Compiled for wasm32 only.
//!
//! Thin wrappers: configs and reports cross the boundary as JSON (so a report
//! made here is byte-for-byte the same object as a line of `localdp
//! randomize`), the core does the work, and its errors become real JS errors:
//! `TypeError` for wrong shapes, `RangeError` for out-of-range parameters or
//! values, with a `reason` property on rejected reports. No message contains a
//! raw value.

#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

#[cfg(feature = "bindgen")]
use face::clock;
#[cfg(all(feature = "bindgen", feature = "grr"))]
use face::{index_text, Input};
#[cfg(feature = "bindgen")]
use localdp_core::error::Error;
#[cfg(feature = "bindgen")]
use localdp_core::metric::ValueKind;
#[cfg(feature = "bindgen")]
use localdp_core::SecureRng;
#[cfg(feature = "bindgen")]
use wasm_bindgen::prelude::*;

#[cfg(feature = "bindgen")]
#[doc(hidden)]
pub mod convert;
#[doc(hidden)]
pub mod face;
#[cfg(all(feature = "heap", not(target_feature = "atomics")))]
mod heap;
#[cfg(not(feature = "bindgen"))]
mod raw;
#[cfg(feature = "bindgen")]
use convert::{config_object, js_error, js_failure, type_error, ConfigJs, ReportJs, ValueJs};

#[cfg(feature = "bindgen")]
#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** A frequency protocol, as resolved and named in reports. */
export type FrequencyProtocol = FREQUENCY_PROTOCOLS;

/** The same object as the CLI's CONFIG.json. */
export interface FrequencyConfig {
  /** A protocol, or "auto" for the smallest variance at this ε and domain. */
  protocol: FrequencyProtocol | "auto";
  /** ε of one report: 0.01 ≤ ε ≤ 30 (with `instantaneous_epsilon`: the long-run ε of all reports of one value). */
  epsilon: number;
  /** A size d (values are the integers 0..d) or a list of distinct strings. */
  domain: number | readonly string[];
  /** dbitflip only: buckets sampled per report (default 1). */
  d?: number;
  /** With `memoize`: ε of one report (0.01 < ε_1 < epsilon); each report randomizes the value's permanent response, made at `epsilon`, afresh. grr, sue, oue, blh, olh, auto. With blh and olh every report of an install carries the same `seed`: a pseudonym that links them all. */
  instantaneous_epsilon?: number;
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
  range: readonly [number, number] | ReadonlyArray<readonly [number, number]>;
}

/** RAPPOR over an open domain of strings; the defaults are the paper's. */
export interface RapporConfig {
  /** RAPPOR (Erlingsson, Pihur, Korolova 2014). */
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
  candidates?: readonly string[];
}

/** A sketch or heavy-hitter discovery protocol, as resolved and named in reports. */
export type HeavyHitterProtocol = HEAVY_HITTER_PROTOCOLS;

/** Open domains at scale: cms/hcms score candidate strings; pem/treehist/sfp find the most frequent ones. */
export interface HeavyHitterConfig {
  /** A protocol, or "heavy_hitters" for the best discovery protocol. */
  protocol: HeavyHitterProtocol | "heavy_hitters";
  /** ε of one report: 0.01 ≤ ε ≤ 30. */
  epsilon: number;
  /** Discovery: the longest value in bytes of UTF-8, 1..64 (default 16). */
  max_length?: number;
  /** Discovery: cut longer values at a character boundary instead of refusing them (default false). */
  truncate?: boolean;
  /** Discovery: how many values the estimate lists (default 20). */
  top?: number;
  /** cms, hcms, sfp: k hash functions (default 256; sfp 32) and m columns, a power of two (default 1024). */
  sketch?: {
    /** k, the sketch's rows: one hash function each. */
    hashes?: number;
    /** m, the columns of a row: a power of two. */
    width?: number;
  };
  /** cms, hcms: the values to score (the aggregator's; clients ignore it). */
  candidates?: readonly string[];
}

/** A distribution mechanism, as resolved and named in reports. */
export type DistributionProtocol = DISTRIBUTION_PROTOCOLS;

/** The whole distribution of a bounded number: a histogram, quantiles and the mean. */
export interface DistributionConfig {
  /** square_wave (Square Wave with EMS), hierarchical (a 4-ary tree of frequency oracles), or "distribution" for the better. */
  protocol: DistributionProtocol | "distribution";
  /** ε of one report: 0.01 ≤ ε ≤ 30. */
  epsilon: number;
  /** [lo, hi]. Values are clipped to it. */
  range: readonly [number, number];
  /** The histogram's bins, 2..4096 (default 64). */
  bins?: number;
}

/** A key-value mechanism (PCKV), as resolved and named in reports. */
export type KeyValueProtocol = KEY_VALUE_PROTOCOLS;

/** A user's whole key-value map (which features, and how much of each) in one report charged ε once: each key's frequency and mean. */
export interface KeyValueConfig {
  /** pckv_grr (randomized response on the joint key-sign domain), pckv_ue (one ternary symbol per key), or "key_value" for the one of smaller variance. */
  protocol: KeyValueProtocol | "key_value";
  /** ε of one report (of a whole map): 0.01 ≤ ε ≤ 30. */
  epsilon: number;
  /** The keys: labels, or a count K for the keys "0".."K−1" (2..65536). */
  keys: readonly string[] | number;
  /** [lo, hi]. Values are clipped to it. */
  range: readonly [number, number];
  /** ℓ, 1..256: maps are padded to ℓ keys and one key is sampled; a user holding more than ℓ keys counts ℓ/|map| for each. */
  pad: number;
}

/** A marginals protocol, as resolved and named in reports. */
export type MarginalsProtocol = MARGINALS_PROTOCOLS;

/** One field of a marginals metric's events. */
export interface MarginalsAttribute {
  /** The field's name in an event object (unique, not empty). */
  name: string;
  /** A size d (values are the integers 0..d) or a list of distinct strings. */
  domain: number | readonly string[];
}

/** Joint histograms (marginals) of events with several fields: every `way`-way marginal and each field's histogram, one report (ε once) per event. */
export interface MarginalsConfig {
  /** marginals_oue or marginals_olh (one uniformly drawn `way`-set of fields, through OUE or OLH on its joint domain), or "marginals" for the smaller variance. */
  protocol: MarginalsProtocol | "marginals";
  /** ε of one report (of one whole event): 0.01 ≤ ε ≤ 30. */
  epsilon: number;
  /** The marginals' order, 1 to the number of attributes (default 2). */
  way?: number;
  /** 2 to 16 fields; all `way`-way marginals together hold at most 2^20 cells. */
  attributes: readonly MarginalsAttribute[];
}

/** Client-only keys, on any config; the Aggregator ignores them. */
export interface RepeatedCollection {
  /** Draw one permanent response per value and resend it (frequency protocols, heavy hitters, distributions, key-value maps, marginals (per cell of the set drawn once), one_bit_mean; RAPPOR always does). */
  memoize?: boolean;
  /** Refuse reports that would spend more than `epsilon` within `window` ("30s", "15m", "12h", "1d"): their ε summed, or with `delta` their optimal composition at that δ (365 reports at ε 0.1 cost 36.5 summed, 10.31 composed at δ 1e-6). */
  budget?: {
    /** The most ε the reports of one window may spend together. */
    epsilon: number;
    /** The window's length: "30s", "15m", "12h", "1d". */
    window: string;
    /** With it (in (1e-200, 1)), reports are charged by their optimal composition at this δ instead of their sum. */
    delta?: number;
  };
  /** Memoized one_bit_mean: steps of the α-point rounding grid (default 32). */
  granularity?: number;
}

/** Any config the package accepts. */
export type Config = (FrequencyConfig | NumericConfig | RapporConfig | HeavyHitterConfig | DistributionConfig | KeyValueConfig | MarginalsConfig) & RepeatedCollection;

/** `new Client(config, options)`'s options. */
export interface ClientOptions {
  /** Not taken: `new Client` keeps its state in memory; `Client.open(config, { storage })` keeps it in a storage. */
  storage?: never;
  /** The ledger's clock in ms since 1970 (default `Date.now`). */
  now?: () => number;
}

/** Any resolved protocol. */
export type Protocol = FrequencyProtocol | NumericProtocol | HeavyHitterProtocol | DistributionProtocol | KeyValueProtocol | MarginalsProtocol | OPEN_DOMAIN_PROTOCOLS;

/** One report: the same object as one line of `localdp randomize`. */
export interface Report {
  /** The wire format's version. */
  version: 1;
  /** The resolved protocol that made the report. */
  protocol: Protocol;
  /** ε of this report (with an instantaneous step: ε_1). */
  epsilon: number;
  /** Fingerprint of the domain or range. */
  domain: string;
  /** grr, hr: an index; blh, olh: the randomized bucket; numeric: an output index on the public grid. */
  value?: number;
  /** blh, olh: the 32-bit seed of the hash function. */
  seed?: number;
  /** sue, oue, ss: d bits as hex, bit i in byte i/8 at position i%8. */
  bits?: string;
  /** rappor: the install's cohort (with `bits`); cms, hcms: the sketch row; pem, treehist: the prefix level; hierarchical: the tree level; marginals: the set of attributes. */
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

/** `Aggregator.estimate(options)`'s options. */
export interface EstimateOptions {
  /** Default "none" (the unbiased estimate). */
  post?: PostProcessing;
}

/** One value's estimated frequency. */
export interface ValueEstimate {
  /** A number for a sized domain, else the label. */
  value: number | string;
  /** After post-processing. */
  frequency: number;
  /** The unbiased estimate, before post-processing (may be negative). */
  unbiased_frequency: number;
  /** Standard error of the unbiased estimate. */
  std_error: number;
  /** 95% interval around the unbiased estimate. */
  ci95: [number, number];
}

/** The same object as `localdp aggregate --format json`. */
export interface FrequencyEstimate {
  /** The resolved protocol. */
  protocol: FrequencyProtocol;
  /** ε of one report. */
  epsilon: number;
  /** Reports accepted. */
  n: number;
  /** Reports rejected, by reason. */
  rejected: RejectionCounts;
  /** The post-processing applied to `frequency`. */
  post: PostProcessing;
  /** One entry per value of the domain, in its order. */
  estimates: ValueEstimate[];
}

/** One attribute's mean, in the range's units. */
export interface MeanEstimate {
  /** The unbiased mean of the clipped values (it may fall outside the range by chance). */
  mean: number;
  /** Its standard error. */
  std_error: number;
  /** Its 95% interval. */
  ci95: [number, number];
}

/** The same object as `localdp aggregate --format json` for a numeric metric of one number. */
export interface NumericEstimate extends MeanEstimate {
  /** The resolved mechanism. */
  protocol: NumericProtocol;
  /** ε of one report. */
  epsilon: number;
  /** Reports accepted. */
  n: number;
  /** Reports rejected, by reason. */
  rejected: RejectionCounts;
}

/** The same object as `localdp aggregate --format json` for a record metric. */
export interface RecordEstimate {
  /** The resolved mechanism. */
  protocol: NumericProtocol;
  /** ε of one report (of one whole record). */
  epsilon: number;
  /** Reports accepted. */
  n: number;
  /** Reports rejected, by reason. */
  rejected: RejectionCounts;
  /** One entry per attribute, in the config's order. */
  attributes: MeanEstimate[];
}

/** A RAPPOR candidate's estimate. */
export interface CandidateEstimate {
  /** The string. */
  value: string;
  /** Its estimated frequency. */
  frequency: number;
  /** The estimate's standard error. */
  std_error: number;
  /** Its 95% interval. */
  ci95: [number, number];
}

/** The same object as `localdp aggregate --format json` for RAPPOR. */
export interface RapporEstimate {
  /** Always "rappor". */
  protocol: "rappor";
  /** ε of one report (ε_1). */
  epsilon: number;
  /** The long-run bound per value (ε_∞). */
  epsilon_infinity: number;
  /** Reports accepted. */
  n: number;
  /** Reports rejected, by reason. */
  rejected: RejectionCounts;
  /** The candidates the regression selected, most frequent first. */
  estimates: CandidateEstimate[];
  /** The candidates it did not select. */
  not_detected: string[];
}

/** The same object as `localdp aggregate --format json` for a heavy-hitter metric: one of the two lists, so that `'estimates' in e` narrows. */
export type HeavyHitterEstimate = {
  /** The resolved protocol. */
  protocol: HeavyHitterProtocol;
  /** ε of one report. */
  epsilon: number;
  /** Reports accepted. */
  n: number;
  /** Reports rejected, by reason. */
  rejected: RejectionCounts;
} & (
  | {
    /** cms, hcms: every candidate, in the config's order. */
    estimates: CandidateEstimate[];
  }
  | {
    /** pem, treehist, sfp: the values found, most frequent first (at most `top`). */
    heavy_hitters: CandidateEstimate[];
  }
);

/** One bin of a distribution's histogram. */
export interface DistributionBin {
  /** The bin's low end, included. */
  lo: number;
  /** The bin's high end, excluded (included for the last bin). */
  hi: number;
  /** The share of values in [lo, hi). */
  frequency: number;
  /** Its 95% interval. */
  ci95: [number, number];
}

/** One quantile of a distribution, in the range's units. */
export interface QuantileEstimate {
  /** The level in [0, 1]. */
  q: number;
  /** The estimated quantile. */
  value: number;
  /** Its 95% interval. */
  ci95: [number, number];
}

/** The same object as `localdp aggregate --format json` for a distribution metric. */
export interface DistributionEstimate {
  /** The resolved mechanism. */
  protocol: DistributionProtocol;
  /** ε of one report. */
  epsilon: number;
  /** Reports accepted. */
  n: number;
  /** Reports rejected, by reason. */
  rejected: RejectionCounts;
  /** One entry per bin, from the range's low end. */
  histogram: DistributionBin[];
  /** p50, p90, p95, p99. */
  quantiles: QuantileEstimate[];
  /** The mean of the bins' midpoints. */
  mean: {
    /** The mean. */
    value: number;
    /** Its 95% interval. */
    ci95: [number, number];
  };
}

/** An estimate with its standard error and 95% interval. */
export interface KeyValueStat {
  /** The estimate. */
  estimate: number;
  /** Its standard error (closed form). */
  se: number;
  /** estimate ± 1.96·se. */
  ci95: [number, number];
}

/** One key of a key-value estimate. */
export interface KeyEstimate {
  /** The key, as the config names it ("3" for the keys of a count). */
  key: string;
  /** The share of users holding the key. */
  frequency: KeyValueStat;
  /** The mean of its value among them, in the range's units. */
  mean: KeyValueStat;
}

/** The same object as `localdp aggregate --format json` for a key-value metric. */
export interface KeyValueEstimate {
  /** The resolved mechanism. */
  protocol: KeyValueProtocol;
  /** ε of one report. */
  epsilon: number;
  /** Reports accepted. */
  n: number;
  /** Reports rejected, by reason. */
  rejected: RejectionCounts;
  /** One entry per key, in the config's order. */
  keys: KeyEstimate[];
}

/** One cell of a marginal. */
export interface MarginalCell {
  /** Each of the marginal's attributes' value: a number for a sized domain, else the label. */
  values: Array<number | string>;
  /** The share of events in the cell (post-processed if asked: then consistent with `histograms`). */
  frequency: number;
  /** Standard error of the unbiased estimate. */
  se: number;
  /** The unbiased estimate ± 1.96 se (post-processing moves `frequency`, not the interval). */
  ci95: [number, number];
}

/** One `way`-way marginal: the joint histogram of a set of attributes. */
export interface Marginal {
  /** The attributes' names, in the config's order. */
  attributes: string[];
  /** The reports made for this set of attributes. */
  n: number;
  /** Every cell, the first attribute's value the most significant. */
  cells: MarginalCell[];
}

/** One value of an attribute's histogram. */
export interface MarginalHistogramValue {
  /** A number for a sized domain, else the label. */
  value: number | string;
  /** The share of events with this value: a weighted average of the marginals' margins. */
  frequency: number;
  /** Standard error of the unbiased estimate. */
  se: number;
  /** The unbiased estimate ± 1.96 se (post-processing moves `frequency`, not the interval). */
  ci95: [number, number];
}

/** The same object as `localdp aggregate --format json` for a marginals metric. */
export interface MarginalsEstimate {
  /** The resolved protocol. */
  protocol: MarginalsProtocol;
  /** ε of one report. */
  epsilon: number;
  /** Reports accepted. */
  n: number;
  /** Reports rejected, by reason. */
  rejected: RejectionCounts;
  /** The post-processing applied to `frequency`. */
  post: PostProcessing;
  /** Every `way`-way marginal. */
  marginals: Marginal[];
  /** Each attribute's own histogram, in the config's order. */
  histograms: Array<{
    /** The attribute's name. */
    attribute: string;
    /** One entry per value of its domain. */
    values: MarginalHistogramValue[];
  }>;
}

/** Any estimate. */
export type Estimate = FrequencyEstimate | NumericEstimate | RecordEstimate | RapporEstimate | HeavyHitterEstimate | DistributionEstimate | KeyValueEstimate | MarginalsEstimate;

/** A numeric config of one number (its range is one pair). */
export interface OneRange {
  /** [lo, hi]. */
  range: readonly [number, number];
}

/** A numeric config of a record (one range per attribute). */
export interface RecordRanges {
  /** One [lo, hi] per attribute. */
  range: ReadonlyArray<readonly [number, number]>;
}

/** The estimate an `Aggregator<C>` returns. */
export type EstimateFor<C extends Config> =
  C extends RapporConfig ? RapporEstimate
  : C extends HeavyHitterConfig ? HeavyHitterEstimate
  : C extends DistributionConfig ? DistributionEstimate
  : C extends KeyValueConfig ? KeyValueEstimate
  : C extends MarginalsConfig ? MarginalsEstimate
  : C extends FrequencyConfig ? FrequencyEstimate
  : C extends OneRange ? NumericEstimate
  : C extends RecordRanges ? RecordEstimate
  : NumericEstimate | RecordEstimate;

/** The values a `Client<C>` randomizes (a string domain's are its strings, its literals for an `as const` config; a sized domain takes an integer or its digits). */
export type ValueFor<C extends Config> =
  C extends RapporConfig | HeavyHitterConfig ? string
  : C extends MarginalsConfig ? Record<string, string | number>
  : C extends {
    /** A domain of strings. */
    domain: readonly (infer Label extends string)[];
  } ? Label
  : C extends FrequencyConfig ? string | number
  : C extends DistributionConfig ? number
  : C extends KeyValueConfig ? Record<string, number>
  : C extends OneRange ? number
  : C extends RecordRanges ? number[]
  : number | number[];

/** The protocol a `Client<C>` or `Aggregator<C>` reports: the config's own, or for a choice ("auto", "heavy_hitters", "distribution", "marginals") one of its family's. */
export type ProtocolFor<C extends Config> =
  C["protocol"] extends "auto" ? (C extends {
    /** A frequency config's domain. */
    domain: unknown;
  } ? FrequencyProtocol : C extends {
    /** A numeric config's range. */
    range: unknown;
  } ? NumericProtocol : Protocol)
  : C["protocol"] extends "heavy_hitters" ? HeavyHitterProtocol
  : C["protocol"] extends "distribution" ? DistributionProtocol
  : C["protocol"] extends "key_value" ? KeyValueProtocol
  : C["protocol"] extends "marginals" ? MarginalsProtocol
  : C["protocol"] extends Protocol ? C["protocol"]
  : Protocol;

/** What `addMany` accepted and rejected in this call. */
export interface AddManyResult {
  /** Reports accepted by this call. */
  accepted: number;
  /** Reports this call rejected, by reason. */
  rejected: RejectionCounts;
}
"#;

/// A client's core: randomizes values on this device with
/// `crypto.getRandomValues`, memoizing and keeping its privacy ledger as the
/// config asks, in memory. The JS `Client` (js/client.mjs) wraps it: it
/// reads the clock, and under `Client.open` keeps the secret, the state
/// text and the reset count in a storage.
#[cfg(feature = "bindgen")]
#[wasm_bindgen]
pub struct ClientCore {
    core: localdp_core::client::Client,
    rng: SecureRng,
}

#[cfg(feature = "bindgen")]
#[wasm_bindgen]
impl ClientCore {
    /// `new ClientCore(config, secret)`: `config` is the CLI's CONFIG.json
    /// object, `secret` the install's 64 hex digits; the state starts empty.
    #[wasm_bindgen(constructor)]
    pub fn new(config: ConfigJs, secret: &str) -> Result<ClientCore, JsValue> {
        let config: JsValue = config.into();
        let core = localdp_core::client::Client::from_config(config_object(&config)?, secret, None).map_err(js_error)?;
        Ok(ClientCore { core, rng: SecureRng::new().map_err(js_error)? })
    }

    /// Takes the install's `secret` and the `state` bytes `.state` gave
    /// (here or in another context; or the UTF-8 of an earlier release's
    /// JSON text, which the next `.state` gives as bytes) in place of the
    /// core's own, without reading the config again; returns the resets
    /// found: 1 when the state was unusable (a fresh one was started) or its
    /// memos were made under another secret (they were dropped), else 0. On
    /// an error nothing changes.
    pub fn load(&mut self, secret: &str, state: Option<Vec<u8>>) -> Result<u32, JsValue> {
        self.core.load(secret, state.as_deref()).map_err(js_error)?;
        Ok(self.core.resets() as u32)
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

    /// The metric's id, as in the storage keys `localdp:state-bytes:${id}`
    /// and `localdp:resets:${id}`.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.core.metric().id()
    }

    /// The state to store: its bytes (versioned, checksummed), which the
    /// package stores as base64 text (what every storage holds).
    #[wasm_bindgen(getter)]
    pub fn state(&self) -> Vec<u8> {
        self.core.state_bytes()
    }

    /// ε spent in the budget window ending at `now_ms` (ms since 1970).
    pub fn spent(&self, now_ms: f64) -> Result<f64, JsValue> {
        Ok(self.core.spent(clock(now_ms).map_err(js_failure)?))
    }

    /// Randomizes one value into a report ready to send, at `now_ms` (ms
    /// since 1970): a string, or an integer for a sized domain; a number for
    /// a numeric metric (clipped to its range), an array of numbers for a
    /// record. Updates the in-memory memos and ledger; throws
    /// `PrivacyBudgetExceeded` (an `Error` of that name) when the budget is
    /// spent, releasing nothing.
    pub fn randomize(&mut self, value: ValueJs, now_ms: f64) -> Result<ReportJs, JsValue> {
        let value: JsValue = value.into();
        let now = clock(now_ms).map_err(js_failure)?;
        let text = match self.core.metric().value_kind() {
            #[cfg(any(feature = "rappor", feature = "heavy"))]
            ValueKind::Text => value.as_string().ok_or_else(|| type_error("a value of this metric must be a string"))?,
            #[cfg(feature = "grr")]
            ValueKind::Index { size } => {
                let input = if let Some(s) = value.as_string() {
                    Input::Text(s)
                } else if let Some(n) = value.as_f64() {
                    Input::Number(n)
                } else {
                    Input::Other
                };
                index_text(size, input).map_err(js_failure)?
            }
            #[cfg(any(feature = "numeric", feature = "distribution"))]
            ValueKind::Numbers { .. } => {
                let numbers: Vec<f64> = if let Some(n) = value.as_f64() {
                    vec![n]
                } else if localdp_core::js::Array::is_array(&value)? {
                    // A loop, not a collect through a Result (its adapters).
                    let items = localdp_core::js::Array::from(&value)?;
                    let mut numbers = Vec::new();
                    for i in 0..items.length() {
                        numbers.push(items.get(i).as_f64().ok_or_else(|| type_error("a record must be an array of numbers"))?);
                    }
                    numbers
                } else {
                    return Err(type_error("a numeric value must be a number (or an array of numbers for a record)"));
                };
                if numbers.iter().any(|x| !x.is_finite()) {
                    return Err(js_error(Error::InvalidValue { expected: localdp_core::error::ExpectedValue::FiniteNumber }));
                }
                localdp_core::text::join(numbers.iter().map(|&x| localdp_core::privacy::number_text(x)), ",")
            }
            #[cfg(any(feature = "key_value", feature = "marginals"))]
            ValueKind::Object => {
                if !value.is_object() || localdp_core::js::Array::is_array(&value)? {
                    return Err(type_error("a value of this metric must be an object"));
                }
                convert::stringify(&value, "a value of this metric must be a JSON object")?
            }
            // A module of one family converts only its own values (the
            // other arms are not compiled in): no metric of another kind
            // can be built here, so this arm is never taken.
            #[allow(unreachable_patterns)]
            _ => return Err(type_error("this module does not randomize values of this kind")),
        };
        let report = self.core.randomize_text(&text, now, &mut self.rng).map_err(js_error)?;
        let wire = report.to_js().ok_or_else(|| js_error(Error::CorruptMemo))?;
        Ok(wire.unchecked_into())
    }
}

