//! What every family of metrics implements on the device: how it is
//! recognized and built from a config ([`Family`]), its client side and
//! identity ([`Kind`]) and its memoization ([`Memo`]). These sit below the
//! families; the list of families and [`crate::Metric`] sit above them.

#[cfg(feature = "aggregate")]
use crate::report::ReportFields;
use crate::error::{Error, ExpectedValue, Result};
use crate::json::{ConfigObject, Field};
use crate::number::number_text;
use crate::protocol::Protocol;
use crate::report::Report;
use crate::rng::RngCore;
use crate::settings::ClientSettings;
use crate::text::text;
use std::any::Any;
use std::sync::Arc;

/// One family of metrics: how it recognizes and builds its configs.
pub struct Family {
    /// True when the config object belongs to this family.
    pub claims: fn(protocol: &str, config: &ConfigObject) -> bool,
    /// Builds the metric from the config object (client-only keys removed,
    /// and given apart, checked).
    pub build: fn(ConfigObject, &ClientSettings) -> Result<Arc<dyn Kind>>,
    /// What the family's `"protocol"` may be, for messages.
    pub protocols: fn() -> String,
    /// The key that marks the family's configs (`"range"`), for messages.
    pub shape: &'static str,
    /// The family as messages name it.
    pub label: &'static str,
}

/// How one metric's device keeps a permanent response per value
/// (memoization); each family brings its own.
pub trait Memo: Send + Sync {
    /// True when the family memoizes whatever the config says (RAPPOR).
    fn always(&self) -> bool {
        false
    }
    /// What, besides the metric's identity, changes what a memo means
    /// (e.g. 1BitMean's rounding grid); part of the stored state's identity.
    fn identity(&self) -> String {
        String::new()
    }
    /// Draws made once per install and kept (a cohort, sampled buckets, an
    /// α-point offset); empty when there are none.
    fn draw(&self, _rng: &mut dyn RngCore) -> Vec<u64> {
        Vec::new()
    }
    /// True when stored draws are usable (else the state is reset).
    fn draws_valid(&self, draws: &[u64]) -> bool {
        draws.is_empty()
    }
    /// The memo key of a value (it validates the value).
    fn key(&self, value: &str, draws: &[u64]) -> Result<String>;
    /// A fresh permanent response for the value, as it is stored.
    fn permanent(&self, value: &str, draws: &[u64], rng: &mut dyn RngCore) -> Result<Vec<u8>>;
    /// The report sent for a stored permanent response. A stored memo that
    /// is not one of this metric's (a state edited to pass its checksum) is
    /// [`Error::CorruptMemo`](crate::error::Error::CorruptMemo), never sent.
    fn report(&self, permanent: &[u8], draws: &[u64], rng: &mut dyn RngCore) -> Result<Report>;
    /// The ε of one report when every report randomizes the permanent
    /// response afresh (a frequency metric's `"instantaneous_epsilon"`).
    /// `None`: a memo's first report costs the long-run ε and repeats
    /// nothing (RAPPOR charges so too).
    fn instantaneous_epsilon(&self) -> Option<f64> {
        None
    }
    /// With an instantaneous step: the exact ε (rounded up) of the joint
    /// channel of `reports` reports of one memo, which the ledger charges
    /// (up to the long-run ε). The reports all randomize one permanent
    /// response, so they are not independent: `k` of them can reveal more
    /// than `k·ε_1`. `None`: the long-run ε.
    fn memo_epsilon(&self, _reports: u64) -> Option<f64> {
        None
    }
}

