//! Amplification by shuffling: the analyst's side of the accountant, beside
//! the composition the device's ledger uses (`localdp-core`'s):
//! for any ε₀-DP randomizer ([`shuffle`]) and for k-ary randomized
//! response ([`shuffle_randomized_response`]).

use localdp_core::accounting::bounds::{bisect, check_delta, ln_binomial, SLACK, UNDERFLOW};
use localdp_core::domain::MAX_DOMAIN;
use localdp_core::error::{Error, Requirement, Result};
use localdp_core::privacy::validate_epsilon;

/// The most clones `n·e^−ε₀` (the mean of `C` in [`shuffle`]) the numerical
/// method sums over: its work grows with it (about 25 s at this bound for
/// the generic bound; [`shuffle_randomized_response`], k-ary randomized
/// response, evaluates both of its decompositions at every bisection step,
/// so about 2 to 3 times as long).
pub const MAX_CLONES: f64 = 1e6;

/// What `localdp privacy shuffle` prints.
#[derive(Debug, Clone, PartialEq)]
#[derive(serde::Serialize)]
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
    shuffle_clones(epsilon0, n, delta, &[(1.0, -epsilon0)])
}

/// [`shuffle`] for k-ary randomized response (GRR, a domain of `k` values,
/// `2 ≤ k ≤` [`MAX_DOMAIN`]), where
/// the clones are more numerous: an upper bound on the central ε that is at
/// most [`shuffle`]'s, with `lower` and `closed_form` as there (the closed
/// form is the generic one, valid for every ε₀-DP randomizer).
///
/// With `q = 1/(e^ε₀ + k − 1)`, GRR reports its value with probability
/// `e^ε₀·q` and each other value with `q`. For the neighbouring values
/// `a ≠ b` of user 1, write `R(a) = α·Q_a + (1 − α)·Q_b` with
/// `α = e^ε₀/(e^ε₀ + 1)`, `Q_a = (e^ε₀ + 1)q·[a] + q·[each value ≠ a, b]`
/// and `Q_b` alike. `Q_a + Q_b` puts `(e^ε₀ + 1)q` on `a` and on `b` and
/// `2q` elsewhere, and every other user's `R(x)` puts at least `q`
/// everywhere, so `R(x) ≥ (p/2)(Q_a + Q_b)` with `p = 2/(e^ε₀ + 1)`: FMT's clone
/// argument holds with `C ~ Bin(n − 1, p)` instead of `Bin(n − 1, e^−ε₀)`,
/// and `p > e^−ε₀`. A second decomposition clones the points `[a]`, `[b]`
/// themselves: every user sends `a` (or `b`) with probability at least `q`,
/// so `C ~ Bin(n − 1, 2q)`, while user 1 is informative (sends `a` or `b`)
/// only with probability `w = (e^ε₀ + 1)q` and otherwise sends the same
/// distribution under both values: by joint convexity `δ ≤ w·δ_pair`. Both
/// are upper bounds; the smaller is taken at each ε. The clone probability
/// is rounded down and `w` up (fewer clones only add δ: one more clone is a
/// post-processing of the pair).
///
/// ```
/// use localdp::accounting::{shuffle, shuffle_randomized_response};
/// let generic = shuffle(4.0, 100_000, 1e-6).unwrap();
/// let grr = shuffle_randomized_response(4.0, 16, 100_000, 1e-6).unwrap();
/// assert!(grr.epsilon < generic.epsilon);
/// ```
pub fn shuffle_randomized_response(epsilon0: f64, k: u64, n: u64, delta: f64) -> Result<Amplification> {
    let epsilon0 = validate_epsilon(epsilon0)?;
    let max = MAX_DOMAIN as u64;
    if !(2..=max).contains(&k) {
        return Err(Error::invalid("domain", Requirement::IntegerRange { min: 2, max, found: k }));
    }
    // ln(2/(e^ε₀ + 1)) and ln(2/(e^ε₀ + k − 1)), lowered by more than their
    // rounding; w = (e^ε₀ + 1)/(e^ε₀ + k − 1) raised likewise.
    let down = |ln: f64| ln - SLACK * (ln.abs() + 1.0);
    let ln_plus = |x: f64| epsilon0 + libm::log1p(x * libm::exp(-epsilon0));
    let (ln_one, ln_k) = (ln_plus(1.0), ln_plus((k - 1) as f64));
    let weight = (libm::exp(ln_one - ln_k) * (1.0 + SLACK)).min(1.0);
    let ln_two = core::f64::consts::LN_2;
    shuffle_clones(epsilon0, n, delta, &[(1.0, down(ln_two - ln_one)), (weight, down(ln_two - ln_k))])
}

/// The clone-pair bound, the least over `decompositions`: `(w, ln p)`, each
/// meaning `δ ≤ w·δ_pair` with clones of probability `p`.
fn shuffle_clones(epsilon0: f64, n: u64, delta: f64, decompositions: &[(f64, f64)]) -> Result<Amplification> {
    // A float above u64::MAX converts to u64::MAX.
    let max = (MAX_CLONES * libm::exp(epsilon0)).floor() as u64;
    if n < 1 || n > max {
        return Err(Error::invalid("n", Requirement::IntegerRange { min: 1, max, found: n }));
    }
    let delta = check_delta("delta", delta)?;
    let divergence = |epsilon: f64, upper: bool| {
        let each = decompositions.iter().map(|&(w, ln_p)| w * shuffled_delta(epsilon0, ln_p, n, epsilon, delta, upper));
        each.fold(f64::INFINITY, f64::min)
    };
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

/// δ of the clone pair at ε, with clones of probability `e^ln_p`: an upper
/// bound (`upper`) or a lower bound. `target` only sets where sums may stop
/// (their rest below `target·2^-40`).
fn shuffled_delta(epsilon0: f64, ln_p: f64, n: u64, epsilon: f64, target: f64, upper: bool) -> f64 {
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
    let p = libm::exp(ln_p);
    let ln_q = libm::log1p(-p);
    let mode = ((m as f64 + 1.0) * p).floor().min(m as f64) as u64;
    let ln_pmf = |c: u64| ln_binomial(m, c) + c as f64 * ln_p + (m - c) as f64 * ln_q;
    // Bounds the logarithms summed for a pmf of C and for one of Bin(c, ½).
    let magnitude = 2.0 * libm::lgamma(m as f64 + 1.0) + m as f64 * (-ln_p - ln_q + core::f64::consts::LN_2) + 1.0;
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
