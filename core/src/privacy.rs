//! ε and the numbers derived from it, rounded in the safe direction.

use crate::error::{Error, Requirement, Result};
pub use crate::number::{exp, ln, number_text};

/// Checks that ε is a finite, positive number.
///
/// ```
/// use localdp::privacy::validate_epsilon;
/// assert_eq!(validate_epsilon(0.5)?, 0.5);
/// assert!(validate_epsilon(0.0).is_err() && validate_epsilon(f64::INFINITY).is_err() && validate_epsilon(f64::NAN).is_err());
/// # Ok::<(), localdp::Error>(())
/// ```
pub fn validate_epsilon(epsilon: f64) -> Result<f64> {
    if epsilon.is_finite() && epsilon > 0.0 {
        Ok(epsilon)
    } else {
        Err(Error::invalid("epsilon", Requirement::Positive { found: epsilon }))
    }
}

/// The largest ratio `e^ε` that mechanisms may aim for.
///
/// Returns a number `≤ e^ε`: `libm::exp` is within one ulp, and the result is
/// lowered by a relative `2^-42` (≈ 2.3e-13), which covers that ulp and the few
/// roundings between this number and a mechanism's realized coin thresholds.
/// The realized channels stay within ε while their log-ratio is still within
/// 1e-12 of ε, which the channel tests assert. `libm` is the one `exp` used
/// natively and in wasm, so both compute the same bits.
///
/// With the other roundings toward privacy:
///
/// ```
/// use localdp::privacy::{add_rounded_up, epsilon_rounded_up, exp, exp_epsilon_safe, ln};
/// assert!(exp_epsilon_safe(1.0) < exp(1.0)); // a mechanism aims below e^ε
/// assert!(epsilon_rounded_up(1.0) > 1.0 && epsilon_rounded_up(1.0) - 1.0 < 1e-12); // a claim rounds up
/// assert_eq!(add_rounded_up(0.25, 0.5), 0.75); // exact sums stay
/// assert!(add_rounded_up(0.1, 0.2) >= 0.1 + 0.2); // inexact ones never fall short
/// assert!((ln(exp(2.0)) - 2.0).abs() < 1e-15);
/// ```
pub fn exp_epsilon_safe(epsilon: f64) -> f64 {
    libm::exp(epsilon) * (1.0 - f64::powi(2.0, -42))
}

/// An ε computed from realized probabilities (a few roundings and one
/// `ln`, each within an ulp), raised by a relative `2^-42` so that the
/// number claimed is never below the true one: constants round toward more
/// privacy, and a claimed ε toward a larger one.
///
/// See the example on [`exp_epsilon_safe`].
pub fn epsilon_rounded_up(epsilon: f64) -> f64 {
    epsilon * (1.0 + f64::powi(2.0, -42))
}

/// `a + b` rounded up: the exact sum's upper bound (the sum itself when the
/// addition is exact, the next float above it otherwise). Ledgers add with
/// it, so rounding errors never let them overspend.
///
/// See the example on [`exp_epsilon_safe`].
pub fn add_rounded_up(a: f64, b: f64) -> f64 {
    let sum = a + b;
    // Two-sum: `sum + error` is exactly `a + b`.
    let b_virtual = sum - a;
    let error = (a - (sum - b_virtual)) + (b - b_virtual);
    if error > 0.0 {
        sum.next_up()
    } else {
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_round_up_only_when_inexact() {
        assert_eq!(add_rounded_up(0.25, 0.5), 0.75, "exact sums stay");
        let mut total = 0.0;
        for _ in 0..10 {
            total = add_rounded_up(total, 0.1);
        }
        assert!(total > 1.0, "ten times the float 0.1 exceeds 1 exactly: {total}");
        assert!(epsilon_rounded_up(4.0) > 4.0);
    }
}
