//! The server side: streaming, validating, mergeable aggregation and
//! estimates with honest error bars.

#[cfg(feature = "aggregate")]
mod kernels;
#[cfg(feature = "aggregate")]
pub(crate) mod lines;
mod numeric;
mod post;

pub use numeric::{MeanEstimate, NumericAggregator, NumericEstimate};

pub use post::{norm_sub, project_onto_simplex, PostProcessing};

use crate::error::{Error, MergeConflict, Rejection, Result};
use crate::frequency::{FrequencyOracle, FrequencyProtocol};
use crate::mechanism::{sealed::AggregateState, Aggregate};
use crate::metric::{Estimate, IntoEstimate};
#[cfg(feature = "aggregate")]
use crate::columnar::{Envelope, ReportBatch};
use crate::report::Report;
use crate::state::{StateError, StateReader, StateWriter};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// The two-sided 95% normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Rejected reports, counted by reason.
///
/// ```
/// use localdp::{Rejection, RejectionCounts};
/// let mut counts = RejectionCounts::default();
/// counts.count(Rejection::Malformed);
/// counts.add(Rejection::BadLength, 3)?; // e.g. counts a collector kept beside its reports
/// assert_eq!((counts.get(Rejection::Malformed), counts.get(Rejection::BadLength)), (1, 3));
/// assert_eq!(counts.total(), 4);
/// assert!(counts.add(Rejection::BadLength, u64::MAX).is_err()); // and nothing changed
/// assert_eq!(counts.total(), 4);
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RejectionCounts([u64; Rejection::ALL.len()]);

impl RejectionCounts {
    /// Counts one more rejection.
    ///
    /// See the example on [`RejectionCounts`].
    pub fn count(&mut self, reason: Rejection) {
        self.0[reason as usize] += 1;
    }

    /// Counts `n` more rejections for `reason` at once: counts kept beside
    /// the reports (a collector's table, a Parquet file's
    /// `localdp.rejected`). An error, and no change, if the count would pass
    /// [`crate::state::MAX_COUNT`].
    ///
    /// See the example on [`RejectionCounts`].
    pub fn add(&mut self, reason: Rejection, n: u64) -> Result<()> {
        let count = &mut self.0[reason as usize];
        *count = checked_sum(*count, n)?;
        Ok(())
    }

    /// The count for one reason.
    ///
    /// See the example on [`RejectionCounts`].
    pub fn get(&self, reason: Rejection) -> u64 {
        self.0[reason as usize]
    }

    /// All rejections.
    ///
    /// See the example on [`RejectionCounts`].
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The rejections counted after `earlier` was taken. A reason whose
    /// count in `earlier` is larger (it was not taken from this aggregator)
    /// gives zero, never a wrapped-around count.
    ///
    /// ```
    /// use localdp::{Rejection, RejectionCounts};
    /// let mut later = RejectionCounts::default();
    /// later.count(Rejection::Malformed);
    /// later.count(Rejection::Malformed);
    /// let mut other = RejectionCounts::default();
    /// other.count(Rejection::ConfigMismatch);
    /// let new = later.since(&other);
    /// assert_eq!((new.get(Rejection::Malformed), new.get(Rejection::ConfigMismatch)), (2, 0));
    /// ```
    pub fn since(&self, earlier: &RejectionCounts) -> RejectionCounts {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(earlier.0) {
            *a = a.saturating_sub(b);
        }
        out
    }

    /// Counts a rejection error by its reason and hands it back.
    pub(crate) fn count_error(&mut self, e: Error) -> Error {
        if let Error::Rejected { reason, .. } = e {
            self.count(reason);
        }
        e
    }

