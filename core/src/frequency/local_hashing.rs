//! Local hashing: BLH (`g = 2`) and OLH (`g = round(e^ε) + 1`).
//!
//! Bassily & Smith (STOC 2015) for BLH; Wang et al. (USENIX Security 2017)
//! for OLH. The client draws a hash function `H: values → 0..g` (a fresh
//! 32-bit seed, independent of the value, carried in the report) and applies
//! randomized response over `0..g` to `H(x)`. A report supports every value
//! that hashes to its bucket.
//!
//! * ε: given the seed, the output is `g`-ary randomized response of `H(x)`:
//!   ratio `e^ε`, exactly tight whenever `H(x) ≠ H(x')`.
//! * `p* = e^ε/(e^ε+g−1)`, `q* = 1/g`;
//!   `Var[ĉ_v]/n ≈ (e^ε−1+g)²/((e^ε−1)²(g−1))` — for OLH about `4e^ε/(e^ε−1)²`.
//! * Report: 32-bit seed + `⌈log2 g⌉` bits.
//!
//! **Decoding.** Every report is decoded exactly: for each report the
//! aggregator hashes every candidate value under that report's own seed
//! ([`crate::hash::bucket`]: two multiplications per pair, so a million
//! reports over 1024 values take about a second on one core). A small pool
//! of shared seeds would be cheaper still, but values that collide under a
//! pooled hash then share their error, which on skewed data costs accuracy
//! (up to 2× the closed-form variance was measured for such a variant); exact
//! per-report hashing keeps the closed-form variance, at `O(d)` work per report.
//!
//! The client hashes the value's text itself ([`crate::hash::key64`]), so it
//! needs no dictionary; the aggregator can score any candidate list.

use super::channel::{ChannelOutputs, ceil_log2, Likelihood, Mechanism};
use crate::frequency::grr::GeneralizedRandomizedResponse;
use crate::error::{Rejection, Result};
use crate::hash::bucket;
use crate::number::exp;
use crate::report::Payload;
use crate::rng::RngCore;
use crate::text::text;

/// Local hashing with `g` buckets.
#[derive(Debug, Clone)]
pub struct LocalHashing {
    g: u64,
    grr: GeneralizedRandomizedResponse,
    /// The hash key of every value of the domain, in index order.
    keys: Vec<u64>,
}

impl LocalHashing {
    /// The largest `g` (buckets are computed with 32-bit multiplications).
    pub const MAX_G: u64 = 1 << 32;

    /// OLH's `g = round(e^ε) + 1`, at most [`Self::MAX_G`].
    ///
    /// ```
    /// use localdp::frequency::LocalHashing;
    /// assert_eq!(LocalHashing::optimal_g(1.0), 4); // round(2.718…) + 1
    /// assert_eq!(LocalHashing::optimal_g(0.1), 2);
    /// assert_eq!(LocalHashing::optimal_g(30.0), LocalHashing::MAX_G);
    /// ```
    pub fn optimal_g(epsilon: f64) -> u64 {
        (libm::round(exp(epsilon)) as u64 + 1).min(Self::MAX_G)
    }

    /// For a validated ε, `2 ≤ g ≤ MAX_G`, and the keys of the domain's values.
    pub(crate) fn new(epsilon: f64, g: u64, keys: Vec<u64>) -> Self {
        LocalHashing { g, grr: GeneralizedRandomizedResponse::new(epsilon, g), keys }
    }

    /// The number of buckets.
    pub fn buckets(&self) -> u64 {
        self.g
    }

    /// The bucket of the value at `index` under the hash chosen by `seed`.
    pub(super) fn bucket_of(&self, seed: u32, index: usize) -> u64 {
        bucket(seed, self.keys[index], self.g)
    }

    /// The randomized response applied to the bucket.
    pub(super) fn response(&self) -> &GeneralizedRandomizedResponse {
        &self.grr
    }
}

impl Mechanism for LocalHashing {
    fn randomize(&self, index: usize, rng: &mut dyn RngCore) -> Payload {
        let seed = rng.next_u32();
        let value = self.grr.perturb(bucket(seed, self.keys[index], self.g), rng);
        Payload::Hashed { seed, value }
    }

    fn validate(&self, payload: &Payload) -> Result<()> {
        match payload {
            Payload::Hashed { value, .. } if *value < self.g => Ok(()),
            Payload::Hashed { .. } => {
                Err(Rejection::OutOfRange.error(text!("value must be below g = ", self.g)))
            }
            _ => Err(Rejection::Malformed.error("expected a seed and a value")),
        }
    }

    #[cfg(feature = "aggregate")]
    fn accumulate(&self, payload: &Payload, counts: &mut [u64]) {
        if let Payload::Hashed { seed, value } = *payload {
            let g = self.g;
            for (count, &key) in counts.iter_mut().zip(&self.keys) {
                *count += u64::from(bucket(seed, key, g) == value);
            }
        }
    }

    #[cfg(feature = "aggregate")]
    fn kernel(&self) -> super::channel::Kernel<'_> {
        super::channel::Kernel::Hashed { g: self.g, keys: &self.keys }
    }

    fn counts_len(&self) -> usize {
        self.keys.len()
    }

    /// Sampled seeds, each with every bucket (or, for a huge `g`, with the
    /// buckets of sampled reports): the seeds are too many to enumerate.
    #[cfg(feature = "aggregate")]
    fn channel_outputs(&self, d: usize, rng: &mut dyn RngCore) -> ChannelOutputs<Payload> {
        let seeds = if d > 16 { 8 } else { 64 };
        let mut out = Vec::new();
        for i in 0..seeds {
            let Payload::Hashed { seed, value } = self.randomize(i % d, rng) else { continue };
            if self.g <= 4096 {
                out.extend((0..self.g).map(|value| Payload::Hashed { seed, value }));
            } else {
                let own = bucket(seed, self.keys[i % d], self.g);
                out.extend([value, own, (own + 1) % self.g].map(|value| Payload::Hashed { seed, value }));
            }
        }
        ChannelOutputs::Sampled(out)
    }

    fn support_probabilities(&self) -> (f64, f64) {
        (self.grr.keep_probability(), 1.0 / self.g as f64)
    }

    #[cfg(feature = "aggregate")]
    fn likelihood(&self, index: usize, payload: &Payload) -> Likelihood {
        match *payload {
            Payload::Hashed { seed, value } if value < self.g => {
                let seed_probability = 1.0 / 4_294_967_296.0;
                let x = bucket(seed, self.keys[index], self.g);
                Likelihood::new(seed_probability).times(self.grr.probability(x, value))
            }
            _ => Likelihood::new(0.0),
        }
    }

    fn report_bits(&self) -> u64 {
        32 + ceil_log2(self.g)
    }
}
