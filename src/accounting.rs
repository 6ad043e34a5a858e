//! Privacy accounting for the analyst: the central (ε, δ) of many ε-LDP
//! reports of one user ([`compose`]), and of `n` users' reports after a
//! shuffler ([`shuffle`]). Both are upper bounds that are never below the
//! truth: every rounding, truncation and float error is taken in the
//! direction of a larger δ, and ε is the least one whose over-estimated δ
//! meets the target. The formulas are in `docs/PROTOCOLS.md`.

use crate::error::{Error, Requirement, Result};
use crate::privacy::{add_rounded_up, validate_epsilon};
use serde::Serialize;

/// The most privacy-loss values [`compose`] enumerates (the product of
/// `count + 1` over the distinct ε).
pub const MAX_SUPPORT: u64 = 10_000_000;

/// The most clones `n·e^−ε₀` (the mean of `C` in [`shuffle`]) the numerical
/// method sums over: its work grows with it (about 25 s at this bound).
pub const MAX_CLONES: f64 = 1e6;

/// A relative error that covers every float operation's (a few ulps each,
/// `2^-40` ≈ 9.1e-13 is 4,096 ulps) times the magnitude it is applied to.
const SLACK: f64 = 1.0 / (1u64 << 40) as f64;

/// δ must be above this. Every term lost to float underflow (below 2^-1022,
/// at most 10^14 of them in either accountant) together stay below
/// 10^-280, which the upper bounds add: far below any accepted δ.
pub const MIN_DELTA: f64 = 1e-200;

/// Added to every upper bound on δ: covers what underflow lost.
const UNDERFLOW: f64 = 1e-280;

/// Bisection steps: the interval shrinks by 2^-64, below an ulp of ε.
const BISECTION_STEPS: u32 = 64;

/// What `localdp privacy compose` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Composition {
    /// The least ε for which the composition is (ε, δ)-DP (up to the upward
    /// rounding described in [`compose`]).
    pub epsilon: f64,
    /// The δ asked for.
    pub delta: f64,
    /// The basic composition Σ ε (δ = 0), rounded up.
    pub sum: f64,
}

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

fn check_delta(delta: f64) -> Result<f64> {
    if delta > MIN_DELTA && delta < 1.0 {
        Ok(delta)
    } else {
        Err(Error::invalid("delta", Requirement::ExclusiveRange { min: MIN_DELTA, max: 1.0, found: delta }))
    }
}

fn check_count(parameter: &'static str, count: u64) -> Result<u64> {
    if count >= 1 {
        Ok(count)
    } else {
        Err(Error::invalid(parameter, Requirement::IntegerRange { min: 1, max: u64::MAX, found: count }))
    }
}

/// `a·b` rounded up: the exact product's upper bound (fma gives the
/// product's rounding error exactly).
fn product_rounded_up(a: f64, b: f64) -> f64 {
    let product = a * b;
    if libm::fma(a, b, -product) > 0.0 {
        product.next_up()
    } else {
        product
    }
}

/// `ln C(k, b)` with `libm::lgamma`.
fn ln_binomial(k: u64, b: u64) -> f64 {
    libm::lgamma(k as f64 + 1.0) - libm::lgamma(b as f64 + 1.0) - libm::lgamma((k - b) as f64 + 1.0)
}

/// Bisection for a non-increasing `delta` on `[0, hi]`: `(lo, hi)` within
/// 2^-64·`hi` of each other, with `delta(hi) ≤ target` (when it holds at the
/// start) and `delta(lo) > target` unless `lo = 0`; `(0, 0)` when
/// `delta(0) ≤ target`.
fn bisect(hi: f64, target: f64, delta: impl Fn(f64) -> f64) -> (f64, f64) {
    if delta(0.0) <= target {
        return (0.0, 0.0);
    }
    let (mut lo, mut hi) = (0.0, hi);
    for _ in 0..BISECTION_STEPS {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if delta(mid) <= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (lo, hi)
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
/// what underflow may lose (`delta` is above [`MIN_DELTA`]). The
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
    let delta = check_delta(delta)?;
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
    let delta = check_delta(delta)?;
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
