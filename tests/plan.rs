//! The planner's predicted standard errors against seeded simulation, one
//! test per family (and records, whose estimates are scaled by `D/k`).
//!
//! Each protocol runs `R = 8000` independent collections (RAPPOR, whose
//! decoding is slower: 2,000; PEM, TreeHist and SFP, whose aggregation
//! scores every extension: 4,000, chance bound `5.0 × 0.0112 = 0.057`) of a
//! fixed population (the one the planner's error assumes, `localdp::plan`;
//! discovery: see its test), and
//! the test compares the sample standard deviation of the estimates over
//! the collections with the planner's standard error: their ratio must lie
//! within 10% of 1.
//!
//! Why 10% is far beyond chance: the estimates are sums of hundreds of
//! independent reports, close to normal, so a sample variance over `R`
//! collections has a relative standard deviation of `√(2/(R−1))`, and the
//! standard deviation half that: 0.0079 at `R = 8000` (0.0158 at 2,000).
//! The variances are exact for any number of users (the frequency and
//! mean estimators' are sums of independent reports), so small collections
//! of 50 to 400 users serve, and many of them. Where several
//! estimates of one collection are pooled (the values of a domain, two
//! candidates), their average varies at most as much as one of them (all
//! perfectly correlated). At a false-alarm rate of α = 10⁻⁶ (two-sided,
//! Bonferroni over the protocols a test checks, `z` from 4.9 to 5.3), chance
//! moves the ratio by at most `5.3 × 0.0079 = 0.042` (RAPPOR: `4.9 × 0.0158
//! = 0.077`), well inside 0.1; each test asserts that bound with its own `z`
//! and `R` before it asserts the ratio.
//!
//! The seeds are fixed, so the outcome is the same on every run.

mod common;

use common::z_critical;
use localdp::plan::{plan, PlanRequest};
use localdp::{Aggregator, Metric, PostProcessing, RapporMetric, SimulationRng};
use serde_json::{json, Value};

const RUNS: usize = 8000;
/// RAPPOR's collections (its least-squares decoding is the slow part).
const RAPPOR_RUNS: usize = 2000;
const ALPHA: f64 = 1e-6;
const TOLERANCE: f64 = 0.1;

/// The planner's standard errors of `protocol` at `users`.
fn predicted(config: &Value, protocol: &str, users: u64) -> Vec<f64> {
    let plan = plan(config, &PlanRequest { users, target_error: None }).unwrap();
    let row = plan.protocols.iter().find(|p| p.protocol == protocol).unwrap();
    row.errors.iter().map(|e| e.std_error.unwrap()).collect()
}

/// Runs `runs` collections of `values` under `config`, and returns for each
/// collection the estimates `extract` takes from its estimate's JSON.
fn simulate(config: &Value, values: &[String], seed: u64, runs: usize, extract: impl Fn(&Value) -> Vec<f64>) -> Vec<Vec<f64>> {
    let metric = Metric::from_value(config.clone()).unwrap();
    let mut rng = SimulationRng::seed_from_u64(seed); // simulation only
    (0..runs)
        .map(|_| {
            let mut aggregator = Aggregator::new(metric.clone());
            for value in values {
                aggregator.add(&metric.randomize_text(value, &mut rng).unwrap()).unwrap();
            }
            extract(&serde_json::to_value(aggregator.estimate(PostProcessing::None).unwrap()).unwrap())
        })
        .collect()
}

/// `√(mean over estimates of s²_i / predicted²_i)`: the simulated standard
/// error over the predicted one, pooled over the estimates of a collection.
fn ratio(runs: &[Vec<f64>], predicted: &[f64]) -> f64 {
    let r = runs.len() as f64;
    let k = predicted.len();
    let pooled: f64 = (0..k)
        .map(|i| {
            let mean = runs.iter().map(|x| x[i]).sum::<f64>() / r;
            let s2 = runs.iter().map(|x| (x[i] - mean).powi(2)).sum::<f64>() / (r - 1.0);
            s2 / predicted[i].powi(2)
        })
        .sum::<f64>()
        / k as f64;
    pooled.sqrt()
}

/// Asserts the design's bound, then the ratio, for `checks` comparisons of
/// `runs` collections each.
fn assert_agrees(what: &str, ratio: f64, checks: usize, runs: usize) {
    let chance = z_critical(ALPHA, checks) * 0.5 * (2.0 / (runs as f64 - 1.0)).sqrt();
    assert!(chance < TOLERANCE, "{what}: the design's chance bound {chance:.3} is not below {TOLERANCE}");
    println!("{what}: simulated / predicted standard error = {ratio:.4} (chance bound ±{chance:.3})");
    assert!((ratio - 1.0).abs() <= TOLERANCE, "{what}: simulated / predicted standard error = {ratio:.4}");
}

