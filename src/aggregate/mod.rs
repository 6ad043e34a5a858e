//! The server side: streaming, validating, mergeable aggregation and
//! estimates with honest error bars.

mod numeric;
mod post;

pub use numeric::{MeanEstimate, NumericAggregator, NumericEstimate};

pub use post::{norm_sub, project_onto_simplex, PostProcessing};

use crate::error::{Error, Rejection, Result};
use crate::frequency::{FrequencyOracle, Protocol};
use crate::report::Report;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// The two-sided 95% normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Rejected reports, counted by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RejectionCounts([u64; Rejection::ALL.len()]);

impl RejectionCounts {
    /// Counts one more rejection.
    pub fn count(&mut self, reason: Rejection) {
        self.0[reason as usize] += 1;
    }

    /// The count for one reason.
    pub fn get(&self, reason: Rejection) -> u64 {
        self.0[reason as usize]
    }

    /// All rejections.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The rejections counted after `earlier` was taken.
    pub fn since(&self, earlier: &RejectionCounts) -> RejectionCounts {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(earlier.0) {
            *a -= b;
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

    pub(crate) fn merge(&mut self, other: &RejectionCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
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
    pub protocol: Protocol,
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
    n: u64,
    counts: Vec<u64>,
    rejected: RejectionCounts,
}

impl FrequencyAggregator {
    /// An empty aggregator for the oracle's configuration.
    pub fn new(oracle: FrequencyOracle) -> Self {
        let counts = vec![0; oracle.mechanism().counts_len()];
        FrequencyAggregator { oracle, n: 0, counts, rejected: RejectionCounts::default() }
    }

    /// The configuration.
    pub fn oracle(&self) -> &FrequencyOracle {
        &self.oracle
    }

    /// Accepted reports.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Rejected reports by reason.
    pub fn rejected(&self) -> &RejectionCounts {
        &self.rejected
    }

    /// Validates and adds one report; a bad one is counted and returned as
    /// [`Error::Rejected`].
    pub fn add(&mut self, report: &Report) -> Result<()> {
        match self.oracle.validate(report) {
            Ok(()) => {
                self.oracle.mechanism().accumulate(&report.payload, &mut self.counts);
                self.n += 1;
                Ok(())
            }
            Err(e) => Err(self.rejected.count_error(e)),
        }
    }

    /// Parses, validates and adds one JSON report (bytes that are not UTF-8
    /// are malformed).
    pub fn add_json(&mut self, text: impl AsRef<[u8]>) -> Result<()> {
        match Report::from_json(text) {
            Ok(report) => self.add(&report),
            Err(e) => Err(self.rejected.count_error(e)),
        }
    }

    /// Adds everything `other` accepted and rejected. Both must have the same
    /// configuration.
    pub fn merge(&mut self, other: &FrequencyAggregator) -> Result<()> {
        if self.oracle != other.oracle {
            return Err(Error::MergeMismatch("the aggregators have different configurations".into()));
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.n += other.n;
        self.rejected.merge(&other.rejected);
        Ok(())
    }

    /// The unbiased frequency estimate of every value, its standard error and
    /// 95% interval, and `frequency` after `post`.
    pub fn estimate(&self, post: PostProcessing) -> Result<FrequencyEstimate> {
        if self.n == 0 {
            return Err(Error::NoReports);
        }
        let n = self.n as f64;
        let (p, q) = self.oracle.support_probabilities();
        let support = self.oracle.mechanism().support_counts(&self.counts, self.n);
        let unbiased: Vec<f64> = support.iter().map(|&s| (s / n - q) / (p - q)).collect();
        let frequency = post.apply(&unbiased);
        let domain = self.oracle.domain();
        let estimates = unbiased
            .iter()
            .zip(frequency)
            .enumerate()
            .map(|(v, (&f, frequency))| {
                let std_error = self.oracle.variance(f.clamp(0.0, 1.0), self.n).sqrt();
                ValueEstimate {
                    value: domain.value_json(v),
                    frequency,
                    unbiased_frequency: f,
                    std_error,
                    ci95: [f - Z95 * std_error, f + Z95 * std_error],
                }
            })
            .collect();
        Ok(FrequencyEstimate {
            protocol: self.oracle.protocol(),
            epsilon: self.oracle.epsilon(),
            n: self.n,
            rejected: self.rejected,
            post,
            estimates,
        })
    }
}
