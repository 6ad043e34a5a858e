//! Hierarchical histograms (Cormode, Kulkarni, Srivastava, VLDB 2019): a
//! `4`-ary tree over the bins, a frequency oracle per level, and the
//! consistent estimate of the tree by constrained inference (Hay, Rastogi,
//! Miklau, Suciu, VLDB 2010).
//!
//! Level `ℓ = 1..=h` (`h = ⌈log_4 B⌉`) cuts the range into nodes of `4^{h−ℓ}`
//! bins (the last node may be shorter); level `h` is the bins themselves.
//! Each device reports at **one** level, drawn uniformly on the device (and
//! kept with memoization), the node its bin lies in, with that level's
//! oracle at the full ε: the level does not depend on the value. The oracle
//! is OUE up to 256 nodes and HRR beyond: OUE's variance `4e^ε/(e^ε−1)²` is
//! the lower (HRR's is `(e^ε+1)²/(e^ε−1)²`, the same within 27% at ε ≥ 1),
//! HRR's report is `log2 K + 1` bits instead of one per node.
//!
//! The aggregator debiases every level (`ŷ_v`, variance `σ²_v`), then finds
//! the leaf frequencies whose node sums fit the observations best in
//! generalized least squares with the total fixed at 1: bottom-up, each
//! node's estimate combines its own observation with the sum of its
//! children's by inverse variance; top-down, the parent's final value is
//! split among its children, each moved by its share of the variance. With
//! equal variances this is Hay et al.'s two passes. The weights use the
//! data-independent `σ²` at frequency 0, so the estimate is linear in the
//! observations and its exact covariance is `L diag(σ²) Lᵀ`, `σ²` then the
//! oracle's variance at the estimated frequency plus the sampling of the
//! level's devices among all (`f(1−f)/n_ℓ · (n−n_ℓ)/(n−1)`).

use crate::{frequency::{channel::Likelihood, groups::OracleGroups, oracle::{FrequencyConfig, FrequencyOracle}}, protocol::FrequencyProtocol};
use crate::domain::DomainSpec;
use crate::names::Selection;
use crate::report::{Payload, Report};
use crate::error::Result;
use crate::rng::RngCore;

/// The tree's branching factor.
pub const BRANCHING: u64 = 4;

/// The largest level that uses OUE (beyond it, HRR).
const MAX_UNARY_NODES: u64 = 256;

/// One level of the tree.
#[derive(Debug, Clone)]
pub struct Level {
    /// Bins per node.
    width: u64,
    /// Nodes of the level.
    nodes: u64,
    oracle: FrequencyOracle,
}

impl Level {
    /// The node a bin lies in.
    ///
    /// See the example on [`Hierarchy`].
    pub fn node(&self, bin: u64) -> u64 {
        bin / self.width
    }

    /// The level's frequency oracle (over its nodes).
    ///
    /// See the example on [`Hierarchy`].
    pub fn oracle(&self) -> &FrequencyOracle {
        &self.oracle
    }
}

/// A hierarchical histogram over `bins` bins.
///
/// ```
/// use localdp::{DistributionMetric, FrequencyProtocol, SimulationRng};
/// let metric = DistributionMetric::from_json(r#"{"protocol":"hierarchical","epsilon":1,"range":[0,1],"bins":16}"#)?;
/// let tree = metric.hierarchy().unwrap();
/// let levels = tree.levels();
/// assert_eq!(levels.len(), 2); // 4 nodes of 4 bins, then the 16 bins
/// assert_eq!((levels[0].node(13), levels[1].node(13)), (3, 13));
/// assert_eq!((levels[0].oracle().domain().len(), levels[0].oracle().protocol()), (4, FrequencyProtocol::Oue));
/// let report = metric.randomize_input(13, 1, &mut SimulationRng::seed_from_u64(2)); // simulation only
/// let total: f64 = (0..16).map(|bin| tree.likelihood(bin, &report).probability()).sum();
/// assert!(total > 0.0);
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Hierarchy {
    bins: u64,
    levels: Vec<Level>,
    groups: OracleGroups,
}

