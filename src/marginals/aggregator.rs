//! The aggregator of a marginals metric, and its estimate: every `way`-way
//! marginal and each attribute's own histogram, each cell with its
//! standard error and 95% interval.
//!
//! The running state is integer counts (the reports of each set of
//! attributes, then each set's oracle counts), so merging is exact and
//! merged shards estimate what one aggregator fed everything does, bit for
//! bit.
//!
//! **Cells.** A set's `n_s` reporters are a uniform sample of the `n`
//! devices, so a cell's unbiased frequency `f̂` (its oracle's estimator
//! over `n_s` reports) has the variance of the oracle plus that of the
//! sample: `Var[f̂] = (q*(1−q*)/(p*−q*)² + f(1−p*−q*)/(p*−q*))/n_s + f(1−f)/n_s ·
//! (n−n_s)/(n−1)`, evaluated at `f̂` clamped to `[0, 1]`. A set nobody
//! reported says nothing: its cells are uniform, with `se` 0.5 (the most a
//! share's standard deviation can be).
//!
//! **Histograms.** Attribute `a`'s histogram is a weighted average of the
//! margins on `a` of the marginals that hold it (those with reports), so
//! it is unbiased too. A margin sums a row of `R` cells, whose oracle
//! errors are uncorrelated (unary bits are independent; hashed supports
//! nearly so), so its variance is `(R−1)·V_s(0) + V_s(m) + m(1−m)·(n−n_s)/
//! ((n−1)n_s)` (`V_s` the set's oracle variance over `n_s` reports); its
//! weight is `w_s = 1/(R·V_s(0))`, the inverse of that variance at `m = 0`
//! (the same for every value, so the histogram sums to 1), and the
//! histogram's variance is `Σ_s w_s²·Var_s / (Σ_s w_s)²`.
//!
//! **Post-processing** (`norm-sub`, `project`) applies to each marginal,
//! the histograms are then the weighted average of the post-processed margins, and
//! every marginal is shifted to have exactly these margins (for each of its
//! attributes, a row's difference spread evenly over the row's cells: as
//! both sum to 1 this moves no other margin; Qardaji et al.'s consistency
//! step in CALM). The marginals and histograms are then consistent, sum to
//! 1, and a cell may be slightly below 0. Without post-processing the cells
//! and histograms are the unbiased estimates. `se` is always the unbiased
//! estimate's; `ci95` is `frequency ± 1.96·se`.

use localdp_core::marginals::{MarginalsMetric, MarginalsProtocol};
use crate::aggregate::{post::PostProcessing, tally::{RejectionCounts, Tally, Z95}};
use localdp_core::error::{Error, Result};
use crate::mechanism::{sealed::AggregateState, Aggregate};
use localdp_core::report::Report;
use crate::state::{StateReader, StateWriter};
use serde::Serialize;

/// One cell of a marginal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// The value of each of the marginal's attributes: an integer for a
    /// sized domain, else its label.
    pub values: Vec<serde_json::Value>,
    /// The share of events in the cell (post-processed if asked).
    pub frequency: f64,
    /// The unbiased estimate's standard error.
    pub se: f64,
    /// The unbiased estimate `± 1.96·se` (post-processing moves
    /// `frequency`, not the interval, as for frequency metrics).
    pub ci95: [f64; 2],
}

/// One `way`-way marginal: the joint histogram of a set of attributes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Marginal {
    /// The attributes' names, in config order.
    pub attributes: Vec<String>,
    /// The reports made for this set.
    pub n: u64,
    /// Every cell, the first attribute's value the most significant.
    pub cells: Vec<Cell>,
    /// The attributes' indices (config order) and domain sizes.
    #[serde(skip)]
    shape: Vec<(usize, usize)>,
    /// The unbiased cells.
    #[serde(skip)]
    unbiased: Vec<f64>,
    /// The weight of its margin on each of its attributes in their
    /// histograms (0 without reports).
    #[serde(skip)]
    weights: Vec<f64>,
}

/// One value of an attribute's histogram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistogramValue {
    /// The value: an integer for a sized domain, else its label.
    pub value: serde_json::Value,
    /// Its share of events.
    pub frequency: f64,
    /// The unbiased estimate's standard error.
    pub se: f64,
    /// The unbiased estimate `± 1.96·se` (post-processing moves
    /// `frequency`, not the interval, as for frequency metrics).
    pub ci95: [f64; 2],
}

