//! Exact channel tests: for every protocol, enumerate the realized output
//! probabilities (every output where that is feasible, a sample of outputs
//! otherwise) for every input, and assert that the largest log-ratio between
//! two inputs is at most ε (+1e-12) and, every protocol here being tight,
//! at least ε − 1e-12. The probabilities are the realized ones: the integer
//! thresholds the coins actually use.
//!
//! A goodness-of-fit test then checks that the samplers draw from exactly
//! the channel that `likelihood` describes, so the enumeration is not about
//! a different mechanism than the one that runs.

mod common;

use common::{chi_square_critical, oracle};
use localdp::report::BitVector;
use localdp::{FrequencyOracle, FrequencyProtocol, Payload, ProtocolFamily, Report, SimulationRng};
use std::collections::HashMap;

const EPSILONS: [f64; 6] = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0];
const DOMAINS: [usize; 4] = [2, 3, 16, 1024];

fn report(oracle: &FrequencyOracle, payload: Payload) -> Report {
    let mut r = oracle.randomize_index(0, &mut SimulationRng::seed_from_u64(0)).unwrap();
    r.payload = payload;
    r
}

fn all_bit_vectors(d: usize, weight: Option<usize>) -> Vec<Payload> {
    (0u64..1 << d)
        .filter(|m| weight.is_none_or(|w| m.count_ones() as usize == w))
        .map(|m| {
            let mut bits = BitVector::zeros(d);
            (0..d).filter(|i| m >> i & 1 == 1).for_each(|i| bits.set(i));
            Payload::Bits(bits)
        })
        .collect()
}

/// The outputs to examine: all of them where that is feasible, otherwise
/// outputs drawn from the mechanism itself (from varied inputs).
fn outputs(oracle: &FrequencyOracle) -> Vec<Payload> {
    let d = oracle.domain().len();
    let mut rng = SimulationRng::seed_from_u64(99);
    let sampled = |count: usize, rng: &mut SimulationRng| -> Vec<Payload> {
        (0..count).map(|i| oracle.randomize_index((i * 7919) % d, rng).unwrap().payload).collect()
    };
    match oracle.protocol() {
        FrequencyProtocol::Grr => (0..d as u64).map(Payload::Index).collect(),
        FrequencyProtocol::Hr => (0..(d as u64 + 1).next_power_of_two()).map(Payload::Index).collect(),
        FrequencyProtocol::Blh | FrequencyProtocol::Olh => {
            let g = localdp::frequency::LocalHashing::optimal_g(oracle.epsilon());
            let g = if oracle.protocol() == FrequencyProtocol::Blh { 2 } else { g };
            let seeds = if d > 16 { 8 } else { 64 };
            (0..seeds)
                .flat_map(|_| {
                    let seed = match oracle.randomize_index(0, &mut rng).unwrap().payload {
                        Payload::Hashed { seed, .. } => seed,
                        _ => unreachable!(),
                    };
                    (0..g).map(move |value| Payload::Hashed { seed, value })
                })
                .collect()
        }
        FrequencyProtocol::Sue | FrequencyProtocol::Oue if d <= 16 => all_bit_vectors(d, None),
        FrequencyProtocol::Ss if d <= 16 => {
            let k = localdp::frequency::SubsetSelection::best_size(oracle.epsilon(), d);
            all_bit_vectors(d, Some(k))
        }
        FrequencyProtocol::Sue | FrequencyProtocol::Oue | FrequencyProtocol::Ss => sampled(12, &mut rng),
        // Enumerated exhaustively in tests/repeated.rs.
        FrequencyProtocol::DBitFlip => sampled(64, &mut rng),
        other => unreachable!("{other:?}: no enumeration of its outputs yet"),
    }
}

