//! RAPPOR's decoding after selection: the intervals of the candidates it
//! detects cover their truth, and candidates nobody holds are rarely
//! reported with an interval that excludes 0.
//!
//! Seeded, so every outcome is the same on every run.

mod common;

use common::binomial_critical;
use localdp::{Aggregate, Metric, RapporAggregator, RapporMetric, Randomizer, SimulationRng};

/// `held` candidates with Zipf(1.1) counts of `n` devices, then `absent`
/// candidates nobody holds.
fn population(n: usize, held: usize, absent: usize) -> (Vec<String>, Vec<usize>) {
    let weights: Vec<f64> = (1..=held).map(|r| 1.0 / (r as f64).powf(1.1)).collect();
    let total: f64 = weights.iter().sum();
    let mut counts: Vec<usize> = weights.iter().map(|w| (n as f64 * w / total).floor() as usize).collect();
    counts[0] += n - counts.iter().sum::<usize>();
    counts.resize(held + absent, 0);
    let values = (0..held).map(|i| format!("/held/{i}")).chain((0..absent).map(|i| format!("/absent/{i}"))).collect();
    (values, counts)
}

/// Per collection: detected candidates, those whose interval covers the
/// truth, absent candidates detected with an interval above 0, and the sum
/// of squared errors over every candidate (0 for one not detected).
#[derive(Debug, Default)]
struct Outcome {
    detected: usize,
    covered: usize,
    above_zero: usize,
    above_zero_covered: usize,
    absent_above_zero: usize,
    collections_with_absent_above_zero: usize,
    squared_error: f64,
    /// The sum over collections of the square of each one's mean squared
    /// error.
    mean_squared_error_squared: f64,
    /// The candidates held by more than 8 standard errors: how many, and
    /// the sum and the sum of squares of their intervals' midpoints'
    /// errors, in standard errors.
    far: usize,
    far_error: f64,
    far_error_squared: f64,
}

