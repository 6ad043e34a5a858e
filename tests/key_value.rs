//! The key-value family (PCKV): the realized channel checked exactly, the
//! estimators against their closed forms (seeded, α = 1e-6), state and
//! merge, refusals, config and value errors, and the ledger and memo
//! treating a map as one value.

mod common;

use common::{binomial_acceptance, chi_square_critical, z_critical};
use localdp::client::{new_secret, Client};
use localdp::key_value::pckv_estimate;
use localdp::report::{BitVector, Payload};
use localdp::{
    Aggregate, Aggregator, DomainSpec, Error, Estimate, ExpectedValue, KeyValueAggregator, KeyValueConfig,
    KeyValueMetric, KeyValueProtocol, Metric, PostProcessing, Rejection, Report, SimulationRng,
};

const ALPHA: f64 = 1e-6;

fn metric(protocol: &str, epsilon: f64, keys: &str, pad: u64) -> KeyValueMetric {
    KeyValueMetric::from_json(&format!(
        r#"{{"protocol":"{protocol}","epsilon":{epsilon},"keys":{keys},"range":[0,10],"pad":{pad}}}"#
    ))
    .unwrap()
}

/// Every map over the keys `a`, `b` with values 0, 3 and 10 (the empty one too).
fn small_maps() -> Vec<String> {
    let values = ["0", "3", "10"];
    let mut maps = vec!["{}".to_string()];
    for v in values {
        maps.push(format!(r#"{{"a":{v}}}"#));
        maps.push(format!(r#"{{"b":{v}}}"#));
        for w in values {
            maps.push(format!(r#"{{"a":{v},"b":{w}}}"#));
        }
    }
    maps
}

/// `P[report | map]`, from the exact sampled-pair distribution and the
/// realized perturbation.
fn probability(metric: &KeyValueMetric, map: &str, report: &Report) -> f64 {
    metric.sampled_pairs(map).unwrap().iter().map(|&((k, plus), w)| w * metric.pair_likelihood(k, plus, report)).sum()
}

/// For every pair of maps (any two maps are neighbours: a map is one value)
/// and every output, the likelihood ratio is at most `e^ε`, and with ℓ = 1
/// the bound is reached (log within 1e-9): the composition is tight. The
/// largest ratio is the metric's realized ε (what the auditor and the
/// planner report), to 1e-12: below ε for PCKV-GRR at ℓ ≥ 2 and for
/// PCKV-UE with fewer keys than ℓ.
#[test]
fn the_realized_channel_is_epsilon_ldp_for_every_pair_of_maps() {
    for protocol in ["pckv_grr", "pckv_ue"] {
        for (epsilon, pad) in [(0.5, 1), (2.0, 1), (2.0, 2), (4.0, 2), (1.0, 3)] {
            let metric = metric(protocol, epsilon, r#"["a","b"]"#, pad);
            let outputs = metric.channel_outputs().expect("a small channel");
            let maps = small_maps();
            let table: Vec<Vec<f64>> = maps.iter().map(|m| outputs.iter().map(|r| probability(&metric, m, r)).collect()).collect();
            for (map, row) in maps.iter().zip(&table) {
                let total: f64 = row.iter().sum();
                assert!((total - 1.0).abs() < 1e-12, "{protocol} ε {epsilon} ℓ {pad} {map}: total {total}");
            }
            let mut worst = f64::NEG_INFINITY;
            for x in &table {
                for y in &table {
                    for (px, py) in x.iter().zip(y) {
                        worst = worst.max((px / py).ln());
                    }
                }
            }
            assert!(worst <= epsilon, "{protocol} ε {epsilon} ℓ {pad}: log ratio {worst}");
            let realized = localdp::metric::Kind::realized_epsilon(&metric);
            assert!((worst - realized).abs() < 1e-12, "{protocol} ε {epsilon} ℓ {pad}: realized {realized}, enumerated {worst}");
            // At ℓ = 1 a one-key map is always sampled: {a: 0} against {a: 10}
            // spends ε2 = ε, and {a: 10} against {b: 0} ε1 + ln(2p) = ε. Above,
            // PCKV-GRR's one reported pair is one of ℓ (sampling amplifies
            // privacy); PCKV-UE's report shows every key, so that two maps
            // of ℓ keys still differ by ε, and only fewer keys than ℓ dilute.
            if pad == 1 {
                assert!(worst > epsilon - 1e-9, "{protocol} ε {epsilon}: the budget is spent, {worst}");
            }
        }
    }
}

/// The randomizer draws from the channel the check enumerates: a χ² test
/// of 40 000 reports of each map, padded to ℓ, sampled among more keys
/// than ℓ, and empty (α = 1e-6 over the ten tests).
#[test]
fn reports_follow_the_enumerated_channel() {
    let mut rng = SimulationRng::seed_from_u64(11);
    let cases = [(2, "{}"), (2, r#"{"a":7.5}"#), (2, r#"{"a":0,"b":10}"#), (1, r#"{"a":0,"b":10}"#), (3, "{}")];
    let critical_tests = 2 * cases.len();
    for protocol in ["pckv_grr", "pckv_ue"] {
        for (pad, map) in cases {
            let metric = metric(protocol, 1.0, r#"["a","b"]"#, pad);
            let outputs = metric.channel_outputs().expect("a small channel");
            let draws = 40_000;
            let mut counts = vec![0u64; outputs.len()];
            for _ in 0..draws {
                let report = metric.randomize_map(map, &mut rng).unwrap();
                counts[outputs.iter().position(|o| *o == report).expect("an enumerated output")] += 1;
            }
            let chi: f64 = outputs
                .iter()
                .zip(&counts)
                .map(|(o, &c)| {
                    let expected = draws as f64 * probability(&metric, map, o);
                    (c as f64 - expected).powi(2) / expected
                })
                .sum();
            let critical = chi_square_critical(ALPHA / critical_tests as f64, outputs.len() - 1);
            assert!(chi < critical, "{protocol} {map}: χ² {chi} ≥ {critical}");
        }
    }
}

/// A fixed population over 6 keys, every user holding at most ℓ = 2: the
/// maps and each key's true frequency and mean in `[−1, 1]`.
struct Population {
    maps: Vec<String>,
    frequency: Vec<f64>,
    mean: Vec<f64>,
}

fn population(users: usize) -> Population {
    let keys = 6;
    let (mut maps, mut holders, mut sums) = (Vec::with_capacity(users), vec![0.0; keys], vec![0.0; keys]);
    for u in 0..users {
        // Key 0 for 60% of users, key 1 for 30%, keys 2..5 less; key 5 for nobody.
        let first = [0, 0, 0, 0, 0, 0, 1, 1, 1, 2][u % 10];
        let second = [None, Some(1), Some(3), None, Some(4)][u % 5].filter(|&k| k != first);
        let mut pairs = vec![(first, (u % 7) as f64)];
        pairs.extend(second.map(|k| (k, 2.0 + (u % 3) as f64 * 3.0)));
        for &(k, v) in &pairs {
            holders[k] += 1.0;
            sums[k] += v / 5.0 - 1.0; // [0, 10] to [−1, 1]
        }
        let body: Vec<String> = pairs.iter().map(|(k, v)| format!(r#""{k}":{v}"#)).collect();
        maps.push(format!("{{{}}}", body.join(",")));
    }
    let mean = sums.iter().zip(&holders).map(|(s, h)| if *h > 0.0 { s / h } else { 0.0 }).collect();
    Population { maps, frequency: holders.iter().map(|h| h / users as f64).collect(), mean }
}

/// Over R = 200 collections of n = 20 000 users, for each protocol and each
/// key (α = 1e-6, Bonferroni over the comparisons):
///
/// * frequency: the mean estimate is within `z·se/√R` of the truth (the
///   estimator is unbiased) and the mean squared error matches the closed
///   form `ℓ²q(1−q)/(n(a−b)²)` within the χ² spread of R runs (the closed
///   form, PCKV's, takes every user's support probability as the average;
///   the exact variance is a little smaller, by the spread of those
///   probabilities, which the test allows: ratio in `[0.85·lo, hi]`);
/// * mean (a ratio, consistent with an `O(1/n)` bias): the same, against the
///   delta-method closed form, for keys held by at least 10%;
/// * the 95% intervals of both cover the truth as often as Binomial(R, 0.95).
#[test]
fn estimates_match_pckv_closed_forms() {
    let (runs, users) = (200, 20_000);
    let pop = population(users);
    for (i, protocol) in ["pckv_grr", "pckv_ue"].into_iter().enumerate() {
        let metric = metric(protocol, 2.0, "6", 2);
        let mut rng = SimulationRng::seed_from_u64(100 + i as u64);
        let keys = pop.frequency.len();
        let closed: Vec<(f64, f64, f64, f64)> =
            (0..keys).map(|k| pckv_estimate(&metric, metric.expected_shares(pop.frequency[k], pop.mean[k]), users as u64)).collect();
        let (mut f_sum, mut f_sq, mut f_cover) = (vec![0.0; keys], vec![0.0; keys], vec![0usize; keys]);
        let (mut m_sum, mut m_sq, mut m_cover) = (vec![0.0; keys], vec![0.0; keys], vec![0usize; keys]);
        for _ in 0..runs {
            let mut aggregator = KeyValueAggregator::new(metric.clone());
            for map in &pop.maps {
                aggregator.add(&metric.randomize_map(map, &mut rng).unwrap()).unwrap();
            }
            let estimate = aggregator.estimate().unwrap();
            for (k, e) in estimate.keys.iter().enumerate() {
                assert_eq!(e.key, k.to_string());
                let (f, m) = (pop.frequency[k], 5.0 * (pop.mean[k] + 1.0));
                f_sum[k] += e.frequency.estimate - f;
                f_sq[k] += (e.frequency.estimate - f).powi(2);
                f_cover[k] += usize::from(e.frequency.ci95[0] <= f && f <= e.frequency.ci95[1]);
                m_sum[k] += e.mean.estimate - m;
                m_sq[k] += (e.mean.estimate - m).powi(2);
                m_cover[k] += usize::from(e.mean.ci95[0] <= m && m <= e.mean.ci95[1]);
            }
        }
        let tests = 6 * keys;
        let z = z_critical(ALPHA, tests);
        let r = runs as f64;
        // The mean of R squared normal errors over their variance: χ²_R / R.
        let spread = z * (2.0 / r).sqrt();
        let acceptance = binomial_acceptance(runs, 0.95, ALPHA / tests as f64);
        for k in 0..keys {
            let (_, f_se, _, m_se) = closed[k];
            let (f_bias, f_mse) = (f_sum[k] / r, f_sq[k] / r);
            println!(
                "{protocol} key {k}: f {:.3} bias {f_bias:+.5} mse/closed {:.3}; m {:.3} bias {:+.4} mse/closed {:.3}",
                pop.frequency[k],
                f_mse / (f_se * f_se),
                pop.mean[k],
                m_sum[k] / r * 0.2,
                m_sq[k] / r / (5.0 * m_se).powi(2)
            );
            assert!(f_bias.abs() < z * f_se / r.sqrt(), "{protocol} key {k}: frequency bias {f_bias}");
            let ratio = f_mse / (f_se * f_se);
            assert!(ratio > 0.85 * (1.0 - spread) && ratio < 1.0 + spread, "{protocol} key {k}: frequency MSE ratio {ratio}");
            assert!(acceptance.contains(&f_cover[k]), "{protocol} key {k}: frequency coverage {}", f_cover[k]);
            if pop.frequency[k] >= 0.1 {
                let m_se = 5.0 * m_se;
                let (m_bias, ratio) = (m_sum[k] / r, m_sq[k] / r / (m_se * m_se));
                assert!(m_bias.abs() < z * m_se / r.sqrt(), "{protocol} key {k}: mean bias {m_bias}");
                assert!(ratio > 0.85 * (1.0 - spread) && ratio < 1.0 + spread, "{protocol} key {k}: mean MSE ratio {ratio}");
                assert!(acceptance.contains(&m_cover[k]), "{protocol} key {k}: mean coverage {}", m_cover[k]);
            }
        }
    }
}

/// Users holding more than ℓ keys: each key's frequency is estimated at
/// `ℓ/|map|` of its share among them (what the module docs say).
#[test]
fn padding_weighs_users_above_l_by_l_over_their_keys() {
    let metric = metric("pckv_ue", 4.0, "8", 2);
    let mut rng = SimulationRng::seed_from_u64(7);
    let users = 50_000;
    let mut aggregator = KeyValueAggregator::new(metric.clone());
    for _ in 0..users {
        aggregator.add(&metric.randomize_map(r#"{"0":1,"1":2,"2":3,"3":4}"#, &mut rng).unwrap()).unwrap();
    }
    let estimate = aggregator.estimate().unwrap();
    let z = z_critical(ALPHA, 4);
    for e in &estimate.keys[..4] {
        assert!((e.frequency.estimate - 0.5).abs() < z * e.frequency.se, "{e:?}: 4 keys at ℓ = 2 weigh 1/2");
    }
}

#[test]
fn the_protocol_is_chosen_by_variance_and_reports_carry_it() {
    let small = Metric::from_json(r#"{"protocol":"key_value","epsilon":2,"keys":3,"range":[0,1],"pad":1}"#).unwrap();
    let large = Metric::from_json(r#"{"protocol":"key_value","epsilon":2,"keys":100,"range":[0,1],"pad":4}"#).unwrap();
    assert_eq!((small.protocol().name(), large.protocol().name()), ("pckv_grr", "pckv_ue"));
    assert_eq!((small.family(), large.value_kind()), ("key_value", localdp::metric::ValueKind::Object));
    let mut rng = SimulationRng::seed_from_u64(1);
    let report = large.randomize_text(r#"{"7": 0.5}"#, &mut rng).unwrap();
    assert_eq!(report.protocol.name(), "pckv_ue");
    assert!(report.to_json().contains(r#""protocol":"pckv_ue""#));
    // The variance rule: GRR while d' − 2 + e^{ε1} < 4e^{ε1}, e^{ε1} = (e^ε+1)/2 (4.19 at ε = 2: d' ≤ 14).
    assert_eq!(KeyValueProtocol::best(2.0, 12, 2), KeyValueProtocol::PckvGrr);
    assert_eq!(KeyValueProtocol::best(2.0, 13, 2), KeyValueProtocol::PckvUe);
}

fn reports(metric: &KeyValueMetric, n: usize, seed: u64) -> Vec<Report> {
    let pop = population(n);
    let mut rng = SimulationRng::seed_from_u64(seed);
    pop.maps.iter().map(|m| metric.randomize_map(m, &mut rng).unwrap()).collect()
}

#[test]
fn merged_shards_equal_one_aggregator_and_state_bytes_round_trip() {
    for protocol in ["pckv_grr", "pckv_ue"] {
        let metric = self::metric(protocol, 1.0, "6", 2);
        let reports = reports(&metric, 900, 5);
        let mut whole = KeyValueAggregator::new(metric.clone());
        let mut shards: Vec<KeyValueAggregator> = (0..3).map(|_| KeyValueAggregator::new(metric.clone())).collect();
        for (i, r) in reports.iter().enumerate() {
            whole.add(r).unwrap();
            shards[i % 3].add(r).unwrap();
        }
        let bad = Report { payload: Payload::Index(u64::MAX), ..reports[0].clone() };
        assert!(whole.add(&bad).is_err() && shards[1].add(&bad).is_err());
        let mut merged = shards[0].clone();
        merged.merge(&shards[1]).unwrap();
        merged.merge(&shards[2]).unwrap();
        assert_eq!(merged.to_bytes(), whole.to_bytes(), "{protocol}");
        assert_eq!(merged.estimate().unwrap(), whole.estimate().unwrap());
        let back = KeyValueAggregator::from_bytes(metric.clone(), &whole.to_bytes()).unwrap();
        assert_eq!(back.to_bytes(), whole.to_bytes());
        assert_eq!(back.rejected().total(), 1);
        // Corrupt bytes: every truncation and every flipped byte is refused, typed.
        let bytes = whole.to_bytes();
        for cut in 0..bytes.len() {
            assert!(matches!(KeyValueAggregator::from_bytes(metric.clone(), &bytes[..cut]), Err(Error::State(_))));
        }
        for i in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x5a;
            assert!(KeyValueAggregator::from_bytes(metric.clone(), &flipped).is_err(), "{protocol} byte {i}");
        }
        // Another configuration's state, and merging across configurations.
        let other = self::metric(protocol, 1.0, "6", 3);
        assert!(KeyValueAggregator::from_bytes(other.clone(), &bytes).is_err());
        assert!(matches!(merged.merge(&KeyValueAggregator::new(other)), Err(Error::MergeMismatch { .. })));
        // The same keys, range and pad at another ε: counts that would
        // decode with the wrong channel.
        let before = merged.to_bytes();
        let louder = KeyValueAggregator::new(self::metric(protocol, 2.0, "6", 2));
        assert!(matches!(merged.merge(&louder), Err(Error::MergeMismatch { .. })), "{protocol}: another ε");
        assert_eq!(merged.to_bytes(), before, "a refused merge changes nothing");
    }
}

/// A state whose key counts exceed what `n` reports can hold is refused.
#[test]
fn inconsistent_states_are_refused() {
    use localdp::state::StateWriter;
    let metric = metric("pckv_grr", 1.0, "2", 1);
    let id = localdp::Aggregate::state_id(&KeyValueAggregator::new(metric.clone()));
    let state = |counts: &[u64]| {
        let mut w = StateWriter::new(&id);
        w.u64(3); // n
        w.counts(&[0; Rejection::ALL.len()]);
        w.counts(counts);
        w.finish()
    };
    // Four reports' worth of keys from three GRR reports.
    assert!(matches!(KeyValueAggregator::from_bytes(metric.clone(), &state(&[2, 0, 2, 0])), Err(Error::State(_))));
    assert_eq!(KeyValueAggregator::from_bytes(metric, &state(&[2, 0, 0, 1])).unwrap().n(), 3);
}

#[test]
fn malformed_and_mismatched_reports_are_refused_and_counted() {
    let ue = metric("pckv_ue", 1.0, "6", 2);
    let grr = metric("pckv_grr", 1.0, "6", 2);
    let mut rng = SimulationRng::seed_from_u64(9);
    let good = ue.randomize_map(r#"{"1":3}"#, &mut rng).unwrap();
    let mut aggregator = KeyValueAggregator::new(ue.clone());
    let d = 8;
    let cases = [
        (Report { payload: Payload::Bits(BitVector::zeros(2 * d + 8)), ..good.clone() }, Rejection::BadLength),
        (Report { payload: Payload::Bits(BitVector::with_ones(2 * d, [d + 3]).unwrap()), ..good.clone() }, Rejection::Malformed),
        (Report { payload: Payload::Index(0), ..good.clone() }, Rejection::Malformed),
        (Report { epsilon: 2.0, ..good.clone() }, Rejection::ConfigMismatch),
        (grr.randomize_map("{}", &mut rng).unwrap(), Rejection::ConfigMismatch),
    ];
    for (report, reason) in &cases {
        let Err(Error::Rejected { reason: got, .. }) = aggregator.add(report) else { panic!("{report:?} accepted") };
        assert_eq!(got, *reason, "{report:?}");
    }
    let mut grr_aggregator = KeyValueAggregator::new(grr.clone());
    let out = Report { payload: Payload::Index(16), ..grr.randomize_map("{}", &mut rng).unwrap() };
    assert!(matches!(grr_aggregator.add(&out), Err(Error::Rejected { reason: Rejection::OutOfRange, .. })));
    aggregator.add(&good).unwrap();
    assert_eq!((aggregator.n(), aggregator.rejected().total()), (1, 5));
    assert_eq!(aggregator.rejected().get(Rejection::ConfigMismatch), 2);
    // Through the generic aggregator, JSON lines too.
    let mut any = Aggregator::new(Metric::from_json(r#"{"protocol":"pckv_ue","epsilon":1,"keys":6,"range":[0,10],"pad":2}"#).unwrap());
    any.add_json(good.to_json()).unwrap();
    assert!(any.add_json("{}").is_err());
    assert_eq!((any.n(), any.rejected().get(Rejection::Malformed)), (1, 1));
    let Estimate::KeyValue(estimate) = any.estimate(PostProcessing::None).unwrap() else { panic!() };
    assert_eq!(estimate.keys.len(), 6);
    assert!(any.estimate(PostProcessing::Project).is_err(), "no post-processing for key-value");
}

#[test]
fn the_estimate_json_has_the_documented_shape() {
    let metric = Metric::from_json(r#"{"protocol":"key_value","epsilon":2,"keys":["x","y"],"range":[0,10],"pad":1}"#).unwrap();
    let mut aggregator = Aggregator::new(metric.clone());
    let mut rng = SimulationRng::seed_from_u64(3);
    for _ in 0..100 {
        aggregator.add(&metric.randomize_text(r#"{"y":4}"#, &mut rng).unwrap()).unwrap();
    }
    let json = serde_json::to_value(aggregator.estimate(PostProcessing::None).unwrap()).unwrap();
    let key = &json["keys"][1];
    assert_eq!(key["key"], "y");
    for stat in ["frequency", "mean"] {
        let object = key[stat].as_object().unwrap();
        assert_eq!(object.keys().collect::<Vec<_>>(), ["ci95", "estimate", "se"], "{stat}");
    }
    assert_eq!((json["protocol"].as_str(), json["n"].as_u64()), (Some("pckv_grr"), Some(100)));
}

#[test]
fn config_errors_are_typed() {
    let base = KeyValueConfig { protocol: "key_value".into(), epsilon: 1.0, keys: DomainSpec::Size(4), range: [0.0, 1.0], pad: 2 };
    let parameter = |config: KeyValueConfig| match KeyValueMetric::new(&config) {
        Err(Error::InvalidConfig { parameter, .. }) => parameter,
        other => panic!("{config:?}: {other:?}"),
    };
    assert_eq!(parameter(KeyValueConfig { epsilon: f64::NAN, ..base.clone() }), "epsilon");
    assert_eq!(parameter(KeyValueConfig { epsilon: 0.0, ..base.clone() }), "epsilon");
    assert_eq!(parameter(KeyValueConfig { epsilon: -1.0, ..base.clone() }), "epsilon");
    assert_eq!(parameter(KeyValueConfig { keys: DomainSpec::Size(1), ..base.clone() }), "keys");
    assert_eq!(parameter(KeyValueConfig { keys: DomainSpec::Size(localdp::key_value::MAX_KEYS + 1), ..base.clone() }), "keys");
    assert_eq!(parameter(KeyValueConfig { keys: DomainSpec::Labels(vec!["a".into()]), ..base.clone() }), "keys");
    assert_eq!(parameter(KeyValueConfig { keys: DomainSpec::Labels(vec!["a".into(), "a".into()]), ..base.clone() }), "keys");
    assert_eq!(parameter(KeyValueConfig { range: [1.0, 1.0], ..base.clone() }), "range");
    assert_eq!(parameter(KeyValueConfig { range: [2.0, 1.0], ..base.clone() }), "range");
    assert_eq!(parameter(KeyValueConfig { range: [0.0, f64::INFINITY], ..base.clone() }), "range");
    assert_eq!(parameter(KeyValueConfig { range: [f64::NAN, 1.0], ..base.clone() }), "range");
    assert_eq!(parameter(KeyValueConfig { pad: 0, ..base.clone() }), "pad");
    assert_eq!(parameter(KeyValueConfig { pad: localdp::key_value::MAX_PAD + 1, ..base.clone() }), "pad");
    let malformed = |json: &str| match Metric::from_json(json) {
        Err(Error::MalformedConfig { key, .. }) => key,
        other => panic!("{json}: {other:?}"),
    };
    assert_eq!(malformed(r#"{"protocol":"pckv_xx","epsilon":1,"keys":4,"range":[0,1],"pad":1}"#).as_deref(), Some("protocol"));
    assert_eq!(malformed(r#"{"protocol":"key_value","epsilon":1,"keys":4,"range":[0,1],"pad":1,"bins":3}"#).as_deref(), Some("bins"));
    assert_eq!(malformed(r#"{"protocol":"key_value","epsilon":1,"keys":4,"range":[0,1]}"#).as_deref(), Some("pad"));
    assert_eq!(malformed(r#"{"protocol":"key_value","epsilon":1,"keys":"many","range":[0,1],"pad":1}"#).as_deref(), Some("keys"));
}

/// A map's keys are the user's data: errors about a map name neither a key
/// nor a value.
#[test]
fn value_errors_are_typed_and_name_no_key() {
    let metric = Metric::from_json(r#"{"protocol":"key_value","epsilon":1,"keys":["search","share"],"range":[0,1],"pad":1}"#).unwrap();
    let mut rng = SimulationRng::seed_from_u64(2);
    for (map, expected) in [
        ("[1,2]", Error::InvalidValue { expected: ExpectedValue::Object }),
        ("not json", Error::InvalidValue { expected: ExpectedValue::Object }),
        (r#"{"secret-feature-42": 1}"#, Error::ValueNotInDomain { domain: localdp::DomainKind::Labels(2) }),
        (r#"{"search": "secret-value-43"}"#, Error::InvalidValue { expected: ExpectedValue::FiniteNumber }),
        (r#"{"search": null}"#, Error::InvalidValue { expected: ExpectedValue::FiniteNumber }),
    ] {
        let error = metric.randomize_text(map, &mut rng).unwrap_err();
        assert_eq!(error, expected, "{map}");
        assert!(!error.to_string().contains("secret"), "{error}");
    }
    let counted = Metric::from_json(r#"{"protocol":"key_value","epsilon":1,"keys":3,"range":[0,1],"pad":1}"#).unwrap();
    assert!(matches!(counted.randomize_text(r#"{"3": 1}"#, &mut rng), Err(Error::ValueNotInDomain { .. })));
    counted.randomize_text(r#"{"2": 1e300, "0": -5}"#, &mut rng).expect("values are clipped to the range");
    counted.randomize_text("{}", &mut rng).expect("an empty map is a map");
    // "1" and "01" name one key: it would be sampled twice as often.
    let twice = Error::InvalidValue { expected: ExpectedValue::DistinctKeys };
    assert_eq!(counted.randomize_text(r#"{"1": 0.5, "01": 0.7}"#, &mut rng).unwrap_err(), twice);
    assert_eq!(counted.randomize_text(r#"{"+2": 1, "2": 1}"#, &mut rng).unwrap_err(), twice);
}

/// The ledger charges a map once, whatever its size; memoized, a map (in any
/// key order) keeps one permanent report, and another map another.
#[test]
fn a_map_is_one_value_for_the_ledger_and_the_memo() {
    let mut rng = SimulationRng::seed_from_u64(12);
    let config = r#"{"protocol":"key_value","epsilon":1,"keys":["a","b","c"],"range":[0,10],"pad":2,"budget":{"epsilon":2.5,"window":"1d"}}"#;
    let mut client = Client::new(config, &new_secret(&mut rng), None).unwrap();
    let t0 = 1_700_000_000_000;
    client.randomize_text(r#"{"a":1,"b":2,"c":3}"#, t0, &mut rng).unwrap();
    assert_eq!(client.spent(t0), 1.0, "three keys, one charge");
    client.randomize_text("{}", t0 + 1, &mut rng).unwrap();
    assert!(matches!(client.randomize_text(r#"{"a":1}"#, t0 + 2, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })));
    assert!(client.randomize_text(r#"{"zz":1}"#, t0 + 3, &mut rng).is_err());
    assert_eq!(client.spent(t0 + 3), 2.0, "a refused map spends nothing");

    let memo = r#"{"protocol":"pckv_ue","epsilon":1,"keys":["a","b","c"],"range":[0,10],"pad":2,"memoize":true,"budget":{"epsilon":100,"window":"1d"}}"#;
    let mut client = Client::new(memo, &new_secret(&mut rng), None).unwrap();
    let first = client.randomize_text(r#"{"a":1,"b":20}"#, t0, &mut rng).unwrap();
    for i in 0..20 {
        let again = client.randomize_text(r#"{"b":10,"a":1}"#, t0 + i, &mut rng).unwrap();
        assert_eq!(again, first, "the same map (clipped, in any order) resends its report");
    }
    assert_eq!(client.spent(t0 + 20), 1.0);
    let others: Vec<Report> = (0..20).map(|i| client.randomize_text(&format!(r#"{{"c":{i}}}"#), t0 + 30, &mut rng).unwrap()).collect();
    assert_eq!(client.spent(t0 + 30), 12.0, "eleven more distinct maps (c clipped to 10 from 10 on): eleven charges");
    assert_eq!(others[12], others[15], "maps equal once clipped share a memo");
    let state = String::from_utf8_lossy(&client.state_bytes()).into_owned();
    // The memo key of {"a":1,"b":10} is "0:1.0,1:10.0" before the HMAC.
    assert!(!state.contains("\"a\"") && !state.contains("0:1.0"), "memo keys are keyed hashes: {state}");
}

/// `localdp plan` (and the JS `plan`) lists both PCKV protocols with the
/// closed forms: the frequency of a key nobody holds, then the mean.
#[test]
fn the_planner_knows_key_value_metrics() {
    use localdp::plan::{plan, PlanRequest};
    let config = serde_json::json!({"protocol": "key_value", "epsilon": 2, "keys": 50, "range": [0, 60], "pad": 4});
    let result = plan(&config, &PlanRequest { users: 10_000, target_error: None }).unwrap();
    let names: Vec<&str> = result.protocols.iter().map(|p| p.protocol.as_str()).collect();
    assert_eq!(names, ["pckv_grr", "pckv_ue"]);
    let ue = result.protocols.iter().find(|p| p.auto).unwrap();
    assert_eq!(ue.protocol, "pckv_ue");
    let metric = metric("pckv_ue", 2.0, "50", 4);
    let (_, se, _, _) = pckv_estimate(&metric, metric.expected_shares(0.0, 0.0), 10_000);
    let planned = ue.errors[0].std_error.unwrap();
    assert!((planned - se).abs() < 1e-12 * se, "{planned} vs {se}");
    assert!(ue.errors[1].std_error.unwrap() > 0.0);
}
