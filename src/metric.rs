//! Any metric: one config format, one client and one aggregator for
//! categorical (`"domain"`) and numeric (`"range"`) values alike. This is
//! what the CLI and the JavaScript package use.

use crate::aggregate::{FrequencyAggregator, FrequencyEstimate, NumericAggregator, NumericEstimate, PostProcessing};
use crate::client::{ClientSettings, CLIENT_KEYS};
use crate::error::{Error, Result};
use crate::privacy::number_text;
use crate::numeric::{NumericConfig, NumericMetric};
use crate::rappor::{RapporAggregator, RapporConfig, RapporEstimate, RapporMetric};
use crate::report::Report;
use crate::rng::RngCore;
use crate::{FrequencyConfig, FrequencyOracle, RejectionCounts};
use serde::Serialize;

const FREQUENCY_PROTOCOLS: &str = "grr, sue, oue, blh, olh, hr, ss, dbitflip, auto";
const NUMERIC_PROTOCOLS: &str = "duchi, laplace, piecewise, hybrid, one_bit_mean, auto";

/// A configured metric: a frequency oracle or a numeric mechanism.
///
/// ```
/// use localdp::{Metric, SimulationRng};
/// let metric = Metric::from_json(r#"{"protocol":"auto","epsilon":1,"range":[0,10]}"#).unwrap();
/// let mut rng = SimulationRng::from_seed(1); // simulation only
/// let report = metric.randomize_text("4.5", &mut rng).unwrap();
/// assert_eq!(report.protocol, metric.protocol_name());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// Categorical values (`"domain"`).
    Frequency(FrequencyOracle),
    /// Bounded numbers (`"range"`).
    Numeric(NumericMetric),
    /// Strings from an open domain (`"protocol": "rappor"`).
    Rappor(RapporMetric),
}

impl Metric {
    /// Parses a config: `"range"` makes it numeric, otherwise it is a
    /// frequency config. Shape errors name the key at fault.
    pub fn from_json(text: &str) -> Result<Self> {
        Self::with_client_settings(text).map(|(metric, _)| metric)
    }

    /// Parses a config with its client-only keys ([`crate::client::CLIENT_KEYS`]:
    /// memoization, budget), which [`Metric::from_json`] validates and ignores.
    pub fn with_client_settings(text: &str) -> Result<(Self, ClientSettings)> {
        let mut value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::MalformedConfig(format!("not JSON: {e}")))?;
        let object = value
            .as_object_mut()
            .ok_or_else(|| Error::MalformedConfig("a configuration must be a JSON object".into()))?;
        let settings = ClientSettings::from_config(object)?;
        for key in CLIENT_KEYS {
            object.remove(key);
        }
        if object.get("protocol").and_then(serde_json::Value::as_str) == Some("rappor") {
            let config: RapporConfig =
                serde_json::from_value(value).map_err(|e| Error::MalformedConfig(e.to_string()))?;
            return Ok((Metric::Rappor(RapporMetric::new(&config)?), settings));
        }
        let numeric = object.contains_key("range");
        let known = if numeric { NUMERIC_PROTOCOLS } else { FREQUENCY_PROTOCOLS };
        match object.get("protocol") {
            None => return Err(Error::MalformedConfig(format!("missing \"protocol\" (one of {known})"))),
            Some(serde_json::Value::String(p)) if known.split(", ").any(|k| k == p) => {}
            Some(_) => {
                let kind = if numeric { "numeric (\"range\")" } else { "frequency (\"domain\")" };
                return Err(Error::MalformedConfig(format!(
                    "\"protocol\" of a {kind} metric must be one of {known}"
                )));
            }
        }
        if object.get("epsilon").is_some_and(|e| !e.is_number()) {
            return Err(Error::MalformedConfig("\"epsilon\" must be a number".into()));
        }
        let malformed = |e: serde_json::Error| Error::MalformedConfig(e.to_string());
        let metric = if numeric {
            Metric::Numeric(NumericMetric::new(&serde_json::from_value::<NumericConfig>(value).map_err(malformed)?)?)
        } else {
            Metric::Frequency(FrequencyOracle::new(&serde_json::from_value::<FrequencyConfig>(value).map_err(malformed)?)?)
        };
        Ok((metric, settings))
    }

    /// Identifies the metric's randomization: protocol, ε and the domain's or
    /// range's fingerprint (what a report's envelope carries).
    pub fn id(&self) -> String {
        let (protocol, epsilon, fingerprint) = match self {
            Metric::Frequency(o) => (o.protocol().name(), o.epsilon(), o.fingerprint()),
            Metric::Numeric(m) => (m.protocol().name(), m.epsilon(), m.fingerprint()),
            Metric::Rappor(r) => ("rappor", r.epsilon_one(), r.fingerprint()),
        };
        format!("{protocol}:{}:{fingerprint}", number_text(epsilon))
    }

    /// True where memoization applies: frequency protocols and scalar 1BitMean.
    pub fn memoizable(&self) -> bool {
        match self {
            Metric::Frequency(_) | Metric::Rappor(_) => true,
            Metric::Numeric(m) => m.protocol() == crate::NumericProtocol::OneBitMean && !m.is_vector(),
        }
    }

    /// The ε one fresh report spends (a memoized repeat spends nothing):
    /// RAPPOR's `ε_∞` for a new value, ε otherwise.
    pub fn long_run_epsilon(&self) -> f64 {
        match self {
            Metric::Rappor(r) => r.epsilon_infinity(),
            _ => self.epsilon(),
        }
    }

    /// The resolved protocol's name.
    pub fn protocol_name(&self) -> &'static str {
        match self {
            Metric::Frequency(o) => o.protocol().name(),
            Metric::Numeric(m) => m.protocol().name(),
            Metric::Rappor(_) => "rappor",
        }
    }

    /// ε of one report (RAPPOR: `ε_1`).
    pub fn epsilon(&self) -> f64 {
        match self {
            Metric::Frequency(o) => o.epsilon(),
            Metric::Numeric(m) => m.epsilon(),
            Metric::Rappor(r) => r.epsilon_one(),
        }
    }

    /// Randomizes a value written as text: a label or an integer of the
    /// domain, or a number (numbers separated by commas for a record).
    /// Errors never contain the value.
    pub fn randomize_text(&self, text: &str, rng: &mut dyn RngCore) -> Result<Report> {
        match self {
            Metric::Frequency(o) => o.randomize(text, rng),
            Metric::Numeric(m) => m.randomize(&parse_numbers(text)?, rng),
            Metric::Rappor(r) => Ok(r.randomize(text, rng)),
        }
    }
}

