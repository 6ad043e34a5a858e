//! The frequency oracles' aggregator and estimate.

use super::post::PostProcessing;
use super::kernels;
use super::tally::{RejectionCounts, Tally, Z95};
use localdp_core::error::{Error, Result};
use localdp_core::frequency::{FrequencyOracle, FrequencyProtocol};
use crate::mechanism::{sealed::AggregateState, Aggregate};
use crate::columnar::{Envelope, ReportBatch};
use localdp_core::report::Report;
use crate::state::{StateReader, StateWriter};
use serde::Serialize;

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
    crate::mechanism::state_accessors!(oracle);

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
    fn add_batch(&mut self, batch: &ReportBatch<'_>) -> Option<(usize, Error)> {
        let envelope = batch.envelope(&Aggregate::state_id(self));
        let outcome = match envelope {
            Envelope::Matches => kernels::frequency(self.oracle.mechanism().kernel(), batch, &mut self.counts),
            Envelope::OtherVersion | Envelope::OtherMetric => None,
        };
        match outcome {
            Some(outcome) => kernels::finish(self, batch, outcome, |a, report| a.oracle.validate(report)),
            None => crate::mechanism::add_rows(self, batch),
        }
    }

    fn merge(&mut self, other: &FrequencyAggregator) -> Result<()> {
        let same = self.oracle == other.oracle;
        (self.counts, self.tally) = crate::mechanism::merged_counts(self, other, same, [&self.counts, &other.counts])?;
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
        localdp_core::metric::id_of(&self.oracle)
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


