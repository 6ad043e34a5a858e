//! Marginals metrics: unbiasedness and variance against the closed form
//! over seeded collections, consistency once post-processed, configs and
//! events refused by name, hostile reports counted, memoization and the
//! ledger treating an event as one value. The exact ε check is in the
//! shared list of `tests/common/channel.rs` (native and wasm); state bytes
//! and merges in `tests/state.rs`.

mod common;

use localdp::client::{new_secret, Client};
use localdp::report::BitVector;
use localdp::{
    Aggregate, Aggregator, Error, Estimate, ExpectedValue, FieldProblem, MarginalsAggregator, MarginalsEstimate, MarginalsMetric, MarginalsProtocol,
    Metric, Payload, PostProcessing, ProtocolFamily, Randomizer, Rejection, SimulationRng,
};

const ATTRIBUTES: &str =
    r#"[{"name":"a","domain":2},{"name":"browser","domain":["Chrome","Firefox","Safari"]},{"name":"c","domain":2}]"#;

fn metric(protocol: &str, epsilon: f64) -> MarginalsMetric {
    MarginalsMetric::from_json(&format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon},"attributes":{ATTRIBUTES}}}"#)).unwrap()
}

/// A fixed, correlated population of `n` events: `c` equals `a` four times
/// in five, the browser leans on `a`.
fn population(n: usize) -> Vec<[usize; 3]> {
    (0..n)
        .map(|i| {
            let a = i % 2;
            let browser = if i % 7 < 4 { a } else { (i / 2) % 3 };
            let c = if i % 5 == 0 { 1 - a } else { a };
            [a, browser, c]
        })
        .collect()
}

