//! The aggregator state as bytes: the unit a distributed engine ships.
//!
//! For every mechanism: reports split at random into shards, each shard's
//! state round-tripped through bytes and merged, give the same estimate,
//! bit for bit, as one aggregator fed everything. Truncated, corrupted,
//! foreign or inconsistent bytes are refused with a typed error, never a
//! panic.

use localdp::rng::RngCore;
use localdp::state::{StateWriter, MAX_COUNT};
use localdp::{
    Aggregator, DistributionProtocol, Error, FrequencyProtocol, HeavyHitterProtocol, KeyValueProtocol, MarginalsProtocol, Metric, NumericProtocol,
    PostProcessing, ProtocolFamily, SimulationRng, StateError,
};

/// One config per mechanism, from the libraries' own protocol lists (so a
/// new protocol is covered without an edit here), plus the other shapes of
/// state: labels, records, dBitFlip with several buckets, RAPPOR's cohorts
/// (heavy hitters: sketch counts, or every discovery report by level).
fn configs() -> Vec<String> {
    let mut configs: Vec<String> = FrequencyProtocol::ALL
        .iter()
        .map(|p| format!(r#"{{"protocol":"{p}","epsilon":1,"domain":8}}"#))
        .chain(NumericProtocol::ALL.iter().map(|p| format!(r#"{{"protocol":"{p}","epsilon":1,"range":[0,10]}}"#)))
        .chain(HeavyHitterProtocol::ALL.iter().map(|p| match p.name() {
            "pem" | "treehist" => format!(r#"{{"protocol":"{p}","epsilon":4,"max_length":4,"top":3}}"#),
            "sfp" => format!(r#"{{"protocol":"{p}","epsilon":4,"max_length":2,"top":3,"sketch":{{"hashes":2,"width":8}}}}"#),
            _ => format!(r#"{{"protocol":"{p}","epsilon":1,"sketch":{{"hashes":4,"width":16}},"candidates":["a","b","c"]}}"#),
        }))
        .chain(DistributionProtocol::ALL.iter().map(|p| format!(r#"{{"protocol":"{p}","epsilon":1,"range":[0,10],"bins":20}}"#)))
        .chain(KeyValueProtocol::ALL.iter().map(|p| format!(r#"{{"protocol":"{p}","epsilon":1,"keys":12,"range":[0,10],"pad":3}}"#)))
        .chain(MarginalsProtocol::ALL.iter().map(|p| {
            let attributes = r#"[{"name":"a","domain":3},{"name":"b","domain":["x","y"]},{"name":"c","domain":4}]"#;
            format!(r#"{{"protocol":"{p}","epsilon":1,"attributes":{attributes}}}"#)
        }))
        .collect();
    configs.extend(
        [
            r#"{"protocol":"sue","epsilon":1,"domain":["a","b","c","d","e"]}"#,
            r#"{"protocol":"dbitflip","epsilon":1,"domain":8,"d":3}"#,
            r#"{"protocol":"auto","epsilon":4,"domain":6}"#,
            r#"{"protocol":"piecewise","epsilon":6,"range":[[0,1],[0,10],[5,6]]}"#,
            r#"{"protocol":"rappor","bits":16,"hashes":2,"cohorts":4,"candidates":["a","b","c","d"]}"#,
        ]
        .map(String::from),
    );
    configs
}

/// A value the metric accepts, drawn at random.
fn value(metric: &Metric, rng: &mut SimulationRng) -> String {
    let neighbours = metric.neighbours();
    let i = (rng.next_u32() % 2) as usize; // test data only: bias is harmless
    neighbours[i].clone()
}

/// `n` report lines, one in 25 deliberately broken (so rejections travel too).
fn reports(metric: &Metric, n: usize, rng: &mut SimulationRng) -> Vec<String> {
    (0..n)
        .map(|i| {
            if i % 25 == 7 {
                "{\"version\":1,\"protocol\":\"grr\"".to_string()
            } else {
                metric.randomize_text(&value(metric, rng), rng).unwrap().to_json()
            }
        })
        .collect()
}

fn estimate_json(aggregator: &Aggregator) -> String {
    serde_json::to_string(&aggregator.estimate(PostProcessing::None).unwrap()).unwrap()
}

fn state_of(metric: &Metric, lines: &[String]) -> Vec<u8> {
    let mut aggregator = Aggregator::new(metric.clone());
    for line in lines {
        let _ = aggregator.add_json(line);
    }
    aggregator.to_bytes()
}

#[test]
fn sharded_states_merged_through_bytes_give_the_identical_estimate() {
    let mut rng = SimulationRng::seed_from_u64(11);
    for config in configs() {
        let metric = Metric::from_json(&config).unwrap();
        let lines = reports(&metric, 3000, &mut rng);
        let whole = {
            let mut a = Aggregator::new(metric.clone());
            for line in &lines {
                let _ = a.add_json(line);
            }
            a
        };
        for shards in [1, 2, 7] {
            let mut parts = vec![Vec::new(); shards];
            for line in &lines {
                parts[(rng.next_u32() as usize) % shards].push(line.clone());
            }
            let mut merged = Aggregator::new(metric.clone());
            for part in &parts {
                let shipped = Aggregator::from_bytes(metric.clone(), &state_of(&metric, part)).unwrap();
                merged.merge(&shipped).unwrap();
            }
            assert_eq!(merged.n(), whole.n(), "{config}: n");
            assert_eq!(merged.rejected(), whole.rejected(), "{config}: rejections");
            assert_eq!(estimate_json(&merged), estimate_json(&whole), "{config}: {shards} shards");
            assert_eq!(merged.to_bytes(), whole.to_bytes(), "{config}: {shards} shards, state bytes");
        }
    }
}

#[test]
fn a_state_round_trips_through_bytes_unchanged() {
    let mut rng = SimulationRng::seed_from_u64(12);
    for config in configs() {
        let metric = Metric::from_json(&config).unwrap();
        let bytes = state_of(&metric, &reports(&metric, 500, &mut rng));
        let restored = Aggregator::from_bytes(metric.clone(), &bytes).unwrap();
        assert_eq!(restored.to_bytes(), bytes, "{config}");
        // An empty aggregator travels too.
        let empty = Aggregator::new(metric.clone()).to_bytes();
        assert_eq!(Aggregator::from_bytes(metric, &empty).unwrap().n(), 0, "{config}");
    }
}

fn state_error(metric: &Metric, bytes: &[u8]) -> StateError {
    match Aggregator::from_bytes(metric.clone(), bytes) {
        Err(Error::State(e)) => e,
        Err(other) => panic!("expected a state error, got {other:?}"),
        Ok(_) => panic!("accepted {} bytes that should have been refused", bytes.len()),
    }
}

#[test]
fn truncated_state_is_refused_at_every_length() {
    let mut rng = SimulationRng::seed_from_u64(13);
    for config in configs() {
        let metric = Metric::from_json(&config).unwrap();
        let bytes = state_of(&metric, &reports(&metric, 200, &mut rng));
        for len in 0..bytes.len() {
            state_error(&metric, &bytes[..len]);
        }
    }
}

#[test]
fn every_corrupted_byte_is_caught() {
    let mut rng = SimulationRng::seed_from_u64(14);
    for config in configs() {
        let metric = Metric::from_json(&config).unwrap();
        let bytes = state_of(&metric, &reports(&metric, 200, &mut rng));
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut corrupt = bytes.clone();
                corrupt[i] ^= flip;
                let e = state_error(&metric, &corrupt);
                let expected = match i {
                    0..=3 => matches!(e, StateError::NotAState),
                    4 => matches!(e, StateError::UnsupportedVersion { .. }),
                    _ => e == StateError::Checksum,
                };
                assert!(expected, "{config}: byte {i} ^ {flip:#x} gave {e:?}");
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        state_error(&metric, &longer);
    }
}

#[test]
fn a_state_of_another_configuration_is_refused() {
    let grr = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":8}"#).unwrap();
    let other_epsilon = Metric::from_json(r#"{"protocol":"grr","epsilon":2,"domain":8}"#).unwrap();
    let other_domain = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":9}"#).unwrap();
    let bytes = Aggregator::new(grr).to_bytes();
    for metric in [other_epsilon, other_domain] {
        assert!(matches!(state_error(&metric, &bytes), StateError::ConfigMismatch { .. }));
    }
}

/// A well-formed, correctly checksummed state whose counts cannot come from
/// real reports is refused: merging it would corrupt every estimate after.
#[test]
fn forged_counts_are_refused() {
    let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":8}"#).unwrap();
    let forge = |n: u64, counts: &[u64]| {
        let mut w = StateWriter::new(&metric.id());
        w.u64(n);
        w.counts(&[0; 6]);
        w.counts(counts);
        w.finish()
    };
    // Honest: 3 reports, one count each.
    assert!(Aggregator::from_bytes(metric.clone(), &forge(3, &[1, 1, 1, 0, 0, 0, 0, 0])).is_ok());
    let inconsistent = [
        forge(3, &[1, 1, 0, 0, 0, 0, 0, 0]),    // counts do not add up to n
        forge(3, &[4, 0, 0, 0, 0, 0, 0, 0]),    // a count above n
        forge(3, &[1, 1, 1, 0, 0, 0, 0]),       // wrong length
        forge(MAX_COUNT, &[MAX_COUNT, 0, 0, 0, 0, 0, 0, 0]),
    ];
    for bytes in &inconsistent[..3] {
        assert!(matches!(state_error(&metric, bytes), StateError::Inconsistent { .. }));
    }
    // Counts above 2^53 are refused outright.
    let above = forge(MAX_COUNT + 1, &[MAX_COUNT + 1, 0, 0, 0, 0, 0, 0, 0]);
    assert!(matches!(state_error(&metric, &above), StateError::Inconsistent { .. }));
    // A state at the limit loads, but merging it with more overflows: refused.
    let mut full = Aggregator::from_bytes(metric.clone(), &inconsistent[3]).unwrap();
    let one = Aggregator::from_bytes(metric.clone(), &forge(1, &[1, 0, 0, 0, 0, 0, 0, 0])).unwrap();
    let before = full.to_bytes();
    assert!(matches!(full.merge(&one), Err(Error::State(StateError::Inconsistent { .. }))));
    assert_eq!(full.to_bytes(), before, "a refused merge changes nothing");
}

/// Counts at the cap load, take more reports and estimate without an
/// overflow (the Hadamard transforms sum counts in 64-bit integers).
#[test]
fn counts_at_the_cap_add_and_estimate_without_overflow() {
    for (config, len) in [(r#"{"protocol":"hr","epsilon":1,"domain":3}"#, 4), (r#"{"protocol":"hrr","epsilon":1,"domain":3}"#, 8)] {
        let metric = Metric::from_json(config).unwrap();
        let mut counts = vec![0; len];
        counts[0] = MAX_COUNT / 2;
        counts[1] = MAX_COUNT / 2;
        let mut w = StateWriter::new(&metric.id());
        w.u64(MAX_COUNT);
        w.counts(&[0; 6]);
        w.counts(&counts);
        let mut aggregator = Aggregator::from_bytes(metric.clone(), &w.finish()).unwrap();
        let _ = aggregator.add_json(b"{}"); // a rejection on top of the cap
        aggregator.add(&metric.randomize_text("0", &mut SimulationRng::seed_from_u64(1)).unwrap()).unwrap();
        let estimate = serde_json::to_value(aggregator.estimate(PostProcessing::None).unwrap()).unwrap();
        assert!(estimate["estimates"][0]["frequency"].as_f64().unwrap().is_finite(), "{config}");
    }
}

/// Every family refuses to merge counts made at another ε (the
/// fingerprint alone leaves ε out): such counts would decode with the wrong
/// channel, silently.
#[test]
fn aggregators_at_another_epsilon_do_not_merge() {
    for config in configs() {
        let mut value: serde_json::Value = serde_json::from_str(&config).unwrap();
        let Some(epsilon) = value["epsilon"].as_f64() else { continue }; // RAPPOR's ε comes from f, p and q
        value["epsilon"] = (epsilon * 2.0).into();
        let mut ours = Aggregator::new(Metric::from_json(&config).unwrap());
        let theirs = Aggregator::new(Metric::from_value(value).unwrap());
        assert!(matches!(ours.merge(&theirs), Err(Error::MergeMismatch { .. })), "{config}");
    }
}

#[test]
fn aggregators_of_different_metrics_do_not_merge() {
    let mut grr = Aggregator::new(Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":8}"#).unwrap());
    let duchi = Aggregator::new(Metric::from_json(r#"{"protocol":"duchi","epsilon":1,"range":[0,10]}"#).unwrap());
    assert!(matches!(grr.merge(&duchi), Err(Error::MergeMismatch { .. })));
}