/// Numbers separated by commas (one for a scalar metric).
pub fn parse_numbers(text: &str) -> Result<Vec<f64>> {
    text.split(',')
        .map(|v| v.trim().parse::<f64>())
        .collect::<std::result::Result<Vec<f64>, _>>()
        .map_err(|_| Error::InvalidValue("not a number".into()))
}

/// The aggregator of any metric.
#[derive(Debug, Clone)]
pub enum Aggregator {
    /// Of a frequency metric.
    Frequency(FrequencyAggregator),
    /// Of a numeric metric.
    Numeric(NumericAggregator),
    /// Of a RAPPOR metric.
    Rappor(RapporAggregator),
}

/// The estimate of any metric; serializes as the one it holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Estimate {
    /// Frequencies per value.
    Frequency(FrequencyEstimate),
    /// Means per attribute.
    Numeric(NumericEstimate),
    /// Candidates' frequencies.
    Rappor(RapporEstimate),
}

impl Aggregator {
    /// An empty aggregator for the metric.
    pub fn new(metric: Metric) -> Self {
        match metric {
            Metric::Frequency(o) => Aggregator::Frequency(FrequencyAggregator::new(o)),
            Metric::Numeric(m) => Aggregator::Numeric(NumericAggregator::new(m)),
            Metric::Rappor(r) => Aggregator::Rappor(RapporAggregator::new(r)),
        }
    }

    /// Accepted reports.
    pub fn n(&self) -> u64 {
        match self {
            Aggregator::Frequency(a) => a.n(),
            Aggregator::Numeric(a) => a.n(),
            Aggregator::Rappor(a) => a.n(),
        }
    }

    /// Rejected reports by reason.
    pub fn rejected(&self) -> &RejectionCounts {
        match self {
            Aggregator::Frequency(a) => a.rejected(),
            Aggregator::Numeric(a) => a.rejected(),
            Aggregator::Rappor(a) => a.rejected(),
        }
    }

    /// The resolved protocol's name.
    pub fn protocol_name(&self) -> &'static str {
        match self {
            Aggregator::Frequency(a) => a.oracle().protocol().name(),
            Aggregator::Numeric(a) => a.metric().protocol().name(),
            Aggregator::Rappor(_) => "rappor",
        }
    }

    /// Validates and adds one report (counted by reason if refused).
    pub fn add(&mut self, report: &Report) -> Result<()> {
        match self {
            Aggregator::Frequency(a) => a.add(report),
            Aggregator::Numeric(a) => a.add(report),
            Aggregator::Rappor(a) => a.add(report),
        }
    }

    /// Parses, validates and adds one JSON report.
    pub fn add_json(&mut self, text: impl AsRef<[u8]>) -> Result<()> {
        match self {
            Aggregator::Frequency(a) => a.add_json(text),
            Aggregator::Numeric(a) => a.add_json(text),
            Aggregator::Rappor(a) => a.add_json(text),
        }
    }

    /// Adds everything `other` accepted and rejected (same config only).
    pub fn merge(&mut self, other: &Aggregator) -> Result<()> {
        match (self, other) {
            (Aggregator::Frequency(a), Aggregator::Frequency(b)) => a.merge(b),
            (Aggregator::Numeric(a), Aggregator::Numeric(b)) => a.merge(b),
            (Aggregator::Rappor(a), Aggregator::Rappor(b)) => a.merge(b),
            _ => Err(Error::MergeMismatch("aggregators of different kinds of metric".into())),
        }
    }

    /// The estimate; `post` applies to frequency metrics only.
    pub fn estimate(&self, post: PostProcessing) -> Result<Estimate> {
        match self {
            Aggregator::Frequency(a) => Ok(Estimate::Frequency(a.estimate(post)?)),
            _ if post != PostProcessing::None => {
                Err(Error::InvalidConfig("post-processing applies to frequency estimates only".into()))
            }
            Aggregator::Numeric(a) => Ok(Estimate::Numeric(a.estimate()?)),
            Aggregator::Rappor(a) => Ok(Estimate::Rappor(a.estimate()?)),
        }
    }
}
