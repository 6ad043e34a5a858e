//! The aggregator of a distribution metric, and its estimate: the
//! histogram, quantiles and mean, each with a 95% interval.
//!
//! The running state is integer counts (Square Wave: reports per cell; the
//! tree: reports per level and each level's oracle counts), so merging is
//! exact and the estimate of merged shards is that of one aggregator fed
//! everything, bit for bit (the bootstrap below is seeded by the counts).
//!
//! **Intervals.** The cumulative distribution `F` is estimated at the bins'
//! edges with a margin (the 95% half-width): for the tree, `1.96` standard
//! errors, exactly, from the linear estimator's covariance
//! ([`super::Hierarchy`]), which is unbiased; for Square Wave, whose EMS
//! smooths and so is biased where the density bends, by a parametric
//! bootstrap that counts the bias too. EMS is first undone on the fit:
//! `x̃ ← max(0, x̃ + x̂ − EMS(n·P(x̃)))`, renormalized, `SHARPEN` (4) times
//! from `x̂` (EMS of the expected counts, no noise), a sharper distribution
//! that EMS maps near `x̂`, the stand-in for the truth. Then 50 times,
//! counts are drawn from `x̃` through the channel (Poisson per cell) and
//! refitted by EMS (each refit is some 500 EMS iterations over the fine
//! grid: 50 refits keep an estimate of 32 bins near 0.2 s). Each bin's, each
//! edge's and the mean's margin is `1.96·sd + |bias|`: the refits' standard
//! deviation, plus how far their average sits from `x̃`'s own value.
//! Intervals are `±margin`. A quantile's
//! interval inverts the band: its ends are the first point where `F̂ +
//! margin ≥ q` and the last where `F̂ − margin ≤ q` (linear between
//! edges), so it holds every `x` with `|F̂(x) − q| ≤ margin(x)`, and the
//! true quantile whenever the band covers `F` there. The quantile itself is
//! read off the CDF made monotone (isotonic regression, clamped to `[0, 1]`).

use localdp_core::distribution::metric::Mechanism;
use localdp_core::distribution::{DistributionMetric, DistributionProtocol};
use crate::aggregate::tally::{RejectionCounts, Tally, Z95};
use localdp_core::error::{Error, Requirement, Result};
use crate::mechanism::{sealed::AggregateState, Aggregate};
use localdp_core::report::{Payload, Report};
use crate::state::{StateError, StateReader, StateWriter};
use serde::Serialize;

/// The quantiles an estimate lists unless asked for others.
pub const DEFAULT_QUANTILES: [f64; 4] = [0.5, 0.9, 0.95, 0.99];

/// Square Wave's bootstrap refits.
const BOOTSTRAP: usize = 50;

/// The steps that undo EMS's smoothing before the bootstrap (module docs).
const SHARPEN: usize = 4;

/// One bin of the histogram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    /// The bin's low edge.
    pub lo: f64,
    /// The bin's high edge.
    pub hi: f64,
    /// The share of values in the bin.
    pub frequency: f64,
    /// The 95% interval.
    pub ci95: [f64; 2],
}

/// One quantile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quantile {
    /// The level, in `[0, 1]`.
    pub q: f64,
    /// The estimated quantile, in the range's units.
    pub value: f64,
    /// The 95% interval (the inverted band, see the module docs).
    pub ci95: [f64; 2],
}

/// An estimate with its 95% interval (the mean).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// The estimate.
    pub value: f64,
    /// The 95% interval.
    pub ci95: [f64; 2],
}

/// The cumulative distribution at the bins' edges, kept to answer other
/// quantiles ([`DistributionEstimate::with_quantiles`]).
#[derive(Debug, Clone, PartialEq)]
struct Cdf {
    edges: Vec<f64>,
    /// `F̂` at each edge (0 at the first, 1 at the last).
    value: Vec<f64>,
    /// Its margin (the 95% half-width).
    margin: Vec<f64>,
    /// `F̂` made monotone and clamped to `[0, 1]`.
    monotone: Vec<f64>,
}

