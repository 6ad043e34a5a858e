//! Wang et al.'s piecewise mechanism (ICDE 2019) on a grid of cells.

use super::scalar::{Component, Scalar};
use crate::privacy::exp_epsilon_safe;
use crate::rng::{uniform_below, Bernoulli, RngCore};

/// The piecewise mechanism with cells instead of a continuum. The output
/// range is cut into `N = G + m` cells; grid input `i` (of `G` steps) has the
/// *window* of cells `i ..= i+m−1`, which slides by one cell per input step,
/// exactly as the continuous window `[l(t), r(t)]` slides with `t`. The report
/// is a cell in the window with probability `m p_h`, else a cell outside it,
/// uniformly either way, with `p_h = e^ε p_l`. Cell `k` decodes to
/// `α (k − (N−1)/2)`, `α = 2 / ((p_h − p_l) m G)`, which makes the report
/// exactly unbiased for `t_i`.
///
/// The continuous mechanism's window is `e^{−ε/2}` of the distance it slides,
/// so the grid takes `G = max(256, ⌈64 e^{ε/2}⌉)` steps (at most 2^20) and
/// `m = max(1, round(G e^{−ε/2}))`: the window is off by at most half a cell
/// of at least 64 (ε ≤ 19), and the variance stays within 1% of
/// PROTOCOLS.md's `t²/(e^{ε/2}−1) + (e^{ε/2}+3)/(3(e^{ε/2}−1)²)`.
///
/// * ε: a cell has probability `p_h` in the window and `p_l` outside; the
///   coin "outside" is rounded up, so `p_h / p_l ≤ e^ε`.
/// * Variance per report: `α² [p_l Σ_k c_k² + (p_h − p_l) Σ_window c_k²] − t_i²`
///   (`c_k = k − (N−1)/2`), plus the rounding to the grid.
///
/// ```
/// let metric = localdp::NumericMetric::from_json(
///     r#"{"protocol":"piecewise","epsilon":2.0,"range":[-1,1]}"#).unwrap();
/// let e = 1f64.exp(); // e^{ε/2}
/// let continuous = 1.0 / (e - 1.0) + (e + 3.0) / (3.0 * (e - 1.0) * (e - 1.0));
/// assert!((metric.variance(1.0) / continuous - 1.0).abs() < 0.01);
/// ```
#[derive(Debug)]
pub struct Piecewise {
    steps: u64,
    window: u64,
    outside: Bernoulli,
    scale: f64,
    components: [Component; 1],
}

impl Piecewise {
    /// The mechanism at a validated ε with the default grid. The public way
    /// to build one is [`crate::NumericMetric::new`].
    pub(crate) fn new(epsilon: f64) -> Self {
        let half = crate::number::exp(0.5 * epsilon);
        let steps = ((64.0 * half).ceil() as u64).clamp(256, 1 << 20);
        Self::with_steps(epsilon, steps)
    }

    /// The mechanism at a validated ε on a grid of `steps ≥ 2` steps (tests
    /// use coarse ones; [`crate::NumericMetric::with_grid_steps`] checks
    /// `steps`).
    pub(crate) fn with_steps(epsilon: f64, steps: u64) -> Self {
        let window = ((steps as f64 / crate::number::exp(0.5 * epsilon)).round() as u64).max(1);
        let e = exp_epsilon_safe(epsilon);
        let outside = Bernoulli::rounded_up(steps as f64 / (window as f64 * e + steps as f64)).expect("a probability");
        let q = outside.probability();
        let (p_high, p_low) = ((1.0 - q) / window as f64, q / steps as f64);
        let scale = 2.0 / ((p_high - p_low) * window as f64 * steps as f64);
        let cells = steps + window;
        Piecewise {
            steps,
            window,
            outside,
            scale,
            components: [Component { start: 0, end: cells, scale, offset: -scale * (cells - 1) as f64 * 0.5 }],
        }
    }

    /// `(p_h, p_l)`: the realized probability of one cell in and outside the window.
    fn cell_probabilities(&self) -> (f64, f64) {
        let q = self.outside.probability();
        ((1.0 - q) / self.window as f64, q / self.steps as f64)
    }

    /// `Σ_{k=start}^{start+len−1} (k − (N−1)/2)²`.
    fn sum_of_squares(&self, start: u64, len: u64) -> f64 {
        let s = start as f64 - (self.steps + self.window - 1) as f64 * 0.5;
        let l = len as f64;
        l * s * s + s * l * (l - 1.0) + (l - 1.0) * l * (2.0 * l - 1.0) / 6.0
    }
}

impl Scalar for Piecewise {
    fn steps(&self) -> u64 {
        self.steps
    }

    fn outputs(&self) -> u64 {
        self.steps + self.window
    }

    fn sample(&self, input: u64, rng: &mut dyn RngCore) -> u64 {
        if self.outside.sample(rng) {
            let u = uniform_below(rng, self.steps);
            if u < input {
                u
            } else {
                u + self.window
            }
        } else {
            input + uniform_below(rng, self.window)
        }
    }

    fn probability(&self, input: u64, output: u64) -> f64 {
        let (p_high, p_low) = self.cell_probabilities();
        if (input..input + self.window).contains(&output) {
            p_high
        } else {
            p_low
        }
    }

    fn second_moment(&self, input: u64) -> f64 {
        let (p_high, p_low) = self.cell_probabilities();
        let all = self.sum_of_squares(0, self.outputs());
        let window = self.sum_of_squares(input, self.window);
        self.scale * self.scale * (p_low * all + (p_high - p_low) * window)
    }

    fn components(&self) -> &[Component] {
        &self.components
    }
}
