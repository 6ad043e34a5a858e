//! Wang et al.'s hybrid mechanism (ICDE 2019): piecewise or Duchi at random.

use super::scalar::{Component, Scalar};
use crate::numeric::{duchi::Duchi, piecewise::Piecewise};
use crate::rng::{uniform_below, Bernoulli, RngCore};

/// The hybrid mechanism: with probability `α = 1 − e^{−ε/2}` (when
/// ε > 0.61, else `α = 0`) the piecewise mechanism, otherwise Duchi's, both
/// at the full ε. Both are unbiased, so the mixture is; both are ε-LDP and
/// the choice does not depend on the value, so the mixture is ε-LDP.
///
/// On the grid, the input is first rounded to the piecewise grid; Duchi's
/// half then rounds the grid point `t_i` to `±1` with the exact probability
/// `i/G`. Outputs `0..N` are piecewise cells, `N` and `N+1` Duchi's `∓B`.
///
/// * Variance per report: `α Var_PM(t) + (1−α)(B² − t²)`: the worst case is
///   the smallest of the mechanisms here for ε > 0.61.
///
/// ```
/// let hybrid = localdp::NumericMetric::from_json(
///     r#"{"protocol":"hybrid","epsilon":2.0,"range":[-1,1]}"#).unwrap();
/// let piecewise = localdp::NumericMetric::from_json(
///     r#"{"protocol":"piecewise","epsilon":2.0,"range":[-1,1]}"#).unwrap();
/// assert!(hybrid.worst_case_variance() < piecewise.worst_case_variance());
/// ```
#[derive(Debug)]
pub struct Hybrid {
    piecewise: Piecewise,
    duchi: Duchi,
    branch: Bernoulli,
    components: [Component; 2],
}

impl Hybrid {
    /// The mechanism at a validated ε with the default grid. The public way
    /// to build one is [`crate::NumericMetric::new`].
    pub(crate) fn new(epsilon: f64) -> Self {
        Self::from_parts(epsilon, Piecewise::new(epsilon))
    }

    /// The mechanism at a validated ε on a grid of `steps ≥ 2` steps (tests
    /// use coarse ones; [`crate::NumericMetric::with_grid_steps`] checks
    /// `steps`).
    pub(crate) fn with_steps(epsilon: f64, steps: u64) -> Self {
        Self::from_parts(epsilon, Piecewise::with_steps(epsilon, steps))
    }

    fn from_parts(epsilon: f64, piecewise: Piecewise) -> Self {
        let alpha = if epsilon > 0.61 { 1.0 - crate::number::exp(-0.5 * epsilon) } else { 0.0 };
        let duchi = Duchi::new(epsilon);
        let cells = piecewise.outputs();
        let b = duchi.bound();
        let components = [
            piecewise.components()[0],
            Component { start: cells, end: cells + 2, scale: 2.0 * b, offset: -b - 2.0 * b * cells as f64 },
        ];
        Hybrid { piecewise, duchi, branch: Bernoulli::rounded_up(alpha).expect("a probability"), components }
    }

    /// `P[Duchi's half rounds grid input i up to +1] = i/G`.
    fn up(&self, input: u64) -> f64 {
        input as f64 / self.piecewise.steps() as f64
    }
}

impl Scalar for Hybrid {
    fn steps(&self) -> u64 {
        self.piecewise.steps()
    }

    fn outputs(&self) -> u64 {
        self.piecewise.outputs() + 2
    }

    fn sample(&self, input: u64, rng: &mut dyn RngCore) -> u64 {
        if self.branch.sample(rng) {
            self.piecewise.sample(input, rng)
        } else {
            let sign = u64::from(uniform_below(rng, self.steps()) < input);
            self.piecewise.outputs() + self.duchi.sample(sign, rng)
        }
    }

    fn probability(&self, input: u64, output: u64) -> f64 {
        let alpha = self.branch.probability();
        let cells = self.piecewise.outputs();
        if output < cells {
            alpha * self.piecewise.probability(input, output)
        } else {
            let up = self.up(input);
            let k = output - cells;
            (1.0 - alpha) * (up * self.duchi.probability(1, k) + (1.0 - up) * self.duchi.probability(0, k))
        }
    }

    fn second_moment(&self, input: u64) -> f64 {
        let alpha = self.branch.probability();
        alpha * self.piecewise.second_moment(input) + (1.0 - alpha) * self.duchi.second_moment(0)
    }

    fn components(&self) -> &[Component] {
        &self.components
    }
}
