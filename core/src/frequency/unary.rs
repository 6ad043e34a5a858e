//! Unary encoding: SUE (basic one-time RAPPOR) and OUE.
//!
//! Erlingsson, Pihur, Korolova (CCS 2014) for SUE; Wang et al. (USENIX
//! Security 2017) for OUE. The value is one-hot encoded in `d` bits; bit `x`
//! is sent as 1 with probability `p`, every other bit as 1 with probability
//! `q`, independently.
//!
//! * SUE: `p = e^{ε/2}/(e^{ε/2}+1)`, `q = 1 − p`; `Var[ĉ_v]/n ≈ e^{ε/2}/(e^{ε/2}−1)²`.
//! * OUE: `p = 1/2`, `q = 1/(e^ε+1)`; `Var[ĉ_v]/n ≈ 4e^ε/(e^ε−1)²`, the best
//!   of the `d`-bit encodings.
//! * ε: two inputs differ in bits `x` and `x'` only, and the worst output
//!   ratio is `p(1−q)/((1−p)q) = e^ε`, exactly tight.
//! * Report: `d` bits.

use super::channel::{ChannelOutputs, count_bits, validate_bits, Likelihood, Mechanism};
use crate::error::Result;
use crate::privacy::exp_epsilon_safe;
use crate::report::{BitVector, Payload};
use crate::rng::{Bernoulli, RngCore};

/// Unary encoding with independent bit flips.
#[derive(Debug, Clone)]
pub struct UnaryEncoding {
    d: usize,
    /// Every bit but the value's own is 1 with probability `q`.
    q: Bernoulli,
    /// The value's own bit is 0 with probability `1 − p` ("a miss").
    miss: Bernoulli,
}

impl UnaryEncoding {
    /// SUE: the flip probability `1/(e^{ε/2}+1)` is the same for both bit values.
    pub(crate) fn symmetric(epsilon: f64, d: usize) -> Self {
        let half = exp_epsilon_safe(epsilon).sqrt();
        let q = Bernoulli::rounded_up(1.0 / (half + 1.0)).expect("a probability");
        UnaryEncoding { d, q, miss: q }
    }

    /// OUE: bit `x` is a fair coin; the others are 1 with `1/(e^ε+1)`.
    pub(crate) fn optimized(epsilon: f64, d: usize) -> Self {
        let q = Bernoulli::rounded_up(1.0 / (exp_epsilon_safe(epsilon) + 1.0)).expect("a probability");
        UnaryEncoding { d, q, miss: Bernoulli::rounded_up(0.5).expect("a probability") }
    }

    fn p(&self) -> f64 {
        1.0 - self.miss.probability()
    }

    /// The realized `1 − p` (the value's own bit sent as 0), exactly.
    pub(super) fn miss(&self) -> f64 {
        self.miss.probability()
    }
}

impl Mechanism for UnaryEncoding {
    fn randomize(&self, index: usize, rng: &mut dyn RngCore) -> Payload {
        let mut bits = BitVector::zeros(self.d);
        for i in 0..self.d {
            let one = if i == index { !self.miss.sample(rng) } else { self.q.sample(rng) };
            if one {
                bits.set(i);
            }
        }
        Payload::Bits(bits)
    }

    fn validate(&self, payload: &Payload) -> Result<()> {
        validate_bits(payload, self.d).map(drop)
    }

    #[cfg(feature = "aggregate")]
    fn accumulate(&self, payload: &Payload, counts: &mut [u64]) {
        count_bits(payload, counts)
    }

    #[cfg(feature = "aggregate")]
    fn kernel(&self) -> super::channel::Kernel<'_> {
        super::channel::Kernel::Bits { d: self.d, weight: None }
    }

    fn counts_len(&self) -> usize {
        self.d
    }

    fn support_probabilities(&self) -> (f64, f64) {
        (self.p(), self.q.probability())
    }

    #[cfg(feature = "aggregate")]
    fn likelihood(&self, index: usize, payload: &Payload) -> Likelihood {
        let Payload::Bits(bits) = payload else { return Likelihood::new(0.0) };
        // Each bit's two probabilities, each computed without cancelling
        // (`1 − (1 − miss)` would lose the small miss at a large ε).
        let (miss, q) = (self.miss.probability(), self.q.probability());
        (0..self.d).fold(Likelihood::new(1.0), |l, i| {
            let (zero, one) = if i == index { (miss, 1.0 - miss) } else { (1.0 - q, q) };
            l.times(if bits.get(i) { one } else { zero })
        })
    }

    #[cfg(feature = "aggregate")]
    fn channel_outputs(&self, d: usize, rng: &mut dyn RngCore) -> ChannelOutputs<Payload> {
        if d <= 16 {
            ChannelOutputs::Complete(super::channel::all_bit_vectors(d, None))
        } else {
            ChannelOutputs::Sampled(super::channel::sampled_outputs(self, d, 12, rng))
        }
    }

    fn report_bits(&self) -> u64 {
        self.d as u64
    }
}