/// One attribute's own (one-way) histogram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Histogram {
    /// The attribute's name.
    pub attribute: String,
    /// One entry per value, in domain order.
    pub values: Vec<HistogramValue>,
}

/// The estimate of a marginals metric: `{"protocol", "epsilon", "n",
/// "rejected", "post", "marginals": [{"attributes", "n", "cells": [{"values",
/// "frequency", "se", "ci95"}, …]}, …], "histograms": [{"attribute",
/// "values": [{"value", "frequency", "se", "ci95"}, …]}, …]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MarginalsEstimate {
    /// The resolved protocol.
    pub protocol: MarginalsProtocol,
    /// ε of one report.
    pub epsilon: f64,
    /// Accepted reports.
    pub n: u64,
    /// Rejected reports by reason.
    pub rejected: RejectionCounts,
    /// The post-processing applied.
    pub post: PostProcessing,
    /// Every `way`-way marginal, in the order of [`MarginalsMetric::sets`].
    pub marginals: Vec<Marginal>,
    /// Each attribute's histogram, in config order.
    pub histograms: Vec<Histogram>,
}

fn interval(value: f64, se: f64) -> [f64; 2] {
    [value - Z95 * se, value + Z95 * se]
}

/// The margin of `cells` (shaped `shape`) on its attribute at position `i`.
fn margin(cells: &[f64], shape: &[(usize, usize)], i: usize) -> Vec<f64> {
    let mut out = vec![0.0; shape[i].1];
    for (cell, &f) in cells.iter().enumerate() {
        out[value_at(cell, shape, i)] += f;
    }
    out
}

/// The value of the attribute at position `i` in cell `cell`.
fn value_at(cell: usize, shape: &[(usize, usize)], i: usize) -> usize {
    let below: usize = shape[i + 1..].iter().map(|&(_, d)| d).product();
    cell / below % shape[i].1
}

impl MarginalsEstimate {
    /// The estimate post-processed as the module documentation says.
    ///
    /// ```
    /// use localdp::{Aggregate, MarginalsAggregator, MarginalsMetric, PostProcessing, Randomizer, SimulationRng};
    /// let metric = MarginalsMetric::from_json(r#"{"protocol":"marginals","epsilon":2,
    ///     "attributes":[{"name":"a","domain":3},{"name":"b","domain":["x","y"]},{"name":"c","domain":2}]}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(4); // simulation only
    /// let mut aggregator = MarginalsAggregator::new(metric.clone());
    /// for i in 0..3000 {
    ///     let event = format!(r#"{{"a":{},"b":"{}","c":{}}}"#, i % 3, ["x", "y"][i % 2], i % 2);
    ///     aggregator.add(&metric.randomize(&event, &mut rng)?)?;
    /// }
    /// let estimate = aggregator.estimate()?.post_processed(PostProcessing::Project);
    /// let ab = &estimate.marginals[0]; // a × b
    /// assert_eq!((ab.attributes.clone(), ab.cells.len()), (vec!["a".to_string(), "b".to_string()], 6));
    /// assert!((ab.cells.iter().map(|c| c.frequency).sum::<f64>() - 1.0).abs() < 1e-9);
    /// // Consistent: the margin of a × b on "a" is the histogram of "a".
    /// for (v, value) in estimate.histograms[0].values.iter().enumerate() {
    ///     let row: f64 = ab.cells[2 * v..2 * v + 2].iter().map(|c| c.frequency).sum();
    ///     assert!((row - value.frequency).abs() < 1e-9);
    /// }
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn post_processed(mut self, post: PostProcessing) -> Self {
        self.post = post;
        let cells: Vec<Vec<f64>> = self.marginals.iter().map(|m| post.apply(&m.unbiased)).collect();
        let histograms = self.average_margins(&cells);
        // Intervals stay around the unbiased estimates: the post-processed
        // values are biased, and an interval around them would not cover.
        let unbiased: Vec<Vec<f64>> = self.marginals.iter().map(|m| m.unbiased.clone()).collect();
        let unbiased_histograms = self.average_margins(&unbiased);
        for (m, mut cells) in self.marginals.iter_mut().zip(cells) {
            if post != PostProcessing::None {
                for (i, &(a, d)) in m.shape.iter().enumerate() {
                    let rows = margin(&cells, &m.shape, i);
                    let per_row = cells.len() / d;
                    for (cell, f) in cells.iter_mut().enumerate() {
                        let v = value_at(cell, &m.shape, i);
                        *f += (histograms[a][v] - rows[v]) / per_row as f64;
                    }
                }
            }
            for (c, (f, &u)) in m.cells.iter_mut().zip(cells.into_iter().zip(&m.unbiased)) {
                (c.frequency, c.ci95) = (f, interval(u, c.se));
            }
        }
        for ((h, frequencies), unbiased) in self.histograms.iter_mut().zip(histograms).zip(unbiased_histograms) {
            for (v, (f, u)) in h.values.iter_mut().zip(frequencies.into_iter().zip(unbiased)) {
                (v.frequency, v.ci95) = (f, interval(u, v.se));
            }
        }
        self
    }

