//! Aggregation of numeric reports: means with standard errors.

use super::tally::{checked_sum, RejectionCounts, Sums, Tally, Z95};
use localdp_core::error::{Error, MergeConflict, Result};
use crate::mechanism::{sealed::AggregateState, Aggregate};
use super::kernels::{self, Grid};
use crate::columnar::{Envelope, ReportBatch};
use crate::state::{StateError, StateReader, StateWriter};
use localdp_core::numeric::{NumericMetric, NumericProtocol};
use localdp_core::report::{Payload, Report};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// One attribute's mean.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeanEstimate {
    /// The unbiased mean, in the range's units (it may fall outside the
    /// range by chance: clamping it would bias it).
    pub mean: f64,
    /// Its standard error: the sample standard deviation of the debiased
    /// reports over `√n` (from the mechanism's worst case when `n = 1`).
    pub std_error: f64,
    /// The 95% normal interval.
    pub ci95: [f64; 2],
}

/// The estimate of a numeric metric: the JSON that `localdp aggregate`
/// prints and the JavaScript `Aggregator.estimate` returns:
/// `{"protocol","epsilon","n","rejected","mean","std_error","ci95"}`, or for a
/// record metric `"attributes": [{"mean","std_error","ci95"}, …]` instead of
/// the last three.
#[derive(Debug, Clone, PartialEq)]
pub struct NumericEstimate {
    /// The resolved protocol.
    pub protocol: NumericProtocol,
    /// ε of one report.
    pub epsilon: f64,
    /// Accepted reports.
    pub n: u64,
    /// Rejected reports by reason.
    pub rejected: RejectionCounts,
    /// One entry per attribute (one for a scalar metric).
    pub attributes: Vec<MeanEstimate>,
    /// True for a record metric.
    pub vector: bool,
}

impl Serialize for NumericEstimate {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("protocol", self.protocol.name())?;
        map.serialize_entry("epsilon", &self.epsilon)?;
        map.serialize_entry("n", &self.n)?;
        map.serialize_entry("rejected", &self.rejected)?;
        if self.vector {
            map.serialize_entry("attributes", &self.attributes)?;
        } else {
            let a = &self.attributes[0];
            map.serialize_entry("mean", &a.mean)?;
            map.serialize_entry("std_error", &a.std_error)?;
            map.serialize_entry("ci95", &a.ci95)?;
        }
        map.end()
    }
}

/// Aggregates reports of one numeric metric in `O(D)` memory, with the same
/// contract as [`crate::FrequencyAggregator`]: bad reports are counted by
/// reason and refused, nothing accepted is lost, aggregators merge.
#[derive(Debug, Clone)]
pub struct NumericAggregator {
    metric: NumericMetric,
    /// Per attribute, per decoding component.
    sums: Vec<Sums>,
    tally: Tally,
}

impl NumericAggregator {
    fn accumulate(&mut self, attribute: usize, k: u64) {
        let components = self.metric.components();
        // Validated: k is below the last component's end.
        let c = components.iter().position(|c| k < c.end).unwrap_or(components.len() - 1);
        let sums = &mut self.sums[attribute * components.len() + c];
        sums.count += 1;
        sums.sum += u128::from(k);
        sums.sum_of_squares += u128::from(k) * u128::from(k);
    }
}

impl AggregateState for NumericAggregator {
    crate::mechanism::state_accessors!(metric);

    fn write_counts(&self, out: &mut StateWriter) {
        out.u64(self.sums.len() as u64);
        for s in &self.sums {
            out.u64(s.count);
            out.u128(s.sum);
            out.u128(s.sum_of_squares);
        }
    }

    fn read_counts(&mut self, n: u64, input: &mut StateReader<'_>) -> Result<()> {
        let bad = |what| Error::State(StateError::Inconsistent { what });
        if input.length(usize::MAX)? != self.sums.len() {
            return Err(bad("the number of attributes"));
        }
        let components = self.metric.components().to_vec();
        let per_report = self.metric.sampled() as u128;
        let mut total = 0u128;
        for (i, slot) in self.sums.iter_mut().enumerate() {
            let c = components[i % components.len()];
            let (count, sum, squares) = (input.u64()?, input.u128()?, input.u128()?);
            // Every output index of the component lies in start..end.
            let (lo, hi) = (u128::from(c.start), u128::from(c.end - 1));
            let count_wide = u128::from(count);
            let in_range = |x: u128, lo: u128, hi: u128| {
                x >= count_wide.saturating_mul(lo) && x <= count_wide.saturating_mul(hi)
            };
            if count > n || !in_range(sum, lo, hi) || !in_range(squares, lo * lo, hi.saturating_mul(hi)) {
                return Err(bad("a sum outside what its reports can add up to"));
            }
            total += count_wide;
            *slot = Sums { count, sum, sum_of_squares: squares };
        }
        if total != u128::from(n) * per_report {
            return Err(bad("the sums do not hold the number of reports"));
        }
        Ok(())
    }
}

