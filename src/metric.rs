//! Any metric behind one config format: what the CLI, the collector and the
//! JavaScript package use.
//!
//! A config is parsed by the family that claims its `"protocol"` (the list
//! `FAMILIES`); the family builds a typed mechanism, and from here on
//! everything goes through two object-safe traits, `Kind` (the client
//! side and the metric's identity) and `DynAggregate` (the server side),
//! so that no code outside a family's own module matches on the family.

use crate::aggregate::{PostProcessing, RejectionCounts};
#[cfg(feature = "aggregate")]
use crate::columnar::{ReportBatch, ReportFields};
use crate::error::{Error, ExpectedValue, MergeConflict, Requirement, Result};
use crate::json::{ConfigObject, Field};
use crate::mechanism::Aggregate;
use crate::privacy::number_text;
use crate::report::{Protocol, Report};
use crate::settings::{ClientSettings, CLIENT_KEYS};
use crate::rng::{CryptoRng, RngCore};
use crate::text::text;
use serde::Serialize;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// One family of metrics: how it recognizes and builds its configs.
pub(crate) struct Family {
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

/// The families of metrics, in the order they are asked to claim a config;
/// adding a family is a module and one line here.
pub(crate) const FAMILIES: &[&Family] =
    &[&crate::rappor::FAMILY, &crate::heavy::FAMILY, &crate::distribution::FAMILY, &crate::numeric::FAMILY, &crate::frequency::FAMILY];

/// How one metric's device keeps a permanent response per value
/// (memoization); each family brings its own.
pub(crate) trait Memo: Send + Sync {
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
    fn permanent(&self, value: &str, draws: &[u64], rng: &mut dyn RngCore) -> Result<String>;
    /// The report sent for a stored permanent response.
    fn report(&self, permanent: &str, draws: &[u64], rng: &mut dyn RngCore) -> Result<Report>;
    /// The ε of one report when every report randomizes the permanent
    /// response afresh (a frequency metric's `"instantaneous_epsilon"`): the
    /// ledger then charges each report this much until a memo's reports
    /// have cost the long-run ε. `None`: a memo's first report costs the
    /// long-run ε and repeats nothing (RAPPOR charges so too).
    fn instantaneous_epsilon(&self) -> Option<f64> {
        None
    }
}

/// The client side of any metric, and its identity.
pub(crate) trait Kind: Send + Sync + Any {
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
    /// An empty aggregator.
    #[cfg(feature = "aggregate")]
    fn aggregator(&self) -> Box<dyn DynAggregate>;
    /// The aggregator whose state `bytes` hold.
    #[cfg(feature = "aggregate")]
    fn aggregator_from_bytes(&self, bytes: &[u8]) -> Result<Box<dyn DynAggregate>>;
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
    /// The mechanism as `Any`, for [`Metric::mechanism`].
    fn as_any(&self) -> &dyn Any;
}

/// The server side of any metric.
pub(crate) trait DynAggregate: Send + Sync {
    fn n(&self) -> u64;
    fn rejected(&self) -> &RejectionCounts;
    fn add(&mut self, report: &Report) -> Result<()>;
    fn add_parsed(&mut self, parsed: Result<Report>) -> Result<()>;
    #[cfg(feature = "aggregate")]
    fn add_batch(&mut self, batch: &ReportBatch<'_>) -> Option<(usize, Error)>;
    fn merge(&mut self, other: &dyn DynAggregate) -> Result<()>;
    fn state_id(&self) -> String;
    fn estimate(&self, post: PostProcessing) -> Result<Estimate>;
    fn to_bytes(&self) -> Vec<u8>;
    fn restore_rejected(&mut self, counts: RejectionCounts);
    fn as_any(&self) -> &dyn Any;
    fn clone_box(&self) -> Box<dyn DynAggregate>;
}

/// An estimate that becomes an [`Estimate`], with or without post-processing.
pub(crate) trait IntoEstimate {
    fn into_estimate(self, post: PostProcessing) -> Result<Estimate>;
}

impl<A> DynAggregate for A
where
    A: Aggregate + Clone + Send + Sync + 'static,
    A::Estimate: IntoEstimate,
{
    fn n(&self) -> u64 {
        Aggregate::n(self)
    }
    fn rejected(&self) -> &RejectionCounts {
        Aggregate::rejected(self)
    }
    fn add(&mut self, report: &Report) -> Result<()> {
        Aggregate::add(self, report)
    }
    fn add_parsed(&mut self, parsed: Result<Report>) -> Result<()> {
        Aggregate::add_parsed(self, parsed)
    }
    #[cfg(feature = "aggregate")]
    fn add_batch(&mut self, batch: &ReportBatch<'_>) -> Option<(usize, Error)> {
        Aggregate::add_batch(self, batch)
    }
    fn merge(&mut self, other: &dyn DynAggregate) -> Result<()> {
        match other.as_any().downcast_ref::<A>() {
            Some(other) => Aggregate::merge(self, other),
            None => Err(Error::MergeMismatch {
                ours: Aggregate::state_id(self),
                theirs: other.state_id(),
                conflict: MergeConflict::Kind,
            }),
        }
    }
    fn state_id(&self) -> String {
        Aggregate::state_id(self)
    }
    fn estimate(&self, post: PostProcessing) -> Result<Estimate> {
        Aggregate::estimate(self)?.into_estimate(post)
    }
    fn to_bytes(&self) -> Vec<u8> {
        Aggregate::to_bytes(self)
    }
    fn restore_rejected(&mut self, counts: RejectionCounts) {
        self.tally_mut().restore_rejected(counts);
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn clone_box(&self) -> Box<dyn DynAggregate> {
        Box::new(self.clone())
    }
}

/// Non-frequency estimates take no post-processing.
pub(crate) fn without_post(post: PostProcessing, estimate: Estimate) -> Result<Estimate> {
    if post == PostProcessing::None {
        Ok(estimate)
    } else {
        Err(Error::invalid("post", Requirement::OnlyFor { protocol: "frequency" }))
    }
}

/// What a metric's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
}

/// A configured metric of any family.
///
/// ```
/// use localdp::{Metric, SimulationRng};
/// let metric = Metric::from_json(r#"{"protocol":"auto","epsilon":1,"range":[0,10]}"#).unwrap();
/// let mut rng = SimulationRng::seed_from_u64(1); // simulation only
/// let report = metric.randomize_text("4.5", &mut rng).unwrap();
/// assert_eq!(report.protocol, metric.protocol());
/// ```
///
/// What a metric says about itself (its getters):
///
/// ```
/// use localdp::metric::ValueKind;
/// use localdp::{FrequencyOracle, Metric};
/// let grr = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":["a","b","c"]}"#)?;
/// assert_eq!((grr.protocol().name(), grr.epsilon(), grr.long_run_epsilon()), ("grr", 1.0, 1.0));
/// assert!(grr.id().starts_with("grr:1.0:")); // protocol, ε, the domain's fingerprint
/// assert_eq!((grr.family(), grr.value_kind()), ("frequency", ValueKind::Index { size: None }));
/// assert!(grr.memoizable());
/// assert_eq!(grr.mechanism::<FrequencyOracle>().map(|o| o.domain().len()), Some(3));
/// assert_eq!(grr.neighbours(), ["a".to_string(), "c".to_string()]); // what the auditor compares
/// let mean = Metric::from_json(r#"{"protocol":"laplace","epsilon":1,"range":[0,10]}"#)?;
/// assert_eq!(mean.value_kind(), ValueKind::Numbers { attributes: 1 });
/// assert!(mean.mechanism::<FrequencyOracle>().is_none());
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Clone)]
pub struct Metric {
    kind: Arc<dyn Kind>,
}

