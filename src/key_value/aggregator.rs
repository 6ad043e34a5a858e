//! The aggregator of a key-value metric, and its estimate: each key's
//! frequency and mean, with PCKV's estimators and their closed-form
//! standard errors.
//!
//! The running state is integer counts, two per key: the reports that
//! support the key with `+1` (`n₁`) and with `−1` (`n₂`); merging adds
//! them, so merged shards estimate exactly as one aggregator fed everything.

use localdp_core::key_value::metric::PairChannel;
use localdp_core::key_value::{KeyValueMetric, KeyValueProtocol};
use crate::aggregate::tally::{RejectionCounts, Tally, Z95};
use localdp_core::error::{Error, Result};
use crate::mechanism::{sealed::AggregateState, Aggregate};
use localdp_core::report::Report;
use crate::state::{StateError, StateReader, StateWriter};
use serde::Serialize;

/// An estimate with its standard error and 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KeyValueStat {
    /// The estimate.
    pub estimate: f64,
    /// Its standard error (closed form, see [`pckv_estimate`]).
    pub se: f64,
    /// `estimate ± 1.96·se`; a mean's within the range, where the true
    /// mean is (for a key nobody is estimated to hold, the delta method's
    /// se is huge and the interval is the whole range).
    pub ci95: [f64; 2],
}

impl KeyValueStat {
    fn new(estimate: f64, se: f64, [lo, hi]: [f64; 2]) -> Self {
        let ci95 = [(estimate - Z95 * se).max(lo), (estimate + Z95 * se).min(hi)];
        KeyValueStat { estimate, se, ci95 }
    }
}

/// One key's estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyEstimate {
    /// The key, as the config names it (`"3"` for the keys of a count).
    pub key: String,
    /// The share of users holding the key (unbiased when every user holds
    /// at most `ℓ` keys).
    pub frequency: KeyValueStat,
    /// The mean of its value among those users, in the range's units.
    pub mean: KeyValueStat,
}

/// The estimate of a key-value metric: `{"protocol", "epsilon", "n",
/// "rejected", "keys": [{"key": "3", "frequency": {"estimate", "se",
/// "ci95"}, "mean": {"estimate", "se", "ci95"}}, …]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyValueEstimate {
    /// The resolved protocol.
    pub protocol: KeyValueProtocol,
    /// ε of one report.
    pub epsilon: f64,
    /// Accepted reports.
    pub n: u64,
    /// Rejected reports by reason.
    pub rejected: RejectionCounts,
    /// One entry per key, in the config's order.
    pub keys: Vec<KeyEstimate>,
}

/// PCKV's estimates of one key from the shares `[n₁/n, n₂/n]` of `n`
/// reports supporting it with `+1` and `−1`: `(frequency, se, mean, se)`,
/// the mean in `[−1, 1]`.
///
/// * frequency: `f̂ = ℓ·((n₁+n₂)/n − b)/(a − b)`, unbiased when every
///   user holds at most `ℓ` keys; its variance `ℓ²·q(1−q)/(n(a−b)²)`, `q =
///   (n₁+n₂)/n`.
/// * mean: PCKV's calibrated estimate `m̂ = D/S`, with `D = (n₁−n₂)/(n·a(2p−1))`
///   (the share of sampled `+1` minus `−1`) and `S = f̂/ℓ` clipped below at
///   `1/(nℓ)` (f̂ at least `1/n`), then `m̂` clipped to `[−1, 1]`; its
///   variance by the delta method, `(Var D − 2m̂·Cov(D, S) + m̂²·Var S)/S²`,
///   from the multinomial variances of `n₁` and `n₂`.
///
/// The same function gives the closed forms the tests compare with: fed
/// [`KeyValueMetric::expected_shares`], it returns the truth and the
/// estimators' standard errors there.
///
/// ```
/// use localdp::key_value::pckv_estimate;
/// use localdp::KeyValueMetric;
/// let metric = KeyValueMetric::from_json(r#"{"protocol":"pckv_ue","epsilon":2,"keys":20,"range":[0,1],"pad":2}"#)?;
/// let (f, f_se, m, m_se) = pckv_estimate(&metric, metric.expected_shares(0.3, 0.4), 100_000);
/// assert!((f - 0.3).abs() < 1e-12 && (m - 0.4).abs() < 1e-12);
/// assert!(f_se > 0.0 && m_se > f_se);
/// # Ok::<(), localdp::Error>(())
/// ```
pub fn pckv_estimate(metric: &KeyValueMetric, shares: [f64; 2], n: u64) -> (f64, f64, f64, f64) {
    let PairChannel { a, b, p } = metric.channel();
    let (ell, n) = (metric.pad() as f64, n as f64);
    let [plus, minus] = shares;
    let q = plus + minus;
    let frequency = ell * (q - b) / (a - b);
    let frequency_var = ell * ell * q * (1.0 - q) / (n * (a - b) * (a - b));
    let signal = a * (2.0 * p - 1.0);
    let d = (plus - minus) / signal;
    let s = (frequency / ell).max(1.0 / (n * ell));
    let mean = (d / s).clamp(-1.0, 1.0);
    let var_d = (q - (plus - minus).powi(2)) / (n * signal * signal);
    let var_s = q * (1.0 - q) / (n * (a - b) * (a - b));
    let cov = (plus - minus) * (1.0 - q) / (n * signal * (a - b));
    let mean_var = (var_d - 2.0 * mean * cov + mean * mean * var_s) / (s * s);
    (frequency, frequency_var.max(0.0).sqrt(), mean, mean_var.max(0.0).sqrt())
}

