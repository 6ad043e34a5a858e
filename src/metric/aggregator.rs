//! The server side of any metric: [`Aggregator`] over each family's typed
//! aggregator, and [`Estimate`], the estimate of any family. The one place
//! that names every family's aggregator: a new family adds an arm to
//! `typed_aggregator` and a variant to [`Estimate`], which the compiler asks
//! for.

use crate::aggregate::{frequency::{FrequencyAggregator, FrequencyEstimate}, numeric::{NumericAggregator, NumericEstimate}, post::PostProcessing, tally::RejectionCounts};
use crate::distribution::aggregator::{DistributionAggregator, DistributionEstimate};
use crate::heavy::aggregator::{HeavyHitterAggregator, HeavyHitterEstimate};
use crate::key_value::aggregator::{KeyValueAggregator, KeyValueEstimate};
use crate::marginals::aggregator::{MarginalsAggregator, MarginalsEstimate};
use crate::rappor::aggregator::{RapporAggregator, RapporEstimate};
use crate::columnar::{Columns, ReportBatch};
use localdp_core::error::{Error, MergeConflict, Requirement, Result};
use crate::mechanism::Aggregate;
use localdp_core::metric::kind::Kind;
use localdp_core::metric::Metric;
use localdp_core::report::{Protocol, Report};
use serde::Serialize;
use std::any::Any;
use std::fmt;

/// The server side of any metric.
pub(crate) trait DynAggregate: Send + Sync {
    fn n(&self) -> u64;
    fn rejected(&self) -> &RejectionCounts;
    fn add(&mut self, report: &Report) -> Result<()>;
    fn add_parsed(&mut self, parsed: Result<Report>) -> Result<()>;
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
pub struct Aggregator {
    metric: Metric,
    inner: Box<dyn DynAggregate>,
}

impl Clone for Aggregator {
    fn clone(&self) -> Self {
        Aggregator { metric: self.metric.clone(), inner: self.inner.clone_box() }
    }
}

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
    Frequency(crate::aggregate::frequency::FrequencyEstimate),
    /// Means per attribute.
    Numeric(crate::aggregate::numeric::NumericEstimate),
    /// Candidates' frequencies.
    Rappor(crate::rappor::aggregator::RapporEstimate),
    /// A sketch's candidate frequencies, or the heavy hitters discovered.
    HeavyHitter(crate::heavy::aggregator::HeavyHitterEstimate),
    /// A histogram, quantiles and the mean of a number.
    Distribution(crate::distribution::aggregator::DistributionEstimate),
    /// Each key's frequency and the mean of its value.
    KeyValue(crate::key_value::aggregator::KeyValueEstimate),
    /// Every `way`-way marginal and each attribute's histogram.
    Marginals(crate::marginals::aggregator::MarginalsEstimate),
}

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
        let inner = typed_aggregator(metric.kind(), None).expect("an empty aggregator reads no bytes");
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
        let inner = typed_aggregator(metric.kind(), Some(bytes))?;
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
    #[doc(hidden)]
    pub fn add_parsed(&mut self, parsed: Result<Report>) -> Result<()> {
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

    /// Counts the rows gathered in `columns` as one batch of this metric
    /// ([`Aggregator::add_batch`]) and empties them; returns the first
    /// rejected row and its error.
    #[doc(hidden)]
    pub fn add_columns(&mut self, columns: &mut Columns) -> Option<(usize, Error)> {
        if columns.is_empty() {
            return None;
        }
        let id = self.metric().id();
        let first = self.add_batch(&columns.batch(&id));
        columns.clear();
        first
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

    /// The estimate; `post` applies to frequency and marginals metrics only. Its JSON
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

impl IntoEstimate for HeavyHitterEstimate {
    fn into_estimate(self, post: PostProcessing) -> Result<Estimate> {
        without_post(post, Estimate::HeavyHitter(self))
    }
}

impl IntoEstimate for RapporEstimate {
    fn into_estimate(self, post: PostProcessing) -> Result<Estimate> {
        without_post(post, Estimate::Rappor(self))
    }
}

impl IntoEstimate for FrequencyEstimate {
    fn into_estimate(self, post: PostProcessing) -> Result<Estimate> {
        Ok(Estimate::Frequency(self.post_processed(post)))
    }
}

impl IntoEstimate for NumericEstimate {
    fn into_estimate(self, post: PostProcessing) -> Result<Estimate> {
        without_post(post, Estimate::Numeric(self))
    }
}

impl IntoEstimate for DistributionEstimate {
    fn into_estimate(self, post: PostProcessing) -> Result<Estimate> {
        without_post(post, Estimate::Distribution(self))
    }
}

impl IntoEstimate for KeyValueEstimate {
    fn into_estimate(self, post: PostProcessing) -> Result<Estimate> {
        without_post(post, Estimate::KeyValue(self))
    }
}

impl IntoEstimate for MarginalsEstimate {
    fn into_estimate(self, post: PostProcessing) -> Result<Estimate> {
        Ok(Estimate::Marginals(self.post_processed(post)))
    }
}

/// The typed aggregator of a metric: empty, or (with `bytes`) the one whose
/// state they hold. One arm per family: each family's protocols are made by
/// its one mechanism type, which its aggregator aggregates.
fn typed_aggregator(kind: &dyn Kind, bytes: Option<&[u8]>) -> Result<Box<dyn DynAggregate>> {
    match kind.protocol() {
        Protocol::Frequency(_) => boxed::<FrequencyAggregator>(kind, bytes),
        Protocol::Numeric(_) => boxed::<NumericAggregator>(kind, bytes),
        Protocol::OpenDomain(_) => boxed::<RapporAggregator>(kind, bytes),
        Protocol::HeavyHitter(_) => boxed::<HeavyHitterAggregator>(kind, bytes),
        Protocol::Distribution(_) => boxed::<DistributionAggregator>(kind, bytes),
        Protocol::KeyValue(_) => boxed::<KeyValueAggregator>(kind, bytes),
        Protocol::Marginals(_) => boxed::<MarginalsAggregator>(kind, bytes),
    }
}

fn boxed<A>(kind: &dyn Kind, bytes: Option<&[u8]>) -> Result<Box<dyn DynAggregate>>
where
    A: Aggregate + Clone + Send + Sync + 'static,
    A::Mechanism: 'static,
    A::Estimate: IntoEstimate,
{
    let mechanism = kind.as_any().downcast_ref::<A::Mechanism>().expect("a family's protocols are its mechanism's").clone();
    Ok(Box::new(match bytes {
        None => A::new(mechanism),
        Some(bytes) => A::from_bytes(mechanism, bytes)?,
    }))
}