impl Hierarchy {
    /// For a validated ε and `bins ≥ 2`.
    pub(crate) fn new(epsilon: f64, bins: u64) -> Self {
        let mut widths = vec![1u64];
        while widths.last().is_some_and(|&w| w * BRANCHING < bins) {
            widths.push(widths.last().unwrap() * BRANCHING);
        }
        let levels = widths
            .into_iter()
            .rev()
            .map(|width| {
                let nodes = bins.div_ceil(width);
                let protocol = if nodes <= MAX_UNARY_NODES { FrequencyProtocol::Oue } else { FrequencyProtocol::Hrr };
                let config = FrequencyConfig {
                    protocol: Selection::Fixed(protocol),
                    epsilon,
                    domain: DomainSpec::Size(nodes),
                    d: None,
                    instantaneous_epsilon: None,
                };
                Level { width, nodes, oracle: FrequencyOracle::new(&config).expect("a validated epsilon and size") }
            })
            .collect::<Vec<Level>>();
        let groups = OracleGroups::new(levels.iter().map(|l| l.oracle.clone()).collect(), "the level");
        Hierarchy { bins, levels, groups }
    }

    /// The levels, the coarsest first (its nodes are the root's children).
    ///
    /// See the example on [`Hierarchy`].
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// A report's payload for a value in `bin`, at `level`.
    pub(crate) fn randomize(&self, bin: u64, level: usize, rng: &mut dyn RngCore) -> Payload {
        self.groups.randomize(level, self.levels[level].node(bin) as usize, rng)
    }

    /// The level and the oracle's payload of a valid report.
    pub(crate) fn validate(&self, payload: &Payload) -> Result<(usize, Payload)> {
        self.groups.validate(payload)
    }

    /// `P[report | bin]` of the realized channel: the level's `1/h` times
    /// its oracle's probability for the bin's node.
    ///
    /// See the example on [`Hierarchy`].
    #[cfg(feature = "aggregate")]
    pub fn likelihood(&self, bin: u64, report: &Report) -> Likelihood {
        if bin >= self.bins {
            return Likelihood::new(0.0);
        }
        self.groups.likelihood(|level| self.levels[level].node(bin) as usize, &report.payload)
    }

    /// Payloads that exercise every level's channel.
    #[cfg(feature = "aggregate")]
    pub(crate) fn channel_outputs(&self, rng: &mut dyn RngCore) -> Vec<Payload> {
        self.groups.channel_outputs(rng)
    }

    /// The length of the aggregator's counts (the reports per level, then
    /// each level's oracle counts).
    #[doc(hidden)]
    pub fn counts_len(&self) -> usize {
        self.groups.counts_len()
    }

    /// Adds a valid report to the counts.
    #[doc(hidden)]
    #[cfg(feature = "aggregate")]
    pub fn accumulate(&self, payload: &Payload, counts: &mut [u64]) {
        self.groups.accumulate(payload, counts)
    }

    /// Checks counts read from a state.
    #[doc(hidden)]
    #[cfg(feature = "aggregate")]
    pub fn check_counts(&self, counts: &[u64], n: u64) -> Result<()> {
        self.groups.check_counts(counts, n)
    }

    /// The bins' frequencies and their covariance's pieces from the counts
    /// of `n` reports: `(leaves, columns)` where the estimate is linear in
    /// the node observations and `columns` yields, for each observation `v`,
    /// the leaves' weights on it and its variance. The columns are made one
    /// at a time (a dense nodes × bins matrix is 179 MB at 4096 bins).
    #[doc(hidden)]
    #[cfg(feature = "aggregate")]
    pub fn estimate(&self, counts: &[u64], n: u64) -> (Vec<f64>, impl Iterator<Item = (Vec<f64>, f64)> + '_) {
        let (mut observed, mut weights, mut variances) = (Vec::new(), Vec::new(), Vec::new());
        for (level, l) in self.levels.iter().enumerate() {
            let (n_level, level_counts) = self.groups.counts(level, counts);
            let mechanism = l.oracle.mechanism();
            if n_level == 0 {
                // A level nobody reported at says nothing.
                let nothing = 1e6;
                observed.extend(std::iter::repeat_n(0.0, l.nodes as usize));
                weights.extend(std::iter::repeat_n(nothing, l.nodes as usize));
                variances.extend(std::iter::repeat_n(nothing, l.nodes as usize));
                continue;
            }
            let (p, q) = mechanism.support_probabilities();
            let support = mechanism.support_counts(level_counts, n_level);
            let sampling = if n > 1 { (n - n_level) as f64 / (n - 1) as f64 / n_level as f64 } else { 0.0 };
            for s in support {
                let f = (s / n_level as f64 - q) / (p - q);
                let c = f.clamp(0.0, 1.0);
                observed.push(f);
                weights.push(l.oracle.variance(0.0, n_level));
                variances.push(l.oracle.variance(c, n_level) + c * (1.0 - c) * sampling);
            }
        }
        let leaves = self.consistent(&observed, &weights, 1.0);
        let nodes = observed.len();
        let columns = variances.into_iter().enumerate().map(move |(v, variance)| {
            let mut unit = vec![0.0; nodes];
            unit[v] = 1.0;
            (self.consistent(&unit, &weights, 0.0), variance)
        });
        (leaves, columns)
    }

