//! The black-box auditor: every mechanism's lower bound stays at or below
//! its claimed ε, and deliberately broken randomizers are caught.

use localdp::audit::{audit, audit_with, clopper_pearson_lower, neighbours};
use localdp::report::Payload;
use localdp::rng::RngCore;
use localdp::{Metric, Report, SimulationRng};

const FREQUENCY: [&str; 7] = ["grr", "sue", "oue", "blh", "olh", "hr", "ss"];
const NUMERIC: [&str; 5] = ["duchi", "laplace", "piecewise", "hybrid", "one_bit_mean"];
const CONFIDENCE: f64 = 0.999999;

fn metric(text: &str) -> Metric {
    Metric::from_json(text).unwrap()
}

fn configs(epsilon: f64) -> Vec<String> {
    FREQUENCY
        .iter()
        .map(|p| format!(r#"{{"protocol":"{p}","epsilon":{epsilon},"domain":6}}"#))
        .chain(NUMERIC.iter().map(|p| format!(r#"{{"protocol":"{p}","epsilon":{epsilon},"range":[0,10]}}"#)))
        .collect()
}

#[test]
fn clopper_pearson_matches_known_values() {
    // P[Bin(10, p) ≥ 5] = 0.025 at p = 0.18709 (tables); k = n gives α^(1/n).
    assert!((clopper_pearson_lower(5, 10, 0.025) - 0.187_086).abs() < 1e-5);
    assert!((clopper_pearson_lower(20, 20, 0.05) - 0.05f64.powf(1.0 / 20.0)).abs() < 1e-9);
    assert_eq!(clopper_pearson_lower(0, 20, 0.05), 0.0);
}

#[test]
fn every_mechanism_stays_within_its_claimed_epsilon() {
    // Each bound holds with probability 1 − 1e-6: a false alarm in this test
    // has probability below 36e-6.
    println!("protocol       ε   lower bound (confidence {CONFIDENCE}, 60000 reports per input)");
    for epsilon in [0.5, 1.0, 4.0] {
        for config in configs(epsilon) {
            let m = metric(&config);
            let result = audit(&m, 60_000, CONFIDENCE, &mut SimulationRng::from_seed(17));
            println!("{:13} {epsilon:3}   {:.4}   {}", m.protocol_name(), result.epsilon_lower_bound, result.witness);
            assert!(!result.violated(), "{config}: {result:?}");
            assert!(result.epsilon_lower_bound > 0.0, "{config}: the auditor found no dependence on the input: {result:?}");
        }
    }
}

/// The mutants: randomizers with a deliberate privacy bug, audited against
/// the ε they claim. Each returns `(name, killed)`.
fn mutants() -> Vec<(&'static str, bool)> {
    let mut out = Vec::new();
    let mut rng = SimulationRng::from_seed(5);

    // ε scaled by 1.1: the randomizer of ε = 1.1 claiming ε = 1.
    let claimed = metric(r#"{"protocol":"grr","epsilon":1,"domain":2}"#);
    let actual = metric(r#"{"protocol":"grr","epsilon":1.1,"domain":2}"#);
    let inputs = neighbours(&claimed);
    let mut scaled = |which: usize, rng: &mut dyn RngCore| {
        let Metric::Frequency(a) = &actual else { unreachable!() };
        let mut r = a.randomize(&inputs[which], rng).unwrap();
        r.epsilon = 1.0;
        r
    };
    out.push(("epsilon × 1.1", audit_with(&claimed, 1.0, 1_000_000, CONFIDENCE, &mut scaled, &mut rng).violated()));

    // A constant RNG: every draw is the same word (zero, so that rejection
    // samplers terminate: any other constant can make them spin forever).
    struct Constant;
    impl RngCore for Constant {
        fn next_u32(&mut self) -> u32 {
            0
        }
        fn next_u64(&mut self) -> u64 {
            0
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            dst.fill(0)
        }
    }
    for config in configs(1.0) {
        let m = metric(&config);
        let inputs = neighbours(&m);
        let mut constant = |which: usize, _: &mut dyn RngCore| m.randomize_text(&inputs[which], &mut Constant).unwrap();
        // Killed by the auditor, or (when the constant output happens not to
        // depend on the input) by the randomness check: a hundred reports of
        // one value must not all be equal.
        let first = constant(0, &mut rng);
        let repeats = (0..100).all(|_| constant(0, &mut rng) == first);
        let killed = repeats || audit_with(&m, 1.0, 20_000, CONFIDENCE, &mut constant, &mut rng).violated();
        out.push((if config.contains("range") { "constant RNG (numeric)" } else { "constant RNG (frequency)" }, killed));
    }

    // Off by one: GRR drawing the "other" value from 0..d−1 instead of the
    // d − 1 values other than the input, so the last value is never reported
    // unless it is the input.
    let grr = metric(r#"{"protocol":"grr","epsilon":1,"domain":6}"#);
    let Metric::Frequency(oracle) = &grr else { unreachable!() };
    let template = oracle.randomize_index(0, &mut rng);
    let keep = oracle.support_probabilities().0;
    let mut off_by_one = |which: usize, rng: &mut dyn RngCore| {
        let v = [0u64, 5][which];
        let coin = localdp::rng::Bernoulli::rounded_up(1.0 - keep).unwrap();
        let out = if coin.sample(rng) {
            let j = localdp::rng::uniform_below(rng, 4); // should be 5
            if j >= v { j + 1 } else { j }
        } else {
            v
        };
        Report { payload: Payload::Index(out), ..template.clone() }
    };
    out.push(("off-by-one domain", audit_with(&grr, 1.0, 200_000, CONFIDENCE, &mut off_by_one, &mut rng).violated()));
    out
}

#[test]
fn the_auditor_kills_every_mutant() {
    let results = mutants();
    let killed = results.iter().filter(|(_, k)| *k).count();
    for (name, k) in &results {
        println!("{name:28} {}", if *k { "killed" } else { "SURVIVED" });
    }
    println!("kill rate {killed}/{}", results.len());
    assert_eq!(killed, results.len(), "{results:?}");
}

#[test]
fn correct_randomizers_pass_the_randomness_check() {
    for config in configs(0.5) {
        let m = metric(&config);
        let mut rng = SimulationRng::from_seed(2);
        let value = &neighbours(&m)[0];
        let first = m.randomize_text(value, &mut rng).unwrap();
        assert!((0..100).any(|_| m.randomize_text(value, &mut rng).unwrap() != first), "{config}");
    }
}