impl fmt::Debug for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metric").field("id", &self.id()).finish()
    }
}

impl PartialEq for Metric {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

impl Metric {
    /// Parses a config: the family that claims its `"protocol"` (and, for
    /// `"auto"`, its `"domain"` or `"range"`) builds it. Shape errors name
    /// the key at fault. Client-only keys ([`crate::client::CLIENT_KEYS`])
    /// are validated, then ignored here.
    ///
    /// ```
    /// use localdp::{Error, Metric};
    /// let metric = Metric::from_json(r#"{"protocol":"oue","epsilon":2,"domain":16}"#)?;
    /// assert_eq!(metric.epsilon(), 2.0);
    /// let Err(Error::MalformedConfig { key, detail }) = Metric::from_json(r#"{"epsilon":2,"domain":16}"#) else { panic!() };
    /// assert_eq!(key.as_deref(), Some("protocol"));
    /// assert!(detail.starts_with("missing \"protocol\""));
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self> {
        Metric::from_config(parse_config(text)?)
    }

    /// [`Metric::from_json`] of a parsed config (the wasm build's configs
    /// are JS objects; no JSON text is parsed for them).
    ///
    /// ```
    /// use localdp::Metric;
    /// let config = serde_json::json!({"protocol": "grr", "epsilon": 1, "domain": ["a", "b"]});
    /// let metric = Metric::from_value(config)?;
    /// assert_eq!(metric, Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":["a","b"]}"#)?);
    /// assert!(Metric::from_value(serde_json::json!([1, 2])).is_err()); // not an object
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn from_value(value: serde_json::Value) -> Result<Self> {
        Metric::from_config(config_object(value)?)
    }

