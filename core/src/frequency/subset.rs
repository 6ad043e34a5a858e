//! Subset selection.
//!
//! Ye & Barg (IEEE Trans. Inf. Theory 2018); Wang et al. (2016). The client
//! reports a set of `k` distinct values: with probability
//! `p = k e^ε/(k e^ε + d − k)` its own value plus `k−1` uniform others,
//! otherwise `k` uniform values other than its own.
//!
//! * ε: an output set's probability is `p/C(d−1,k−1)` if it holds `x` and
//!   `(1−p)/C(d−1,k)` if not; their ratio is `p(d−k)/((1−p)k) = e^ε`, tight.
//! * `p* = p`, `q* = (k − p)/(d − 1)`; `Var[ĉ_v]/n ≈ q*(1−q*)/(p*−q*)²`.
//! * `k` minimizes the total variance `Σ_v Var[f̂_v]` over `1 ≤ k < d` (it is
//!   close to `d/(e^ε+1)`); with that `k` the protocol is asymptotically
//!   minimax-optimal for squared ℓ2 loss (Ye & Barg), and `k = 1` is GRR.
//! * Report: `d` bits with exactly `k` set.

use super::channel::{ChannelOutputs, count_bits, validate_bits, Likelihood, Mechanism};
use crate::error::{Rejection, Result};
use crate::{number::exp, privacy::exp_epsilon_safe};
use crate::report::{BitVector, Payload};
use crate::rng::{uniform_below, Bernoulli, RngCore};
use crate::text::text;

/// Subset selection of `k` out of `d` values.
#[derive(Debug, Clone)]
pub struct SubsetSelection {
    d: usize,
    k: usize,
    /// "Leave the true value out": `(d−k)/(k e^ε + d − k)`, rounded up.
    exclude: Bernoulli,
}

impl SubsetSelection {
    /// For a validated ε and `d ≥ 2`, with the variance-minimizing `k`.
    pub(crate) fn new(epsilon: f64, d: usize) -> Self {
        Self::with_size(epsilon, d, Self::best_size(epsilon, d))
    }

    /// With a given subset size `1 ≤ k < d`.
    pub(crate) fn with_size(epsilon: f64, d: usize, k: usize) -> Self {
        let (kf, df) = (k as f64, d as f64);
        let exclude = Bernoulli::rounded_up((df - kf) / (kf * exp_epsilon_safe(epsilon) + df - kf))
            .expect("a probability");
        SubsetSelection { d, k, exclude }
    }

    /// The `k` that minimizes `d q(1−q) + (p−q)(1−p−q)` over `(p−q)²`
    /// (PROTOCOLS.md §7), in `1..d`. Total: for `d < 2`, where no subset
    /// size is valid, it returns 1 (no oracle is built with such a domain).
    ///
    /// ```
    /// use localdp::frequency::SubsetSelection;
    /// assert_eq!(SubsetSelection::best_size(1.0, 2), 1);
    /// assert_eq!(SubsetSelection::best_size(1.0, 1), 1);
    /// assert!((1..1000).contains(&SubsetSelection::best_size(1.0, 1000)));
    /// ```
    pub fn best_size(epsilon: f64, d: usize) -> usize {
        let (e, df) = (exp(epsilon), d as f64);
        let total = |s: usize| {
            let s = s as f64;
            let p = s * e / (s * e + df - s);
            let q = (s - p) / (df - 1.0);
            (df * q * (1.0 - q) + (p - q) * (1.0 - p - q)) / ((p - q) * (p - q))
        };
        (1..d).min_by(|&a, &b| total(a).total_cmp(&total(b))).unwrap_or(1)
    }

    /// The subset size.
    pub fn size(&self) -> usize {
        self.k
    }

    /// `1 / C(n, r)` as a likelihood factor.
    fn inverse_binomial(n: usize, r: usize) -> Likelihood {
        (1..=r).fold(Likelihood::new(1.0), |l, i| l.times(i as f64 / (n - r + i) as f64))
    }
}

impl Mechanism for SubsetSelection {
    fn randomize(&self, index: usize, rng: &mut dyn RngCore) -> Payload {
        let mut bits = BitVector::zeros(self.d);
        let others = if self.exclude.sample(rng) {
            self.k
        } else {
            bits.set(index);
            self.k - 1
        };
        // Floyd's algorithm: a uniform `others`-subset of the d−1 values other
        // than `index`, numbered 0..d−1 and shifted past `index`.
        let skip = |i: u64| i as usize + usize::from(i as usize >= index);
        let n = (self.d - 1) as u64;
        for j in n - others as u64..n {
            let t = uniform_below(rng, j + 1);
            let pick = if bits.get(skip(t)) { skip(j) } else { skip(t) };
            bits.set(pick);
        }
        Payload::Bits(bits)
    }

    fn validate(&self, payload: &Payload) -> Result<()> {
        if validate_bits(payload, self.d)?.count_ones() != self.k as u64 {
            return Err(Rejection::BadSubsetSize.error(text!("expected exactly ", self.k, " values")));
        }
        Ok(())
    }

    #[cfg(feature = "aggregate")]
    fn accumulate(&self, payload: &Payload, counts: &mut [u64]) {
        count_bits(payload, counts)
    }

    #[cfg(feature = "aggregate")]
    fn kernel(&self) -> super::channel::Kernel<'_> {
        super::channel::Kernel::Bits { d: self.d, weight: Some(self.k) }
    }

    fn counts_len(&self) -> usize {
        self.d
    }

    fn support_probabilities(&self) -> (f64, f64) {
        let p = 1.0 - self.exclude.probability();
        (p, (self.k as f64 - p) / (self.d as f64 - 1.0))
    }

    #[cfg(feature = "aggregate")]
    fn likelihood(&self, index: usize, payload: &Payload) -> Likelihood {
        match payload {
            Payload::Bits(bits) if bits.fits(self.d) && bits.count_ones() == self.k as u64 => {
                if bits.get(index) {
                    Self::inverse_binomial(self.d - 1, self.k - 1).times(1.0 - self.exclude.probability())
                } else {
                    Self::inverse_binomial(self.d - 1, self.k).times(self.exclude.probability())
                }
            }
            _ => Likelihood::new(0.0),
        }
    }

    #[cfg(feature = "aggregate")]
    fn channel_outputs(&self, d: usize, rng: &mut dyn RngCore) -> ChannelOutputs<Payload> {
        if d <= 16 {
            ChannelOutputs::Complete(super::channel::all_bit_vectors(d, Some(self.k)))
        } else {
            ChannelOutputs::Sampled(super::channel::sampled_outputs(self, d, 12, rng))
        }
    }

    fn report_bits(&self) -> u64 {
        self.d as u64
    }
}
