//! Laplace noise on a public grid: the two-sided geometric mechanism.

use super::scalar::{Component, Scalar};
use crate::privacy::exp_epsilon_safe;
use crate::rng::{Bernoulli, RngCore};

/// The Laplace mechanism with every released value on a grid: `t` is rounded
/// at random to `t_i = −1 + iΔ` (`Δ = 2/G`, `G = max(2, ⌈16ε⌉)`), and the report
/// is `i + Z` with `Z` two-sided geometric, `P[Z = z] ∝ r^{|z|}`,
/// `r = e^{−ε/G}` (Ghosh, Roughgarden, Sundararajan, STOC 2009): the discrete
/// Laplace whose scale matches `Lap(2/ε)` on the grid.
///
/// `Z` is drawn from exact coins only: `Z ≠ 0` with probability `2r/(1+r)`,
/// a uniform sign, and a magnitude `1 + Geometric(r)`, each continuation a
/// coin with probability `r` (both coins rounded up: more noise). The output
/// is clamped to `−M ..= G+M` grid steps (post-processing; `r^M < 2^-40`).
///
/// * ε: neighbouring grid inputs differ by one step, so every output's
///   probability ratio is at most `r^{−G} ≤ e^ε`.
/// * Variance per report: `Δ² E[Z²] + (t − t_i)(t_{i+1} − t)` with
///   `E[Z²] = P[Z≠0] (1+r)/(1−r)²` ≈ `8/ε²` (99.9% of it at `ε/G ≤ 1/16`).
///
/// ```
/// let metric = localdp::NumericMetric::from_json(
///     r#"{"protocol":"laplace","epsilon":1.0,"range":[-1,1]}"#).unwrap();
/// let ratio = metric.variance(1.0) / 8.0;
/// assert!((ratio - 1.0).abs() < 0.01, "{ratio}");
/// ```
#[derive(Debug)]
pub struct Laplace {
    steps: u64,
    margin: u64,
    nonzero: Bernoulli,
    carry_on: Bernoulli,
    components: [Component; 1],
}

impl Laplace {
    /// The mechanism at a validated ε with the default grid. The public way
    /// to build one is [`crate::NumericMetric::new`].
    pub(crate) fn new(epsilon: f64) -> Self {
        Self::with_steps(epsilon, ((16.0 * epsilon).ceil() as u64).max(2))
    }

    /// The mechanism at a validated ε on a grid of `steps ≥ 2` steps (tests
    /// use coarse ones; [`crate::NumericMetric::with_grid_steps`] checks
    /// `steps`).
    pub(crate) fn with_steps(epsilon: f64, steps: u64) -> Self {
        let a = epsilon / steps as f64;
        let r = 1.0 / exp_epsilon_safe(a);
        let nonzero = Bernoulli::rounded_up(2.0 * r / (1.0 + r)).expect("a probability");
        let carry_on = Bernoulli::rounded_up(r).expect("a probability");
        let margin = ((40.0 * std::f64::consts::LN_2 / a).ceil() as u64).max(1);
        let delta = 2.0 / steps as f64;
        Laplace {
            steps,
            margin,
            nonzero,
            carry_on,
            components: [Component {
                start: 0,
                end: steps + 2 * margin + 1,
                scale: delta,
                offset: -1.0 - delta * margin as f64,
            }],
        }
    }

    /// `P[Z = z]` under the realized coins, before clamping.
    fn noise(&self, z: u64) -> f64 {
        let (nu, r) = (self.nonzero.probability(), self.carry_on.probability());
        if z == 0 {
            1.0 - nu
        } else {
            0.5 * nu * (1.0 - r) * r.powi((z - 1) as i32)
        }
    }

    /// `P[Z ≥ z]` for `z ≥ 1`.
    fn tail(&self, z: u64) -> f64 {
        0.5 * self.nonzero.probability() * self.carry_on.probability().powi((z - 1) as i32)
    }
}

impl Scalar for Laplace {
    fn steps(&self) -> u64 {
        self.steps
    }

    fn outputs(&self) -> u64 {
        self.steps + 2 * self.margin + 1
    }

    fn sample(&self, input: u64, rng: &mut dyn RngCore) -> u64 {
        // Output index k stands for grid position k − M.
        let center = input + self.margin;
        if !self.nonzero.sample(rng) {
            return center;
        }
        let negative = rng.next_u64() & 1 == 1;
        // Beyond `cap` the clamp decides the output whatever the magnitude.
        let cap = self.steps + self.margin + 1;
        let mut magnitude = 1;
        while magnitude < cap && self.carry_on.sample(rng) {
            magnitude += 1;
        }
        if negative {
            center.saturating_sub(magnitude)
        } else {
            (center + magnitude).min(self.outputs() - 1)
        }
    }

    fn probability(&self, input: u64, output: u64) -> f64 {
        let center = input + self.margin;
        let last = self.outputs() - 1;
        match output {
            0 => self.tail(center),
            k if k == last => self.tail(last - center),
            k => self.noise(k.abs_diff(center)),
        }
    }

    fn second_moment(&self, input: u64) -> f64 {
        // Unclamped (the clamp changes it by less than 2^-40 relative).
        let (nu, r) = (self.nonzero.probability(), self.carry_on.probability());
        let delta = 2.0 / self.steps as f64;
        let t = -1.0 + delta * input as f64;
        t * t + delta * delta * nu * (1.0 + r) / ((1.0 - r) * (1.0 - r))
    }

    fn components(&self) -> &[Component] {
        &self.components
    }
}