    /// [`Metric::from_value`] of a config object.
    pub(crate) fn from_config(mut object: ConfigObject) -> Result<Self> {
        // Client-only keys: checked here too (an aggregator refuses a config
        // its clients would refuse), then set aside.
        let settings = ClientSettings::from_config(&object)?;
        for key in CLIENT_KEYS {
            object.remove(key);
        }
        let protocol = match object.get("protocol") {
            Field::Missing => None,
            Field::Text(p) => Some(p),
            _ => return Err(Error::malformed_key("protocol", "\"protocol\" must be a string")),
        };
        let Some(family) = FAMILIES.iter().find(|f| (f.claims)(protocol.as_deref().unwrap_or(""), &object)) else {
            // Unclaimed: say what each family accepts, for the shape given.
            let family = FAMILIES.iter().find(|f| object.contains_key(f.shape)).unwrap_or(&FAMILIES[FAMILIES.len() - 1]);
            let known = (family.protocols)();
            return Err(Error::malformed_key("protocol", match protocol {
                None => text!("missing \"protocol\" (one of ", known, ")"),
                Some(_) => text!("\"protocol\" of a ", family.label, " metric must be one of ", known),
            }));
        };
        if !matches!(object.get("epsilon"), Field::Missing | Field::Number(..)) {
            return Err(Error::malformed_key("epsilon", "\"epsilon\" must be a number"));
        }
        // Only frequency protocols take an instantaneous step (RAPPOR has its own).
        let foreign_step =
            !std::ptr::eq(*family, &crate::frequency::FAMILY) && object.remove("instantaneous_epsilon");
        let kind = (family.build)(object, &settings)?;
        if foreign_step {
            return Err(Error::invalid("instantaneous_epsilon", Requirement::NotFor { protocol: kind.protocol() }));
        }
        Ok(Metric { kind })
    }

    /// Identifies the metric's randomization: protocol, ε and the domain's or
    /// range's fingerprint (what a report's envelope carries).
    ///
    /// See the example on [`Metric`].
    pub fn id(&self) -> String {
        id_of(&*self.kind)
    }

    /// The resolved protocol.
    ///
    /// See the example on [`Metric`].
    pub fn protocol(&self) -> Protocol {
        self.kind.protocol()
    }

    /// ε of one report (RAPPOR: `ε_1`).
    ///
    /// See the example on [`Metric`].
    pub fn epsilon(&self) -> f64 {
        self.kind.epsilon()
    }

    /// The ε one fresh report spends, and the most that all memoized
    /// reports of one value spend: RAPPOR's `ε_∞`, a frequency metric's
    /// `epsilon` (above the per-report ε with `"instantaneous_epsilon"`), ε
    /// otherwise.
    ///
    /// See the example on [`Metric`].
    pub fn long_run_epsilon(&self) -> f64 {
        self.kind.long_run_epsilon()
    }