/// Aggregates the reports of one key-value metric.
///
/// ```
/// use localdp::{Aggregate, KeyValueAggregator, KeyValueMetric, SimulationRng};
/// let metric = KeyValueMetric::from_json(r#"{"protocol":"pckv_ue","epsilon":4,"keys":["a","b"],"range":[0,10],"pad":1}"#)?;
/// let mut rng = SimulationRng::seed_from_u64(4); // simulation only
/// let (mut shard, mut other) = (KeyValueAggregator::new(metric.clone()), KeyValueAggregator::new(metric.clone()));
/// for i in 0..4000 {
///     let report = metric.randomize_map(if i % 4 == 0 { r#"{"b": 8}"# } else { "{}" }, &mut rng)?;
///     if i % 2 == 0 { shard.add(&report)? } else { other.add(&report)? }
/// }
/// shard.merge(&other)?;
/// let b = &shard.estimate()?.keys[1];
/// assert_eq!((shard.n(), b.key.as_str()), (4000, "b"));
/// assert!((b.frequency.estimate - 0.25).abs() < 5.0 * b.frequency.se, "{b:?}");
/// assert!((b.mean.estimate - 8.0).abs() < 5.0 * b.mean.se, "{b:?}");
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct KeyValueAggregator {
    metric: KeyValueMetric,
    /// `n₁` and `n₂` of each key: `counts[2k]` and `counts[2k + 1]`.
    counts: Vec<u64>,
    tally: Tally,
}

impl AggregateState for KeyValueAggregator {
    crate::mechanism::state_accessors!(metric);

    fn write_counts(&self, out: &mut StateWriter) {
        out.counts(&self.counts);
    }

    fn read_counts(&mut self, n: u64, input: &mut StateReader<'_>) -> Result<()> {
        input.counts(&mut self.counts, n, "a count exceeds the number of reports")?;
        let sum = |pair: &[u64]| u128::from(pair[0]) + u128::from(pair[1]);
        // A report supports a key with one sign at most; GRR's, one key at most.
        let consistent = match self.metric.protocol() {
            KeyValueProtocol::PckvGrr => self.counts.chunks(2).map(sum).sum::<u128>() <= u128::from(n),
            KeyValueProtocol::PckvUe => self.counts.chunks(2).all(|pair| sum(pair) <= u128::from(n)),
        };
        if !consistent {
            return Err(StateError::Inconsistent { what: "the keys' counts exceed the number of reports" }.into());
        }
        Ok(())
    }
}

impl Aggregate for KeyValueAggregator {
    type Mechanism = KeyValueMetric;
    type Estimate = KeyValueEstimate;

    fn new(metric: KeyValueMetric) -> Self {
        let counts = vec![0; 2 * metric.keys().len()];
        KeyValueAggregator { metric, counts, tally: Tally::default() }
    }

    fn mechanism(&self) -> &KeyValueMetric {
        &self.metric
    }

    fn add(&mut self, report: &Report) -> Result<()> {
        if let Err(e) = self.metric.validate(report) {
            return Err(self.tally.reject(e));
        }
        let Some(supported) = self.metric.supported(&report.payload) else {
            // `validate` accepts no other payload.
            return Err(self.tally.reject(localdp_core::error::Rejection::Malformed.error("unexpected payload")));
        };
        let keys = self.metric.keys().len() as u64;
        for (key, plus) in supported.into_iter().filter(|&(k, _)| k < keys) {
            self.counts[(2 * key + u64::from(!plus)) as usize] += 1;
        }
        self.tally.accept();
        Ok(())
    }

    fn merge(&mut self, other: &KeyValueAggregator) -> Result<()> {
        (self.counts, self.tally) = crate::mechanism::merged_counts(self, other, true, [&self.counts, &other.counts])?;
        Ok(())
    }

    fn state_id(&self) -> String {
        localdp_core::metric::id_of(&self.metric)
    }

    /// Each key's frequency and mean with standard errors ([`pckv_estimate`]).
    fn estimate(&self) -> Result<KeyValueEstimate> {
        let n = self.tally.n();
        if n == 0 {
            return Err(Error::NoReports);
        }
        let [lo, hi] = self.metric.range();
        let half = (hi - lo) / 2.0;
        let keys = self
            .counts
            .chunks(2)
            .enumerate()
            .map(|(k, pair)| {
                let shares = [pair[0] as f64 / n as f64, pair[1] as f64 / n as f64];
                let (f, f_se, m, m_se) = pckv_estimate(&self.metric, shares, n);
                KeyEstimate {
                    key: self.metric.keys().value_text(k).expect("a key of the config"),
                    frequency: KeyValueStat::new(f, f_se, [f64::NEG_INFINITY, f64::INFINITY]),
                    mean: KeyValueStat::new(lo + half * (m + 1.0), half * m_se, [lo, hi]),
                }
            })
            .collect();
        Ok(KeyValueEstimate {
            protocol: self.metric.protocol(),
            epsilon: self.metric.epsilon(),
            n,
            rejected: *self.tally.rejected(),
            keys,
        })
    }
}
