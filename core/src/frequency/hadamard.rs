//! Hadamard response.
//!
//! Acharya, Sun, Zhang (AISTATS 2019). Let `K` be the smallest power of two
//! above `d`; value `v` owns the columns `C_v = {j : popcount((v+1) & j) even}`,
//! the +1 entries of row `v+1` of the Sylvester–Hadamard matrix (`|C_v| = K/2`).
//! With probability `e^ε/(e^ε+1)` the client reports a uniform column of
//! `C_x`, otherwise a uniform column of its complement.
//!
//! * ε: `P[j|x]/P[j|x'] ≤ (e^ε/(e^ε+1)) / (1/(e^ε+1)) = e^ε`, tight.
//! * `p* = e^ε/(e^ε+1)`, `q* = 1/2` (two distinct rows agree on half the
//!   columns); `Var[ĉ_v]/n ≈ (e^ε+1)²/(e^ε−1)²`.
//! * Report: one column, `log2 K` bits — the smallest report of all here.
//! * Decoding: histogram the columns, one fast Walsh–Hadamard transform
//!   (`O(K log K)`), then `S_v = (n + (H·counts)[v+1]) / 2`.

use super::channel::{ChannelOutputs, ceil_log2, validate_index, Likelihood, Mechanism};
use crate::error::Result;
use crate::privacy::exp_epsilon_safe;
use crate::report::Payload;
use crate::rng::{uniform_below, Bernoulli, RngCore};

/// Hadamard response over `d` values with `K = 2^⌈log2(d+1)⌉` columns.
#[derive(Debug, Clone)]
pub struct HadamardResponse {
    d: usize,
    k: u64,
    /// "Report a column outside `C_x`": `1/(e^ε+1)`, rounded up.
    outside: Bernoulli,
}

impl HadamardResponse {
    /// For a validated ε and `d ≥ 2`.
    pub(crate) fn new(epsilon: f64, d: usize) -> Self {
        let outside = Bernoulli::rounded_up(1.0 / (exp_epsilon_safe(epsilon) + 1.0)).expect("a probability");
        HadamardResponse { d, k: (d as u64 + 1).next_power_of_two(), outside }
    }

    fn owns(value: usize, column: u64) -> bool {
        ((value as u64 + 1) & column).count_ones() % 2 == 0
    }
}

/// In-place fast Walsh–Hadamard transform (Sylvester order, unnormalized;
/// the length is a power of two): of exact integer counts here, of a
/// sketch's `f64` table in the heavy hitters.
pub fn walsh_hadamard<T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T>>(a: &mut [T]) {
    let mut h = 1;
    while h < a.len() {
        for block in a.chunks_mut(2 * h) {
            let (left, right) = block.split_at_mut(h);
            for (x, y) in left.iter_mut().zip(right.iter_mut()) {
                (*x, *y) = (*x + *y, *x - *y);
            }
        }
        h *= 2;
    }
}

impl Mechanism for HadamardResponse {
    fn randomize(&self, index: usize, rng: &mut dyn RngCore) -> Payload {
        let want_inside = !self.outside.sample(rng);
        let mut column = uniform_below(rng, self.k);
        if Self::owns(index, column) != want_inside {
            // Flipping one bit of `column` that row index+1 has flips the
            // parity: a bijection between C_x and its complement, so the
            // result is uniform on the wanted half.
            let row = index as u64 + 1;
            column ^= row & row.wrapping_neg();
        }
        Payload::Index(column)
    }

    fn validate(&self, payload: &Payload) -> Result<()> {
        validate_index(payload, self.k).map(drop)
    }

    #[cfg(feature = "aggregate")]
    fn accumulate(&self, payload: &Payload, counts: &mut [u64]) {
        if let Payload::Index(j) = payload {
            counts[*j as usize] += 1;
        }
    }

    #[cfg(feature = "aggregate")]
    fn kernel(&self) -> super::channel::Kernel<'_> {
        super::channel::Kernel::Index { range: self.k }
    }

    fn counts_len(&self) -> usize {
        self.k as usize
    }

    #[cfg(feature = "aggregate")]
    fn support_counts(&self, counts: &[u64], n: u64) -> Vec<f64> {
        let mut transformed: Vec<i64> = counts.iter().map(|&c| c as i64).collect();
        walsh_hadamard(&mut transformed);
        (0..self.d).map(|v| (n as f64 + transformed[v + 1] as f64) / 2.0).collect()
    }

    fn support_probabilities(&self) -> (f64, f64) {
        (1.0 - self.outside.probability(), 0.5)
    }

    #[cfg(feature = "aggregate")]
    fn likelihood(&self, index: usize, payload: &Payload) -> Likelihood {
        match *payload {
            Payload::Index(j) if j < self.k => {
                let half = if Self::owns(index, j) { 1.0 - self.outside.probability() } else { self.outside.probability() };
                Likelihood::new(half).times(2.0 / self.k as f64)
            }
            _ => Likelihood::new(0.0),
        }
    }

    #[cfg(feature = "aggregate")]
    fn channel_outputs(&self, _d: usize, _rng: &mut dyn RngCore) -> ChannelOutputs<Payload> {
        ChannelOutputs::Complete((0..self.k).map(Payload::Index).collect())
    }

    #[cfg(feature = "aggregate")]
    fn check_counts(&self, counts: &[u64], n: u64) -> Result<()> {
        super::channel::check_one_count_per_report(counts, n)
    }

    fn report_bits(&self) -> u64 {
        ceil_log2(self.k)
    }
}
