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
/// The two-sided acceptance region of a count of `trials` independent
/// events of probability `p` at a false-alarm rate `alpha`, computed
/// exactly from the binomial distribution: the counts `lo..=hi` with
/// `P[X < lo] ≤ alpha/2` and `P[X > hi] ≤ alpha/2`, each tail as large as
/// that allows.
pub fn binomial_acceptance(trials: usize, p: f64, alpha: f64) -> std::ops::RangeInclusive<usize> {
    let n = trials as f64;
    let pmf = |k: usize| {
        let k = k as f64;
        let ln_choose = libm::lgamma(n + 1.0) - libm::lgamma(k + 1.0) - libm::lgamma(n - k + 1.0);
        libm::exp(ln_choose + k * libm::log(p) + (n - k) * libm::log1p(-p))
    };
    // The first count at which a tail's mass passes alpha/2.
    let first_past = |counts: Vec<usize>| {
        let mut mass = 0.0;
        for k in counts {
            mass += pmf(k);
            if mass > alpha / 2.0 {
                return k;
            }
        }
        unreachable!("the masses sum to one")
    };
    let lo = first_past((0..=trials).collect());
    let hi = first_past((0..=trials).rev().collect());
    lo..=hi
}

/// Of `trials` independent nominal 95% intervals, `covered` covered their
/// target: under honest intervals a Binomial(trials, 0.95) count. Fails
/// outside its two-sided acceptance region at a false-alarm rate `alpha`
/// ([`binomial_acceptance`]): too few covers (intervals too narrow) and too
/// many (too wide) alike.
pub fn assert_coverage(what: &str, covered: usize, trials: usize, alpha: f64) {
    let region = binomial_acceptance(trials, 0.95, alpha);
    assert!(region.contains(&covered), "{what}: {covered} of {trials} 95% intervals covered, outside {region:?} (α = {alpha:e})");
}

/// A 95% interval `ci95` is `estimate ± z·std_error`, `z = Φ^{-1}(0.975)`
/// computed here (not the library's constant), to 1e-12 of the interval's
/// scale: both endpoints, so a too narrow or too wide one fails.
pub fn assert_interval(what: &str, ci95: [f64; 2], estimate: f64, std_error: f64) {
    static Z: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    let z = *Z.get_or_init(|| z_critical(0.05, 1));
    let expected = [estimate - z * std_error, estimate + z * std_error];
    let scale = estimate.abs() + std_error;
    assert!(
        ci95.iter().zip(&expected).all(|(a, b)| (a - b).abs() <= 1e-12 * scale),
        "{what}: ci95 {ci95:?}, expected {expected:?} (estimate ± {z}·{std_error})"
    );
}

pub mod channel;
pub mod demo;
pub mod golden;
pub mod memo;
pub mod readers;

/// A client's state as the JSON text of format 4, which releases before
/// the byte form stored (format 3 when no memo is partly charged): what
/// the tests of that reader edit. As those releases wrote them, a memo is
/// its report's JSON text, RAPPOR's permanent bits hex.
pub fn legacy_state(client: &localdp::client::Client) -> serde_json::Value {
    let state = localdp::client::ClientState::from_bytes(&client.state_bytes()).expect("a client's own state reads");
    let mut json = serde_json::to_value(&state).expect("a state serializes");
    json["version"] = if state.reports.is_empty() { 3 } else { 4 }.into();
    let metric = client.metric();
    if metric.protocol() != localdp::Protocol::OpenDomain(localdp::OpenDomainProtocol::Rappor) {
        let fingerprint = metric.id().rsplit(':').next().expect("an id ends with its fingerprint").to_string();
        for (key, memo) in state.memos.iter() {
            let report = localdp::Report::from_memo(memo, metric.protocol(), metric.epsilon(), &fingerprint).expect("a report's memo");
            json["memos"][key] = report.to_json().into();
        }
    }
    json
}