fn field(estimate: &Value, list: &str, key: &str) -> Vec<f64> {
    estimate[list].as_array().unwrap().iter().map(|e| e[key].as_f64().unwrap()).collect()
}

#[test]
fn frequency_standard_errors_match_simulation() {
    // d = 8, 25 users per value: every value is held by 1/d, as planned.
    const D: usize = 8;
    let values: Vec<String> = (0..D * 25).map(|i| (i % D).to_string()).collect();
    let protocols = ["grr", "sue", "oue", "blh", "olh", "hr", "hrr", "ss", "dbitflip"];
    for (seed, protocol) in protocols.iter().enumerate() {
        let config = json!({"protocol": protocol, "epsilon": 1, "domain": D});
        let se = predicted(&config, protocol, values.len() as u64)[0];
        let runs = simulate(&config, &values, seed as u64, RUNS, |e| field(e, "estimates", "unbiased_frequency"));
        assert_agrees(&format!("frequency {protocol} (predicted {se:.5})"), ratio(&runs, &[se; D]), protocols.len(), RUNS);
    }
}

#[test]
fn numeric_standard_errors_match_simulation() {
    // Every user at the value of largest variance, as planned.
    let protocols = ["duchi", "laplace", "piecewise", "hybrid", "one_bit_mean"];
    for (seed, protocol) in protocols.iter().enumerate() {
        let config = json!({"protocol": protocol, "epsilon": 1, "range": [0, 10]});
        let metric = Metric::from_value(config.clone()).unwrap();
        let numeric = metric.mechanism::<localdp::NumericMetric>().unwrap();
        let worst = (0..=20_000)
            .map(|i| -1.0 + i as f64 / 10_000.0)
            .max_by(|a, b| numeric.variance(*a).total_cmp(&numeric.variance(*b)))
            .unwrap();
        let x = 5.0 * (worst + 1.0);
        let values = vec![format!("{x}"); 50];
        let se = predicted(&config, protocol, values.len() as u64)[0];
        let runs = simulate(&config, &values, 100 + seed as u64, RUNS, |e| vec![e["mean"].as_f64().unwrap()]);
        assert_agrees(&format!("numeric {protocol} at {x:.3} (predicted {se:.4})"), ratio(&runs, &[se]), protocols.len(), RUNS);
    }
}

#[test]
fn record_standard_errors_match_simulation() {
    // Records of D attributes, k = 1 sampled at ε 4 (each estimate scaled
    // by D/k): every user at the value of largest variance in every
    // attribute, as planned; the estimates of the D attributes pooled.
    let records = [json!([[0, 10], [0, 10]]), json!([[0, 10], [0, 10], [0, 10], [0, 10]])];
    for (seed, range) in records.iter().enumerate() {
        let config = json!({"protocol": "hybrid", "epsilon": 4, "range": range});
        let metric = Metric::from_value(config.clone()).unwrap();
        let numeric = metric.mechanism::<localdp::NumericMetric>().unwrap();
        let d = numeric.ranges().len();
        assert_eq!(numeric.sampled(), 1);
        let worst = (0..=20_000)
            .map(|i| -1.0 + i as f64 / 10_000.0)
            .max_by(|a, b| numeric.variance(*a).total_cmp(&numeric.variance(*b)))
            .unwrap();
        let x = 5.0 * (worst + 1.0);
        let values = vec![vec![format!("{x}"); d].join(","); 200];
        let se = predicted(&config, "hybrid", values.len() as u64)[0];
        let runs = simulate(&config, &values, 150 + seed as u64, RUNS, |e| field(e, "attributes", "mean"));
        let what = format!("record of {d} hybrid at {x:.3} (predicted {se:.4})");
        assert_agrees(&what, ratio(&runs, &vec![se; d]), records.len(), RUNS);
    }
}

#[test]
fn distribution_rank_errors_match_simulation() {
    // 16 bins over [0, 64], 25 users at the middle of each: spread evenly.
    const BINS: usize = 16;
    let config = json!({"protocol": "hierarchical", "epsilon": 1, "range": [0, 64], "bins": BINS});
    let values: Vec<String> = (0..BINS * 25).map(|i| format!("{}", (i % BINS) as f64 * 4.0 + 2.0)).collect();
    let se = predicted(&config, "hierarchical", values.len() as u64);
    // The CDF at the edges nearest p50 and p95, as the planner takes them.
    let edges = [8, 15];
    let runs = simulate(&config, &values, 200, RUNS, |e| {
        let bins = field(e, "histogram", "frequency");
        edges.iter().map(|&edge| bins[..edge].iter().sum()).collect()
    });
    assert_agrees(&format!("distribution hierarchical p50, p95 (predicted {:.4}, {:.4})", se[0], se[1]), ratio(&runs, &se), 1, RUNS);
    let square_wave = plan(&json!({"protocol": "square_wave", "epsilon": 1, "range": [0, 64], "bins": BINS}), &PlanRequest {
        users: 1600,
        target_error: None,
    })
    .unwrap();
    let row = square_wave.protocols.iter().find(|p| p.protocol == "square_wave").unwrap();
    assert_eq!(row.errors[0].std_error, None, "Square Wave has no closed form");
}