    /// Both counts added, or an error on overflow.
    pub(crate) fn merged(&self, other: &RejectionCounts) -> Result<RejectionCounts> {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = checked_sum(*a, b)?;
        }
        Ok(out)
    }

    /// Writes the counts (every reason, in [`Rejection::ALL`] order).
    pub(crate) fn write(&self, out: &mut StateWriter) {
        out.counts(&self.0);
    }

    /// Reads what [`RejectionCounts::write`] wrote.
    pub(crate) fn read(input: &mut StateReader<'_>) -> Result<RejectionCounts> {
        let mut counts = RejectionCounts::default();
        input.counts(&mut counts.0, u64::MAX, "the rejection reasons")?;
        Ok(counts)
    }
}

impl Serialize for RejectionCounts {
    /// Every reason with its count, zeros included, so the keys are stable.
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(Rejection::ALL.len()))?;
        for reason in Rejection::ALL {
            map.serialize_entry(reason.as_str(), &self.get(reason))?;
        }
        map.end()
    }
}

/// What every aggregator keeps besides its mechanism's own counts: the
/// accepted reports and the rejected ones by reason. One implementation of
/// counting, merging and restoring them for every family.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    n: u64,
    rejected: RejectionCounts,
}

impl Tally {
    /// Accepted reports.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Rejected reports, by reason.
    pub fn rejected(&self) -> &RejectionCounts {
        &self.rejected
    }

    /// Counts one accepted report.
    pub(crate) fn accept(&mut self) {
        self.n += 1;
    }

    /// Counts a batch's accepted reports and its rejections.
    #[cfg(feature = "aggregate")]
    pub(crate) fn count_batch(&mut self, accepted: u64, rejected: &RejectionCounts) {
        self.n += accepted;
        for (count, more) in self.rejected.0.iter_mut().zip(rejected.0) {
            *count += more;
        }
    }

    /// Counts a rejection error by its reason and hands it back.
    pub(crate) fn reject(&mut self, e: Error) -> Error {
        self.rejected.count_error(e)
    }

    /// Both tallies added, or an error past [`crate::state::MAX_COUNT`].
    pub(crate) fn merged(&self, other: &Tally) -> Result<Tally> {
        Ok(Tally { n: checked_sum(self.n, other.n)?, rejected: self.rejected.merged(&other.rejected)? })
    }

    /// Replaces the rejections (a collector restoring stored counts).
    pub(crate) fn restore_rejected(&mut self, counts: RejectionCounts) {
        self.rejected = counts;
    }

    pub(crate) fn write(&self, out: &mut StateWriter) {
        out.u64(self.n);
        self.rejected.write(out);
    }

    pub(crate) fn read(input: &mut StateReader<'_>) -> Result<Tally> {
        Ok(Tally { n: input.u64()?, rejected: RejectionCounts::read(input)? })
    }
}

/// One value's estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValueEstimate {
    /// The value: an integer for a sized domain, else its label.
    pub value: serde_json::Value,
    /// The estimate after post-processing (the unbiased one by default).
    pub frequency: f64,
    /// The unbiased estimate, whatever the post-processing.
    pub unbiased_frequency: f64,
    /// The standard error of the unbiased estimate: the exact variance
    /// formula evaluated at the estimate (clamped to `[0, 1]`).
    pub std_error: f64,
    /// The 95% normal interval around the unbiased estimate.
    pub ci95: [f64; 2],
}

/// The estimate of a frequency metric: the JSON that `localdp aggregate`
/// prints and the JavaScript `Aggregator.estimate` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrequencyEstimate {
    /// The resolved protocol.
    pub protocol: FrequencyProtocol,
    /// ε of one report.
    pub epsilon: f64,
    /// Accepted reports.
    pub n: u64,
    /// Rejected reports by reason.
    pub rejected: RejectionCounts,
    /// The post-processing applied to `frequency`.
    pub post: PostProcessing,
    /// One entry per value, in domain order.
    pub estimates: Vec<ValueEstimate>,
}

