//! Amplification by shuffling: the analyst's side of the accountant (the
//! `aggregate` feature), beside the composition the device's ledger uses.

use super::{bisect, check_delta, ln_binomial, SLACK, UNDERFLOW};
use crate::error::{Error, Requirement, Result};
use crate::privacy::validate_epsilon;
use serde::Serialize;

/// The most clones `n·e^−ε₀` (the mean of `C` in [`shuffle`]) the numerical
/// method sums over: its work grows with it (about 25 s at this bound).
pub const MAX_CLONES: f64 = 1e6;

/// What `localdp privacy shuffle` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Amplification {
    /// An upper bound on the central ε of the shuffled reports.
    pub epsilon: f64,
    /// A lower bound on the ε the numerical method certifies (the method's
    /// value lies in `[lower, epsilon]`).
    pub lower: f64,
    /// The paper's closed form, where its condition holds (else `None`,
    /// `null` in JSON).
    pub closed_form: Option<f64>,
}

/// Privacy amplification by shuffling: an upper bound on the central ε of
/// `n` reports, each from an `epsilon0`-DP local randomizer, shuffled
/// before the analyst sees them, at the given δ. `n` may be at most
/// `MAX_CLONES·e^ε₀` ([`MAX_CLONES`]).
///
/// Feldman, McMillan, Talwar, "Hiding among the clones: a simple and nearly
/// optimal analysis of privacy amplification by shuffling" (FOCS 2021),
/// the shuffled output on neighbouring datasets is a
/// post-processing of `P = (A + Δ, C − A + 1 − Δ)` versus
/// `Q = (A + 1 − Δ, C − A + Δ)` with `C ~ Bin(n − 1, e^−ε₀)`,
/// `A ~ Bin(C, ½)`, `Δ ~ Bern(e^ε₀ / (e^ε₀ + 1))`. The hockey-stick
/// divergence of that pair is computed here for every `c` that carries
/// probability (their numerical method without its step approximation):
/// given `C = c` the pair is two mixtures of `Bin(c, ½)` and its shift, whose
/// likelihood ratio is monotone, so the divergence is a sum over one tail.
/// The two directions are equal by symmetry. Sums are truncated where the
/// rest is bounded by a geometric series, and `epsilon` adds that bound,
/// the unvisited mass of `C` and every float error bound; `lower` leaves
/// them out and bisects the other way, so the method's value lies in
/// `[lower, epsilon]`. `closed_form` is the paper's closed-form bound as
/// the authors' reference code evaluates it, for `ε₀ ≤ ln(n / (16 ln(4/δ)))`.
///
/// ```
/// use localdp::accounting::shuffle;
/// let shuffled = shuffle(4.0, 100_000, 1e-6).unwrap();
/// assert!(shuffled.lower <= shuffled.epsilon && shuffled.epsilon < 0.1728);
/// assert!((shuffled.closed_form.unwrap() - 0.5378).abs() < 1e-4);
/// ```
pub fn shuffle(epsilon0: f64, n: u64, delta: f64) -> Result<Amplification> {
    let epsilon0 = validate_epsilon(epsilon0)?;
    // A float above u64::MAX converts to u64::MAX.
    let max = (MAX_CLONES * libm::exp(epsilon0)).floor() as u64;
    if n < 1 || n > max {
        return Err(Error::invalid("n", Requirement::IntegerRange { min: 1, max, found: n }));
    }
    let delta = check_delta("delta", delta)?;
    let divergence = |epsilon: f64, upper: bool| shuffled_delta(epsilon0, n, epsilon, delta, upper);
    let (_, epsilon) = bisect(epsilon0, delta, |e| divergence(e, true));
    let (lower, _) = bisect(epsilon0, delta, |e| divergence(e, false));
    Ok(Amplification { epsilon, lower, closed_form: closed_form(epsilon0, n as f64, delta) })
}

/// FMT 2021's closed-form bound, in the form of the authors' reference code.
fn closed_form(epsilon0: f64, n: f64, delta: f64) -> Option<f64> {
    let log4 = libm::log(4.0 / delta);
    if epsilon0 > libm::log(n / (16.0 * log4)) {
        return None;
    }
    let a = 8.0 * libm::sqrt(libm::exp(epsilon0) * log4) / libm::sqrt(n);
    let c = 8.0 * libm::exp(epsilon0) / n;
    let e = libm::log1p(a + c);
    let b = -libm::expm1(-epsilon0);
    let d = 1.0 + libm::exp(-epsilon0 - e);
    Some(libm::log1p(b / d * (a + c)))
}