fn event_json(event: &[usize; 3]) -> String {
    format!(r#"{{"a":{},"browser":"{}","c":"{}"}}"#, event[0], ["Chrome", "Firefox", "Safari"][event[1]], event[2])
}

/// The population's share in every cell of every marginal, in the
/// estimate's order.
fn true_marginals(metric: &MarginalsMetric, events: &[[usize; 3]]) -> Vec<Vec<f64>> {
    (0..metric.sets().len())
        .map(|set| {
            let mut shares = vec![0.0; metric.cells(set)];
            for e in events {
                shares[metric.cell_of(set, e).unwrap()] += 1.0 / events.len() as f64;
            }
            shares
        })
        .collect()
}

fn collect(metric: &MarginalsMetric, texts: &[String], rng: &mut SimulationRng) -> MarginalsEstimate {
    let mut aggregator = MarginalsAggregator::new(metric.clone());
    for text in texts {
        aggregator.add(&metric.randomize(text, rng).unwrap()).unwrap();
    }
    aggregator.estimate().unwrap()
}

/// Over 300 seeded collections of 3,000 correlated events (ε = 2), for
/// OUE and OLH: every cell's mean estimate is within `z·√(V/R)` of the
/// population's share (`V` the closed-form variance of the module docs at
/// the true share and `n_s = n/3`; `z` at α = 1e-6 shared by the cells),
/// and the mean squared error over all cells is the closed form's within
/// `z·√(2/R)` (each collection's sum of squares has a relative standard
/// deviation of at most √2). The estimate's own `se` agrees with the
/// closed form to within 10% on average.
#[test]
fn cells_are_unbiased_with_the_closed_form_variance() {
    let (n, reps) = (3000usize, 300usize);
    let events = population(n);
    let texts: Vec<String> = events.iter().map(event_json).collect();
    for protocol in MarginalsProtocol::ALL {
        let metric = metric(protocol.name(), 2.0);
        let truth = true_marginals(&metric, &events);
        let sets = metric.sets().len();
        let n_set = n as f64 / sets as f64;
        let variance = |set: usize, f: f64| {
            let (p, q) = metric.oracle(set).support_probabilities();
            (q * (1.0 - q) / ((p - q) * (p - q)) + f * (1.0 - p - q) / (p - q)) / n_set
                + f * (1.0 - f) * (sets as f64 - 1.0) / (n as f64 - 1.0)
        };
        let mut rng = SimulationRng::seed_from_u64(28);
        let cells: usize = truth.iter().map(Vec::len).sum();
        let (mut sums, mut squares, mut se_squares) = (vec![0.0; cells], 0.0, 0.0);
        for _ in 0..reps {
            let estimate = collect(&metric, &texts, &mut rng);
            let estimated = estimate.marginals.iter().flat_map(|m| m.cells.iter());
            for ((sum, cell), f) in sums.iter_mut().zip(estimated).zip(truth.iter().flatten()) {
                *sum += cell.frequency;
                squares += (cell.frequency - f).powi(2);
                se_squares += cell.se * cell.se;
            }
        }
        let z = common::z_critical(1e-6, cells + 1);
        let expected: Vec<f64> = truth.iter().enumerate().flat_map(|(set, fs)| fs.iter().map(move |&f| (set, f))).map(|(s, f)| variance(s, f)).collect();
        for (c, ((sum, f), v)) in sums.iter().zip(truth.iter().flatten()).zip(&expected).enumerate() {
            let mean = sum / reps as f64;
            let tolerance = z * (v / reps as f64).sqrt();
            assert!((mean - f).abs() < tolerance, "{protocol} cell {c}: mean {mean} vs {f} (± {tolerance})");
        }
        let closed: f64 = expected.iter().sum::<f64>() * reps as f64;
        let ratio = squares / closed;
        println!("{protocol}: MSE / closed form = {ratio:.4}, mean se² / closed form = {:.4}", se_squares / closed);
        assert!((ratio - 1.0).abs() < z * (2.0 / reps as f64).sqrt(), "{protocol}: MSE ratio {ratio}");
        assert!((se_squares / closed - 1.0).abs() < 0.1, "{protocol}: se² ratio {}", se_squares / closed);
    }
}

/// The histograms average the margins: unbiased too, each value within
/// `z·se/√R` of the population's share over 200 collections.
#[test]
fn histograms_are_unbiased() {
    let (n, reps) = (3000usize, 200usize);
    let events = population(n);
    let texts: Vec<String> = events.iter().map(event_json).collect();
    let metric = metric("marginals", 1.0);
    let mut rng = SimulationRng::seed_from_u64(29);
    let mut sums = [vec![0.0; 2], vec![0.0; 3], vec![0.0; 2]];
    let mut se_squares = [vec![0.0; 2], vec![0.0; 3], vec![0.0; 2]];
    for _ in 0..reps {
        let estimate = collect(&metric, &texts, &mut rng);
        for (a, h) in estimate.histograms.iter().enumerate() {
            for (v, value) in h.values.iter().enumerate() {
                sums[a][v] += value.frequency;
                se_squares[a][v] += value.se * value.se;
            }
        }
    }
    let z = common::z_critical(1e-6, 7);
    for a in 0..3 {
        for v in 0..sums[a].len() {
            let truth = events.iter().filter(|e| e[a] == v).count() as f64 / n as f64;
            let mean = sums[a][v] / reps as f64;
            let tolerance = z * (se_squares[a][v] / reps as f64 / reps as f64).sqrt();
            assert!((mean - truth).abs() < tolerance, "attribute {a} value {v}: {mean} vs {truth} (± {tolerance})");
        }
    }
}

/// Post-processed (`project`, `norm-sub`), every marginal sums to 1 and its
/// margin on each attribute is that attribute's histogram; without, the
/// cells are the unbiased ones and the JSON has the issue's shape.
#[test]
fn post_processed_marginals_are_consistent() {
    let metric = Metric::from_json(&format!(r#"{{"protocol":"marginals","epsilon":1,"way":2,"attributes":{ATTRIBUTES}}}"#)).unwrap();
    let mut rng = SimulationRng::seed_from_u64(30);
    let mut aggregator = Aggregator::new(metric.clone());
    for e in population(2000) {
        aggregator.add(&metric.randomize_text(&event_json(&e), &mut rng).unwrap()).unwrap();
    }
    let Some(marginals) = metric.mechanism::<MarginalsMetric>() else { unreachable!() };
    for post in [PostProcessing::Project, PostProcessing::NormSub] {
        let Estimate::Marginals(estimate) = aggregator.estimate(post).unwrap() else { unreachable!() };
        for (set, m) in estimate.marginals.iter().enumerate() {
            let total: f64 = m.cells.iter().map(|c| c.frequency).sum();
            assert!((total - 1.0).abs() < 1e-9, "{post:?} set {set}: {total}");
            for (i, &a) in marginals.sets()[set].iter().enumerate() {
                for (v, value) in estimate.histograms[a].values.iter().enumerate() {
                    let row: f64 = m.cells.iter().filter(|c| c.values[i] == value.value).map(|c| c.frequency).sum();
                    assert!((row - value.frequency).abs() < 1e-9, "{post:?} set {set} attribute {a} value {v}");
                }
            }
        }
    }
    let Estimate::Marginals(raw) = aggregator.estimate(PostProcessing::None).unwrap() else { unreachable!() };
    let json: serde_json::Value = serde_json::to_value(&raw).unwrap();
    assert_eq!(json["marginals"][0]["attributes"], serde_json::json!(["a", "browser"]));
    assert_eq!(json["marginals"][0]["cells"][1]["values"], serde_json::json!([0, "Firefox"]));
    let cell = &json["marginals"][0]["cells"][1];
    let (f, se) = (cell["frequency"].as_f64().unwrap(), cell["se"].as_f64().unwrap());
    assert!((cell["ci95"][0].as_f64().unwrap() - (f - 1.959963984540054 * se)).abs() < 1e-12);
    assert_eq!(json["histograms"][1]["attribute"], "browser");
    assert_eq!(json["histograms"][1]["values"][2]["value"], "Safari");
    assert_eq!(json["protocol"], "marginals_oue");
}

/// Configs are refused with typed errors naming the parameter (and the
/// bound on cells).
#[test]
fn bad_configs_are_refused() {
    let config = |protocol: &str, epsilon: &str, way: &str, attributes: &str| {
        MarginalsMetric::from_json(&format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon}{way},"attributes":{attributes}}}"#))
    };
    let two = r#"[{"name":"a","domain":2},{"name":"b","domain":3}]"#;
    assert!(config("marginals", "1", "", two).is_ok());
    let invalid = |r: Result<MarginalsMetric, Error>| match r {
        Err(Error::InvalidConfig { parameter, .. }) => parameter,
        other => panic!("{other:?}"),
    };
    assert_eq!(invalid(config("marginals", "0", "", two)), "epsilon");
    assert_eq!(invalid(config("marginals", "1", "", r#"[{"name":"a","domain":2}]"#)), "attributes");
    let seventeen = format!("[{}]", (0..17).map(|i| format!(r#"{{"name":"a{i}","domain":2}}"#)).collect::<Vec<_>>().join(","));
    assert_eq!(invalid(config("marginals", "1", "", &seventeen)), "attributes");
    assert_eq!(invalid(config("marginals", "1", "", r#"[{"name":"a","domain":2},{"name":"a","domain":3}]"#)), "attribute names");
    assert_eq!(invalid(config("marginals", "1", "", r#"[{"name":"","domain":2},{"name":"b","domain":3}]"#)), "attribute names");
    assert_eq!(invalid(config("marginals", "1", r#","way":0"#, two)), "way");
    assert_eq!(invalid(config("marginals", "1", r#","way":3"#, two)), "way");
    assert_eq!(invalid(config("marginals", "1", "", r#"[{"name":"a","domain":1},{"name":"b","domain":3}]"#)), "domain");
    // 16 attributes of 4096 values: 120 pairs of 2^24 cells each.
    let huge = format!("[{}]", (0..16).map(|i| format!(r#"{{"name":"a{i}","domain":4096}}"#)).collect::<Vec<_>>().join(","));
    let error = config("marginals", "1", "", &huge).unwrap_err();
    assert!(matches!(error, Error::InvalidConfig { parameter: "cells", .. }), "{error:?}");
    assert!(error.to_string().contains("1048576"), "{error}");
    // 16 attributes of 2 values, 8-way: 12,870 sets of 256 cells, 3.3 million.
    let wide = format!("[{}]", (0..16).map(|i| format!(r#"{{"name":"a{i}","domain":2}}"#)).collect::<Vec<_>>().join(","));
    assert!(matches!(config("marginals", "1", r#","way":8"#, &wide), Err(Error::InvalidConfig { parameter: "cells", .. })));
    assert!(config("marginals", "1", r#","way":2"#, &wide).is_ok());
    for malformed in [
        r#"{"protocol":"marginals_grr","epsilon":1,"attributes":[]}"#,
        r#"{"protocol":"marginals","epsilon":1,"attributes":[{"name":"a"}]}"#,
        r#"{"protocol":"marginals","epsilon":1,"attributes":[{"name":"a","domain":2,"extra":1},{"name":"b","domain":2}]}"#,
        r#"{"protocol":"marginals","epsilon":1,"attributes":"a"}"#,
        r#"{"protocol":"marginals","epsilon":1,"attributes":[{"name":"a","domain":2},{"name":"b","domain":2}],"domain":2}"#,
    ] {
        assert!(matches!(MarginalsMetric::from_json(malformed), Err(Error::MalformedConfig { .. })), "{malformed}");
    }
    // Through the registry, by the family's protocols.
    assert!(Metric::from_json(&format!(r#"{{"protocol":"marginals_olh","epsilon":1,"attributes":{two}}}"#)).is_ok());
}

/// An event missing a field or with a value outside its domain is refused,
/// naming the field and never the value; one with a key the metric lacks
/// names no key (an event's keys are the user's data).
#[test]
fn bad_events_name_the_field() {
    let metric = metric("marginals", 1.0);
    let field = |text: &str| match metric.event_of(text) {
        Err(Error::InvalidField { field, problem }) => (field, problem),
        other => panic!("{text}: {other:?}"),
    };
    assert_eq!(field(r#"{"a":1,"browser":"Chrome"}"#), ("c".into(), FieldProblem::Missing));
    assert_eq!(
        metric.event_of(r#"{"a":1,"browser":"Chrome","c":0,"alice@example.com":1}"#),
        Err(Error::InvalidValue { expected: ExpectedValue::KnownFields { count: 3 } })
    );
    assert_eq!(field(r#"{"a":1,"browser":"Opera-secret","c":0}"#), ("browser".into(), FieldProblem::NotInDomain));
    assert_eq!(field(r#"{"a":2,"browser":"Chrome","c":0}"#), ("a".into(), FieldProblem::NotInDomain));
    assert_eq!(field(r#"{"a":-1,"browser":"Chrome","c":0}"#), ("a".into(), FieldProblem::NotInDomain));
    assert_eq!(field(r#"{"a":"one-secret","browser":"Chrome","c":0}"#), ("a".into(), FieldProblem::NotANumber));
    assert_eq!(field(r#"{"a":true,"browser":"Chrome","c":0}"#), ("a".into(), FieldProblem::NotANumber));
    assert_eq!(field(r#"{"a":1,"browser":3,"c":0}"#), ("browser".into(), FieldProblem::NotInDomain));
    let message = metric.event_of(r#"{"a":1,"browser":"Opera-secret","c":0}"#).unwrap_err().to_string();
    assert!(message.contains("browser") && !message.contains("secret"), "{message}");
    for not_an_object in ["3", "[1,2]", "not json", r#""a""#] {
        assert!(
            matches!(metric.event_of(not_an_object), Err(Error::InvalidValue { expected: localdp::ExpectedValue::Object })),
            "{not_an_object}"
        );
    }
    assert_eq!(metric.event_of(r#"{"c":"1","browser":"Safari","a":0}"#).unwrap(), [0, 2, 1]);
}

/// Reports of another config, a set out of range, bits of another length
/// or another payload are refused and counted by reason; what was accepted
/// stays.
#[test]
fn hostile_reports_are_counted() {
    let metric = metric("marginals_oue", 1.0);
    let mut rng = SimulationRng::seed_from_u64(31);
    let mut aggregator = MarginalsAggregator::new(metric.clone());
    let good = metric.randomize(&event_json(&[1, 2, 0]), &mut rng).unwrap();
    aggregator.add(&good).unwrap();
    let with = |payload: Payload| localdp::Report { payload, ..good.clone() };
    let bits = |d: usize| BitVector::zeros(d);
    let cases = [
        (with(Payload::Cohort { cohort: 3, bits: bits(6) }), Rejection::OutOfRange),
        (with(Payload::Cohort { cohort: 0, bits: bits(9) }), Rejection::BadLength),
        (with(Payload::Index(1)), Rejection::Malformed),
        (with(Payload::Grouped { group: 0, seed: 1, value: 0 }), Rejection::Malformed),
    ];
    for (report, reason) in &cases {
        let error = aggregator.add(report).unwrap_err();
        assert!(matches!(error, Error::Rejected { reason: r, .. } if r == *reason), "{error:?}");
    }
    let other = self::metric("marginals_oue", 2.0).randomize(&event_json(&[1, 2, 0]), &mut rng).unwrap();
    assert!(aggregator.add(&other).is_err());
    let olh = self::metric("marginals_olh", 1.0).randomize(&event_json(&[1, 2, 0]), &mut rng).unwrap();
    assert!(aggregator.add(&olh).is_err());
    assert_eq!(aggregator.n(), 1);
    assert_eq!(aggregator.rejected().total(), 6);
    for (_, reason) in &cases[..2] {
        assert_eq!(aggregator.rejected().get(*reason), 1, "{reason:?}");
    }
    assert_eq!(aggregator.rejected().get(Rejection::Malformed), 2);
    assert_eq!(aggregator.rejected().get(Rejection::ConfigMismatch), 2);
    // Merging with another configuration is refused.
    assert!(aggregator.merge(&MarginalsAggregator::new(self::metric("marginals_olh", 1.0))).is_err());
}

/// Memoized, a device draws its set once and keeps one permanent report
/// per cell of it: repeating an event resends the same report and charges
/// the ledger once; a second event charges once more. With two attributes
/// (one set), distinct events are distinct cells.
#[test]
fn memoization_and_the_ledger_treat_an_event_as_one_value() {
    let config = r#"{"protocol":"marginals","epsilon":1,"attributes":[{"name":"a","domain":3},{"name":"b","domain":["x","y"]}],
        "memoize":true,"budget":{"epsilon":2.5,"window":"1d"}}"#;
    let mut rng = SimulationRng::seed_from_u64(32);
    let mut client = Client::new(config, &new_secret(&mut rng), None).unwrap();
    let t0 = 1_700_000_000_000;
    let first = client.randomize_text(r#"{"a":1,"b":"y"}"#, t0, &mut rng).unwrap();
    for i in 1..50 {
        // The same event, its fields in another order: the same value.
        assert_eq!(client.randomize_text(r#"{"b":"y","a":"1"}"#, t0 + i, &mut rng).unwrap(), first);
    }
    assert_eq!(client.spent(t0 + 50), 1.0);
    let second = client.randomize_text(r#"{"a":2,"b":"y"}"#, t0 + 60, &mut rng).unwrap();
    assert_ne!(second, first);
    assert_eq!(client.spent(t0 + 60), 2.0);
    assert!(matches!(client.randomize_text(r#"{"a":0,"b":"x"}"#, t0 + 70, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })));
    assert_eq!(client.randomize_text(r#"{"a":1,"b":"y"}"#, t0 + 80, &mut rng).unwrap(), first, "a memo hit is free");
    let state = String::from_utf8_lossy(&client.state_bytes()).into_owned();
    assert!(!state.contains("\"y\"") && !state.contains("\\\"y\\\""), "{state}");
    // Without memoization every report is fresh and charged.
    let fresh = r#"{"protocol":"marginals","epsilon":1,"attributes":[{"name":"a","domain":3},{"name":"b","domain":2}],"budget":{"epsilon":2,"window":"1d"}}"#;
    let mut client = Client::new(fresh, &new_secret(&mut rng), None).unwrap();
    client.randomize_text(r#"{"a":1,"b":1}"#, t0, &mut rng).unwrap();
    client.randomize_text(r#"{"a":1,"b":1}"#, t0 + 1, &mut rng).unwrap();
    assert!(matches!(client.randomize_text(r#"{"a":1,"b":1}"#, t0 + 2, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })));
}
