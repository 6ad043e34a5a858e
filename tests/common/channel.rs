//! Exact channel checks shared by the native tests and the wasm build.

use localdp::{
    Aggregate, DistributionMetric, DistributionProtocol, FrequencyAggregator, FrequencyOracle, FrequencyProtocol, HeavyHitterMetric, HeavyHitterProtocol,
    NumericConfig, NumericMetric, NumericProtocol, ProtocolFamily, SimulationRng,
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

/// The largest `ln(P[y|x] / P[y|x'])` of a heavy-hitter metric's realized
/// channel over `outputs` and all pairs of `values` (strings that share
/// prefixes, an empty one, one of `max_length` bytes, multibyte text).
pub fn heavy_max_log_ratio(metric: &HeavyHitterMetric, values: &[&str], outputs: &[localdp::Report]) -> f64 {
    let mut worst = 0.0f64;
    for y in outputs {
        let likelihoods: Vec<_> = values.iter().map(|x| metric.likelihood(x, y)).collect();
        assert!(likelihoods.iter().all(|l| !l.is_zero()), "an output impossible for some inputs: ε = ∞");
        let logs: Vec<f64> = likelihoods.iter().map(|l| l.log_ratio(likelihoods[0])).collect();
        let (lo, hi) = logs.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        worst = worst.max(hi - lo);
    }
    worst
}

/// The values whose channels the heavy-hitter checks compare.
pub const HEAVY_VALUES: &[&str] = &["", "a", "ab", "b", "/checkout", "/checkout/done", "héllo", "0123456789abcdef"];

/// The heavy-hitter metric for `protocol` at `epsilon`, small enough to
/// enumerate (a 16-column sketch, 16-byte values).
pub fn heavy_metric(protocol: HeavyHitterProtocol, epsilon: f64) -> HeavyHitterMetric {
    let shape = if protocol.discovers() { String::new() } else { r#","sketch":{"hashes":4,"width":16}"#.to_string() };
    HeavyHitterMetric::from_json(&format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon}{shape}}}"#)).unwrap()
}

/// The largest `ln(P[y|x] / P[y|x'])` of a distribution metric's realized
/// channel over `outputs` and all pairs of inputs (Square Wave's fine grid,
/// the tree's bins); every output must be possible from every input. Where
/// the outputs are all of them (Square Wave's cells), each input's row must
/// sum to one.
pub fn distribution_max_log_ratio(metric: &DistributionMetric, outputs: &[localdp::Report]) -> f64 {
    let inputs = metric.inputs();
    let mut worst = 0.0f64;
    let mut sums = vec![0.0f64; inputs as usize];
    for y in outputs {
        let likelihoods: Vec<_> = (0..inputs).map(|x| metric.likelihood(x, y)).collect();
        assert!(likelihoods.iter().all(|l| !l.is_zero()), "an output impossible for some inputs: ε = ∞");
        for (s, l) in sums.iter_mut().zip(&likelihoods) {
            *s += l.probability();
        }
        let logs: Vec<f64> = likelihoods.iter().map(|l| l.log_ratio(likelihoods[0])).collect();
        let (lo, hi) = logs.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        worst = worst.max(hi - lo);
    }
    if metric.square_wave().is_some() {
        for (input, s) in sums.iter().enumerate() {
            assert!((s - 1.0).abs() < 1e-9, "input {input}: its row sums to {s}");
        }
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
    for &protocol in HeavyHitterProtocol::ALL {
        for epsilon in [0.5, 1.0, 8.0, 20.0, 25.0, 30.0] {
            let metric = heavy_metric(protocol, epsilon);
            let outputs = metric.channel_outputs(HEAVY_VALUES, &mut rng);
            assert!(outputs.len() >= 32, "{protocol}: {} outputs", outputs.len());
            let realized = heavy_max_log_ratio(&metric, HEAVY_VALUES, &outputs);
            // Never above ε: the constants round toward privacy.
            assert!(realized <= epsilon, "{protocol} ε={epsilon}: realized {realized}");
            assert!(realized >= epsilon * 0.9 || epsilon > 20.0, "{protocol} ε={epsilon}: the check saw only {realized}");
        }
    }
    // 300 bins: the tree's finest level uses HRR (above 256 nodes).
    for &protocol in DistributionProtocol::ALL {
        for epsilon in [0.5, 1.0, 8.0, 20.0, 30.0] {
            for bins in [2, 16, 300] {
                let config = format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon},"range":[0,1],"bins":{bins}}}"#);
                let metric = DistributionMetric::from_json(&config).unwrap();
                let realized = distribution_max_log_ratio(&metric, &metric.channel_outputs(&mut rng));
                assert!(realized <= epsilon + 1e-12, "{config}: realized {realized}");
                assert!(realized >= epsilon * 0.9 || epsilon > 20.0, "{config}: the check saw only {realized}");
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

/// The composed channel of every protocol with an instantaneous step
/// (permanent response at `ε_∞`, the step on top): exactly `ε_1` per report,
/// never above it (the constants round toward privacy) and within 1e-12 of
/// it (1e-6 at a large `ε_1`); where every output is enumerated, each row is a distribution. Run
/// natively and in the wasm build, up to the largest ε accepted.
pub fn longitudinal_channels_hold_their_per_report_epsilon() {
    let mut rng = SimulationRng::seed_from_u64(31);
    for protocol in ["grr", "sue", "oue", "blh", "olh"] {
        for (long_run, epsilon_1) in [(0.5, 0.05), (1.0, 0.5), (2.0, 1.0), (4.0, 0.1), (8.0, 7.5), (30.0, 1.0), (30.0, 25.0), (30.0, 29.9)] {
            for d in [2, 3, 16] {
                let config = format!(
                    r#"{{"protocol":"{protocol}","epsilon":{long_run},"domain":{d},"instantaneous_epsilon":{epsilon_1}}}"#
                );
                let oracle = FrequencyOracle::from_json(&config).unwrap();
                assert_eq!((oracle.epsilon(), oracle.long_run_epsilon()), (epsilon_1, long_run), "{config}");
                let outputs = oracle.channel_outputs(&mut rng);
                if let localdp::frequency::ChannelOutputs::Complete(ys) = &outputs {
                    for x in 0..d {
                        let total: f64 = ys.iter().map(|y| oracle.likelihood(x, y).probability()).sum();
                        assert!((total - 1.0).abs() < 1e-12, "{config} x={x}: Σ = {total}");
                    }
                }
                let realized = frequency_max_log_ratio(&oracle, &outputs.into_vec());
                assert!(realized <= epsilon_1, "{config}: realized {realized} exceeds ε_1");
                // Tight up to ε_1 = 8 (beyond, the 2^-64 grid of the coins
                // rounds the tiny change probabilities up by up to 1e-8).
                let slack = if epsilon_1 <= 8.0 { 1e-12 } else { 1e-6 };
                assert!(realized >= epsilon_1 - slack, "{config}: realized {realized} is not tight");
            }
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