/// Aggregates reports of one frequency metric in `O(d)` memory.
///
/// Bad reports are refused with a typed error and counted by reason; nothing
/// already accepted is lost, and no input makes it panic. Two aggregators of
/// the same configuration over disjoint report sets [`merge`](Self::merge)
/// into the aggregator of their union.
#[derive(Debug, Clone)]
pub struct FrequencyAggregator {
    oracle: FrequencyOracle,
    counts: Vec<u64>,
    tally: Tally,
}

impl AggregateState for FrequencyAggregator {
    fn tally(&self) -> &Tally {
        &self.tally
    }

    fn tally_mut(&mut self) -> &mut Tally {
        &mut self.tally
    }

    #[cfg(feature = "aggregate")]
    fn envelope(&self, payload: crate::report::Payload) -> crate::report::Report {
        crate::metric::envelope(&self.oracle, payload)
    }

    fn write_counts(&self, out: &mut StateWriter) {
        out.counts(&self.counts);
    }

    fn read_counts(&mut self, n: u64, input: &mut StateReader<'_>) -> Result<()> {
        // A count is the number of reports that added to it, at most one
        // per report (unary and bucket counts) or, for indices, summing to n.
        input.counts(&mut self.counts, n, "a count exceeds the number of reports")?;
        self.oracle.mechanism().check_counts(&self.counts, n)?;
        Ok(())
    }
}

impl Aggregate for FrequencyAggregator {
    type Mechanism = FrequencyOracle;
    type Estimate = FrequencyEstimate;

    fn new(oracle: FrequencyOracle) -> Self {
        let counts = vec![0; oracle.mechanism().counts_len()];
        FrequencyAggregator { oracle, counts, tally: Tally::default() }
    }

    fn mechanism(&self) -> &FrequencyOracle {
        &self.oracle
    }


    fn add(&mut self, report: &Report) -> Result<()> {
        match self.oracle.validate(report) {
            Ok(()) => {
                self.oracle.mechanism().accumulate(&report.payload, &mut self.counts);
                self.tally.accept();
                Ok(())
            }
            Err(e) => Err(self.tally.reject(e)),
        }
    }

    /// Counts with the protocol's column kernel (see [`crate::columnar`])
    /// when the batch's envelope matches and its columns are the kernel's;
    /// row by row otherwise.
    #[cfg(feature = "aggregate")]
    fn add_batch(&mut self, batch: &ReportBatch<'_>) -> Option<(usize, Error)> {
        let envelope = batch.envelope(&Aggregate::state_id(self));
        let outcome = match envelope {
            Envelope::Matches => kernels::frequency(self.oracle.mechanism().kernel(), batch, &mut self.counts),
            Envelope::OtherVersion | Envelope::OtherMetric => None,
        };
        match outcome {
            Some(outcome) => kernels::finish(self, batch, outcome, |a, report| a.oracle.validate(report)),
            None => crate::columnar::add_rows(self, batch),
        }
    }

    fn merge(&mut self, other: &FrequencyAggregator) -> Result<()> {
        if self.oracle != other.oracle {
            return Err(Error::MergeMismatch {
                ours: Aggregate::state_id(self),
                theirs: Aggregate::state_id(other),
                conflict: MergeConflict::Configuration,
            });
        }
        let counts = summed(&self.counts, &other.counts)?;
        let tally = self.tally.merged(&other.tally)?;
        (self.counts, self.tally) = (counts, tally);
        Ok(())
    }