fn collect(config: &str, n: usize, held: usize, absent: usize, seeds: std::ops::Range<u64>) -> Outcome {
    let (values, counts) = population(n, held, absent);
    let candidates: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    let metric = Metric::from_json(&format!(r#"{{{config},"candidates":[{}]}}"#, candidates.join(","))).unwrap();
    let metric = metric.mechanism::<RapporMetric>().unwrap().clone();
    let mut out = Outcome::default();
    for seed in seeds {
        let mut rng = SimulationRng::seed_from_u64(seed);
        let mut aggregator = RapporAggregator::new(metric.clone());
        for (value, &count) in values.iter().zip(&counts) {
            for _ in 0..count {
                aggregator.add(&metric.randomize(value, &mut rng).unwrap()).unwrap();
            }
        }
        let estimate = aggregator.estimate().unwrap();
        let mut absent_above = 0;
        let mut estimated = vec![0.0; values.len()];
        for e in &estimate.estimates {
            let i = values.iter().position(|v| *v == e.value).unwrap();
            let truth = counts[i] as f64 / n as f64;
            estimated[i] = e.frequency;
            out.detected += 1;
            let covers = e.ci95[0] <= truth && truth <= e.ci95[1];
            out.covered += usize::from(covers);
            out.above_zero += usize::from(e.ci95[0] > 0.0);
            out.above_zero_covered += usize::from(e.ci95[0] > 0.0 && covers);
            absent_above += usize::from(i >= held && e.ci95[0] > 0.0);
            if truth > 8.0 * e.std_error {
                let error = ((e.ci95[0] + e.ci95[1]) / 2.0 - truth) / e.std_error;
                (out.far, out.far_error, out.far_error_squared) = (out.far + 1, out.far_error + error, out.far_error_squared + error * error);
            }
        }
        out.absent_above_zero += absent_above;
        out.collections_with_absent_above_zero += usize::from(absent_above > 0);
        let squared_error = estimated.iter().zip(&counts).map(|(e, &c)| (e - c as f64 / n as f64).powi(2)).sum::<f64>();
        out.squared_error += squared_error;
        out.mean_squared_error_squared += (squared_error / values.len() as f64).powi(2);
    }
    out
}

const ISSUE: &str = r#""protocol":"rappor","bits":128,"hashes":2,"cohorts":64,"f":0.5,"p":0.5,"q":0.75"#;

/// The issue's measurement (#42): `cargo test --test rappor -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure_selection_at_the_issues_sizes() {
    for (n, runs) in [(100_000, 20u64), (1_000_000, 5)] {
        let o = collect(ISSUE, n, 200, 50, 0..runs);
        println!(
            "n {n}, {runs} collections: detected {}, coverage {:.3}, above 0 {} covering {:.3}, absent above 0 {} (in {} collections), MSE {:.3e}",
            o.detected,
            o.covered as f64 / o.detected as f64,
            o.above_zero,
            o.above_zero_covered as f64 / o.above_zero as f64,
            o.absent_above_zero,
            o.collections_with_absent_above_zero,
            o.squared_error / (runs as f64 * 250.0)
        );
    }
}

/// After selection, the 95% intervals of the detected candidates cover
/// their truth: over 150 seeded collections of 20,000 devices (40
/// candidates held with Zipf(1.1) shares, 10 held by nobody; 64 bits, 16
/// cohorts) the intervals that miss are at most Binomial(D, 0.05) for D
/// detected, its upper 10⁻⁴ quantile (the false alarm, counting each
/// detected candidate as an independent draw): about 8% of D, so an
/// interval covering 90% (a 5-point shortfall) fails it. An absent
/// candidate is reported with an interval above 0 in at most 5% of
/// collections: at most Binomial(150, 0.05)'s upper 10⁻⁶ quantile.
/// Selecting and estimating on the same cohorts (the decoder before
/// cross-fitting) fails both: over the first 100 collections 26.6% of the
/// intervals missed, and 16 collections had an absent candidate above 0.
/// Non-negative least squares: 33 of 4,832 missed (at most 300), none above 0.
#[test]
fn intervals_of_detected_candidates_cover_95_percent() {
    const RUNS: u64 = 150;
    let config = r#""protocol":"rappor","bits":64,"hashes":2,"cohorts":16,"f":0.5,"p":0.5,"q":0.75"#;
    let o = collect(config, 20_000, 40, 10, 0..RUNS);
    let missed = o.detected - o.covered;
    let bound = binomial_critical(1e-4, o.detected, 0.05);
    println!("{o:?}: {missed} of {} intervals miss (at most {bound})", o.detected);
    assert!(o.detected >= 3 * RUNS as usize, "{o:?}: the three heaviest are detected");
    assert!(missed <= bound, "{o:?}: {missed} of {} intervals miss, at most {bound}", o.detected);
    let absent = binomial_critical(1e-6, RUNS as usize, 0.05);
    assert!(o.collections_with_absent_above_zero <= absent, "{o:?}: at most {absent} collections");
}

/// At the issue's size (a million reports; `k` 128, `m` 64, 200 Zipf(1.1)
/// candidates and 50 held by nobody), over 5 seeded collections: the
/// intervals that miss are at most Binomial(D, 0.05)'s upper 10⁻⁴
/// quantile for D detected, and so are those that miss among the A
/// intervals above 0 (the ones shown as found), Binomial(A, 0.05)'s (the
/// false alarm of each, counting each interval as an independent draw).
/// The decoder before (one half of the cohorts selects, the other
/// estimates) failed the first: 27 of 232 missed (88.4%), at most 24.
/// About 50 s.
#[test]
fn intervals_cover_95_percent_at_a_million_reports() {
    let o = collect(ISSUE, 1_000_000, 200, 50, 0..5);
    let missed = o.detected - o.covered;
    let bound = binomial_critical(1e-4, o.detected, 0.05);
    let missed_above = o.above_zero - o.above_zero_covered;
    let bound_above = binomial_critical(1e-4, o.above_zero, 0.05);
    println!("{o:?}: {missed} of {} intervals miss (at most {bound}), {missed_above} of the {} above 0 (at most {bound_above})", o.detected, o.above_zero);
    assert!(missed <= bound, "{o:?}: {missed} of {} intervals miss, at most {bound}", o.detected);
    assert!(missed_above <= bound_above, "{o:?}: {missed_above} of the {} intervals above 0 miss, at most {bound_above}", o.above_zero);
}

/// The test and the intervals are centred on an unbiased estimate. At 10⁵
/// reports (the issue's configuration, 60 seeded collections, about a
/// minute), take the candidates held by more than 8 standard errors (about
/// 2 a collection). Far past the test (z 3.48), the interval given that it
/// passed is the normal one, `b̂ ± 1.96·SE`, so its midpoint is the
/// estimate the test used. Their errors in standard errors must average
/// within 3.29 standard errors of the mean (from the sample variance) of 0:
/// two-sided, false alarm 10⁻³. Least squares on the support (the decoder
/// before) pulled them down: mean −0.381 over 120, limit ±0.30. Least
/// squares on every candidate: −0.006. The intervals above 0 that miss are
/// also at most Binomial(A, 0.05)'s upper 10⁻⁴ quantile.
#[test]
fn intervals_are_centred_on_an_unbiased_estimate() {
    let o = collect(ISSUE, 100_000, 200, 50, 1000..1060);
    let far = o.far as f64;
    let mean = o.far_error / far;
    let variance = (o.far_error_squared - far * mean * mean) / (far - 1.0);
    let limit = 3.29 * (variance / far).sqrt();
    println!("{far} candidates past 8 standard errors: mean error {mean:.3} standard errors, at most {limit:.3} from 0");
    assert!(far >= 100.0, "{far} candidates past 8 standard errors");
    assert!(mean.abs() <= limit, "mean error {mean:.3} standard errors, at most {limit:.3} from 0");
    let missed_above = o.above_zero - o.above_zero_covered;
    let bound_above = binomial_critical(1e-4, o.above_zero, 0.05);
    assert!(missed_above <= bound_above, "{missed_above} of the {} intervals above 0 miss, at most {bound_above}", o.above_zero);
}

/// The point estimates are more accurate than non-negative least squares'
/// where most candidates are within the noise: at 10⁵ reports (the
/// issue's configuration, 20 seeded collections, about 30 s) the mean of
/// the collections' MSE over the 250 candidates, plus 3.09 of its standard
/// errors (from the collections' sample variance; one-sided, so a decoder
/// no better than NNLS passes with chance at most 10⁻³), is below NNLS's
/// mean on the same collections, which the decoder before measured:
/// 2.574·10⁻⁵ (2.81·10⁻⁵ with its 3.09 standard errors).
#[test]
fn estimates_are_more_accurate_than_least_squares_at_a_hundred_thousand_reports() {
    const NNLS_MSE: f64 = 2.574e-5;
    const RUNS: u64 = 20;
    let o = collect(ISSUE, 100_000, 200, 50, 1000..1000 + RUNS);
    let runs = RUNS as f64;
    let mean = o.squared_error / (runs * 250.0);
    let variance = (o.mean_squared_error_squared - runs * mean * mean) / (runs - 1.0);
    let high = mean + 3.09 * (variance / runs).sqrt();
    println!("MSE {mean:.4e}, plus 3.09 standard errors {high:.4e}, against {NNLS_MSE:.4e}");
    assert!(high < NNLS_MSE, "MSE {mean:.4e}, plus 3.09 standard errors {high:.4e}, not below NNLS's {NNLS_MSE:.4e}");
}

/// A configuration whose rows cannot fit every candidate (2 cohorts of 8
/// bits observe 16 rows, against 40 candidates) or that holds few
/// reports: every candidate estimated has a finite frequency, a finite,
/// positive standard error and a share of at most 1 plus 10 standard
/// errors; none is a number from a singular solve. Over 100 seeded
/// collections each of 3, 30 and 2,000 devices.
#[test]
fn rows_that_cannot_fit_every_candidate_give_finite_estimates() {
    let config = r#""protocol":"rappor","bits":8,"hashes":2,"cohorts":2,"f":0.5,"p":0.5,"q":0.75"#;
    let (values, _) = population(1, 30, 10);
    let candidates: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    let metric = Metric::from_json(&format!(r#"{{{config},"candidates":[{}]}}"#, candidates.join(","))).unwrap();
    let metric = metric.mechanism::<RapporMetric>().unwrap().clone();
    for n in [3, 30, 2000] {
        let (values, counts) = population(n, 30, 10);
        for seed in 0..100 {
            let mut rng = SimulationRng::seed_from_u64(seed);
            let mut aggregator = RapporAggregator::new(metric.clone());
            for (value, &count) in values.iter().zip(&counts) {
                for _ in 0..count {
                    aggregator.add(&metric.randomize(value, &mut rng).unwrap()).unwrap();
                }
            }
            for e in aggregator.estimate().unwrap().estimates {
                assert!(
                    e.frequency.is_finite() && e.std_error.is_finite() && e.std_error > 0.0 && e.frequency <= 1.0 + 10.0 * e.std_error,
                    "n {n}, seed {seed}: {e:?}"
                );
            }
        }
    }
}



