//! ε and the numbers derived from it, rounded in the safe direction.

use crate::error::{Error, Requirement, Result};

/// A number as text, shortest round-trip form (as in JSON). Used instead of
/// `{}` formatting, whose float code would add kilobytes to the wasm build.
pub fn number_text(x: f64) -> String {
    if x.is_finite() {
        serde_json::Value::from(x).to_string()
    } else {
        (if x.is_nan() { "NaN" } else if x > 0.0 { "Infinity" } else { "-Infinity" }).to_string()
    }
}

/// Checks that ε is a finite, positive number.
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
pub fn exp_epsilon_safe(epsilon: f64) -> f64 {
    libm::exp(epsilon) * (1.0 - f64::powi(2.0, -42))
}

/// `e^x` with the project's single implementation (identical native and wasm).
pub fn exp(x: f64) -> f64 {
    libm::exp(x)
}

/// `ln x` with the project's single implementation (identical native and wasm).
pub fn ln(x: f64) -> f64 {
    libm::log(x)
}
