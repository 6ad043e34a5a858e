//! dBitFlip (Ding, Kulkarni, Yekhanin, NeurIPS 2017), Microsoft's histogram
//! protocol for repeated collection.
//!
//! Each report samples `d` of the `k` buckets uniformly (without
//! replacement) and sends one bit per sampled bucket: 1 with probability
//! `e^{ε/2}/(e^{ε/2}+1)` for the value's own bucket, `1/(e^{ε/2}+1)` for the
//! others. A report supports bucket `v` when `v` is sampled and its bit is 1,
//! so it is a pure protocol with `p* = (d/k)·e^{ε/2}/(e^{ε/2}+1)` and
//! `q* = (d/k)/(e^{ε/2}+1)`.
//!
//! * ε: the sampled buckets do not depend on the value, and two values change
//!   at most two bits, each by a ratio of at most `e^{ε/2}`.
//! * Variance: the pure-protocol formula with these `p*`, `q*`:
//!   `Var[ĉ_v]/n ≈ (k/d)·e^{ε/2}/(e^{ε/2}−1)²` for small frequencies.
//! * Report: `{"attributes": [sampled buckets], "values": [bits]}`.
//! * Memoized (`"memoize": true`), a client samples its buckets once and keeps
//!   one permanent response per *pattern* (which of its buckets holds the
//!   value, or none): values outside its buckets share one response, so the
//!   long-run cost is at most `(d+1)` permanent responses, whatever the value
//!   does.

use super::channel::{Likelihood, Mechanism};
use crate::error::{Rejection, Result};
use crate::privacy::exp_epsilon_safe;
use crate::report::Payload;
use crate::rng::{sample_subset, Bernoulli, RngCore};
use crate::text::text;

/// dBitFlip over `k` buckets, `d` sampled per report.
#[derive(Debug, Clone)]
pub struct DBitFlip {
    k: usize,
    d: usize,
    /// A sampled bucket's bit is the truth flipped with this probability.
    flip: Bernoulli,
}

impl DBitFlip {
    /// The protocol at ε over `k` buckets with `d` sampled per report.
    pub(crate) fn new(epsilon: f64, k: usize, d: usize) -> Self {
        let half = exp_epsilon_safe(epsilon).sqrt();
        DBitFlip { k, d, flip: Bernoulli::rounded_up(1.0 / (half + 1.0)).expect("a probability") }
    }

    /// The report for the value at `index` over the given sampled buckets.
    fn randomize_with(&self, index: usize, buckets: Vec<u32>, rng: &mut dyn RngCore) -> Payload {
        let values = buckets.iter().map(|&j| u64::from((j as usize == index) ^ self.flip.sample(rng))).collect();
        Payload::Sampled { attributes: buckets, values }
    }
}

impl Mechanism for DBitFlip {
    fn randomize(&self, index: usize, rng: &mut dyn RngCore) -> Payload {
        let buckets = sample_subset(self.k, self.d, rng);
        self.randomize_with(index, buckets, rng)
    }

    fn chosen_by_auto(&self) -> bool {
        false
    }

    fn samples_buckets(&self) -> bool {
        true
    }

    /// `d` changes what a report means (and what a memo holds).
    fn identity(&self) -> Option<String> {
        (self.d != 1).then(|| text!("d=", self.d))
    }

    /// Memoized: the install's buckets, sampled once.
    fn memo_draws(&self, rng: &mut dyn RngCore) -> Vec<u64> {
        sample_subset(self.k, self.d, rng).into_iter().map(u64::from).collect()
    }

    fn memo_draws_valid(&self, draws: &[u64]) -> bool {
        draws.len() == self.d && draws.windows(2).all(|w| w[0] < w[1]) && draws.iter().all(|&j| j < self.k as u64)
    }

    /// One permanent response per pattern: which of the install's buckets
    /// holds the value, or none.
    fn memo_key(&self, index: usize, draws: &[u64]) -> String {
        draws.iter().position(|&j| j == index as u64).map_or("none".into(), |p| text!(p))
    }

    fn randomize_memoized(&self, index: usize, draws: &[u64], rng: &mut dyn RngCore) -> Payload {
        self.randomize_with(index, draws.iter().map(|&j| j as u32).collect(), rng)
    }

    fn validate(&self, payload: &Payload) -> Result<()> {
        let Payload::Sampled { attributes, values } = payload else {
            return Err(Rejection::Malformed.error("expected attributes (the sampled buckets) and values (their bits)"));
        };
        if attributes.len() != self.d || values.len() != self.d {
            return Err(Rejection::BadSubsetSize.error(text!("expected ", self.d, " sampled buckets and as many bits")));
        }
        if attributes.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Rejection::Malformed.error("sampled buckets must be strictly increasing"));
        }
        if attributes.iter().any(|&j| j as usize >= self.k) || values.iter().any(|&b| b > 1) {
            return Err(Rejection::OutOfRange.error(text!("buckets must be below ", self.k, " and bits 0 or 1")));
        }
        Ok(())
    }

    #[cfg(feature = "aggregate")]
    fn accumulate(&self, payload: &Payload, counts: &mut [u64]) {
        if let Payload::Sampled { attributes, values } = payload {
            for (&j, &b) in attributes.iter().zip(values) {
                counts[j as usize] += b;
            }
        }
    }

    #[cfg(feature = "aggregate")]
    fn kernel(&self) -> super::channel::Kernel<'_> {
        super::channel::Kernel::Sampled
    }

    fn counts_len(&self) -> usize {
        self.k
    }

    fn support_probabilities(&self) -> (f64, f64) {
        let share = self.d as f64 / self.k as f64;
        let flip = self.flip.probability();
        (share * (1.0 - flip), share * flip)
    }

    #[cfg(feature = "aggregate")]
    fn likelihood(&self, index: usize, payload: &Payload) -> Likelihood {
        let Payload::Sampled { attributes, values } = payload else { return Likelihood::new(0.0) };
        // Each d-subset has probability 1/C(k, d).
        let subset = (0..self.d).fold(Likelihood::new(1.0), |l, i| l.times((i + 1) as f64 / (self.k - i) as f64));
        let flip = self.flip.probability();
        attributes.iter().zip(values).fold(subset, |l, (&j, &b)| {
            let truth = u64::from(j as usize == index);
            l.times(if b == truth { 1.0 - flip } else { flip })
        })
    }

    /// Two values differ in two bits, each by `e^{ε/2}`: a report holds
    /// both only when it samples two buckets or more, else one (`ε/2`).
    #[cfg(feature = "aggregate")]
    fn realized_epsilon(&self, epsilon: f64) -> f64 {
        if self.d >= 2 {
            epsilon
        } else {
            epsilon / 2.0
        }
    }

    fn report_bits(&self) -> u64 {
        self.d as u64 * (super::channel::ceil_log2(self.k as u64) + 1)
    }
}
