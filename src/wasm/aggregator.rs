//! The full module's exports (the `aggregate` feature): the Aggregator,
//! and every protocol's name for the TypeScript types.

use super::{
    js_error, metric_from, range_error, type_error, AddManyResultJs, ConfigJs, EstimateJs, EstimateOptionsJs,
    RejectionCountsJs, ReportInputJs, ReportsJs,
};
use crate::aggregate::RejectionCounts;
use crate::names::ProtocolFamily;
use crate::{Aggregator as CoreAggregator, PostProcessing};
use js_sys::{Reflect, JSON};
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// A Rust value as a plain JS object, through serde_json's text (the CLI's
/// exact output: non-finite numbers become null as there).
fn to_js<T: Serialize>(value: &T) -> JsValue {
    serde_json::to_string(value).ok().and_then(|text| JSON::parse(&text).ok()).unwrap_or(JsValue::NULL)
}

/// A report given to the Aggregator, parsed: a JSON line by `JSON.parse`
/// (the string never copied into the module), an object read as it is
/// ([`crate::Report::from_js`]).
fn parse(report: &JsValue) -> crate::Result<crate::Report> {
    if report.is_string() {
        return crate::Report::from_js(&crate::json::parse_js(report).unwrap_or(JsValue::NULL));
    }
    crate::Report::from_js(report)
}

/// Every protocol's name, by family (`{frequency, numeric, openDomain,
/// heavyHitter, distribution}`):
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
    }
    to_js(&Families {
        frequency: names::<crate::FrequencyProtocol>(),
        numeric: names::<crate::NumericProtocol>(),
        open_domain: names::<crate::OpenDomainProtocol>(),
        heavy_hitter: names::<crate::HeavyHitterProtocol>(),
        distribution: names::<crate::DistributionProtocol>(),
    })
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
        self.inner.add_parsed(parse(&report.into())).map_err(js_error)
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
        // Each element parsed and validated on its own (JS's JSON.parse), so
        // one bad element costs only itself.
        for item in array.iter() {
            let _ = self.inner.add_parsed(parse(&item));
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