    /// True where memoization applies.
    ///
    /// See the example on [`Metric`].
    pub fn memoizable(&self) -> bool {
        self.kind.memo().is_some()
    }

    /// Randomizes a value written as text: a label or an integer of the
    /// domain, or a number (numbers separated by commas for a record).
    /// Errors never contain the value.
    ///
    /// ```
    /// use localdp::{Metric, SecureRng};
    /// let record = Metric::from_json(r#"{"protocol":"piecewise","epsilon":4,"range":[[0,5000],[0,100]]}"#)?;
    /// let report = record.randomize_text("1234.5,87", &mut SecureRng::new()?)?;
    /// assert!(record.randomize_text("1234.5", &mut SecureRng::new()?).is_err()); // one number of two
    /// # let _ = report;
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn randomize_text<R: CryptoRng + RngCore>(&self, text: &str, rng: &mut R) -> Result<Report> {
        self.kind.randomize_text(text, rng)
    }

    /// The family, as the collector's listings name it (`"frequency"`,
    /// `"numeric"`, `"rappor"`).
    ///
    /// See the example on [`Metric`].
    pub fn family(&self) -> &'static str {
        self.kind.family()
    }

    /// What a value of this metric is, for front ends that type it (the
    /// JavaScript package turns numbers and arrays into text by it).
    ///
    /// See the example on [`Metric`].
    pub fn value_kind(&self) -> ValueKind {
        self.kind.value_kind()
    }

    /// The typed mechanism, if it is a `T` (e.g. [`crate::FrequencyOracle`]).
    ///
    /// See the example on [`Metric`].
    pub fn mechanism<T: 'static>(&self) -> Option<&T> {
        self.kind.as_any().downcast_ref()
    }

    /// Two values that differ the most, for the auditor.
    ///
    /// See the example on [`Metric`].
    #[cfg(feature = "aggregate")]
    pub fn neighbours(&self) -> [String; 2] {
        self.kind.neighbours()
    }

    /// Which wire fields the metric's reports carry and whether each is in
    /// every report: the columns of a columnar form of its reports
    /// ([`crate::columnar`]).
    ///
    /// ```
    /// use localdp::columnar::{Presence, ReportFields};
    /// use localdp::Metric;
    /// let oue = Metric::from_json(r#"{"protocol":"oue","epsilon":1,"domain":20}"#).unwrap();
    /// assert_eq!(oue.report_fields(), ReportFields::bits(20));
    /// assert_eq!((oue.report_fields().bits_width, oue.report_fields().value), (Some(3), Presence::Never));
    /// ```
    #[cfg(feature = "aggregate")]
    pub fn report_fields(&self) -> ReportFields {
        self.kind.report_fields()
    }

    /// The events of a report that the auditor counts.
    ///
    /// ```
    /// use localdp::{Metric, SimulationRng};
    /// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":2}"#)?;
    /// let report = metric.randomize_text("0", &mut SimulationRng::seed_from_u64(1))?; // simulation only
    /// let events = metric.events(&report);
    /// assert_eq!(events.len(), 1);
    /// assert!(events[0].starts_with("log-likelihood ratio "));
    /// # Ok::<(), localdp::Error>(())
    /// ```
    #[cfg(feature = "aggregate")]
    pub fn events(&self, report: &Report) -> Vec<String> {
        self.kind.events(report)
    }

    pub(crate) fn kind(&self) -> &dyn Kind {
        &*self.kind
    }
}

/// A metric's identity: protocol, ε and fingerprint, as reports carry them
/// (what aggregator states are tagged with, too).
pub(crate) fn id_of(kind: &dyn Kind) -> String {
    text!(kind.protocol().name(), ":", number_text(kind.epsilon()), ":", kind.fingerprint())
}

