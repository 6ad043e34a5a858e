//! The Square Wave mechanism (Li, Wang, Lopuhaä-Zwakenberg, Li, Škorić,
//! SIGMOD 2020) on a public grid, and its EM-with-smoothing reconstruction.
//!
//! The device reports its value's **input** on a fine grid of `G = B·r`
//! equal steps of the range (`r = ⌈1024/B⌉`, so `G ≥ 1024`, the paper's
//! `d = 1024` buckets; bin `b` of the histogram is inputs `b·r ..
//! (b+1)·r`) through a finite channel whose output is a **cell** of the
//! widened range: `N = G + m − 1` cells, input `j`'s *window* being the `m`
//! cells `j ..= j+m−1` (the continuous mechanism's `[v − b, v + b]`, which
//! slides with the value). A cell inside the window has probability `p`, a
//! cell outside it `q`, with `p = e^ε q`:
//!
//! * the window: `m = max(1, round(2b·G))`, `b = (εe^ε − e^ε + 1) /
//!   (2e^ε(e^ε − 1 − ε))` the paper's half-width for the unit interval
//!   (rounding it changes the utility a little, never the privacy);
//! * the coin "outside the window", probability `(G−1)/(m e^ε + G − 1)`
//!   with `e^ε` rounded down, is rounded up to a multiple of `2^-64`
//!   ([`Bernoulli`]); the cell is then uniform ([`uniform_below`]) inside or
//!   outside. So `p/q ≤ e^ε` exactly, and every output is possible from
//!   every input (checked cell by cell, [`SquareWave::probability`]).
//!
//! The aggregator counts reports per cell and reconstructs the inputs'
//! distribution by **EMS** (expectation maximization with smoothing): from
//! the uniform distribution, an EM step `x_j ← x_j Σ_k (c_k/n) P[k|j]/P[k]`,
//! then the binomial smoothing `x_j ← (x_{j−1} + 2x_j + x_{j+1})/4` (the
//! edges reflect), until the log-likelihood of the counts improves by less
//! than `10^-3 e^ε` per iteration (the paper's authors' threshold; measured
//! over 10 iterations) or 10,000 iterations;
//! the bins are sums of `r` inputs. The fine grid matters: smoothing 64
//! coarse bins instead biased the median of a log-normal by 120 ms (of 156
//! ms bins) whatever `n` (`bench/distributions.py`, before the change).
//! Both steps run in `O(G + N)`: the channel is a constant plus a sliding
//! window, so its products are prefix sums.

use crate::{number::exp, privacy::exp_epsilon_safe};
use crate::rng::{uniform_below, Bernoulli, RngCore};

/// The most EMS iterations.
const MAX_ITERATIONS: usize = 10_000;

/// EMS evaluates the log-likelihood (a logarithm per cell, most of an
/// iteration's cost) every this many iterations.
const CHECK_EVERY: usize = 10;

/// The fewest inputs of the fine grid.
const MIN_INPUTS: u64 = 1024;

/// Square Wave over `bins` bins, on a grid of `inputs` inputs.
///
/// ```
/// use localdp::DistributionMetric;
/// let metric = DistributionMetric::from_json(r#"{"protocol":"square_wave","epsilon":1,"range":[0,1],"bins":8}"#)?;
/// let sw = metric.square_wave().unwrap();
/// assert_eq!(sw.cells(), sw.inputs() + sw.window() - 1);
/// let (p, q) = sw.cell_probabilities();
/// assert!((p / q).ln() <= 1.0 + 1e-9); // within e^ε
/// assert_eq!((sw.probability(0, 0), sw.probability(0, sw.window()), sw.probability(0, sw.cells())), (p, q, 0.0));
/// let row: f64 = (0..sw.cells()).map(|cell| sw.probability(5, cell)).sum();
/// assert!((row - 1.0).abs() < 1e-9);
/// // Cells are one input apart, laid out symmetrically around the range.
/// assert_eq!(sw.cell_centre(1) - sw.cell_centre(0), 1.0);
/// assert_eq!(sw.cell_centre(0) + sw.cell_centre(sw.cells() - 1), sw.inputs() as f64);
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SquareWave {
    bins: u64,
    inputs: u64,
    window: u64,
    outside: Bernoulli,
    /// The log-likelihood improvement that ends EMS.
    threshold: f64,
}

impl SquareWave {
    /// For a validated ε and `bins ≥ 2`.
    pub(crate) fn new(epsilon: f64, bins: u64) -> Self {
        let inputs = bins * MIN_INPUTS.div_ceil(bins);
        let e = exp(epsilon);
        let half_width = crate::number::clamp((epsilon * e - e + 1.0) / (2.0 * e * (e - 1.0 - epsilon)), 0.0, 0.5);
        let window = ((2.0 * half_width * inputs as f64).round() as u64).clamp(1, inputs);
        let others = (inputs - 1) as f64;
        let outside =
            Bernoulli::rounded_up(others / (window as f64 * exp_epsilon_safe(epsilon) + others)).expect("a probability");
        SquareWave { bins, inputs, window, outside, threshold: 1e-3 * e }
    }

