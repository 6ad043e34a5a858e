//! Exact channel tests: for every protocol, enumerate the realized output
//! probabilities (every output where that is feasible, a sample of outputs
//! otherwise) for every input, and assert that the largest log-ratio between
//! two inputs is at most ε, exactly, and, every protocol here being tight,
//! at least ε − 1e-12 (`common::channel::assert_epsilon`). The
//! probabilities are the realized ones: the integer thresholds the coins
//! actually use. Where every output is enumerated, each input's row sums
//! to one.
//!
//! A goodness-of-fit test then checks that the samplers draw from exactly
//! the channel that `likelihood` describes, so the enumeration is not about
//! a different mechanism than the one that runs.

mod common;

use common::channel::{assert_epsilon, frequency_epsilon, tight_within};
use common::{chi_square_critical, oracle};
use localdp::frequency::ChannelOutputs;
use localdp::report::BitVector;
use localdp::{FrequencyOracle, FrequencyProtocol, HeavyHitterMetric, Payload, ProtocolFamily, Randomizer, Report, SimulationRng};
use std::collections::HashMap;

const EPSILONS: [f64; 6] = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0];
const DOMAINS: [usize; 4] = [2, 3, 16, 1024];

/// The outputs to examine: all of them where that is feasible, otherwise
/// outputs drawn from the mechanism itself (from varied inputs); each
/// mechanism says which (`FrequencyOracle::channel_outputs`).
fn outputs(oracle: &FrequencyOracle) -> ChannelOutputs<Report> {
    oracle.channel_outputs(&mut SimulationRng::seed_from_u64(99))
}

#[test]
fn every_protocol_is_epsilon_ldp_and_tight() {
    for &protocol in FrequencyProtocol::ALL {
        if protocol == FrequencyProtocol::DBitFlip {
            continue; // enumerated exhaustively in tests/repeated.rs
        }
        for d in DOMAINS {
            for epsilon in EPSILONS {
                let oracle = oracle(protocol, epsilon, d);
                let realized = frequency_epsilon(&oracle, outputs(&oracle));
                assert_epsilon(&format!("{protocol:?} d={d}"), realized, epsilon, tight_within(epsilon));
            }
        }
    }
}

/// The samplers follow the enumerated channel: χ² goodness of fit of 200 000
/// draws from input 1 over d = 3 (false-alarm rate 1e-6 per test). Where the
/// outputs are too many to enumerate (local hashing's seeds), the samplers
/// are checked on the event "the report supports its own value", whose
/// probability is p*. With an instantaneous step, the draws are a fresh
/// permanent response and the step, and the channel the composed one.
#[test]
fn samplers_draw_from_the_enumerated_channel() {
    for &protocol in FrequencyProtocol::ALL {
        if protocol == FrequencyProtocol::DBitFlip {
            continue; // enumerated exhaustively in tests/repeated.rs
        }
        sampler_follows_its_channel(&oracle(protocol, 1.0, 3));
    }
    for protocol in ["grr", "sue", "oue", "blh", "olh"] {
        let config = format!(r#"{{"protocol":"{protocol}","epsilon":2,"domain":3,"instantaneous_epsilon":1}}"#);
        sampler_follows_its_channel(&FrequencyOracle::from_json(&config).unwrap());
    }
}

fn sampler_follows_its_channel(oracle: &FrequencyOracle) {
    let protocol = oracle.protocol();
    let mut rng = SimulationRng::seed_from_u64(5);
    let ChannelOutputs::Complete(ys) = outputs(oracle) else {
        let (p, _) = oracle.support_probabilities();
        let hits = (0..DRAWS)
            .filter(|_| oracle.supported_values(&oracle.randomize_index(1, &mut rng).unwrap()).contains(&1))
            .count() as f64;
        let z = (hits - DRAWS as f64 * p) / (DRAWS as f64 * p * (1.0 - p)).sqrt();
        assert!(z.abs() < common::z_critical(1e-6, 1), "{protocol:?}: z = {z}");
        return;
    };
    let draws = || oracle.randomize_index(1, &mut rng).unwrap();
    draws_fit(&format!("{protocol:?}"), draws, &ys, |y| oracle.likelihood(1, y).probability());
}

const DRAWS: usize = 200_000;

/// χ² goodness of fit of `DRAWS` reports from `draw` to the channel
/// `probability` gives over `outputs`, every output there is (false-alarm
/// rate 1e-6).
fn draws_fit(name: &str, mut draw: impl FnMut() -> Report, outputs: &[Report], probability: impl Fn(&Report) -> f64) {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for _ in 0..DRAWS {
        *counts.entry(draw().to_json()).or_default() += 1;
    }
    let mut statistic = 0.0;
    let mut cells = 0;
    for y in outputs {
        let expected = DRAWS as f64 * probability(y);
        let observed = counts.remove(&y.to_json()).unwrap_or(0) as f64;
        if expected == 0.0 {
            assert_eq!(observed, 0.0, "{name} drew an output of probability 0");
            continue;
        }
        statistic += (observed - expected).powi(2) / expected;
        cells += 1;
    }
    assert!(counts.is_empty(), "{name} drew outputs outside the enumeration");
    let critical = chi_square_critical(1e-6, cells - 1);
    assert!(statistic < critical, "{name}: χ² = {statistic} over {cells} cells, critical {critical}");
}

/// The CMS client (its flips drawn 64 to a word by `Bernoulli::sample_bits`)
/// draws from the channel its `likelihood` describes: all 2 × 2^8 outputs
/// of a 2-row, 8-column sketch at ε = 1.
#[test]
fn the_cms_sampler_draws_from_its_channel() {
    let metric = HeavyHitterMetric::from_json(r#"{"protocol":"cms","epsilon":1,"sketch":{"hashes":2,"width":8}}"#).unwrap();
    let mut rng = SimulationRng::seed_from_u64(5);
    let template = metric.randomize("/checkout", &mut rng).unwrap();
    let ys: Vec<Report> = (0..2u32)
        .flat_map(|cohort| (0..=255u8).map(move |byte| Payload::Cohort { cohort, bits: BitVector::from_bytes(vec![byte]) }))
        .map(|payload| Report { payload, ..template.clone() })
        .collect();
    let draws = || metric.randomize("/checkout", &mut rng).unwrap();
    draws_fit("cms", draws, &ys, |y| metric.likelihood("/checkout", y).probability());
}

#[test]
fn every_channel_holds_its_epsilon_up_to_30() {
    common::channel::every_channel_holds_its_epsilon_up_to_30();
}

#[test]
fn local_hashing_at_large_epsilon_stays_in_range() {
    common::channel::local_hashing_at_large_epsilon_stays_in_range();
}

#[test]
fn longitudinal_channels_hold_their_per_report_epsilon() {
    common::channel::longitudinal_channels_hold_their_per_report_epsilon();
}