/// δ of the clone pair at ε: an upper bound (`upper`) or a lower bound.
/// `target` only sets where sums may stop (their rest below `target·2^-40`).
fn shuffled_delta(epsilon0: f64, n: u64, epsilon: f64, target: f64, upper: bool) -> f64 {
    if epsilon >= epsilon0 {
        return 0.0;
    }
    let e0 = libm::exp(epsilon0);
    // P(x) − e^ε Q(x) = a·b(x−1) − b_coef·b(x), b = Bin(c, ½).
    let a = libm::exp(epsilon) * libm::expm1(epsilon0 - epsilon) / (1.0 + e0);
    let b_coef = libm::expm1(epsilon + epsilon0) / (1.0 + e0);
    let stop = target * SLACK;
    // C ~ Bin(n − 1, p), visited from its mode outwards.
    let m = n - 1;
    let p = libm::exp(-epsilon0);
    let ln_p = -epsilon0;
    let ln_q = libm::log1p(-p);
    let mode = ((m as f64 + 1.0) * p).floor().min(m as f64) as u64;
    let ln_pmf = |c: u64| ln_binomial(m, c) + c as f64 * ln_p + (m - c) as f64 * ln_q;
    // Bounds the logarithms summed for a pmf of C and for one of Bin(c, ½).
    let magnitude = 2.0 * libm::lgamma(m as f64 + 1.0) + m as f64 * (epsilon0 - ln_q + core::f64::consts::LN_2) + 1.0;
    let (mut sum, mut errors) = (0.0, 0.0);
    let mut add_c = |c: u64, pmf: f64| {
        let (d, rest, error) = given_c(c, a, b_coef, stop);
        sum += pmf * (d + if upper { rest } else { 0.0 });
        errors += pmf * error;
    };
    let mut unvisited = 0.0;
    // Upwards: pmf(c+1)/pmf(c) = (m − c)/(c + 1) · p/(1 − p), decreasing in c.
    let mut pmf = libm::exp(ln_pmf(mode));
    let mut c = mode;
    loop {
        add_c(c, pmf);
        if c == m {
            break;
        }
        let ratio = (m - c) as f64 / (c + 1) as f64 * p / (1.0 - p);
        pmf *= ratio;
        c += 1;
        if ratio < 1.0 && pmf / (1.0 - ratio) < stop {
            unvisited += pmf / (1.0 - ratio);
            break;
        }
    }
    // Downwards: pmf(c−1)/pmf(c) = c/(m − c + 1) · (1 − p)/p, decreasing as c falls.
    let mut pmf = libm::exp(ln_pmf(mode));
    let mut c = mode;
    while c > 0 {
        let ratio = c as f64 / (m - c + 1) as f64 * (1.0 - p) / p;
        pmf *= ratio;
        c -= 1;
        if ratio < 1.0 && pmf / (1.0 - ratio) < stop {
            unvisited += pmf / (1.0 - ratio);
            break;
        }
        add_c(c, pmf);
    }
    if upper {
        // Each pmf is within e^(SLACK·magnitude) of its value, each
        // recurrence step (at most n for C, n for Bin(c, ½)) a few ulps.
        let factor = libm::exp(SLACK * magnitude) * (1.0 + 8.0 * n as f64 * f64::EPSILON);
        (sum + errors + unvisited) * factor + UNDERFLOW
    } else {
        let factor = libm::exp(-SLACK * magnitude) * (1.0 - 8.0 * n as f64 * f64::EPSILON);
        ((sum - errors) * factor).max(0.0)
    }
}

/// Given `C = c`: `Σ_x (a·b(x−1) − b_coef·b(x))₊` over `x ∈ 0..=c+1`, with
/// `b = Bin(c, ½)`, as (the visited sum, a bound on the rest, a bound on
/// the float error). The terms are positive exactly above
/// `x = b_coef/(a + b_coef)·(c + 1)`, where the sum starts.
fn given_c(c: u64, a: f64, b_coef: f64, stop: f64) -> (f64, f64, f64) {
    // One below the computed cutoff: its rounding cannot skip a positive term.
    let start = ((b_coef / (a + b_coef) * (c + 1) as f64).floor() as u64).saturating_sub(1).clamp(1, c + 1);
    let ln_half = -core::f64::consts::LN_2;
    // b(x − 1) at x = start.
    let mut previous = libm::exp(ln_binomial(c, start - 1) + c as f64 * ln_half);
    let (mut sum, mut error) = (0.0, 0.0);
    let mut x = start;
    loop {
        let current = if x <= c { previous * (c - x + 1) as f64 / x as f64 } else { 0.0 };
        let (plus, minus) = (a * previous, b_coef * current);
        sum += (plus - minus).max(0.0);
        error += (plus + minus) * 4.0 * f64::EPSILON;
        if x > c {
            return (sum, 0.0, error);
        }
        // The rest: Σ_{y ≥ x} a·b(y) ≤ a·b(x)/(1 − ρ), ρ = (c − x)/(x + 1) < 1 past the mode.
        let rho = (c - x) as f64 / (x + 1) as f64;
        if rho < 1.0 {
            let rest = a * current / (1.0 - rho);
            if rest < stop {
                return (sum, rest, error);
            }
        }
        previous = current;
        x += 1;
    }
}
