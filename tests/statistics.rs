//! Seeded statistical tests of every protocol's estimator.
//!
//! Each protocol runs R = 1000 independent collections of n = 5000 users with
//! fixed counts (a skewed distribution over d = 16 values), and the tests
//! check, each at a false-alarm rate of α = 1e-6 (Bonferroni-split where one
//! test makes several comparisons):
//!
//! * unbiasedness: for every value, the mean estimate over the R runs is
//!   within `z·sqrt(Var/R)` of the truth, `Var` the closed-form variance;
//! * variance: the mean total squared error `Σ_v (f̂_v − f_v)²` matches
//!   `Σ_v Var[f̂_v]`, a t-test with the runs' own standard deviation;
//! * intervals: each is `f̂ ± 1.959964·std_error`, and for every value the
//!   count of runs whose 95% interval covers the truth is within the exact
//!   two-sided acceptance region of Binomial(R, 0.95) (α split among the
//!   values: the runs are independent, a run's values are not).
//!
//! The seeds are fixed, so the outcome is the same on every run.

mod common;

use common::{assert_coverage, assert_interval, oracle, z_critical};
use localdp::{Aggregate, FrequencyAggregator, FrequencyOracle, FrequencyProtocol, ProtocolFamily, SimulationRng};

const RUNS: usize = 1000;
const USERS: usize = 5000;
const D: usize = 16;
const ALPHA: f64 = 1e-6;

/// Fixed counts: a Zipf-like skew with a few empty values.
fn counts() -> Vec<usize> {
    let weights: Vec<f64> = (0..D).map(|v| if v >= 13 { 0.0 } else { 1.0 / (v as f64 + 1.0) }).collect();
    let total: f64 = weights.iter().sum();
    let mut counts: Vec<usize> = weights.iter().map(|w| (USERS as f64 * w / total).floor() as usize).collect();
    counts[0] += USERS - counts.iter().sum::<usize>();
    counts
}

struct Runs {
    truth: Vec<f64>,
    variance: Vec<f64>,
    /// `estimates[r][v]`: the unbiased estimate of value v in run r.
    estimates: Vec<Vec<f64>>,
    /// `covered[v]`: the runs whose interval for value v covered the truth.
    covered: Vec<usize>,
}

fn run(oracle: &FrequencyOracle, seed: u64) -> Runs {
    let counts = counts();
    let truth: Vec<f64> = counts.iter().map(|&c| c as f64 / USERS as f64).collect();
    let variance: Vec<f64> = truth.iter().map(|&f| oracle.variance(f, USERS as u64)).collect();
    let mut rng = SimulationRng::seed_from_u64(seed);
    let mut estimates = Vec::with_capacity(RUNS);
    let mut covered = vec![0; D];
    for _ in 0..RUNS {
        let mut aggregator = FrequencyAggregator::new(oracle.clone());
        for (value, &count) in counts.iter().enumerate() {
            for _ in 0..count {
                aggregator.add(&oracle.randomize_index(value, &mut rng).unwrap()).unwrap();
            }
        }
        let estimate = aggregator.estimate().unwrap();
        for ((e, &f), covered) in estimate.estimates.iter().zip(&truth).zip(&mut covered) {
            assert_interval(&format!("{:?} {}", oracle.protocol(), e.value), e.ci95, e.unbiased_frequency, e.std_error);
            *covered += usize::from(e.ci95[0] <= f && f <= e.ci95[1]);
        }
        estimates.push(estimate.estimates.iter().map(|e| e.unbiased_frequency).collect());
    }
    Runs { truth, variance, estimates, covered }
}

#[test]
fn estimates_are_unbiased_with_the_closed_form_variance_and_honest_intervals() {
    for (i, &protocol) in FrequencyProtocol::ALL.iter().filter(|&&p| p != FrequencyProtocol::DBitFlip).enumerate() {
        check_estimator(&oracle(protocol, 1.0, D), 1000 + i as u64);
    }
}

/// The same checks with an instantaneous step (ε_∞ = 2, ε_1 = 1): every
/// report a fresh permanent response and the step (as each install's first
/// report is), debiased with the composed channel's `p*`, `q*`.
#[test]
fn longitudinal_estimates_are_unbiased_with_the_composed_variance() {
    for (i, protocol) in ["grr", "sue", "oue", "blh", "olh"].into_iter().enumerate() {
        let config = format!(r#"{{"protocol":"{protocol}","epsilon":2,"domain":{D},"instantaneous_epsilon":1}}"#);
        check_estimator(&FrequencyOracle::from_json(&config).unwrap(), 2000 + i as u64);
    }
}

fn check_estimator(oracle: &FrequencyOracle, seed: u64) {
    let z_values = z_critical(ALPHA, D);
    let z_one = z_critical(ALPHA, 1);
    let protocol = oracle.protocol();
    let runs = run(oracle, seed);
    let r = RUNS as f64;

    for v in 0..D {
        let mean = runs.estimates.iter().map(|e| e[v]).sum::<f64>() / r;
        let z = (mean - runs.truth[v]) / (runs.variance[v] / r).sqrt();
        assert!(z.abs() < z_values, "{protocol:?} value {v}: bias z = {z:.2} (limit {z_values:.2})");
    }

    let errors: Vec<f64> = runs
        .estimates
        .iter()
        .map(|e| e.iter().zip(&runs.truth).map(|(a, b)| (a - b).powi(2)).sum())
        .collect();
    let mean = errors.iter().sum::<f64>() / r;
    let sd = (errors.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (r - 1.0)).sqrt();
    let expected: f64 = runs.variance.iter().sum();
    let t = (mean - expected) / (sd / r.sqrt());
    assert!(
        t.abs() < z_one,
        "{protocol:?}: MSE ÷ closed form = {:.3}, t = {t:.2} (limit {z_one:.2})",
        mean / expected
    );

    for (v, &covered) in runs.covered.iter().enumerate() {
        assert_coverage(&format!("{protocol:?} value {v}"), covered, RUNS, ALPHA / D as f64);
    }
    let coverage = runs.covered.iter().sum::<usize>() as f64 / (r * D as f64);
    eprintln!("{protocol:?} ε={} (long-run {}): MSE ÷ closed form {:.3}, coverage {coverage:.4}", oracle.epsilon(), oracle.long_run_epsilon(), mean / expected);
}

/// A protocol whose estimator is off (here: the aggregator debiasing with the
/// wrong q*) must fail the same checks; this guards the test against being
/// too lax to notice anything.
#[test]
fn a_miscalibrated_estimator_is_caught() {
    let oracle = oracle(FrequencyProtocol::Oue, 1.0, D);
    let runs = run(&oracle, 7);
    let (p, q) = oracle.support_probabilities();
    let wrong_q = q * 1.05;
    let biased: Vec<f64> = (0..D)
        .map(|v| {
            runs.estimates.iter().map(|e| e[v] * (p - q) + q).map(|s| (s - wrong_q) / (p - wrong_q)).sum::<f64>()
                / RUNS as f64
        })
        .collect();
    let z_values = z_critical(ALPHA, D);
    let caught = (0..D).any(|v| {
        ((biased[v] - runs.truth[v]) / (runs.variance[v] / RUNS as f64).sqrt()).abs() >= z_values
    });
    assert!(caught, "a 5% error in q* went unnoticed");
}
