//! The aggregator's contract: validation by reason without losing state,
//! merging, `auto` resolved identically on both sides, and config errors.

mod common;

use common::oracle;
use localdp::{
    Aggregate, DomainSpec, Error, FrequencyAggregator, FrequencyConfig, FrequencyOracle, FrequencyProtocol, Protocol,
    ProtocolFamily, Randomizer, Rejection, Selection, SimulationRng,
};

fn filled(oracle: &FrequencyOracle, n: usize, seed: u64) -> FrequencyAggregator {
    let mut rng = SimulationRng::seed_from_u64(seed);
    let mut aggregator = FrequencyAggregator::new(oracle.clone());
    for i in 0..n {
        aggregator.add(&oracle.randomize_index(i % 3, &mut rng).unwrap()).unwrap();
    }
    aggregator
}

#[test]
fn merging_shards_equals_aggregating_everything() {
    for &protocol in FrequencyProtocol::ALL {
        if protocol == FrequencyProtocol::DBitFlip {
            continue;
        }
        let oracle = oracle(protocol, 1.0, 10);
        let mut rng = SimulationRng::seed_from_u64(3);
        let reports: Vec<_> = (0..3000).map(|i| oracle.randomize_index(i % 10, &mut rng).unwrap()).collect();
        let mut whole = FrequencyAggregator::new(oracle.clone());
        let mut left = FrequencyAggregator::new(oracle.clone());
        let mut right = FrequencyAggregator::new(oracle.clone());
        for (i, r) in reports.iter().enumerate() {
            whole.add(r).unwrap();
            if i % 3 == 0 { left.add(r).unwrap() } else { right.add(r).unwrap() }
        }
        left.add_json(b"not json").unwrap_err();
        whole.add_json(b"not json").unwrap_err();
        left.merge(&right).unwrap();
        assert_eq!(left.estimate(), whole.estimate(), "{protocol:?}");
    }
}

#[test]
fn merging_different_configurations_is_refused() {
    let mut a = filled(&oracle(FrequencyProtocol::Grr, 1.0, 10), 10, 1);
    let before = a.estimate().unwrap();
    for other in [oracle(FrequencyProtocol::Grr, 2.0, 10), oracle(FrequencyProtocol::Grr, 1.0, 11), oracle(FrequencyProtocol::Oue, 1.0, 10)] {
        assert!(matches!(a.merge(&filled(&other, 10, 2)), Err(Error::MergeMismatch { .. })));
    }
    assert_eq!(a.estimate().unwrap(), before);
}

#[test]
fn a_rejected_report_changes_nothing_but_its_count() {
    let oracle = oracle(FrequencyProtocol::Olh, 1.0, 8);
    let mut aggregator = filled(&oracle, 500, 4);
    let before = aggregator.estimate().unwrap();
    let good = oracle.randomize_index(1, &mut SimulationRng::seed_from_u64(1)).unwrap();
    let mut wrong_epsilon = good.clone();
    wrong_epsilon.epsilon = 2.0;
    let mut out_of_range = good.clone();
    out_of_range.payload = localdp::Payload::Hashed { seed: 1, value: 1 << 40 };
    let mut wrong_shape = good.clone();
    wrong_shape.payload = localdp::Payload::Index(0);
    let cases = [
        (wrong_epsilon, Rejection::ConfigMismatch),
        (out_of_range, Rejection::OutOfRange),
        (wrong_shape, Rejection::Malformed),
    ];
    for (report, reason) in cases {
        match aggregator.add(&report) {
            Err(Error::Rejected { reason: r, .. }) => assert_eq!(r, reason),
            other => panic!("expected a rejection for {reason}, got {other:?}"),
        }
    }
    for text in ["", "[]", "{\"version\": 2}", "\u{0}\u{ff}", "{\"version\":1,\"protocol\":\"olh\"}"] {
        assert!(aggregator.add_json(text.as_bytes()).is_err());
    }
    assert!(aggregator.add_json(&[0xff, 0xfe, b'{']).is_err());
    let after = aggregator.estimate().unwrap();
    assert_eq!(after.estimates, before.estimates);
    assert_eq!(after.n, before.n);
    assert_eq!(after.rejected.get(Rejection::ConfigMismatch), 1);
    assert_eq!(after.rejected.get(Rejection::OutOfRange), 1);
    assert_eq!(after.rejected.get(Rejection::UnsupportedVersion), 1);
    assert_eq!(after.rejected.get(Rejection::Malformed), 6);
}