/// The estimate of a distribution metric: `{"protocol", "epsilon", "n",
/// "rejected", "histogram": [{"lo", "hi", "frequency", "ci95"}, …],
/// "quantiles": [{"q", "value", "ci95"}, …], "mean": {"value", "ci95"}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistributionEstimate {
    /// The resolved protocol.
    pub protocol: DistributionProtocol,
    /// ε of one report.
    pub epsilon: f64,
    /// Accepted reports.
    pub n: u64,
    /// Rejected reports by reason.
    pub rejected: RejectionCounts,
    /// One entry per bin, from the range's low end.
    pub histogram: Vec<Bin>,
    /// [`DEFAULT_QUANTILES`], or those asked for.
    pub quantiles: Vec<Quantile>,
    /// The mean (of the bins' midpoints).
    pub mean: Interval,
    #[serde(skip)]
    cdf: Cdf,
}

impl DistributionEstimate {
    /// The estimate listing the quantiles `levels` (each in `[0, 1]`).
    ///
    /// ```
    /// use localdp::{Aggregate, DistributionAggregator, DistributionMetric, Randomizer, SimulationRng};
    /// let metric = DistributionMetric::from_json(r#"{"protocol":"square_wave","epsilon":2,"range":[0,10],"bins":8}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(3); // simulation only
    /// let mut aggregator = DistributionAggregator::new(metric.clone());
    /// for i in 0..2000 {
    ///     aggregator.add(&metric.randomize(&f64::from(i % 10), &mut rng)?)?;
    /// }
    /// let estimate = aggregator.estimate()?.with_quantiles(&[0.1, 0.9])?;
    /// assert_eq!(estimate.quantiles.iter().map(|q| q.q).collect::<Vec<_>>(), [0.1, 0.9]);
    /// assert!(estimate.quantiles[0].value < estimate.quantiles[1].value);
    /// assert!(estimate.clone().with_quantiles(&[1.5]).is_err());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn with_quantiles(mut self, levels: &[f64]) -> Result<Self> {
        if let Some(&found) = levels.iter().find(|q| !(0.0..=1.0).contains(*q)) {
            return Err(Error::invalid("quantiles", Requirement::Probability { found }));
        }
        self.quantiles = levels.iter().map(|&q| self.cdf.quantile(q)).collect();
        Ok(self)
    }
}

impl Cdf {
    fn new(edges: Vec<f64>, value: Vec<f64>, margin: Vec<f64>) -> Self {
        let monotone = isotonic(&value.iter().map(|f| f.clamp(0.0, 1.0)).collect::<Vec<_>>());
        Cdf { edges, value, margin, monotone }
    }

    /// The `x` where a piecewise-linear `curve` (at the edges) first
    /// reaches `q` between edges `b − 1` and `b`.
    fn crossing(&self, curve: &[f64], b: usize, q: f64) -> f64 {
        let (a, c) = (curve[b - 1], curve[b]);
        let t = if c > a { ((q - a) / (c - a)).clamp(0.0, 1.0) } else { 0.0 };
        self.edges[b - 1] + t * (self.edges[b] - self.edges[b - 1])
    }

    fn quantile(&self, q: f64) -> Quantile {
        let last = self.edges.len() - 1;
        let first_at_least = |curve: &[f64]| (1..=last).find(|&b| curve[b] >= q).unwrap_or(last);
        let value = self.crossing(&self.monotone, first_at_least(&self.monotone), q);
        let upper_band: Vec<f64> = self.value.iter().zip(&self.margin).map(|(f, m)| f + m).collect();
        let lower_band: Vec<f64> = self.value.iter().zip(&self.margin).map(|(f, m)| f - m).collect();
        let lo = if upper_band[0] >= q { self.edges[0] } else { self.crossing(&upper_band, first_at_least(&upper_band), q) };
        let hi = match (0..=last).rev().find(|&b| lower_band[b] <= q) {
            Some(b) if b < last => self.crossing(&lower_band, b + 1, q),
            _ => self.edges[last],
        };
        Quantile { q, value, ci95: [lo.min(value), hi.max(value)] }
    }
}