    /// `G`, the inputs of the fine grid (a multiple of the bins).
    ///
    /// See the example on [`SquareWave`].
    pub fn inputs(&self) -> u64 {
        self.inputs
    }

    /// `m`, the cells of a bin's window.
    ///
    /// See the example on [`SquareWave`].
    pub fn window(&self) -> u64 {
        self.window
    }

    /// `N = G + m − 1`, the cells a report can name.
    ///
    /// See the example on [`SquareWave`].
    pub fn cells(&self) -> u64 {
        self.inputs + self.window - 1
    }

    /// `(p, q)`: the realized probability of one cell inside and outside the window.
    ///
    /// See the example on [`SquareWave`].
    pub fn cell_probabilities(&self) -> (f64, f64) {
        let out = self.outside.probability();
        ((1.0 - out) / self.window as f64, out / (self.inputs - 1) as f64)
    }

    /// A cell for a value at `input`.
    pub(crate) fn sample(&self, input: u64, rng: &mut dyn RngCore) -> u64 {
        if self.outside.sample(rng) {
            let u = uniform_below(rng, self.inputs - 1);
            if u < input {
                u
            } else {
                u + self.window
            }
        } else {
            input + uniform_below(rng, self.window)
        }
    }

    /// `P[cell | input]` of the realized channel.
    ///
    /// See the example on [`SquareWave`].
    pub fn probability(&self, input: u64, cell: u64) -> f64 {
        let (p, q) = self.cell_probabilities();
        if cell >= self.cells() || input >= self.inputs {
            0.0
        } else if (input..input + self.window).contains(&cell) {
            p
        } else {
            q
        }
    }

    /// The position of a cell's centre in inputs from the range's low end
    /// (cells beyond the window's reach of the range lie outside it).
    ///
    /// See the example on [`SquareWave`].
    pub fn cell_centre(&self, cell: u64) -> f64 {
        cell as f64 + 0.5 - (self.window - 1) as f64 * 0.5
    }

    /// `P[cell]` for every cell when the inputs have distribution `x`.
    #[doc(hidden)]
    pub fn output_distribution(&self, x: &[f64]) -> Vec<f64> {
        let (p, q) = self.cell_probabilities();
        let prefix = prefix_sums(x);
        let total = prefix[x.len()];
        (0..self.cells() as usize)
            .map(|k| {
                let (from, to) = ((k + 1).saturating_sub(self.window as usize), (k + 1).min(x.len()));
                q * total + (p - q) * (prefix[to] - prefix[from.min(to)])
            })
            .collect()
    }

    /// The bins' distribution from the inputs'.
    #[doc(hidden)]
    pub fn bins_of(&self, x: &[f64]) -> Vec<f64> {
        x.chunks((self.inputs / self.bins) as usize).map(|c| c.iter().sum()).collect()
    }

    /// EMS: the inputs' distribution that the cell counts point to.
    #[doc(hidden)]
    pub fn reconstruct(&self, counts: &[f64]) -> Vec<f64> {
        let inputs = self.inputs as usize;
        let n: f64 = counts.iter().sum();
        let mut x = vec![1.0 / inputs as f64; inputs];
        if n <= 0.0 {
            return x;
        }
        let (p, q) = self.cell_probabilities();
        let m = self.window as usize;
        let mut previous = f64::NEG_INFINITY;
        for iteration in 0..MAX_ITERATIONS {
            let outputs = self.output_distribution(&x);
            let check = iteration % CHECK_EVERY == 0;
            let mut likelihood = 0.0;
            let ratios: Vec<f64> = counts
                .iter()
                .zip(&outputs)
                .map(|(&c, &o)| {
                    if c > 0.0 {
                        if check {
                            likelihood += c * crate::number::ln(o);
                        }
                        c / o
                    } else {
                        0.0
                    }
                })
                .collect();
            let prefix = prefix_sums(&ratios);
            let all = prefix[ratios.len()];
            for (j, xj) in x.iter_mut().enumerate() {
                *xj *= (q * all + (p - q) * (prefix[j + m] - prefix[j])) / n;
            }
            smooth(&mut x);
            if check {
                if (likelihood - previous).abs() < self.threshold * CHECK_EVERY as f64 {
                    break;
                }
                previous = likelihood;
            }
        }
        x
    }
}

/// `[0, x_0, x_0 + x_1, …]`.
fn prefix_sums(x: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len() + 1);
    let mut sum = 0.0;
    out.push(0.0);
    for &v in x {
        sum += v;
        out.push(sum);
    }
    out
}

/// The binomial smoothing `(1, 2, 1)/4`, the edges reflected (so the total
/// is kept), then renormalized against rounding.
fn smooth(x: &mut [f64]) {
    let last = x.len() - 1;
    let smoothed: Vec<f64> = (0..x.len())
        .map(|j| (x[j.saturating_sub(1)] + 2.0 * x[j] + x[if j == last { last } else { j + 1 }]) * 0.25)
        .collect();
    let total: f64 = smoothed.iter().sum();
    for (xj, s) in x.iter_mut().zip(smoothed) {
        *xj = s / total;
    }
}