#[test]
fn no_reports_is_an_error_not_a_nan() {
    let aggregator = FrequencyAggregator::new(oracle(FrequencyProtocol::Hr, 1.0, 5));
    assert_eq!(aggregator.estimate(), Err(Error::NoReports));
}

#[test]
fn auto_picks_the_smallest_variance_and_both_sides_agree() {
    let resolve = |epsilon: f64, d: usize| {
        FrequencyOracle::from_json(&format!(r#"{{"protocol":"auto","epsilon":{epsilon},"domain":{d}}}"#))
            .unwrap()
    };
    // GRR for small domains; for large ones another protocol beats it.
    assert_eq!(resolve(1.0, 4).protocol(), FrequencyProtocol::Grr);
    assert_ne!(resolve(1.0, 1024).protocol(), FrequencyProtocol::Grr);
    for (epsilon, d) in [(0.5, 2), (1.0, 16), (1.0, 1024), (4.0, 1024), (8.0, 3)] {
        let chosen = resolve(epsilon, d);
        for &protocol in FrequencyProtocol::ALL {
            if protocol == FrequencyProtocol::DBitFlip {
                continue;
            }
            assert!(
                chosen.total_variance(1) <= oracle(protocol, epsilon, d).total_variance(1) * (1.0 + 1e-9),
                "auto at ε={epsilon}, d={d} chose {:?} over {protocol:?}",
                chosen.protocol()
            );
        }
        // The client's reports are accepted by an aggregator built from the same config.
        let report = chosen.randomize_index(0, &mut SimulationRng::seed_from_u64(1)).unwrap();
        assert_eq!(report.protocol, Protocol::Frequency(chosen.protocol()));
        FrequencyAggregator::new(resolve(epsilon, d)).add(&report).unwrap();
    }
}

#[test]
fn bad_configs_are_refused_with_a_reason() {
    let config = |epsilon: f64| FrequencyConfig {
        protocol: Selection::Fixed(FrequencyProtocol::Grr),
        epsilon,
        domain: DomainSpec::Size(4),
        d: None,
        instantaneous_epsilon: None,
    };
    for epsilon in [0.0, -1.0, f64::NAN, f64::INFINITY, 31.0] {
        assert!(matches!(FrequencyOracle::new(&config(epsilon)), Err(Error::InvalidConfig { .. })), "{epsilon}");
    }
    // Out-of-range values: a RangeError in JavaScript.
    for text in [
        r#"{"protocol":"grr","epsilon":1,"domain":1}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":0}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":["a"]}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":["a","a"]}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":[]}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":99999999999}"#,
        r#"{"protocol":"grr","epsilon":0,"domain":4}"#,
        r#"{"protocol":"grr","epsilon":-2,"domain":4}"#,
    ] {
        assert!(matches!(FrequencyOracle::from_json(text), Err(Error::InvalidConfig { .. })), "{text}");
    }
    // Wrong shapes: a TypeError in JavaScript.
    for text in [
        r#"{"protocol":"nope","epsilon":1,"domain":4}"#,
        r#"{"protocol":"grr","epsilon":"1","domain":4}"#,
        r#"{"protocol":"grr","domain":4}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":4,"typo":1}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":[1,2]}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":-3}"#,
        r#"[1]"#,
        r#"not json"#,
    ] {
        assert!(matches!(FrequencyOracle::from_json(text), Err(Error::MalformedConfig { .. })), "{text}");
    }
}

#[test]
fn values_outside_the_domain_are_errors_that_do_not_echo_the_value() {
    let mut rng = SimulationRng::seed_from_u64(1);
    let labels = FrequencyOracle::from_json(r#"{"protocol":"olh","epsilon":1,"domain":["a","b"]}"#).unwrap();
    let sized = oracle(FrequencyProtocol::Grr, 1.0, 4);
    for (oracle, value) in [(&labels, "secret-xyz"), (&sized, "7"), (&sized, "-1"), (&sized, "1.5"), (&sized, "qq")] {
        let error = oracle.randomize(value, &mut rng).unwrap_err();
        assert!(matches!(error, Error::ValueNotInDomain { .. }));
        assert!(!error.to_string().contains(value), "{error}");
    }
    assert!(labels.randomize("b", &mut rng).is_ok());
}

/// Report texts read alike natively and in wasm (tests/wasm.rs runs the
/// same checks through `JSON.parse` and the object reader).
#[test]
fn report_reasons_are_the_same_in_every_build() {
    common::readers::report_reasons_are_the_same_in_every_build();
}