/// The non-decreasing sequence closest to `y` in least squares (pool
/// adjacent violators).
fn isotonic(y: &[f64]) -> Vec<f64> {
    let mut blocks: Vec<(f64, usize)> = Vec::new();
    for &v in y {
        blocks.push((v, 1));
        while blocks.len() >= 2 && blocks[blocks.len() - 2].0 > blocks[blocks.len() - 1].0 {
            let (b, nb) = blocks.pop().unwrap();
            let (a, na) = blocks.pop().unwrap();
            blocks.push(((a * na as f64 + b * nb as f64) / (na + nb) as f64, na + nb));
        }
    }
    blocks.into_iter().flat_map(|(v, n)| std::iter::repeat_n(v, n)).collect()
}


/// Aggregates the reports of one distribution metric.
#[derive(Debug, Clone)]
pub struct DistributionAggregator {
    metric: DistributionMetric,
    counts: Vec<u64>,
    tally: Tally,
}

/// One fit of the bins, in bin units: frequencies, the CDF at the edges and
/// the mean (`Σ (b + 1/2) x_b`).
struct Shape {
    frequencies: Vec<f64>,
    cdf: Vec<f64>,
    mean: f64,
}

impl Shape {
    fn of(frequencies: Vec<f64>) -> Shape {
        let mut cdf: Vec<f64> = std::iter::once(0.0)
            .chain(frequencies.iter().scan(0.0, |s, &v| {
                *s += v;
                Some(*s)
            }))
            .collect();
        // The total is fixed: exactly 1 at the top edge.
        *cdf.last_mut().expect("at least two edges") = 1.0;
        Shape { mean: frequencies.iter().enumerate().map(|(b, v)| (b as f64 + 0.5) * v).sum(), frequencies, cdf }
    }
}

/// The estimate and its margins (95% half-widths).
struct Fit {
    shape: Shape,
    frequency_margin: Vec<f64>,
    cdf_margin: Vec<f64>,
    mean_margin: f64,
}

