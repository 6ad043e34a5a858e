//! Numeric mechanisms: exact channels on the grid, no float porosity, seeded
//! statistics against the exact per-report variance, and the aggregator's
//! contract for numeric reports.

mod common;

use common::channel::{assert_epsilon, numeric_epsilon};
use common::{assert_coverage, assert_interval, z_critical};
use localdp::report::Payload;
use localdp::{
    Aggregate, Error, NumericAggregator, NumericConfig, NumericMetric, Randomizer, Rejection, Report, SimulationRng,
};

const PROTOCOLS: [&str; 5] = ["duchi", "laplace", "piecewise", "hybrid", "one_bit_mean"];
const EPSILONS: [f64; 6] = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0];

fn config(protocol: &str, epsilon: f64, range: &str) -> NumericConfig {
    serde_json::from_str(&format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon},"range":{range}}}"#)).unwrap()
}

fn metric(protocol: &str, epsilon: f64, range: &str) -> NumericMetric {
    NumericMetric::new(&config(protocol, epsilon, range)).unwrap()
}

#[test]
fn exact_channels_respect_epsilon_on_default_and_coarse_grids() {
    for protocol in PROTOCOLS {
        for epsilon in EPSILONS {
            let c = config(protocol, epsilon, "[0, 1]");
            let mut grids = vec![NumericMetric::new(&c).unwrap()];
            if protocol != "duchi" && protocol != "one_bit_mean" {
                grids.push(NumericMetric::with_grid_steps(&c, 4).unwrap());
                grids.push(NumericMetric::with_grid_steps(&c, 7).unwrap());
            }
            for m in grids {
                // Every mechanism here spends its whole ε (hybrid through
                // its piecewise half; Duchi's half alone when ε ≤ 0.61),
                // within 1e-9: Laplace's geometric noise compounds a
                // rounding per grid step (3e-11 below ε at G = 128).
                assert_epsilon(&format!("{protocol} G={}", m.grid_steps()), numeric_epsilon(&m), epsilon, 1e-9);
            }
        }
    }
}

#[test]
fn records_spend_epsilon_over_k_per_sampled_attribute() {
    for (epsilon, d, k) in [(1.0, 3, 1), (5.0, 3, 2), (10.0, 3, 3), (10.0, 8, 4)] {
        let ranges = vec!["[0, 1]"; d].join(",");
        let m = metric("piecewise", epsilon, &format!("[{ranges}]"));
        assert_eq!(m.sampled(), k);
        let per_attribute = numeric_epsilon(&m);
        assert_epsilon(&format!("d={d}, ε/{k} per attribute"), per_attribute, epsilon / k as f64, 1e-9);
    }
}

#[test]
fn grid_costs_under_one_percent_against_the_continuous_mechanisms() {
    println!("protocol   ε     G   worst-case variance: grid / continuous");
    for epsilon in [0.1, 0.5, 0.61, 0.62, 1.0, 2.0, 4.0, 8.0, 12.0] {
        let e = f64::exp(epsilon);
        let h = f64::exp(epsilon / 2.0);
        let b2 = ((e + 1.0) / (e - 1.0)).powi(2);
        let pm = |t: f64| t * t / (h - 1.0) + (h + 3.0) / (3.0 * (h - 1.0) * (h - 1.0));
        let alpha = if epsilon > 0.61 { 1.0 - 1.0 / h } else { 0.0 };
        let hybrid = |t: f64| alpha * pm(t) + (1.0 - alpha) * (b2 - t * t);
        let worst = |f: &dyn Fn(f64) -> f64| (0..=2000).map(|i| f(-1.0 + i as f64 / 1000.0)).fold(0.0, f64::max);
        let continuous = [
            ("duchi", b2),
            ("laplace", 8.0 / (epsilon * epsilon)),
            ("piecewise", worst(&pm)),
            ("hybrid", worst(&hybrid)),
        ];
        for (protocol, reference) in continuous {
            let m = metric(protocol, epsilon, "[-1, 1]");
            let ratio = m.worst_case_variance() / reference;
            println!("{protocol:10} {epsilon:4} {:5}   {ratio:.5}", m.grid_steps());
            assert!((ratio - 1.0).abs() < 0.01, "{protocol} ε={epsilon}: {ratio}");
        }
    }
}