    /// The unbiased frequency estimate of every value, its standard error and
    /// 95% interval ([`FrequencyEstimate::post_processed`] adds the
    /// post-processed `frequency`).
    fn estimate(&self) -> Result<FrequencyEstimate> {
        if self.tally.n() == 0 {
            return Err(Error::NoReports);
        }
        let n = self.tally.n() as f64;
        let (p, q) = self.oracle.support_probabilities();
        let support = self.oracle.mechanism().support_counts(&self.counts, self.tally.n());
        let domain = self.oracle.domain();
        let estimates = support
            .iter()
            .enumerate()
            .map(|(v, &s)| {
                let f = (s / n - q) / (p - q);
                let std_error = self.oracle.variance(f.clamp(0.0, 1.0), self.tally.n()).sqrt();
                ValueEstimate {
                    // `support` has one entry per value: `v < d`.
                    value: domain.value_json(v).unwrap_or_default(),
                    frequency: f,
                    unbiased_frequency: f,
                    std_error,
                    ci95: [f - Z95 * std_error, f + Z95 * std_error],
                }
            })
            .collect();
        Ok(FrequencyEstimate {
            protocol: self.oracle.protocol(),
            epsilon: self.oracle.epsilon(),
            n: self.tally.n(),
            rejected: *self.tally.rejected(),
            post: PostProcessing::None,
            estimates,
        })
    }

    fn state_id(&self) -> String {
        crate::metric::id_of(&self.oracle)
    }
}

impl FrequencyEstimate {
    /// The estimate with `frequency` post-processed (`unbiased_frequency`,
    /// the standard errors and the intervals stay those of the unbiased
    /// estimate).
    ///
    /// ```
    /// use localdp::{Aggregator, Estimate, Metric, PostProcessing, SimulationRng};
    /// let metric = Metric::from_json(r#"{"protocol":"oue","epsilon":0.5,"domain":5}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(2); // simulation only
    /// let mut aggregator = Aggregator::new(metric.clone());
    /// for v in ["0", "0", "1", "4"] {
    ///     aggregator.add(&metric.randomize_text(v, &mut rng)?)?;
    /// }
    /// let Estimate::Frequency(unbiased) = aggregator.estimate(PostProcessing::None)? else { unreachable!() };
    /// let clean = unbiased.clone().post_processed(PostProcessing::NormSub);
    /// assert!(clean.estimates.iter().all(|e| e.frequency >= 0.0));
    /// assert!((clean.estimates.iter().map(|e| e.frequency).sum::<f64>() - 1.0).abs() < 1e-9);
    /// // The unbiased values and their error bars are kept.
    /// assert_eq!(clean.estimates[0].unbiased_frequency, unbiased.estimates[0].unbiased_frequency);
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn post_processed(mut self, post: PostProcessing) -> FrequencyEstimate {
        let unbiased: Vec<f64> = self.estimates.iter().map(|e| e.unbiased_frequency).collect();
        for (e, f) in self.estimates.iter_mut().zip(post.apply(&unbiased)) {
            e.frequency = f;
        }
        self.post = post;
        self
    }
}

impl IntoEstimate for FrequencyEstimate {
    fn into_estimate(self, post: PostProcessing) -> Result<Estimate> {
        Ok(Estimate::Frequency(self.post_processed(post)))
    }
}

/// `a + b`, or an error if a count would pass
/// [`crate::state::MAX_COUNT`] (only forged states can get there).
pub(crate) fn checked_sum<T: num_like::CheckedAdd>(a: T, b: T) -> Result<T> {
    a.checked(b).ok_or(Error::State(StateError::Inconsistent { what: "merged counts overflow" }))
}

/// Two count vectors added element by element with [`checked_sum`] (a merge).
pub(crate) fn summed(a: &[u64], b: &[u64]) -> Result<Vec<u64>> {
    a.iter().zip(b).map(|(&x, &y)| checked_sum(x, y)).collect()
}

pub(crate) mod num_like {
    /// Integer addition that reports overflow.
    pub trait CheckedAdd: Sized {
        fn checked(self, other: Self) -> Option<Self>;
    }
    impl CheckedAdd for u64 {
        fn checked(self, other: Self) -> Option<Self> {
            self.checked_add(other).filter(|&sum| sum <= crate::state::MAX_COUNT)
        }
    }
    impl CheckedAdd for u128 {
        fn checked(self, other: Self) -> Option<Self> {
            self.checked_add(other)
        }
    }
}