/// A report of the metric's configuration carrying `payload`: the one
/// place a report's envelope is written.
pub(crate) fn envelope(kind: &dyn Kind, payload: crate::report::Payload) -> Report {
    Report {
        version: crate::report::REPORT_VERSION,
        protocol: kind.protocol(),
        epsilon: kind.epsilon(),
        domain: kind.fingerprint().to_string(),
        payload,
    }
}

/// A config's JSON text as an object, or the error for text that is not one.
pub(crate) fn parse_config(text: &str) -> Result<ConfigObject> {
    config_object(serde_json::from_str(text).map_err(|e| Error::malformed(text!("not JSON: ", e.to_string())))?)
}

/// A parsed config as an object, or the error for one that is not.
pub(crate) fn config_object(value: serde_json::Value) -> Result<ConfigObject> {
    ConfigObject::from_value(value).ok_or_else(|| Error::malformed("a configuration must be a JSON object"))
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
    text.split(',')
        .map(|v| crate::privacy::parse_number(v.trim()))
        .collect::<Option<Vec<f64>>>()
        .ok_or(Error::InvalidValue { expected: ExpectedValue::Number })
}

/// The aggregator of any metric.
///
/// Its getters, and a typed view of the aggregator inside:
///
/// ```
/// use localdp::{Aggregate, Aggregator, FrequencyAggregator, Metric, Rejection, SimulationRng};
/// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#)?;
/// let mut aggregator = Aggregator::new(metric.clone());
/// aggregator.add(&metric.randomize_text("2", &mut SimulationRng::seed_from_u64(5))?)?; // simulation only
/// assert!(aggregator.add_json("{}").is_err());
/// assert_eq!((aggregator.n(), aggregator.rejected().total()), (1, 1));
/// assert_eq!((aggregator.protocol().name(), aggregator.metric()), ("grr", &metric));
/// assert_eq!(aggregator.typed::<FrequencyAggregator>().map(|a| a.n()), Some(1));
/// // A collector rebuilding the aggregator from its stored reports puts back the refusals too.
/// let mut rebuilt = Aggregator::from_bytes(metric, &aggregator.to_bytes())?;
/// rebuilt.restore_rejected(*aggregator.rejected());
/// assert_eq!(rebuilt.rejected().get(Rejection::Malformed), 1);
/// # Ok::<(), localdp::Error>(())
/// ```
#[cfg(feature = "aggregate")]
pub struct Aggregator {
    metric: Metric,
    inner: Box<dyn DynAggregate>,
}

#[cfg(feature = "aggregate")]
impl Clone for Aggregator {
    fn clone(&self) -> Self {
        Aggregator { metric: self.metric.clone(), inner: self.inner.clone_box() }
    }
}

#[cfg(feature = "aggregate")]
impl fmt::Debug for Aggregator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Aggregator").field("metric", &self.metric.id()).field("n", &self.n()).finish()
    }
}

/// The estimate of any metric; serializes as the one it holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Estimate {
    /// Frequencies per value.
    Frequency(crate::FrequencyEstimate),
    /// Means per attribute.
    Numeric(crate::NumericEstimate),
    /// Candidates' frequencies.
    Rappor(crate::rappor::RapporEstimate),
    /// A sketch's candidate frequencies, or the heavy hitters discovered.
    HeavyHitter(crate::heavy::HeavyHitterEstimate),
    /// A histogram, quantiles and the mean of a number.
    Distribution(crate::distribution::DistributionEstimate),
}

#[cfg(feature = "aggregate")]
impl Aggregator {
    /// An empty aggregator for the metric.
    ///
    /// ```
    /// use localdp::{Aggregator, Metric};
    /// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":["a","b"]}"#)?;
    /// let aggregator = Aggregator::new(metric);
    /// assert_eq!(aggregator.n(), 0);
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn new(metric: Metric) -> Self {
        let inner = metric.kind.aggregator();
        Aggregator { metric, inner }
    }