#[test]
fn sketch_standard_errors_match_simulation() {
    // 250 distinct values; eight candidates nobody holds, as planned.
    let candidates: Vec<String> = (0..8).map(|i| format!("/candidate/{i}")).collect();
    let values: Vec<String> = (0..250).map(|i| format!("/page/{i}")).collect();
    for (seed, protocol) in ["cms", "hcms"].iter().enumerate() {
        let config = json!({"protocol": protocol, "epsilon": 4, "sketch": {"hashes": 64, "width": 64}, "candidates": candidates});
        let se = predicted(&config, protocol, values.len() as u64)[0];
        let runs = simulate(&config, &values, 300 + seed as u64, RUNS, |e| field(e, "estimates", "frequency"));
        assert_agrees(&format!("heavy-hitter {protocol} (predicted {se:.4})"), ratio(&runs, &[se; 8]), 2, RUNS);
    }
}

#[test]
fn rappor_standard_errors_match_simulation() {
    // Two candidates held by 40% and 30% (always selected), the rest
    // distinct strings; the prediction at each one's share.
    let config = json!({"protocol": "rappor", "bits": 64, "hashes": 2, "cohorts": 8, "candidates": ["a", "b", "c"]});
    let users = 5000;
    let values: Vec<String> = (0..users)
        .map(|i| match i % 10 {
            0..=3 => "a".to_string(),
            4..=6 => "b".to_string(),
            _ => format!("other {i}"),
        })
        .collect();
    let metric = Metric::from_value(config.clone()).unwrap();
    let rappor = metric.mechanism::<RapporMetric>().unwrap();
    let se: Vec<f64> = [0.4, 0.3].iter().map(|&share| (rappor.frequency_variance(share) / users as f64).sqrt()).collect();
    let runs = simulate(&config, &values, 400, RAPPOR_RUNS, |e| {
        let estimates = e["estimates"].as_array().unwrap();
        ["a", "b"]
            .iter()
            .map(|v| estimates.iter().find(|c| c["value"] == *v).expect("selected")["frequency"].as_f64().unwrap())
            .collect()
    });
    assert_agrees(&format!("rappor (predicted {:.4}, {:.4})", se[0], se[1]), ratio(&runs, &se), 1, RAPPOR_RUNS);
    // The planner's own number is the same formula at share 0.
    let planned = predicted(&config, "rappor", users as u64)[0];
    assert_eq!(planned, (rappor.frequency_variance(0.0) / users as f64).sqrt());
}


