//! Exact channel checks shared by the native tests and the wasm build.

use localdp::{
    Aggregate, FrequencyAggregator, FrequencyOracle, FrequencyProtocol, NumericConfig, NumericMetric, NumericProtocol,
    ProtocolFamily, SimulationRng,
};

/// The largest `ln(P[y|x] / P[y|x'])` over the outputs the oracle names
/// for a channel check and all pairs of inputs, from the realized channel.
/// An output possible for some inputs only would be `ε = ∞`: it fails.
pub fn frequency_max_log_ratio(oracle: &FrequencyOracle, outputs: &[localdp::Report]) -> f64 {
    let d = oracle.domain().len();
    let mut worst = 0.0f64;
    for y in outputs {
        let likelihoods: Vec<_> = (0..d).map(|x| oracle.likelihood(x, y)).collect();
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

/// Every row of a numeric channel sums to one and, for every output, the
/// largest and smallest probability over all grid inputs are within `e^ε`.
/// Returns the realized max log-ratio.
pub fn numeric_max_log_ratio(m: &NumericMetric) -> f64 {
    let g = m.grid_steps();
    let mut worst: f64 = 0.0;
    let mut sums = vec![0.0f64; g as usize + 1];
    for k in 0..m.outputs() {
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for i in 0..=g {
            let p = m.channel_probability(i, k);
            sums[i as usize] += p;
            lo = lo.min(p);
            hi = hi.max(p);
        }
        // The support must not depend on the value: an output is possible
        // from every input or from none (hybrid's piecewise half at α = 0).
        assert!(lo > 0.0 || hi == 0.0, "{:?} G={g}: output {k} impossible from some inputs", m.protocol());
        if hi > 0.0 {
            worst = worst.max((hi / lo).ln());
        }
    }
    for (i, s) in sums.iter().enumerate() {
        assert!((s - 1.0).abs() < 1e-9, "row {i} sums to {s}");
    }
    worst
}

/// The exact channel of every protocol up to the largest ε accepted (run
/// natively and in the wasm build, whose `usize` is 32 bits): realized worst log-ratio ≤ ε. At ε = 25
/// OLH's `g` passes 2^32, which once truncated to 0 through `usize` here.
pub fn every_channel_holds_its_epsilon_up_to_30() {
    let mut rng = SimulationRng::seed_from_u64(30);
    for &protocol in FrequencyProtocol::ALL {
        for epsilon in [1.0, 8.0, 20.0, 25.0, 30.0] {
            for d in [2, 16] {
                let oracle = super::oracle(protocol, epsilon, d);
                let outputs = oracle.channel_outputs(&mut rng).into_vec();
                let realized = frequency_max_log_ratio(&oracle, &outputs);
                assert!(realized <= epsilon + 1e-12, "{protocol} ε={epsilon} d={d}: realized {realized}");
            }
        }
    }
    for &protocol in NumericProtocol::ALL {
        for epsilon in [1.0, 8.0, 20.0, 30.0] {
            let config: NumericConfig =
                serde_json::from_str(&format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon},"range":[0,1]}}"#)).unwrap();
            let m = NumericMetric::with_grid_steps(&config, 7).unwrap();
            let realized = numeric_max_log_ratio(&m);
            assert!(realized <= epsilon + 1e-12, "{protocol} ε={epsilon}: realized {realized}");
        }
    }
}

/// Reports made in wasm at a large ε stay in range and estimate a value
/// everybody holds as about 1 (the truncation made 5% of OLH's reports
/// invalid and the estimate 1.06).
pub fn local_hashing_at_large_epsilon_stays_in_range() {
    let mut rng = SimulationRng::seed_from_u64(25);
    for protocol in ["olh", "blh"] {
        let oracle = FrequencyOracle::from_json(&format!(r#"{{"protocol":"{protocol}","epsilon":25,"domain":4}}"#)).unwrap();
        let mut aggregator = FrequencyAggregator::new(oracle.clone());
        for _ in 0..2000 {
            aggregator.add(&oracle.randomize_index(2, &mut rng).unwrap()).unwrap();
        }
        let everyone = &aggregator.estimate().unwrap().estimates[2];
        assert!((everyone.frequency - 1.0).abs() <= 5.0 * everyone.std_error.max(1e-6), "{protocol}: {}", everyone.frequency);
    }
}