    /// Each attribute's histogram: the weighted average of its margins in
    /// the marginals (of `cells`) that hold it, or their plain average if
    /// none of them has reports.
    fn average_margins(&self, cells: &[Vec<f64>]) -> Vec<Vec<f64>> {
        let reported = |a: usize| self.marginals.iter().any(|m| m.n > 0 && m.shape.iter().any(|&(b, _)| b == a));
        let mut sums: Vec<(Vec<f64>, f64)> = self.histograms.iter().map(|h| (vec![0.0; h.values.len()], 0.0)).collect();
        for (m, cells) in self.marginals.iter().zip(cells) {
            for (i, &(a, _)) in m.shape.iter().enumerate() {
                let weight = if reported(a) { m.weights[i] } else { 1.0 };
                sums[a].0.iter_mut().zip(margin(cells, &m.shape, i)).for_each(|(s, r)| *s += weight * r);
                sums[a].1 += weight;
            }
        }
        sums.into_iter().map(|(sum, total)| sum.into_iter().map(|s| s / total).collect()).collect()
    }
}

/// Aggregates the reports of one marginals metric.
#[derive(Debug, Clone)]
pub struct MarginalsAggregator {
    metric: MarginalsMetric,
    counts: Vec<u64>,
    tally: Tally,
}

impl AggregateState for MarginalsAggregator {
    crate::mechanism::state_accessors!(metric);

    fn write_counts(&self, out: &mut StateWriter) {
        out.counts(&self.counts);
    }

    fn read_counts(&mut self, n: u64, input: &mut StateReader<'_>) -> Result<()> {
        input.counts(&mut self.counts, n, "a count exceeds the number of reports")?;
        self.metric.groups().check_counts(&self.counts, n)
    }
}

impl Aggregate for MarginalsAggregator {
    type Mechanism = MarginalsMetric;
    type Estimate = MarginalsEstimate;

    fn new(metric: MarginalsMetric) -> Self {
        let len = metric.groups().counts_len();
        MarginalsAggregator { metric, counts: vec![0; len], tally: Tally::default() }
    }

    fn mechanism(&self) -> &MarginalsMetric {
        &self.metric
    }

    fn add(&mut self, report: &Report) -> Result<()> {
        if let Err(e) = self.metric.validate(report) {
            return Err(self.tally.reject(e));
        }
        self.metric.groups().accumulate(&report.payload, &mut self.counts);
        self.tally.accept();
        Ok(())
    }

    fn merge(&mut self, other: &MarginalsAggregator) -> Result<()> {
        (self.counts, self.tally) = crate::mechanism::merged_counts(self, other, true, [&self.counts, &other.counts])?;
        Ok(())
    }

    fn state_id(&self) -> String {
        localdp_core::metric::id_of(&self.metric)
    }

