//! Synthetic populations for simulation, benchmarks and tests.
//!
//! Nothing here is on a privacy path: it draws the *true* values of
//! simulated users, which a real deployment never has.

use localdp_core::rng::{uniform_below, RngCore};

/// A distribution over `0..d` with integer weights, sampled exactly.
#[derive(Debug, Clone)]
pub struct Population {
    cumulative: Vec<u64>,
}

impl Population {
    /// From non-negative integer weights (at least one positive).
    ///
    /// ```
    /// use localdp::simulate::Population;
    /// use localdp::SimulationRng;
    /// let population = Population::from_weights(&[1, 0, 3]);
    /// assert_eq!(population.frequencies(), [0.25, 0.0, 0.75]);
    /// let mut rng = SimulationRng::seed_from_u64(2); // simulation only
    /// let users: Vec<usize> = (0..100).map(|_| population.sample(&mut rng)).collect();
    /// assert!(users.iter().all(|&v| v == 0 || v == 2)); // weight 0 is never drawn
    /// ```
    pub fn from_weights(weights: &[u64]) -> Self {
        let cumulative = weights
            .iter()
            .scan(0u64, |total, &w| {
                *total += w;
                Some(*total)
            })
            .collect::<Vec<_>>();
        assert!(cumulative.last().is_some_and(|&t| t > 0), "weights must not all be zero");
        Population { cumulative }
    }

    /// A Zipf-like skewed distribution: weight of `v` ∝ `1/(v+1)^s`.
    ///
    /// ```
    /// use localdp::simulate::Population;
    /// use localdp::SimulationRng;
    /// let population = Population::zipf(4, 1.0);
    /// let f = population.frequencies();
    /// assert!((f[0] / f[1] - 2.0).abs() < 1e-6 && (f.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    /// let mut rng = SimulationRng::seed_from_u64(5); // simulation only
    /// assert!(population.sample(&mut rng) < 4);
    /// ```
    pub fn zipf(d: usize, s: f64) -> Self {
        let weights: Vec<u64> =
            (0..d).map(|v| (1e9 / libm::pow(v as f64 + 1.0, s)).round().max(1.0) as u64).collect();
        Self::from_weights(&weights)
    }

    /// The true frequency of every value.
    ///
    /// See the example on [`Population::from_weights`].
    pub fn frequencies(&self) -> Vec<f64> {
        let total = *self.cumulative.last().expect("non-empty") as f64;
        let mut previous = 0;
        self.cumulative
            .iter()
            .map(|&c| {
                let f = (c - previous) as f64 / total;
                previous = c;
                f
            })
            .collect()
    }

    /// One simulated user's value.
    ///
    /// See the example on [`Population::from_weights`].
    pub fn sample(&self, rng: &mut dyn RngCore) -> usize {
        let total = *self.cumulative.last().expect("non-empty");
        let u = uniform_below(rng, total);
        self.cumulative.partition_point(|&c| c <= u)
    }
}

/// A record of true values, one per range, each from a bimodal mixture: 70%
/// uniform on the lowest fifth of its range, 30% uniform on the top tenth.
/// Floating point is fine here: these are the simulated *inputs*.
///
/// ```
/// use localdp::simulate::bimodal_record;
/// use localdp::SimulationRng;
/// let mut rng = SimulationRng::seed_from_u64(3); // simulation only
/// let record = bimodal_record(&[[0.0, 100.0], [10.0, 20.0]], &mut rng);
/// assert_eq!(record.len(), 2);
/// assert!((0.0..=20.0).contains(&record[0]) || (90.0..=100.0).contains(&record[0]));
/// assert!((10.0..=12.0).contains(&record[1]) || (19.0..=20.0).contains(&record[1]));
/// ```
pub fn bimodal_record<R: RngCore + ?Sized>(ranges: &[[f64; 2]], rng: &mut R) -> Vec<f64> {
    ranges
        .iter()
        .map(|&[lo, hi]| {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let position = if uniform_below(rng, 10) < 7 { 0.2 * u } else { 0.9 + 0.1 * u };
            lo + (hi - lo) * position
        })
        .collect()
}
