//! Helpers shared by the integration tests.
#![allow(dead_code)]

use localdp::{FrequencyOracle, FrequencyProtocol};

/// The oracle for `protocol` at `epsilon` over the integers `0..d`.
pub fn oracle(protocol: FrequencyProtocol, epsilon: f64, d: usize) -> FrequencyOracle {
    FrequencyOracle::from_json(&format!(
        r#"{{"protocol":"{}","epsilon":{epsilon},"domain":{d}}}"#,
        protocol.name()
    ))
    .expect("a valid config")
}

/// The two-sided normal critical value for a false-alarm rate `alpha`
/// shared (Bonferroni) among `tests` tests: `Φ^{-1}(1 − alpha/(2·tests))`.
pub fn z_critical(alpha: f64, tests: usize) -> f64 {
    let tail = alpha / tests as f64; // two-sided: P[|Z| > z] = erfc(z/√2)
    let (mut lo, mut hi) = (0.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if libm::erfc(mid / std::f64::consts::SQRT_2) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The least `k` with `P[X > k] ≤ alpha` for `X ~ Binomial(trials, p)`
/// (exact sum of the terms).
pub fn binomial_critical(alpha: f64, trials: usize, p: f64) -> usize {
    let mut term = (1.0 - p).powi(trials as i32);
    let mut at_most = term;
    for k in 0..trials {
        if 1.0 - at_most <= alpha {
            return k;
        }
        term *= (trials - k) as f64 / (k + 1) as f64 * p / (1.0 - p);
        at_most += term;
    }
    trials
}

/// Upper `alpha` quantile of χ² with `k` degrees of freedom
/// (Wilson–Hilferty; accurate to a few percent for k ≥ 2).
pub fn chi_square_critical(alpha: f64, k: usize) -> f64 {
    let z = z_critical(2.0 * alpha, 1);
    let k = k as f64;
    let c = 2.0 / (9.0 * k);
    k * (1.0 - c + z * c.sqrt()).powi(3)
}
pub mod channel;
pub mod demo;
pub mod golden;
pub mod readers;