#[test]
fn marginals_standard_errors_match_simulation() {
    // Three attributes of two values (three pairs of four cells); everybody
    // holds the first values, so three cells of each pair are held by nobody.
    let attributes = json!([{"name": "a", "domain": 2}, {"name": "b", "domain": ["x", "y"]}, {"name": "c", "domain": 2}]);
    let values = vec![r#"{"a":0,"b":"x","c":0}"#.to_string(); 300];
    let protocols = ["marginals_oue", "marginals_olh"];
    for (seed, protocol) in protocols.iter().enumerate() {
        let config = json!({"protocol": protocol, "epsilon": 1, "attributes": attributes});
        let se = predicted(&config, protocol, values.len() as u64)[0];
        let empty = |e: &Value| -> Vec<f64> {
            let marginals = e["marginals"].as_array().unwrap();
            marginals.iter().flat_map(|m| field(m, "cells", "frequency").into_iter().skip(1)).collect()
        };
        let runs = simulate(&config, &values, 40 + seed as u64, RUNS, empty);
        assert_agrees(&format!("marginals {protocol} (predicted {se:.5})"), ratio(&runs, &[se; 9]), protocols.len(), RUNS);
    }
}

#[test]
fn every_family_is_planned_without_a_panic() {
    // The collector calls min_users for every metric at start: each family
    // has a model (u64::MAX would mean none), and plan gives every row.
    let configs = [
        json!({"protocol": "auto", "epsilon": 1, "domain": 8}),
        json!({"protocol": "grr", "epsilon": 0.5, "domain": ["a", "b"], "memoize": true}),
        json!({"protocol": "auto", "epsilon": 4, "range": [[0, 1], [0, 1], [0, 1]]}),
        json!({"protocol": "square_wave", "epsilon": 1, "range": [0, 64], "bins": 16}),
        json!({"protocol": "hierarchical", "epsilon": 1, "range": [0, 64], "bins": 2}),
        json!({"protocol": "hcms", "epsilon": 4, "sketch": {"hashes": 4, "width": 16}, "candidates": ["a"]}),
        json!({"protocol": "pem", "epsilon": 2, "max_length": 4}),
        json!({"protocol": "treehist", "epsilon": 2, "max_length": 4}),
        json!({"protocol": "sfp", "epsilon": 2, "max_length": 4}),
        json!({"protocol": "rappor", "bits": 16, "cohorts": 4}),
        json!({"protocol": "marginals", "epsilon": 2, "attributes": [{"name": "a", "domain": 3}, {"name": "b", "domain": ["x", "y"]}]}),
    ];
    for config in configs {
        let metric = Metric::from_value(config.clone()).unwrap();
        assert!(localdp::plan::min_users(&metric) < u64::MAX, "{config}");
        let plan = plan(&config, &PlanRequest { users: 1000, target_error: Some(0.05) }).unwrap();
        assert!(plan.protocols.iter().any(|p| p.configured), "{config}");
    }
}

/// Discovery's collections (its aggregation scores every extension).
const DISCOVERY_RUNS: usize = 4000;

#[test]
fn discovery_standard_errors_match_simulation() {
    // Every user holds "a", one byte (max_length 1), so it is found in every
    // collection (its frequency is at least 8 standard errors above the
    // listing's cut) by both cross-fitted searches, so estimated on both
    // halves of its level's reports. The planner's number is for a value
    // held by nobody, listed by one search and estimated on one half; a
    // found value's variance adds the holders' term. The test writes both
    // from the published channel — OLH with g buckets (p = e^ε/(e^ε+g−1),
    // q = 1/g) over 2ℓ half-level shares for the planner and ℓ level shares
    // for the simulation (PEM, TreeHist: ℓ levels), HCMS with flip φ and m columns over
    // the half of the reports that send the whole value (SFP) — asserts
    // that the planner's is the share-0 one, and that simulation agrees with
    // the share-1 one. The two differ by a quarter: OLH's share-0 variance
    // is 75% of its share-1 one, HCMS's share-1 variance 79% of its share-0
    // one (a holder's coefficient is always 1: the −c term).
    let configs = [
        (json!({"protocol": "pem", "epsilon": 1, "max_length": 1, "top": 1}), 1000),
        (json!({"protocol": "treehist", "epsilon": 1, "max_length": 1, "top": 1}), 5000),
        (json!({"protocol": "sfp", "epsilon": 1, "max_length": 1, "top": 1, "sketch": {"hashes": 16, "width": 64}}), 1000),
    ];
    for (seed, (config, users)) in configs.iter().enumerate() {
        let metric = Metric::from_value(config.clone()).unwrap();
        let heavy = metric.mechanism::<localdp::HeavyHitterMetric>().unwrap();
        let (nobody, everybody) = if let Some(discovery) = heavy.discovery() {
            let (e, g) = (1f64.exp(), discovery.buckets() as f64);
            let (p, q) = (e / (e + g - 1.0), 1.0 / g);
            let levels = f64::from(discovery.levels());
            let null = q * (1.0 - q) / (p - q).powi(2);
            (2.0 * levels * null, levels * (null + (1.0 - p - q) / (p - q)))
        } else {
            let sketch = heavy.fragments().unwrap().sketch();
            let (phi, m) = (sketch.flip_probability(), sketch.width() as f64);
            let scale = 2.0 * (m / (m - 1.0)).powi(2);
            (scale * ((1.0 - 2.0 * phi).powi(-2) - 1.0 / (m * m)), scale * ((1.0 - 2.0 * phi).powi(-2) - 1.0))
        };
        let protocol = config["protocol"].as_str().unwrap();
        let planned = predicted(config, protocol, *users as u64)[0];
        let share_zero = (nobody / *users as f64).sqrt();
        assert!((planned / share_zero - 1.0).abs() < 1e-9, "{protocol}: planned {planned}, share-0 model {share_zero}");
        let values = vec!["a".to_string(); *users];
        let runs = simulate(config, &values, 500 + seed as u64, DISCOVERY_RUNS, |e| {
            let found = e["heavy_hitters"].as_array().unwrap();
            vec![found.iter().find(|v| v["value"] == "a").expect("found in every collection")["frequency"].as_f64().unwrap()]
        });
        let se = (everybody / *users as f64).sqrt();
        let what = format!("{protocol} at share 1 (predicted {se:.4}; planned at share 0 {planned:.4})");
        assert_agrees(&what, ratio(&runs, &[se]), configs.len(), DISCOVERY_RUNS);
    }
}