/// The client side of any metric, and its identity.
pub trait Kind: Send + Sync + Any {
    /// The resolved protocol.
    fn protocol(&self) -> Protocol;
    /// ε of one report.
    fn epsilon(&self) -> f64;
    /// The fingerprint reports carry.
    fn fingerprint(&self) -> &str;
    /// What one fresh report costs in the long run (RAPPOR: `ε_∞`).
    fn long_run_epsilon(&self) -> f64 {
        self.epsilon()
    }
    /// Randomizes a value written as text.
    fn randomize_text(&self, text: &str, rng: &mut dyn RngCore) -> Result<Report>;
    /// The family, as the collector's listings name it (`"frequency"`,
    /// `"numeric"`, `"rappor"`).
    fn family(&self) -> &'static str;
    /// What a value of this metric is.
    fn value_kind(&self) -> ValueKind;
    /// The memoization hook, where the family offers one.
    fn memo(&self) -> Option<&dyn Memo>;
    /// Which wire fields the metric's reports carry.
    #[cfg(feature = "aggregate")]
    fn report_fields(&self) -> ReportFields;
    /// Two values that differ the most (for the auditor).
    #[cfg(feature = "aggregate")]
    fn neighbours(&self) -> [String; 2];
    /// The events of a report the auditor counts beyond its exact output.
    #[cfg(feature = "aggregate")]
    fn events(&self, report: &Report) -> Vec<String>;
    /// What the auditor randomizes for a value: a report (RAPPOR: its
    /// permanent response, whose claim is `ε_∞`).
    #[cfg(feature = "aggregate")]
    fn audit_sample(&self, value: &str, rng: &mut dyn RngCore) -> Result<Report> {
        self.randomize_text(value, rng)
    }
    /// The ε of the exact channel [`Kind::audit_sample`] draws from: the
    /// largest `ln(P[y|x] / P[y|x'])` over all values and outputs. It is
    /// [`Kind::long_run_epsilon`] where the channel spends its whole budget
    /// (every channel test asserts so); below it, the difference is budget
    /// the config pays for and does not use (dBitFlip with one bucket per
    /// report, PCKV padding to more than one pair).
    #[cfg(feature = "aggregate")]
    fn realized_epsilon(&self) -> f64 {
        self.long_run_epsilon()
    }
    /// The mechanism as `Any`, for [`crate::Metric::mechanism`].
    fn as_any(&self) -> &dyn Any;
}

/// What a metric's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Any string (open domains).
    Text,
    /// A value of a domain: a label, or an integer below `size` for a sized
    /// domain (`size` is `None` for labels).
    Index {
        /// The domain's size, for the integers `0..size`.
        size: Option<usize>,
    },
    /// Numbers, one per attribute.
    Numbers {
        /// The attributes of a record (1 for a single number).
        attributes: usize,
    },
    /// A JSON object, given as its text (an event's fields, a user's
    /// key-value map): front ends serialize it with `JSON.stringify` or
    /// `json.dumps`.
    Object,
}

/// A metric's identity: protocol, ε and fingerprint, as reports carry them
/// (what aggregator states are tagged with, too).
pub fn id_of(kind: &dyn Kind) -> String {
    text!(kind.protocol().name(), ":", number_text(kind.epsilon()), ":", kind.fingerprint())
}

/// A report of the metric's configuration carrying `payload`: the one
/// place a report's envelope is written.
pub fn envelope(kind: &dyn Kind, payload: crate::report::Payload) -> Report {
    Report {
        version: crate::report::REPORT_VERSION,
        protocol: kind.protocol(),
        epsilon: kind.epsilon(),
        domain: kind.fingerprint().to_string(),
        payload,
    }
}

/// The auditor's event for a report whose log-likelihood ratio between the
/// two neighbours is `log_ratio` (to 1e-6, so that reports of one level
/// share it): the top level is the likeliest event on which the neighbours
/// differ the most (Neyman–Pearson).
#[cfg(feature = "aggregate")]
pub(crate) fn likelihood_level(log_ratio: f64) -> String {
    // `+ 0.0` makes a rounded −0 read as 0.
    let level = (log_ratio * 1e6).round() / 1e6 + 0.0;
    text!("log-likelihood ratio ", number_text(level))
}

/// A config's JSON text as an object, or the error for text that is not one.
pub fn parse_config(text: &str) -> Result<ConfigObject> {
    as_config(crate::json::parse_text(text).map_err(|e| Error::malformed(text!("not JSON: ", e)))?)
}

/// A parsed config as an object, or the error for one that is not.
pub(crate) fn as_config(field: Field) -> Result<ConfigObject> {
    field.object().ok_or_else(|| Error::malformed("a configuration must be a JSON object"))
}

/// A serde_json config as an object, or the error for one that is not.
#[cfg(feature = "serde")]
pub fn config_object(value: &serde_json::Value) -> Result<ConfigObject> {
    as_config(Field::from_value(value).unwrap_or(Field::Null))
}

/// Numbers separated by commas (one for a scalar metric).
///
/// ```
/// use localdp::metric::parse_numbers;
/// assert_eq!(parse_numbers("1.5, 2,-3")?, vec![1.5, 2.0, -3.0]);
/// assert!(parse_numbers("1,x").is_err()); // the error does not repeat the text
/// # Ok::<(), localdp::Error>(())
/// ```
pub fn parse_numbers(text: &str) -> Result<Vec<f64>> {
    let mut numbers = Vec::new();
    for v in text.split(',') {
        numbers.push(crate::number::parse_number(v.trim()).ok_or(Error::InvalidValue { expected: ExpectedValue::Number })?);
    }
    Ok(numbers)
}
