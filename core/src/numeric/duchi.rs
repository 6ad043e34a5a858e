//! Duchi, Jordan and Wainwright's one-dimensional mechanism (JASA 2018).

use super::scalar::{Component, Scalar};
use crate::privacy::exp_epsilon_safe;
use crate::rng::{Bernoulli, RngCore};

/// Duchi et al.: `t` is rounded at random to `±1` (up with probability
/// `(1+t)/2`), then kept with probability `e^ε/(e^ε+1)`, else flipped; the
/// report decodes to `±B`, `B = (e^ε+1)/(e^ε−1)`. Together
/// `P[+B] = 1/2 + t(e^ε−1)/(2(e^ε+1))`, exactly the published channel.
///
/// * ε: `P[same]/P[flipped] ≤ e^ε`, the flip coin rounded up.
/// * Variance per report: `B² − t²`.
/// * Report: index 0 (`−B`) or 1 (`+B`), one bit — which is also
///   1BitMean's report (Ding et al., NeurIPS 2017): `P[1] = 1/(e^ε+1) +
///   (x/m)(e^ε−1)/(e^ε+1)` for `x ∈ [0, m]` is this channel at `t = 2x/m − 1`.
///
/// ```
/// let metric = localdp::NumericMetric::from_json(
///     r#"{"protocol":"duchi","epsilon":1.0,"range":[-1,1]}"#).unwrap();
/// let b = (1f64.exp() + 1.0) / (1f64.exp() - 1.0);
/// assert!((metric.variance(0.0) - b * b).abs() < 1e-9);
/// ```
#[derive(Debug)]
pub struct Duchi {
    flip: Bernoulli,
    bound: f64,
    components: [Component; 1],
}

impl Duchi {
    /// The mechanism at a validated ε (finite, positive; it panics on NaN).
    /// The public way to build one is [`crate::NumericMetric::new`].
    pub(crate) fn new(epsilon: f64) -> Self {
        let flip = Bernoulli::rounded_up(1.0 / (exp_epsilon_safe(epsilon) + 1.0)).expect("a probability");
        // Unbiased for the realized coin: B (1 − 2 P[flip]) = 1.
        let bound = 1.0 / (1.0 - 2.0 * flip.probability());
        Duchi { flip, bound, components: [Component { start: 0, end: 2, scale: 2.0 * bound, offset: -bound }] }
    }

    /// `B`: the report decodes to `±B`.
    pub fn bound(&self) -> f64 {
        self.bound
    }
}

impl Scalar for Duchi {
    fn steps(&self) -> u64 {
        1
    }

    fn outputs(&self) -> u64 {
        2
    }

    fn sample(&self, input: u64, rng: &mut dyn RngCore) -> u64 {
        input ^ u64::from(self.flip.sample(rng))
    }

    fn probability(&self, input: u64, output: u64) -> f64 {
        let flip = self.flip.probability();
        if input == output {
            1.0 - flip
        } else {
            flip
        }
    }

    fn second_moment(&self, _input: u64) -> f64 {
        self.bound * self.bound
    }

    fn components(&self) -> &[Component] {
        &self.components
    }
}