impl DistributionAggregator {
    fn fit(&self) -> Fit {
        let n = self.tally.n();
        match &self.metric.mechanism() {
            Mechanism::SquareWave(sw) => {
                let counts: Vec<f64> = self.counts.iter().map(|&c| c as f64).collect();
                let inputs = sw.reconstruct(&counts);
                let expected = |x: &[f64]| sw.output_distribution(x).into_iter().map(|p| n as f64 * p).collect::<Vec<_>>();
                let mut sharpened = inputs.clone();
                for _ in 0..SHARPEN {
                    let smoothed = sw.reconstruct(&expected(&sharpened));
                    for ((x, fit), s) in sharpened.iter_mut().zip(&inputs).zip(smoothed) {
                        *x = (*x + fit - s).max(0.0);
                    }
                    let total: f64 = sharpened.iter().sum();
                    sharpened.iter_mut().for_each(|x| *x /= total);
                }
                let outputs = expected(&sharpened);
                // Resampling public counts is post-processing: seeded by the
                // counts, the estimate is a function of them, and the
                // resampling noise differs from one collection to the next.
                let bytes: Vec<u8> = self.counts.iter().flat_map(|c| c.to_le_bytes()).collect();
                let mut rng = SplitMix(localdp_core::hash::key64(&bytes));
                let refits: Vec<Shape> = (0..BOOTSTRAP)
                    .map(|_| {
                        let resampled: Vec<f64> = outputs.iter().map(|&c| poisson(c, &mut rng)).collect();
                        Shape::of(sw.bins_of(&sw.reconstruct(&resampled)))
                    })
                    .collect();
                let drawn = Shape::of(sw.bins_of(&sharpened));
                let margin = |value: &dyn Fn(&Shape) -> f64| {
                    let k = BOOTSTRAP as f64;
                    let mean = refits.iter().map(value).sum::<f64>() / k;
                    let sd = (refits.iter().map(|r| (value(r) - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
                    Z95 * sd + (mean - value(&drawn)).abs()
                };
                let shape = Shape::of(sw.bins_of(&inputs));
                Fit {
                    frequency_margin: (0..shape.frequencies.len()).map(|b| margin(&|r| r.frequencies[b])).collect(),
                    cdf_margin: (0..shape.cdf.len()).map(|b| margin(&|r| r.cdf[b])).collect(),
                    mean_margin: margin(&|r| r.mean),
                    shape,
                }
            }
            Mechanism::Hierarchical(tree) => {
                let (frequencies, columns) = tree.estimate(&self.counts, n);
                let bins = frequencies.len();
                let (mut frequency_var, mut cdf_var, mut mean_var) = (vec![0.0; bins], vec![0.0; bins + 1], 0.0);
                for (column, variance) in columns {
                    let weights = Shape::of(column);
                    for (b, &w) in weights.frequencies.iter().enumerate() {
                        frequency_var[b] += w * w * variance;
                    }
                    // The top edge is exactly 1: no variance.
                    for (b, &w) in weights.cdf[..bins].iter().enumerate() {
                        cdf_var[b] += w * w * variance;
                    }
                    mean_var += weights.mean * weights.mean * variance;
                }
                let margin = |variance: f64| Z95 * variance.sqrt();
                Fit {
                    shape: Shape::of(frequencies),
                    frequency_margin: frequency_var.into_iter().map(margin).collect(),
                    cdf_margin: cdf_var.into_iter().map(margin).collect(),
                    mean_margin: margin(mean_var),
                }
            }
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood, OOPSLA 2014): the bootstrap's
/// resampling of public counts needs reproducible, not secret, numbers,
/// and this keeps a cipher out of the aggregator's code.
struct SplitMix(u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `(0, 1]`.
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * f64::powi(2.0, -53)
    }
}

/// A Poisson draw of mean `lambda` (for the bootstrap only): Knuth's
/// product of uniforms below 30, the rounded normal approximation above.
fn poisson(lambda: f64, rng: &mut SplitMix) -> f64 {
    let uniform = |rng: &mut SplitMix| rng.uniform();
    if lambda < 30.0 {
        let limit = localdp_core::privacy::exp(-lambda);
        let (mut k, mut product) = (0.0, uniform(rng));
        while product > limit {
            k += 1.0;
            product *= uniform(rng);
        }
        k
    } else {
        let (u, v) = (uniform(rng), uniform(rng));
        let z = (-2.0 * localdp_core::privacy::ln(u)).sqrt() * libm::cos(2.0 * std::f64::consts::PI * v);
        (lambda + lambda.sqrt() * z).round().max(0.0)
    }
}

impl AggregateState for DistributionAggregator {
    crate::mechanism::state_accessors!(metric);

    fn write_counts(&self, out: &mut StateWriter) {
        out.counts(&self.counts);
    }

    fn read_counts(&mut self, n: u64, input: &mut StateReader<'_>) -> Result<()> {
        input.counts(&mut self.counts, n, "a count exceeds the number of reports")?;
        match &self.metric.mechanism() {
            Mechanism::SquareWave(_) => {
                if self.counts.iter().map(|&c| u128::from(c)).sum::<u128>() != u128::from(n) {
                    return Err(StateError::Inconsistent { what: "the cells do not hold the number of reports" }.into());
                }
                Ok(())
            }
            Mechanism::Hierarchical(tree) => tree.check_counts(&self.counts, n),
        }
    }
}

impl Aggregate for DistributionAggregator {
    type Mechanism = DistributionMetric;
    type Estimate = DistributionEstimate;

    fn new(metric: DistributionMetric) -> Self {
        let len = match &metric.mechanism() {
            Mechanism::SquareWave(sw) => sw.cells() as usize,
            Mechanism::Hierarchical(tree) => tree.counts_len(),
        };
        DistributionAggregator { metric, counts: vec![0; len], tally: Tally::default() }
    }

    fn mechanism(&self) -> &DistributionMetric {
        &self.metric
    }

    fn add(&mut self, report: &Report) -> Result<()> {
        if let Err(e) = self.metric.validate(report) {
            return Err(self.tally.reject(e));
        }
        match (&self.metric.mechanism(), &report.payload) {
            (Mechanism::SquareWave(_), Payload::Index(k)) => self.counts[*k as usize] += 1,
            (Mechanism::Hierarchical(tree), payload) => tree.accumulate(payload, &mut self.counts),
            // `validate` accepts no other payload.
            _ => return Err(self.tally.reject(localdp_core::error::Rejection::Malformed.error("unexpected payload"))),
        }
        self.tally.accept();
        Ok(())
    }

    fn merge(&mut self, other: &DistributionAggregator) -> Result<()> {
        (self.counts, self.tally) = crate::mechanism::merged_counts(self, other, true, [&self.counts, &other.counts])?;
        Ok(())
    }

    fn state_id(&self) -> String {
        localdp_core::metric::id_of(&self.metric)
    }

    /// The histogram, the default quantiles and the mean, with 95% intervals.
    fn estimate(&self) -> Result<DistributionEstimate> {
        if self.tally.n() == 0 {
            return Err(Error::NoReports);
        }
        let Fit { shape, frequency_margin, cdf_margin, mean_margin } = self.fit();
        let metric = &self.metric;
        let [lo, hi] = metric.range();
        let width = (hi - lo) / metric.bins() as f64;
        let interval = |value: f64, margin: f64| [value - margin, value + margin];
        let histogram = (0..shape.frequencies.len())
            .map(|b| Bin {
                lo: metric.edge(b as u64),
                hi: metric.edge(b as u64 + 1),
                frequency: shape.frequencies[b],
                ci95: interval(shape.frequencies[b], frequency_margin[b]),
            })
            .collect();
        let mean = lo + width * shape.mean;
        let edges = (0..=metric.bins()).map(|b| metric.edge(b)).collect();
        let estimate = DistributionEstimate {
            protocol: metric.protocol(),
            epsilon: metric.epsilon(),
            n: self.tally.n(),
            rejected: *self.tally.rejected(),
            histogram,
            quantiles: Vec::new(),
            mean: Interval { value: mean, ci95: interval(mean, width * mean_margin) },
            cdf: Cdf::new(edges, shape.cdf, cdf_margin),
        };
        estimate.with_quantiles(&DEFAULT_QUANTILES)
    }
}

#[cfg(test)]
mod tests {
    use super::Cdf;

    /// A quantile's interval is where the band `F̂ ± z·se` crosses `q`,
    /// both ends (computed here from the band's lines, with `z` typed out
    /// rather than the library's constant), not merely an interval that
    /// holds the estimate, which the widening to the estimate forces.
    #[test]
    fn quantile_intervals_end_where_the_band_crosses_q() {
        let z = 1.959_963_984_540_054;
        let cdf = Cdf::new(vec![0.0, 1.0, 2.0, 3.0, 4.0], vec![0.0, 0.2, 0.5, 0.8, 1.0], vec![0.0, z * 0.05, z * 0.05, z * 0.05, 0.0]);
        // The band's lines between edges: F̂ rises 0.3 a bin in the middle.
        let near = |a: f64, b: f64| (a - b).abs() < 1e-12;
        let median = cdf.quantile(0.5);
        let expected = [2.0 - z * 0.05 / 0.3, 2.0 + z * 0.05 / 0.3];
        assert!(near(median.value, 2.0) && near(median.ci95[0], expected[0]) && near(median.ci95[1], expected[1]), "{median:?} vs {expected:?}");
        // In the last bin the band narrows to 0 at the edge: each end on its
        // own line (upper from 0.8 + z·0.05 to 1, lower from 0.8 − z·0.05).
        let p95 = cdf.quantile(0.95);
        let (upper, lower) = (0.8 + z * 0.05, 0.8 - z * 0.05);
        let expected = [3.0 + (0.95 - upper) / (1.0 - upper), 3.0 + (0.95 - lower) / (1.0 - lower)];
        assert!(near(p95.value, 3.75) && near(p95.ci95[0], expected[0]) && near(p95.ci95[1], expected[1]), "{p95:?} vs {expected:?}");
    }
}