    /// The aggregator whose state `bytes` hold ([`crate::state`]): refused
    /// with [`Error::State`] if they are corrupt, truncated or of another
    /// configuration.
    ///
    /// ```
    /// use localdp::{Aggregator, Metric, SimulationRng};
    /// let metric = Metric::from_json(r#"{"protocol":"oue","epsilon":1,"domain":8}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(7); // simulation only
    /// let mut shard = Aggregator::new(metric.clone());
    /// shard.add(&metric.randomize_text("3", &mut rng)?)?;
    /// // Ship the state to another machine, and take it back there.
    /// let bytes = shard.to_bytes();
    /// let back = Aggregator::from_bytes(metric.clone(), &bytes)?;
    /// assert_eq!((back.n(), back.to_bytes()), (1, bytes.clone()));
    /// assert!(Aggregator::from_bytes(metric, &bytes[..bytes.len() - 1]).is_err());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn from_bytes(metric: Metric, bytes: &[u8]) -> Result<Self> {
        let inner = metric.kind.aggregator_from_bytes(bytes)?;
        Ok(Aggregator { metric, inner })
    }

    /// The state as compact, versioned, checksummed bytes.
    ///
    /// See the example on [`Aggregator`].
    pub fn to_bytes(&self) -> Vec<u8> {
        self.inner.to_bytes()
    }

    /// The metric.
    ///
    /// See the example on [`Aggregator`].
    pub fn metric(&self) -> &Metric {
        &self.metric
    }

    /// Accepted reports.
    ///
    /// See the example on [`Aggregator`].
    pub fn n(&self) -> u64 {
        self.inner.n()
    }

    /// Rejected reports by reason.
    ///
    /// See the example on [`Aggregator`].
    pub fn rejected(&self) -> &RejectionCounts {
        self.inner.rejected()
    }

    /// Replaces the rejection counts, e.g. with those a collector stored
    /// beside the accepted reports it rebuilds this aggregator from.
    ///
    /// See the example on [`Aggregator`].
    pub fn restore_rejected(&mut self, counts: RejectionCounts) {
        self.inner.restore_rejected(counts)
    }

    /// The resolved protocol.
    ///
    /// See the example on [`Aggregator`].
    pub fn protocol(&self) -> Protocol {
        self.metric.protocol()
    }

    /// Validates and adds one report (counted by reason if refused).
    ///
    /// See the example on [`Aggregator`].
    pub fn add(&mut self, report: &Report) -> Result<()> {
        self.inner.add(report)
    }

    /// Parses, validates and adds one JSON report.
    ///
    /// ```
    /// use localdp::{Aggregator, Metric, Rejection};
    /// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":["a","b"]}"#)?;
    /// let mut aggregator = Aggregator::new(metric);
    /// assert!(aggregator.add_json("not a report").is_err()); // refused and counted
    /// assert_eq!((aggregator.n(), aggregator.rejected().get(Rejection::Malformed)), (0, 1));
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn add_json(&mut self, text: impl AsRef<[u8]>) -> Result<()> {
        self.add_parsed(Report::from_json(text))
    }

    /// Adds a parsed report, or counts why it could not be parsed (as
    /// [`Aggregator::add_json`] counts what it cannot parse).
    pub(crate) fn add_parsed(&mut self, parsed: Result<Report>) -> Result<()> {
        self.inner.add_parsed(parsed)
    }

    /// Validates and adds every row of a batch of columns, counting
    /// rejections by reason exactly as [`Aggregator::add_json`] would count
    /// the same reports; returns the first rejected row and its error (`None`
    /// if all were accepted). See [`crate::columnar`].
    ///
    /// ```
    /// use localdp::columnar::{Bytes, ReportBatch};
    /// use localdp::{Aggregator, Metric, Rejection};
    /// let metric = Metric::from_json(r#"{"protocol":"oue","epsilon":1,"domain":12}"#).unwrap();
    /// let id = metric.id();
    /// // Three reports of 12 bits (2 bytes each); the last sets a padding bit.
    /// let data = [0x01, 0x00, 0x00, 0x08, 0x00, 0x10];
    /// let batch = ReportBatch {
    ///     bits: Some(Bytes::Fixed { data: &data, width: 2, valid: None }),
    ///     ..ReportBatch::new(1, &id, 3)
    /// };
    /// let mut aggregator = Aggregator::new(metric);
    /// assert_eq!(aggregator.add_batch(&batch).map(|(row, _)| row), Some(2));
    /// assert_eq!((aggregator.n(), aggregator.rejected().get(Rejection::BadLength)), (2, 1));
    /// ```
    pub fn add_batch(&mut self, batch: &ReportBatch<'_>) -> Option<(usize, Error)> {
        self.inner.add_batch(batch)
    }

    /// Parses, validates and adds every report of a buffer of whole JSON
    /// Lines (blank lines are skipped), counting rejections exactly as
    /// [`Aggregator::add_json`] of each line would; returns the first
    /// rejected line, numbered from 0 with blank lines included, and its
    /// error (`None` if every report was accepted).
    ///
    /// Lines that are byte for byte the canonical serialization of this
    /// metric's reports ([`Report::to_json`]) take a fast path: only their
    /// payload integers are read, and they are counted as a batch of columns
    /// ([`Aggregator::add_batch`]); any other line is parsed in full.
    ///
    /// ```
    /// use localdp::{Aggregator, Metric, SimulationRng};
    /// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#).unwrap();
    /// let mut rng = SimulationRng::seed_from_u64(1); // simulation only
    /// let mut line = |v: &str| metric.randomize_text(v, &mut rng).unwrap().to_json();
    /// let text = format!("{}\n\n{}\nnot json\n{}\n", line("0"), line("3"), line("2"));
    /// let mut aggregator = Aggregator::new(metric.clone());
    /// let (line, _) = aggregator.add_json_lines(text.as_bytes()).unwrap();
    /// assert_eq!((line, aggregator.n(), aggregator.rejected().total()), (3, 3, 1));
    /// ```
    pub fn add_json_lines(&mut self, text: &[u8]) -> Option<(usize, Error)> {
        crate::aggregate::lines::add(self, text)
    }

    /// Adds everything `other` accepted and rejected (same config only).
    ///
    /// ```
    /// use localdp::{Aggregator, Metric, SimulationRng};
    /// let metric = Metric::from_json(r#"{"protocol":"auto","epsilon":1,"range":[0,10]}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(1); // simulation only
    /// let (mut a, mut b) = (Aggregator::new(metric.clone()), Aggregator::new(metric.clone()));
    /// a.add(&metric.randomize_text("2", &mut rng)?)?;
    /// b.add(&metric.randomize_text("8", &mut rng)?)?;
    /// a.merge(&b)?;
    /// assert_eq!(a.n(), 2);
    /// let other = Metric::from_json(r#"{"protocol":"auto","epsilon":2,"range":[0,10]}"#)?;
    /// assert!(a.merge(&Aggregator::new(other)).is_err());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn merge(&mut self, other: &Aggregator) -> Result<()> {
        self.inner.merge(&*other.inner)
    }

    /// The typed aggregator, if it is a `T` (e.g. [`crate::NumericAggregator`]).
    ///
    /// See the example on [`Aggregator`].
    pub fn typed<T: 'static>(&self) -> Option<&T> {
        self.inner.as_any().downcast_ref()
    }

    /// The estimate; `post` applies to frequency metrics only. Its JSON
    /// (serde) is what `localdp aggregate --format json` prints.
    ///
    /// ```
    /// use localdp::{Aggregator, Estimate, Metric, PostProcessing, SimulationRng};
    /// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":2,"domain":["a","b","c"]}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(3); // simulation only
    /// let mut aggregator = Aggregator::new(metric.clone());
    /// for value in ["a", "a", "b", "c", "a"] {
    ///     aggregator.add(&metric.randomize_text(value, &mut rng)?)?;
    /// }
    /// let Estimate::Frequency(estimate) = aggregator.estimate(PostProcessing::Project)? else { unreachable!() };
    /// let total: f64 = estimate.estimates.iter().map(|e| e.frequency).sum();
    /// assert!((total - 1.0).abs() < 1e-9); // projected onto the probability simplex
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn estimate(&self, post: PostProcessing) -> Result<Estimate> {
        self.inner.estimate(post)
    }
}