#[test]
fn auto_picks_the_smallest_worst_case_variance() {
    for epsilon in EPSILONS {
        let auto = metric("auto", epsilon, "[0, 1]");
        for protocol in PROTOCOLS {
            assert!(auto.worst_case_variance() <= metric(protocol, epsilon, "[0, 1]").worst_case_variance() * (1.0 + 1e-9));
        }
        let expected = if epsilon > 0.61 { "hybrid" } else { "duchi" };
        assert_eq!(auto.protocol().name(), expected, "ε={epsilon}");
    }
}

/// Mironov's check: every released value must lie on the public grid, so the
/// set of possible outputs does not depend on the input.
fn on_grid(values: &[f64], origin: f64, step: f64) -> usize {
    values.iter().filter(|&&y| ((y - origin) / step - ((y - origin) / step).round()).abs() < 1e-9).count()
}

#[test]
fn released_values_are_on_the_grid_and_textbook_laplace_is_not() {
    let (lo, hi) = (0.0, 100.0);
    let m = metric("laplace", 1.0, "[0, 100]");
    let g = m.grid_steps() as f64;
    let step = (hi - lo) / g;
    let mut rng = SimulationRng::seed_from_u64(3);
    let inputs = [0.0, 1e-3, 33.3, 50.0, 99.999, 100.0];
    let mut released = Vec::new();
    for (i, &x) in inputs.iter().cycle().take(60_000).enumerate() {
        let report = m.randomize(&[x + i as f64 * 1e-7], &mut rng).unwrap();
        let Payload::Index(k) = report.payload else { panic!("a scalar report") };
        released.push(m.grid_value(0, k));
    }
    assert_eq!(on_grid(&released, lo, step), released.len(), "a value off the public grid");

    // The textbook mechanism: x + Lap(b) by inverse CDF on a uniform double.
    let b = 2.0 / 1.0 * (hi - lo) / 2.0;
    let mut textbook = Vec::new();
    for (i, &x) in inputs.iter().cycle().take(60_000).enumerate() {
        let u = (localdp::rng::RngCore::next_u64(&mut rng) >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
        textbook.push(x + i as f64 * 1e-7 - b * u.signum() * (1.0 - 2.0 * u.abs()).ln());
    }
    let hits = on_grid(&textbook, lo, step);
    assert!(hits < 60, "textbook Laplace passed the grid check: {hits} of 60000");
}

/// `(Σ (y − x), Σ (y − x)², Σ v(x), sd of Σ (y − x)²)` over reports of
/// `values`, with `y` the debiased report (scaled by `D/k` for records).
fn per_report_errors(m: &NumericMetric, values: &[Vec<f64>], reports: usize, seed: u64) -> Vec<[f64; 4]> {
    let d = m.ranges().len();
    let scale = d as f64 / m.sampled() as f64;
    let mut rng = SimulationRng::seed_from_u64(seed);
    let mut out = vec![[0.0; 4]; d];
    let mut fourth = vec![0.0; d];
    for i in 0..reports {
        let x = &values[i % values.len()];
        let report = m.randomize(x, &mut rng).unwrap();
        let mut y = vec![0.0; d];
        match report.payload {
            Payload::Index(k) => y[0] = m.grid_value(0, k),
            Payload::Sampled { attributes, values } => {
                for (&a, &k) in attributes.iter().zip(&values) {
                    let [lo, hi] = m.ranges()[a as usize];
                    let mid = 0.5 * (lo + hi);
                    y[a as usize] = mid + scale * (m.grid_value(a as usize, k) - mid);
                }
                for (a, y) in y.iter_mut().enumerate() {
                    if !attributes.contains(&(a as u32)) {
                        *y = 0.5 * (m.ranges()[a][0] + m.ranges()[a][1]);
                    }
                }
            }
            _ => unreachable!(),
        }
        for a in 0..d {
            let [lo, hi] = m.ranges()[a];
            let clipped = x[a].clamp(lo, hi);
            let e = y[a] - clipped;
            out[a][0] += e;
            out[a][1] += e * e;
            out[a][2] += m.variance_at(a, x[a]);
            fourth[a] += e.powi(4);
        }
    }
    for a in 0..d {
        let n = reports as f64;
        let mean_sq = out[a][1] / n;
        out[a][3] = ((fourth[a] / n - mean_sq * mean_sq) * n).sqrt();
    }
    out
}

/// Skewed (most mass low, a long tail) and bimodal data on `[0, 100]`, plus
/// values outside the range, which are clipped.
fn datasets() -> Vec<(&'static str, Vec<Vec<f64>>)> {
    let skewed = (0..1000).map(|i| vec![100.0 * (i as f64 / 1000.0).powi(4)]).collect();
    let bimodal = (0..1000).map(|i| vec![if i % 10 < 7 { 5.0 + (i % 7) as f64 } else { 97.0 + (i % 3) as f64 }]).collect();
    let clipped = (0..1000).map(|i| vec![-50.0 + (i % 300) as f64]).collect();
    vec![("skewed", skewed), ("bimodal", bimodal), ("clipped", clipped)]
}

#[test]
fn every_mechanism_is_unbiased_with_the_exact_variance() {
    // α = 1e-6 over all two-sided checks below.
    let tests = PROTOCOLS.len() * 2 * 3 * 2;
    let z = z_critical(1e-6, tests);
    println!("protocol      ε  data     bias/σ   MSE ÷ closed form");
    for protocol in PROTOCOLS {
        for epsilon in [0.5, 2.0] {
            let m = metric(protocol, epsilon, "[0, 100]");
            for (name, data) in datasets() {
                let [sum, squares, variance, sd] = per_report_errors(&m, &data, 200_000, 11)[0];
                let bias = sum / variance.sqrt();
                let ratio = squares / variance;
                println!("{protocol:12} {epsilon:3} {name:8} {bias:7.3}   {ratio:.4}");
                assert!(bias.abs() < z, "{protocol} ε={epsilon} {name}: bias {bias} σ");
                assert!((squares - variance).abs() < z * sd, "{protocol} ε={epsilon} {name}: MSE ratio {ratio}");
            }
        }
    }
}

#[test]
fn records_are_unbiased_per_attribute_with_the_exact_variance() {
    let z = z_critical(1e-6, 2 * 3 * 3);
    for (protocol, epsilon) in [("piecewise", 6.0), ("duchi", 2.0), ("hybrid", 9.0)] {
        let m = metric(protocol, epsilon, "[[0, 100], [-1, 1], [1000, 5000]]");
        let data: Vec<Vec<f64>> =
            (0..999).map(|i| vec![(i % 100) as f64, if i % 3 == 0 { 0.9 } else { -0.4 }, 1000.0 + 4.0 * i as f64]).collect();
        for (a, [sum, squares, variance, sd]) in per_report_errors(&m, &data, 150_000, 5).into_iter().enumerate() {
            let ratio = squares / variance;
            println!("{protocol} ε={epsilon} k={} attribute {a}: bias {:.3} σ, MSE ÷ closed {ratio:.4}", m.sampled(), sum / variance.sqrt());
            assert!((sum / variance.sqrt()).abs() < z, "{protocol} attribute {a}");
            assert!((squares - variance).abs() < z * sd, "{protocol} attribute {a}: {ratio}");
        }
    }
}

/// Over 1000 collections per protocol, each 95% interval is `mean ±
/// 1.959964·std_error` and the count that cover the true mean is within the
/// exact two-sided acceptance region of Binomial(1000, 0.95); the mean
/// squared error matches the closed form. α = 1e-6 over the ten checks.
#[test]
fn intervals_cover_and_the_mean_error_matches_the_closed_form() {
    let (reps, n) = (1000, 1000);
    let z = z_critical(1e-6, 2 * 5);
    for protocol in PROTOCOLS {
        let m = metric(protocol, 1.0, "[0, 100]");
        let data: Vec<f64> = (0..n).map(|i| if i % 4 == 0 { 90.0 } else { (i % 30) as f64 }).collect();
        let truth = data.iter().sum::<f64>() / n as f64;
        let variance: f64 = data.iter().map(|&x| m.variance_at(0, x)).sum::<f64>() / (n * n) as f64;
        let mut rng = SimulationRng::seed_from_u64(21);
        let (mut covered, mut squared) = (0usize, 0.0);
        for _ in 0..reps {
            let mut aggregator = NumericAggregator::new(m.clone());
            for &x in &data {
                aggregator.add(&m.randomize(&[x], &mut rng).unwrap()).unwrap();
            }
            let e = &aggregator.estimate().unwrap().attributes[0];
            assert_interval(protocol, e.ci95, e.mean, e.std_error);
            covered += usize::from(e.ci95[0] <= truth && truth <= e.ci95[1]);
            squared += (e.mean - truth).powi(2);
        }
        let coverage = covered as f64 / reps as f64;
        let ratio = squared / reps as f64 / variance;
        println!("{protocol:12} coverage {coverage:.3}  MSE ÷ closed form {ratio:.3}");
        assert_coverage(protocol, covered, reps, 1e-6 / 10.0);
        // The mean of many reports is close to normal: MSE·R/V ~ χ²_R.
        assert!((ratio - 1.0).abs() < z * (2.0 / reps as f64).sqrt(), "{protocol}: {ratio}");
    }
}

#[test]
fn bad_numeric_reports_are_counted_by_reason_and_lose_nothing() {
    let m = metric("hybrid", 3.0, "[0, 10]");
    let mut rng = SimulationRng::seed_from_u64(1);
    let mut aggregator = NumericAggregator::new(m.clone());
    for i in 0..100 {
        aggregator.add(&m.randomize(&[f64::from(i % 11)], &mut rng).unwrap()).unwrap();
    }
    let before = aggregator.estimate().unwrap();
    let good = m.randomize(&[5.0], &mut rng).unwrap().to_json_value();
    let with = |key: &str, value: serde_json::Value| {
        let mut r = good.clone();
        r[key] = value;
        r.to_string()
    };
    let cases = [
        ("{}".to_string(), Rejection::Malformed),
        (with("value", (-1).into()), Rejection::Malformed),
        (with("value", 2.5.into()), Rejection::Malformed),
        (with("value", m.outputs().into()), Rejection::OutOfRange),
        (with("epsilon", 3.5.into()), Rejection::ConfigMismatch),
        (with("protocol", "piecewise".into()), Rejection::ConfigMismatch),
        (with("domain", "ffffffffffffffff".into()), Rejection::ConfigMismatch),
        (with("version", 7.into()), Rejection::UnsupportedVersion),
        (with("bits", "00".into()), Rejection::Malformed),
    ];
    for (text, reason) in &cases {
        match aggregator.add_json(text.as_bytes()) {
            Err(Error::Rejected { reason: r, detail }) => {
                assert_eq!(r, *reason, "{text}: {detail}")
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    let after = aggregator.estimate().unwrap();
    assert_eq!(after.attributes, before.attributes, "nothing accepted was lost");
    assert_eq!(after.rejected.total(), cases.len() as u64);

    // Records: the subset size, order and range of the attributes.
    let v = metric("duchi", 6.0, "[[0, 1], [0, 1], [0, 1]]");
    let mut records = NumericAggregator::new(v.clone());
    let good = v.randomize(&[0.5, 0.5, 0.5], &mut rng).unwrap();
    assert_eq!(v.sampled(), 2);
    let sampled = |attributes: Vec<u32>, values: Vec<u64>| Report { payload: Payload::Sampled { attributes, values }, ..good.clone() };
    for (report, reason) in [
        (sampled(vec![0], vec![1]), Rejection::BadSubsetSize),
        (sampled(vec![0, 1, 2], vec![1, 1, 1]), Rejection::BadSubsetSize),
        (sampled(vec![0, 1], vec![1]), Rejection::BadSubsetSize),
        (sampled(vec![1, 0], vec![1, 1]), Rejection::Malformed),
        (sampled(vec![1, 1], vec![1, 1]), Rejection::Malformed),
        (sampled(vec![0, 3], vec![1, 1]), Rejection::OutOfRange),
        (sampled(vec![0, 1], vec![1, 2]), Rejection::OutOfRange),
        (Report { payload: Payload::Index(1), ..good.clone() }, Rejection::Malformed),
    ] {
        assert!(matches!(records.add(&report), Err(Error::Rejected { reason: r, .. }) if r == reason), "{reason}");
    }
    records.add(&good).unwrap();
    assert_eq!(records.n(), 1);
    assert_eq!(records.rejected().total(), 8);
    assert!(records.estimate().unwrap().attributes.iter().all(|a| a.std_error.is_finite()));
}

#[test]
fn aggregators_merge_into_the_aggregator_of_the_union() {
    let m = metric("piecewise", 1.0, "[[0, 10], [5, 6]]");
    let mut rng = SimulationRng::seed_from_u64(9);
    let reports: Vec<Report> = (0..3000).map(|i| m.randomize(&[f64::from(i % 10), 5.5], &mut rng).unwrap()).collect();
    let mut whole = NumericAggregator::new(m.clone());
    let (mut left, mut right) = (NumericAggregator::new(m.clone()), NumericAggregator::new(m.clone()));
    for (i, r) in reports.iter().enumerate() {
        whole.add(r).unwrap();
        if i % 3 == 0 { &mut left } else { &mut right }.add(r).unwrap();
    }
    left.add_json(b"junk").unwrap_err();
    whole.add_json(b"junk").unwrap_err();
    left.merge(&right).unwrap();
    assert_eq!(left.estimate().unwrap(), whole.estimate().unwrap(), "bit for bit: the sums are integers");
    let other = NumericAggregator::new(metric("piecewise", 2.0, "[[0, 10], [5, 6]]"));
    assert!(matches!(left.merge(&other), Err(Error::MergeMismatch { .. })));
    let json = serde_json::to_string(&whole.estimate().unwrap()).unwrap();
    let at = |key: &str| json.find(&format!("\"{key}\":")).unwrap_or_else(|| panic!("{key} missing: {json}"));
    let keys = ["protocol", "epsilon", "n", "rejected", "attributes"];
    assert!(keys.windows(2).all(|w| at(w[0]) < at(w[1])), "{json}");
    assert!(!json.contains("\"mean\":{"), "{json}");
}

#[test]
fn configs_and_values_are_validated() {
    for (text, message) in [
        (r#"{"protocol":"duchi","epsilon":0,"range":[0,1]}"#, "epsilon"),
        (r#"{"protocol":"duchi","epsilon":31,"range":[0,1]}"#, "epsilon"),
        // Found by fuzzing: tiny ε made Laplace panic or hang.
        (r#"{"protocol":"laplace","epsilon":1e-13,"range":[0,1]}"#, "epsilon"),
        (r#"{"protocol":"auto","epsilon":5e-324,"range":[0,5000]}"#, "epsilon"),
        (r#"{"protocol":"laplace","epsilon":1e-12,"range":[0,1]}"#, "epsilon"),
        (r#"{"protocol":"duchi","epsilon":1,"range":[1,1]}"#, "empty"),
        (r#"{"protocol":"duchi","epsilon":1,"range":[2,1]}"#, "empty"),
        (r#"{"protocol":"duchi","epsilon":1,"range":[]}"#, "range"),
        (r#"{"protocol":"duchi","epsilon":1,"range":[-1e308,1e308]}"#, "empty"),
        (r#"{"protocol":"duchi","epsilon":1,"range":[[0,1],[3,3]]}"#, "range[1]"),
        (r#"{"protocol":"duchi","epsilon":1,"range":[0,1],"extra":1}"#, "extra"),
        (r#"{"protocol":"laplace","epsilon":1}"#, "range"),
    ] {
        let e = NumericMetric::from_json(text).unwrap_err();
        assert!(e.to_string().contains(message), "{text}: {e}");
    }
    let m = metric("laplace", 1.0, "[0, 10]");
    let mut rng = SimulationRng::seed_from_u64(1);
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(matches!(m.randomize(&[bad], &mut rng), Err(Error::InvalidValue { .. })));
    }
    assert!(matches!(m.randomize(&[1.0, 2.0], &mut rng), Err(Error::InvalidValue { .. })));
    // Clipping: a value beyond the range is reported as the range's end.
    let duchi = metric("duchi", 1.0, "[0, 10]");
    let (above, at) = (duchi.variance_at(0, 1e9), duchi.variance_at(0, 10.0));
    assert_eq!(above, at);
}