/// The largest `ln(P[y|x] / P[y|x'])` over the examined outputs `y` and all
/// pairs of inputs.
fn max_log_ratio(oracle: &FrequencyOracle) -> f64 {
    let d = oracle.domain().len();
    let mut worst = 0.0f64;
    for payload in outputs(oracle) {
        let y = report(oracle, payload);
        let likelihoods: Vec<_> = (0..d).map(|x| oracle.likelihood(x, &y)).collect();
        if likelihoods.iter().all(|l| l.is_zero()) {
            continue;
        }
        assert!(likelihoods.iter().all(|l| !l.is_zero()), "an output impossible for some inputs only: ε = ∞");
        let logs: Vec<f64> = likelihoods.iter().map(|l| l.log_ratio(likelihoods[0])).collect();
        let (lo, hi) = logs.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        worst = worst.max(hi - lo);
    }
    worst
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
                let realized = max_log_ratio(&oracle);
                assert!(
                    realized <= epsilon + 1e-12,
                    "{protocol:?} d={d} ε={epsilon}: realized {realized} exceeds ε"
                );
                assert!(
                    realized >= epsilon - 1e-12,
                    "{protocol:?} d={d} ε={epsilon}: realized {realized} is not tight"
                );
            }
        }
    }
}

#[test]
fn enumerated_channels_are_distributions() {
    for protocol in [FrequencyProtocol::Grr, FrequencyProtocol::Sue, FrequencyProtocol::Oue, FrequencyProtocol::Hr, FrequencyProtocol::Ss] {
        for d in [2, 3, 16] {
            for epsilon in [0.5, 4.0] {
                let oracle = oracle(protocol, epsilon, d);
                let ys: Vec<Report> = outputs(&oracle).into_iter().map(|p| report(&oracle, p)).collect();
                for x in 0..d {
                    let total: f64 = ys
                        .iter()
                        .map(|y| oracle.likelihood(x, y).probability())
                        .sum();
                    assert!((total - 1.0).abs() < 1e-12, "{protocol:?} d={d} ε={epsilon} x={x}: Σ = {total}");
                }
            }
        }
    }
}

/// The samplers follow the enumerated channel: χ² goodness of fit of 200 000
/// draws from input 1 over d = 3 (false-alarm rate 1e-6 per test). Local
/// hashing's seeds are too many to enumerate, so it is checked on the event
/// "the report's bucket is the value's own bucket", whose probability is p*.
#[test]
fn samplers_draw_from_the_enumerated_channel() {
    const DRAWS: usize = 200_000;
    for &protocol in FrequencyProtocol::ALL {
        if protocol == FrequencyProtocol::DBitFlip {
            continue; // enumerated exhaustively in tests/repeated.rs
        }
        let oracle = oracle(protocol, 1.0, 3);
        let mut rng = SimulationRng::seed_from_u64(5);
        if matches!(protocol, FrequencyProtocol::Blh | FrequencyProtocol::Olh) {
            let (p, _) = oracle.support_probabilities();
            let own = localdp::hash::key64(b"1");
            let g = if protocol == FrequencyProtocol::Blh { 2 } else { localdp::frequency::LocalHashing::optimal_g(1.0) };
            let hits = (0..DRAWS)
                .filter(|_| match oracle.randomize_index(1, &mut rng).unwrap().payload {
                    Payload::Hashed { seed, value } => localdp::hash::bucket(seed, own, g) == value,
                    _ => unreachable!(),
                })
                .count() as f64;
            let z = (hits - DRAWS as f64 * p) / (DRAWS as f64 * p * (1.0 - p)).sqrt();
            assert!(z.abs() < common::z_critical(1e-6, 1), "{protocol:?}: z = {z}");
            continue;
        }
        let mut counts: HashMap<String, usize> = HashMap::new();
        for _ in 0..DRAWS {
            *counts.entry(oracle.randomize_index(1, &mut rng).unwrap().to_json()).or_default() += 1;
        }
        let ys = outputs(&oracle);
        let mut statistic = 0.0;
        let mut cells = 0;
        for payload in ys {
            let y = report(&oracle, payload);
            let expected = DRAWS as f64 * oracle.likelihood(1, &y).probability();
            let observed = counts.remove(&y.to_json()).unwrap_or(0) as f64;
            if expected == 0.0 {
                assert_eq!(observed, 0.0, "{protocol:?} drew an output of probability 0");
                continue;
            }
            statistic += (observed - expected).powi(2) / expected;
            cells += 1;
        }
        assert!(counts.is_empty(), "{protocol:?} drew outputs outside the enumeration");
        let critical = chi_square_critical(1e-6, cells - 1);
        assert!(statistic < critical, "{protocol:?}: χ² = {statistic} over {cells} cells, critical {critical}");
    }
}