    /// The unbiased marginals and histograms, with standard errors.
    fn estimate(&self) -> Result<MarginalsEstimate> {
        let n = self.tally.n();
        if n == 0 {
            return Err(Error::NoReports);
        }
        let metric = &self.metric;
        // Per attribute: its margins' weighted variances `Σ w²·Var`, and `Σ w`.
        let mut histogram_variance: Vec<(Vec<f64>, f64)> =
            metric.attributes().iter().map(|a| (vec![0.0; a.domain().len()], 0.0)).collect();
        let mut marginals = Vec::with_capacity(metric.sets().len());
        for (set, attributes) in metric.sets().iter().enumerate() {
            let shape: Vec<(usize, usize)> = attributes.iter().map(|&a| (a, metric.attributes()[a].domain().len())).collect();
            let cells = metric.cells(set);
            let oracle = metric.oracle(set);
            let mut weights = vec![0.0; shape.len()];
            let (n_set, unbiased, se) = match metric.groups().frequencies(set, &self.counts) {
                Some((n_set, unbiased)) => {
                    let sampling = if n > 1 { (n - n_set) as f64 / (n - 1) as f64 / n_set as f64 } else { 0.0 };
                    let variance = |f: f64| {
                        let c = f.clamp(0.0, 1.0);
                        oracle.variance(c, n_set) + c * (1.0 - c) * sampling
                    };
                    for (i, &(a, d)) in shape.iter().enumerate() {
                        let rows = margin(&unbiased, &shape, i);
                        let per_row = (cells / d) as f64;
                        // Inverse to the margin's variance at frequency 0, the same for every value.
                        let weight = 1.0 / (per_row * oracle.variance(0.0, n_set));
                        for (v, m) in rows.into_iter().enumerate() {
                            histogram_variance[a].0[v] += weight * weight * ((per_row - 1.0) * oracle.variance(0.0, n_set) + variance(m));
                        }
                        histogram_variance[a].1 += weight;
                        weights[i] = weight;
                    }
                    let se = unbiased.iter().map(|&f| variance(f).sqrt()).collect();
                    (n_set, unbiased, se)
                }
                None => (0, vec![1.0 / cells as f64; cells], vec![0.5; cells]),
            };
            let cells = (0..cells)
                .map(|cell| Cell {
                    values: metric
                        .values_of(set, cell)
                        .into_iter()
                        .zip(attributes)
                        .map(|(v, &a)| metric.attributes()[a].domain().value_json(v).unwrap_or_default())
                        .collect(),
                    frequency: unbiased[cell],
                    se: se[cell],
                    ci95: interval(unbiased[cell], se[cell]),
                })
                .collect();
            let names = attributes.iter().map(|&a| metric.attributes()[a].name().to_string()).collect();
            marginals.push(Marginal { attributes: names, n: n_set, cells, shape, unbiased, weights });
        }
        let histograms = metric
            .attributes()
            .iter()
            .zip(histogram_variance)
            .map(|(a, (variance, total))| Histogram {
                attribute: a.name().to_string(),
                values: variance
                    .into_iter()
                    .enumerate()
                    .map(|(v, var)| {
                        let se = if total == 0.0 { 0.5 } else { var.sqrt() / total };
                        HistogramValue { value: a.domain().value_json(v).unwrap_or_default(), frequency: 0.0, se, ci95: [0.0; 2] }
                    })
                    .collect(),
            })
            .collect();
        let estimate = MarginalsEstimate {
            protocol: metric.protocol(),
            epsilon: metric.epsilon(),
            n,
            rejected: *self.tally.rejected(),
            post: PostProcessing::None,
            marginals,
            histograms,
        };
        Ok(estimate.post_processed(PostProcessing::None))
    }
}

#[cfg(test)]
mod tests {
    use super::{margin, value_at};

    #[test]
    fn margins_sum_rows_of_the_mixed_radix_cells() {
        // 2 × 3 cells, the first attribute the most significant.
        let shape = [(0, 2), (1, 3)];
        let cells = [0.1, 0.2, 0.3, 0.0, 0.15, 0.25];
        assert_eq!((value_at(4, &shape, 0), value_at(4, &shape, 1)), (1, 1));
        let first = margin(&cells, &shape, 0);
        assert!((first[0] - 0.6).abs() < 1e-12 && (first[1] - 0.4).abs() < 1e-12);
        let second = margin(&cells, &shape, 1);
        assert!((second[0] - 0.1).abs() < 1e-12 && (second[1] - 0.35).abs() < 1e-12 && (second[2] - 0.55).abs() < 1e-12);
    }
}
