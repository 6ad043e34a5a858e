//! Generalized randomized response (k-RR, "direct encoding").
//!
//! Warner (JASA 1965) for two values; Kairouz, Oh, Viswanath (NeurIPS 2014)
//! and Wang et al. (USENIX Security 2017) for `d`. The client keeps its value
//! with probability `p = e^ε/(e^ε+d−1)` and otherwise reports one of the other
//! `d−1` values uniformly.
//!
//! * ε: `P[y=x]/P[y=x'] = p(d−1)/(1−p) = e^ε`, exactly tight.
//! * `p* = p`, `q* = (1−p)/(d−1)`; `Var[ĉ_v]/n ≈ (e^ε+d−2)/(e^ε−1)²`.
//! * Report: one index, `⌈log2 d⌉` bits. Best when `d < 3e^ε + 2`.

use super::channel::{ChannelOutputs, ceil_log2, validate_index, Likelihood, Mechanism};
use crate::error::Result;
use crate::privacy::exp_epsilon_safe;
use crate::report::Payload;
use crate::rng::{uniform_below, Bernoulli, RngCore};

/// Randomized response over `m` symbols; also the last step of local hashing.
#[derive(Debug, Clone)]
pub struct GeneralizedRandomizedResponse {
    m: u64,
    /// "Report another symbol": `(m−1)/(e^ε+m−1)`, rounded up.
    change: Bernoulli,
}

impl GeneralizedRandomizedResponse {
    /// For a validated ε and `m ≥ 2` symbols (`u64`: local hashing's `g`
    /// reaches `2^32`, which a 32-bit `usize` cannot hold).
    pub(crate) fn new(epsilon: f64, m: u64) -> Self {
        let others = (m - 1) as f64;
        let change = Bernoulli::rounded_up(others / (exp_epsilon_safe(epsilon) + others))
            .expect("a probability in [0, 1]");
        GeneralizedRandomizedResponse { m, change }
    }

    /// Randomized response over `m ≥ 2` symbols that replaces its input,
    /// with probability `μ ∈ [0, 1]`, by a uniform draw among all `m`
    /// symbols: it changes the symbol with probability `μ(m−1)/m`, rounded
    /// up (more privacy). Two in a row resample with `1 − (1−μ_1)(1−μ_2)`;
    /// the instantaneous step of longitudinal protocols is built this way.
    pub(crate) fn resampling(mu: f64, m: u64) -> Self {
        let others = (m - 1) as f64;
        let change = Bernoulli::rounded_up(crate::number::clamp(mu, 0.0, 1.0) * others / m as f64).expect("a probability in [0, 1]");
        GeneralizedRandomizedResponse { m, change }
    }

    /// The realized `μ`: `m/(m−1)` times the probability of a change (for
    /// `ε`, `μ = m/(e^ε+m−1)`), computed without cancelling.
    pub fn resample_probability(&self) -> f64 {
        self.change.probability() * self.m as f64 / (self.m - 1) as f64
    }

    /// Randomizes symbol `x < m`: one coin, then (if it says so) a uniform
    /// draw among the other `m−1` symbols.
    pub fn perturb(&self, x: u64, rng: &mut dyn RngCore) -> u64 {
        if self.change.sample(rng) {
            let other = uniform_below(rng, self.m - 1);
            other + u64::from(other >= x)
        } else {
            x
        }
    }

    /// `P[y | x]`, realized.
    pub fn probability(&self, x: u64, y: u64) -> f64 {
        if x == y {
            self.keep_probability()
        } else {
            self.change.probability() / (self.m - 1) as f64
        }
    }

    /// `P[y = x]`, realized.
    pub fn keep_probability(&self) -> f64 {
        1.0 - self.change.probability()
    }

    /// The number of symbols.
    pub fn symbols(&self) -> u64 {
        self.m
    }
}

impl Mechanism for GeneralizedRandomizedResponse {
    fn randomize(&self, index: usize, rng: &mut dyn RngCore) -> Payload {
        Payload::Index(self.perturb(index as u64, rng))
    }

    fn validate(&self, payload: &Payload) -> Result<()> {
        validate_index(payload, self.m).map(drop)
    }

    #[cfg(feature = "aggregate")]
    fn accumulate(&self, payload: &Payload, counts: &mut [u64]) {
        if let Payload::Index(y) = payload {
            counts[*y as usize] += 1;
        }
    }

    #[cfg(feature = "aggregate")]
    fn kernel(&self) -> super::channel::Kernel<'_> {
        super::channel::Kernel::Index { range: self.m }
    }

    fn counts_len(&self) -> usize {
        self.m as usize
    }

    fn support_probabilities(&self) -> (f64, f64) {
        (self.keep_probability(), self.probability(0, 1))
    }

    #[cfg(feature = "aggregate")]
    fn likelihood(&self, index: usize, payload: &Payload) -> Likelihood {
        match payload {
            Payload::Index(y) if *y < self.m => Likelihood::new(self.probability(index as u64, *y)),
            _ => Likelihood::new(0.0),
        }
    }

    #[cfg(feature = "aggregate")]
    fn channel_outputs(&self, _d: usize, _rng: &mut dyn RngCore) -> ChannelOutputs<Payload> {
        ChannelOutputs::Complete((0..self.m).map(Payload::Index).collect())
    }

    #[cfg(feature = "aggregate")]
    fn check_counts(&self, counts: &[u64], n: u64) -> Result<()> {
        super::channel::check_one_count_per_report(counts, n)
    }

    fn report_bits(&self) -> u64 {
        ceil_log2(self.m)
    }
}