    /// The variance of the estimated CDF at edge `edge` (the share of the
    /// first `edge` bins) for a population whose bins hold the shares
    /// `bins`, from `n` reports spread evenly over the levels: the
    /// covariance of `estimate` (the `aggregate` feature's) evaluated at
    /// the true frequencies instead of the estimated ones.
    pub fn cdf_variance(&self, n: f64, bins: &[f64], edge: usize) -> f64 {
        let n_level = n / self.levels.len() as f64;
        let sampling = if n > 1.0 { (n - n_level) / (n - 1.0) / n_level } else { 0.0 };
        let (mut weights, mut variances) = (Vec::new(), Vec::new());
        for l in &self.levels {
            for node in 0..l.nodes {
                let first = (node * l.width) as usize;
                let f: f64 = bins[first..(first + l.width as usize).min(bins.len())].iter().sum();
                weights.push(l.oracle.variance(0.0, 1) / n_level);
                variances.push(l.oracle.variance(f, 1) / n_level + f * (1.0 - f) * sampling);
            }
        }
        let mut unit = vec![0.0; weights.len()];
        (0..weights.len())
            .map(|v| {
                unit[v] = 1.0;
                let prefix: f64 = self.consistent(&unit, &weights, 0.0)[..edge].iter().sum();
                unit[v] = 0.0;
                prefix * prefix * variances[v]
            })
            .sum()
    }

    /// The leaves of the generalized least-squares fit of `observed` (all
    /// levels' nodes, the coarsest first) with variances `weights`, the
    /// total fixed at `total`.
    fn consistent(&self, observed: &[f64], weights: &[f64], total: f64) -> Vec<f64> {
        let h = self.levels.len();
        let mut start = vec![0usize];
        for l in &self.levels {
            start.push(start.last().unwrap() + l.nodes as usize);
        }
        let children = |level: usize, node: usize| {
            let next = &self.levels[level + 1];
            let first = node * BRANCHING as usize;
            first..(first + BRANCHING as usize).min(next.nodes as usize)
        };
        // Bottom-up: each subtree's estimate and variance.
        let (mut z, mut v) = (observed.to_vec(), weights.to_vec());
        for level in (0..h - 1).rev() {
            for node in 0..self.levels[level].nodes as usize {
                let (mut sum, mut variance) = (0.0, 0.0);
                for c in children(level, node) {
                    sum += z[start[level + 1] + c];
                    variance += v[start[level + 1] + c];
                }
                let i = start[level] + node;
                let precision = 1.0 / v[i] + 1.0 / variance;
                z[i] = (z[i] / v[i] + sum / variance) / precision;
                v[i] = 1.0 / precision;
            }
        }
        // Top-down: split each parent's value among its children.
        let split = |x: &mut [f64], parent: f64, range: std::ops::Range<usize>, offset: usize| {
            let (sum, variance): (f64, f64) = range.clone().map(|c| (z[offset + c], v[offset + c])).fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
            for c in range {
                x[offset + c] = z[offset + c] + v[offset + c] / variance * (parent - sum);
            }
        };
        let mut x = vec![0.0; observed.len()];
        split(&mut x, total, 0..self.levels[0].nodes as usize, 0);
        for level in 0..h - 1 {
            for node in 0..self.levels[level].nodes as usize {
                let parent = x[start[level] + node];
                split(&mut x, parent, children(level, node), start[level + 1]);
            }
        }
        x[start[h - 1]..].to_vec()
    }
}