impl Aggregate for NumericAggregator {
    type Mechanism = NumericMetric;
    type Estimate = NumericEstimate;

    fn new(metric: NumericMetric) -> Self {
        let sums = vec![Sums::default(); metric.ranges().len() * metric.components().len()];
        NumericAggregator { metric, sums, tally: Tally::default() }
    }

    fn mechanism(&self) -> &NumericMetric {
        &self.metric
    }


    fn add(&mut self, report: &Report) -> Result<()> {
        if let Err(e) = self.metric.validate(report) {
            return Err(self.tally.reject(e));
        }
        match &report.payload {
            Payload::Index(k) => self.accumulate(0, *k),
            Payload::Sampled { attributes, values } => {
                for (&a, &k) in attributes.iter().zip(values) {
                    self.accumulate(a as usize, k);
                }
            }
            // `validate` accepts no other payload.
            _ => return Err(self.tally.reject(localdp_core::error::Rejection::Malformed.error("unexpected payload"))),
        }
        self.tally.accept();
        Ok(())
    }

    /// Counted by the column kernels (see [`crate::columnar`]) when the batch's
    /// envelope matches and its columns are the metric's (`value`, or
    /// `attributes` and `values` for a record) without nulls; row by row
    /// otherwise.
    fn add_batch(&mut self, batch: &ReportBatch<'_>) -> Option<(usize, Error)> {
        let envelope = batch.envelope(&Aggregate::state_id(self));
        let outcome = match envelope {
            Envelope::Matches => {
                let ends: Vec<u64> = self.metric.components().iter().map(|c| c.end).collect();
                let grid = Grid { outputs: self.metric.outputs(), ends: &ends };
                if self.metric.is_vector() {
                    let (sampled, attributes) = (self.metric.sampled(), self.metric.ranges().len());
                    kernels::records(batch, sampled, attributes, &grid, &mut self.sums)
                } else {
                    kernels::numbers(batch, &grid, &mut self.sums)
                }
            }
            Envelope::OtherVersion | Envelope::OtherMetric => None,
        };
        match outcome {
            Some(outcome) => kernels::finish(self, batch, outcome, |a, report| a.metric.validate(report)),
            None => crate::mechanism::add_rows(self, batch),
        }
    }

    fn merge(&mut self, other: &NumericAggregator) -> Result<()> {
        if self.metric != other.metric {
            return Err(Error::MergeMismatch {
                ours: Aggregate::state_id(self),
                theirs: Aggregate::state_id(other),
                conflict: MergeConflict::Configuration,
            });
        }
        let sums = self
            .sums
            .iter()
            .zip(&other.sums)
            .map(|(a, b)| {
                Ok(Sums {
                    count: checked_sum(a.count, b.count)?,
                    sum: checked_sum(a.sum, b.sum)?,
                    sum_of_squares: checked_sum(a.sum_of_squares, b.sum_of_squares)?,
                })
            })
            .collect::<Result<_>>()?;
        let tally = self.tally.merged(&other.tally)?;
        (self.sums, self.tally) = (sums, tally);
        Ok(())
    }

    fn state_id(&self) -> String {
        localdp_core::metric::id_of(&self.metric)
    }

    /// Every attribute's unbiased mean, standard error and 95% interval.
    fn estimate(&self) -> Result<NumericEstimate> {
        if self.tally.n() == 0 {
            return Err(Error::NoReports);
        }
        let n = self.tally.n() as f64;
        let components = self.metric.components();
        let ranges = self.metric.ranges();
        let scale = ranges.len() as f64 / self.metric.sampled() as f64;
        let attributes = ranges
            .iter()
            .enumerate()
            .map(|(a, &[lo, hi])| {
                // Σy and Σy² of the debiased reports (t units), y = s·k + o.
                let (mut sum, mut squares) = (0.0, 0.0);
                for (c, sums) in components.iter().zip(&self.sums[a * components.len()..]) {
                    let (count, s1, s2) = (sums.count as f64, sums.sum as f64, sums.sum_of_squares as f64);
                    sum += c.scale * s1 + c.offset * count;
                    squares += c.scale * c.scale * s2 + 2.0 * c.scale * c.offset * s1 + c.offset * c.offset * count;
                }
                let mean = scale * sum / n;
                let variance = if self.tally.n() >= 2 {
                    ((scale * scale * squares - n * mean * mean) / (n - 1.0)).max(0.0)
                } else {
                    self.metric.worst_case_variance()
                };
                let half = 0.5 * (hi - lo);
                let mean = lo + half * (mean + 1.0);
                let std_error = half * (variance / n).sqrt();
                MeanEstimate { mean, std_error, ci95: [mean - Z95 * std_error, mean + Z95 * std_error] }
            })
            .collect();
        Ok(NumericEstimate {
            protocol: self.metric.protocol(),
            epsilon: self.metric.epsilon(),
            n: self.tally.n(),
            rejected: *self.tally.rejected(),
            attributes,
            vector: self.metric.is_vector(),
        })
    }
}

