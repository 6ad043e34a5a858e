//! Hadamard randomized response (HRR): one randomized Hadamard coefficient.
//!
//! Cormode, Kulkarni, Srivastava, "Marginal release under local differential
//! privacy" (SIGMOD 2018); the client step of Apple's Hadamard count-mean
//! sketch (Apple Differential Privacy Team, 2017). Let `K` be the smallest
//! power of two above `d`, and `H` the `K × K` Sylvester–Hadamard matrix;
//! value `v` uses row `v + 1` (row 0 is all ones). The client draws a
//! uniform column `j` and reports it with the bit `[H[x+1][j] = +1]`, kept
//! with probability `e^ε/(e^ε+1)` and flipped otherwise.
//!
//! * ε: the column does not depend on the value; the bit is binary
//!   randomized response, so `P[(j,b)|x]/P[(j,b)|x'] ≤ e^ε`, tight.
//! * A report supports `v` when `v`'s coefficient at `j` equals the bit:
//!   `p* = e^ε/(e^ε+1)`, `q* = 1/2` (two rows agree on half the columns);
//!   `Var[ĉ_v]/n ≈ (e^ε+1)²/(e^ε−1)²`, as Hadamard response.
//! * Report: `{"seed": j, "value": bit}`, `log2 K + 1` bits.
//! * Decoding: per column the difference of its 1 and 0 counts, one fast
//!   Walsh–Hadamard transform, then `S_v = (n + (H·δ)[v+1]) / 2`.
//!
//! ```
//! use localdp::{Aggregate, FrequencyAggregator, FrequencyOracle, Randomizer, SimulationRng};
//! let oracle = FrequencyOracle::from_json(r#"{"protocol":"hrr","epsilon":2,"domain":4}"#).unwrap();
//! let mut rng = SimulationRng::seed_from_u64(3); // simulation only
//! let mut aggregator = FrequencyAggregator::new(oracle.clone());
//! for i in 0..40_000 {
//!     aggregator.add(&oracle.randomize(["0", "0", "1", "3"][i % 4], &mut rng).unwrap()).unwrap();
//! }
//! let zero = &aggregator.estimate().unwrap().estimates[0];
//! assert!((zero.frequency - 0.5).abs() < 5.0 * zero.std_error);
//! ```

use super::hadamard::walsh_hadamard;
use super::channel::{ChannelOutputs, ceil_log2, Likelihood, Mechanism};
use crate::error::{Rejection, Result};
use crate::privacy::exp_epsilon_safe;
use crate::report::Payload;
use crate::rng::{uniform_below, Bernoulli, RngCore};
use crate::text::text;

/// Hadamard randomized response over `d` values, `K = 2^⌈log2(d+1)⌉` columns:
/// a uniform column and the value's randomized coefficient there
/// (`docs/PROTOCOLS.md` §1.10). Built through [`crate::FrequencyOracle`]
/// with `"protocol": "hrr"`.
#[derive(Debug, Clone)]
pub struct HadamardRandomizedResponse {
    d: usize,
    k: u64,
    /// "Flip the bit": `1/(e^ε+1)`, rounded up.
    flip: Bernoulli,
}

impl HadamardRandomizedResponse {
    /// For a validated ε and `d ≥ 2`.
    pub(crate) fn new(epsilon: f64, d: usize) -> Self {
        let flip = Bernoulli::rounded_up(1.0 / (exp_epsilon_safe(epsilon) + 1.0)).expect("a probability");
        HadamardRandomizedResponse { d, k: (d as u64 + 1).next_power_of_two(), flip }
    }

    /// `H[v+1][j] = +1`.
    fn coefficient(value: usize, column: u64) -> u64 {
        u64::from(((value as u64 + 1) & column).count_ones() % 2 == 0)
    }
}

impl Mechanism for HadamardRandomizedResponse {
    fn randomize(&self, index: usize, rng: &mut dyn RngCore) -> Payload {
        let column = uniform_below(rng, self.k);
        let bit = Self::coefficient(index, column) ^ u64::from(self.flip.sample(rng));
        Payload::Hashed { seed: column as u32, value: bit }
    }

    fn validate(&self, payload: &Payload) -> Result<()> {
        match payload {
            Payload::Hashed { seed, value } if u64::from(*seed) < self.k && *value <= 1 => Ok(()),
            Payload::Hashed { .. } => {
                Err(Rejection::OutOfRange.error(text!("seed (the column) must be below ", self.k, " and value 0 or 1")))
            }
            _ => Err(Rejection::Malformed.error("expected seed (the column) and value (the bit)")),
        }
    }

    /// `counts[2j + b]`: reports of column `j` with bit `b`.
    #[cfg(feature = "aggregate")]
    fn accumulate(&self, payload: &Payload, counts: &mut [u64]) {
        if let Payload::Hashed { seed, value } = payload {
            counts[2 * *seed as usize + *value as usize] += 1;
        }
    }

    #[cfg(feature = "aggregate")]
    fn kernel(&self) -> super::channel::Kernel<'_> {
        super::channel::Kernel::Coefficient { k: self.k }
    }

    fn counts_len(&self) -> usize {
        2 * self.k as usize
    }

    #[cfg(feature = "aggregate")]
    fn support_counts(&self, counts: &[u64], n: u64) -> Vec<f64> {
        let mut delta: Vec<i64> = counts.chunks(2).map(|c| c[1] as i64 - c[0] as i64).collect();
        walsh_hadamard(&mut delta);
        (0..self.d).map(|v| (n as f64 + delta[v + 1] as f64) / 2.0).collect()
    }

    fn support_probabilities(&self) -> (f64, f64) {
        (1.0 - self.flip.probability(), 0.5)
    }

    #[cfg(feature = "aggregate")]
    fn likelihood(&self, index: usize, payload: &Payload) -> Likelihood {
        let Payload::Hashed { seed, value } = payload else { return Likelihood::new(0.0) };
        let keep = Self::coefficient(index, u64::from(*seed)) == *value;
        let flip = self.flip.probability();
        Likelihood::new(1.0 / self.k as f64).times(if keep { 1.0 - flip } else { flip })
    }

    #[cfg(feature = "aggregate")]
    fn channel_outputs(&self, _d: usize, _rng: &mut dyn RngCore) -> ChannelOutputs<Payload> {
        let all = (0..self.k).flat_map(|j| (0..2).map(move |b| Payload::Hashed { seed: j as u32, value: b }));
        ChannelOutputs::Complete(all.collect())
    }

    #[cfg(feature = "aggregate")]
    fn check_counts(&self, counts: &[u64], n: u64) -> Result<()> {
        super::channel::check_one_count_per_report(counts, n)
    }

    fn report_bits(&self) -> u64 {
        ceil_log2(self.k) + 1
    }
}
