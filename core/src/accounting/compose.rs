//! Optimal composition of many ε-LDP reports of one user.

use super::bounds::{bisect, check_count, check_delta, ln_binomial, product_rounded_up, SLACK, UNDERFLOW};
use crate::error::{Error, Requirement, Result};
use crate::privacy::{add_rounded_up, validate_epsilon};

/// The most privacy-loss values [`compose`] enumerates (the product of
/// `count + 1` over the distinct ε).
pub const MAX_SUPPORT: u64 = 10_000_000;

/// What `localdp privacy compose` prints.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Composition {
    /// The least ε for which the composition is (ε, δ)-DP (up to the upward
    /// rounding described in [`compose`]).
    pub epsilon: f64,
    /// The δ asked for.
    pub delta: f64,
    /// The basic composition Σ ε (δ = 0), rounded up.
    pub sum: f64,
}

/// The optimal composition of pure-DP reports: `reports` lists `(ε, count)`
/// groups; the result is the least ε with which all of them together are
/// (ε, `delta`)-DP, and the basic composition `Σ count·ε` beside it.
///
/// Every ε-DP mechanism is dominated by binary randomized response with the
/// same ε (Kairouz, Oh, Viswanath, "The composition theorem for
/// differential privacy", ICML 2015; Murtagh and Vadhan, TCC
/// 2016, for mixed ε), so the composition's exact `δ(ε)` is the hockey-stick
/// divergence of a product of randomized-response pairs: with privacy loss
/// `L = Σ ±ε_i`, `+ε_i` with probability `e^ε_i / (1 + e^ε_i)`,
/// `δ(ε) = E[(1 − e^(ε−L))₊]`. `L` takes `Π (count + 1)` values over the
/// distinct ε, all enumerated (at most [`MAX_SUPPORT`], else an error).
///
/// Why the result is never below the truth: each probability's logarithm
/// is computed with an error bound (`lgamma` and sums, a relative `2^-40`
/// of their magnitude), and δ is multiplied by `e^` that bound; each value
/// of `L` is lowered by a bound on its rounding error; `1 − e^(ε−L)` is
/// `-expm1(ε − L)` (no cancellation); the sum is shifted by its largest
/// term (log-sum-exp), raised by the float error of the summation and by
/// what underflow may lose (`delta` is above [`MIN_DELTA`](super::MIN_DELTA)). The
/// δ computed is therefore at least the exact δ, and the ε returned is the
/// upper end of a bisection on it, so the exact δ at that ε is at most
/// `delta`. With one ε this is exactly Kairouz–Oh–Viswanath's optimal
/// composition, rounded up.
///
/// ```
/// use localdp::accounting::compose;
/// let year = compose(&[(0.1, 365)], 1e-6).unwrap();
/// assert!(year.epsilon > 10.0 && year.epsilon < 10.4, "{}", year.epsilon);
/// assert!(year.sum >= 36.5);
/// ```
pub fn compose(reports: &[(f64, u64)], delta: f64) -> Result<Composition> {
    let delta = check_delta("delta", delta)?;
    if reports.is_empty() {
        return Err(Error::invalid("reports", Requirement::NonEmpty));
    }
    // Groups of the same ε merge: their losses add exactly.
    let mut groups: Vec<(f64, u64)> = Vec::new();
    for &(epsilon, count) in reports {
        let epsilon = validate_epsilon(epsilon)?;
        let count = check_count("count", count)?;
        match groups.iter_mut().find(|(e, _)| *e == epsilon) {
            Some(group) => group.1 = group.1.saturating_add(count),
            None => groups.push((epsilon, count)),
        }
    }
    let support = groups.iter().try_fold(1u64, |n, &(_, k)| n.checked_mul(k.checked_add(1)?).filter(|&n| n <= MAX_SUPPORT));
    let Some(support) = support else {
        let found = groups.iter().fold(1u64, |n, &(_, k)| n.saturating_mul(k.saturating_add(1)));
        return Err(Error::invalid("support", Requirement::IntegerRange { min: 1, max: MAX_SUPPORT, found }));
    };
    let sum = groups.iter().fold(0.0, |s, &(e, k)| add_rounded_up(s, product_rounded_up(e, k as f64)));
    // (L, ln P) of every value of the loss, built group by group.
    let mut points: Vec<(f64, f64)> = Vec::with_capacity(support as usize);
    points.push((0.0, 0.0));
    let mut log_magnitude = 1.0;
    for &(epsilon, k) in &groups {
        // ln p and ln(1 − p) of the +ε outcome, p = e^ε / (1 + e^ε).
        let ln_p = -libm::log1p(libm::exp(-epsilon));
        let ln_q = ln_p - epsilon;
        log_magnitude += libm::lgamma(k as f64 + 1.0) + k as f64 * -ln_q;
        let group: Vec<(f64, f64)> = (0..=k)
            .map(|b| (epsilon * (2.0 * b as f64 - k as f64), ln_binomial(k, b) + b as f64 * ln_p + (k - b) as f64 * ln_q))
            .collect();
        points = points.iter().flat_map(|&(l, lp)| group.iter().map(move |&(gl, glp)| (l + gl, lp + glp))).collect();
    }
    // Largest loss first: δ(ε) sums a prefix.
    points.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let loss_error = SLACK * sum;
    let probability_factor = libm::exp(SLACK * log_magnitude) * (1.0 + support as f64 * f64::EPSILON);
    let delta_upper = |epsilon: f64| -> f64 {
        let shifted = epsilon - loss_error;
        let above = points.partition_point(|&(l, _)| l > shifted);
        let Some(top) = points[..above].iter().map(|&(_, lp)| lp).reduce(f64::max) else {
            return 0.0;
        };
        let total: f64 = points[..above].iter().map(|&(l, lp)| libm::exp(lp - top) * -libm::expm1(shifted - l)).sum();
        libm::exp(top) * total * probability_factor + UNDERFLOW
    };
    // The exact δ at `sum` is 0: the search's end has room for the rounding.
    let (_, epsilon) = bisect(sum * (1.0 + 4.0 * SLACK), delta, delta_upper);
    let epsilon = epsilon.min(sum);
    Ok(Composition { epsilon, delta, sum })
}
