//! Exact channel checks shared by the native tests and the wasm build.

use localdp::frequency::ChannelOutputs;
use localdp::{
    Aggregate, DistributionMetric, DistributionProtocol, FrequencyAggregator, FrequencyOracle, FrequencyProtocol, HeavyHitterMetric, HeavyHitterProtocol,
    Likelihood, MarginalsMetric, MarginalsProtocol, NumericConfig, NumericMetric, NumericProtocol, ProtocolFamily, Report, SimulationRng,
};

/// The realized ε of a channel: the largest `ln(P[y|x] / P[y|x'])` over the
/// `outputs` and all pairs of `inputs`, from the realized likelihoods (the
/// integer thresholds the coins actually use). An output possible from
/// some inputs only would be `ε = ∞`: it fails. Where the outputs are all
/// of them (`complete`), an output may be impossible from every input, and
/// each input's row must sum to one; outputs drawn from the mechanism must
/// be possible.
pub fn realized_epsilon<X, Y>(inputs: &[X], outputs: &[Y], complete: bool, likelihood: impl Fn(&X, &Y) -> Likelihood) -> f64 {
    let mut worst = 0.0f64;
    let mut sums = vec![0.0f64; inputs.len()];
    for (k, y) in outputs.iter().enumerate() {
        let row: Vec<Likelihood> = inputs.iter().map(|x| likelihood(x, y)).collect();
        if complete && row.iter().all(|l| l.is_zero()) {
            continue;
        }
        assert!(row.iter().all(|l| !l.is_zero()), "output {k} is impossible from some inputs: ε = ∞");
        for (s, l) in sums.iter_mut().zip(&row) {
            *s += l.probability();
        }
        let logs = row.iter().map(|l| l.log_ratio(row[0]));
        let (lo, hi) = logs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
        worst = worst.max(hi - lo);
    }
    if complete {
        // A rounding per term added, and a few in each probability.
        let tolerance = 4.0 * outputs.len() as f64 * f64::EPSILON;
        for (x, s) in sums.iter().enumerate() {
            assert!((s - 1.0).abs() <= tolerance, "input {x}: its row sums to {s} over {} outputs", outputs.len());
        }
    }
    worst
}

/// How far below ε a tight channel's realized ε may be: 1e-12 up to ε = 8,
/// 1e-6 beyond (there the 2^-64 grid of the coins rounds the tiny
/// probabilities of a change up by up to 1e-8 of themselves).
pub fn tight_within(epsilon: f64) -> f64 {
    if epsilon <= 8.0 {
        1e-12
    } else {
        1e-6
    }
}

/// The one ε check of every family: the realized ε is never above ε, with
/// no slack (the constants round toward privacy, by a relative `2^-42` of
/// `e^ε`, ≈ 2.3e-13 of ε, and the log-ratio is computed to within a few
/// ulps of ε, ≈ 1e-14 at ε = 30: a channel 1e-13 above ε fails), and the
/// mechanism spends its ε: the realized ε is at least `ε − slack`.
pub fn assert_epsilon(what: &str, realized: f64, epsilon: f64, slack: f64) {
    assert!(realized <= epsilon, "{what}: realized ε {realized} exceeds ε = {epsilon}");
    assert!(realized >= epsilon - slack, "{what}: realized ε {realized} is more than {slack} below ε = {epsilon}");
}

/// The realized ε of a frequency oracle over `outputs` and all its values.
pub fn frequency_epsilon(oracle: &FrequencyOracle, outputs: ChannelOutputs<Report>) -> f64 {
    let complete = matches!(outputs, ChannelOutputs::Complete(_));
    let inputs: Vec<usize> = (0..oracle.domain().len()).collect();
    realized_epsilon(&inputs, &outputs.into_vec(), complete, |&x, y| oracle.likelihood(x, y))
}

/// The values whose channels the heavy-hitter checks compare (strings that
/// share prefixes, an empty one, one of `max_length` bytes, multibyte text).
pub const HEAVY_VALUES: &[&str] = &["", "a", "ab", "b", "/checkout", "/checkout/done", "héllo", "0123456789abcdef"];

/// The heavy-hitter metric for `protocol` at `epsilon`, small enough to
/// enumerate (a 16-column sketch, 16-byte values).
pub fn heavy_metric(protocol: HeavyHitterProtocol, epsilon: f64) -> HeavyHitterMetric {
    let shape = if protocol.discovers() { String::new() } else { r#","sketch":{"hashes":4,"width":16}"#.to_string() };
    HeavyHitterMetric::from_json(&format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon}{shape}}}"#)).unwrap()
}

/// The realized ε of a distribution metric over its channel outputs and
/// all its inputs (Square Wave's fine grid, whose cells are every output;
/// the tree's bins).
pub fn distribution_epsilon(metric: &DistributionMetric, rng: &mut SimulationRng) -> f64 {
    let inputs: Vec<u64> = (0..metric.inputs()).collect();
    let complete = metric.square_wave().is_some();
    realized_epsilon(&inputs, &metric.channel_outputs(rng), complete, |&x, y| metric.likelihood(x, y))
}

/// The realized ε of a marginals metric over its channel outputs (every
/// output of each set's unary oracle; sampled seeds for OLH) and every
/// event of its attributes' joint domain.
pub fn marginals_epsilon(metric: &MarginalsMetric, rng: &mut SimulationRng) -> f64 {
    let sizes: Vec<usize> = (0..metric.attribute_names().len()).map(|a| metric.domain(a).len()).collect();
    let mut events: Vec<Vec<usize>> = vec![Vec::new()];
    for &d in &sizes {
        events = events.into_iter().flat_map(|e| (0..d).map(move |v| [e.clone(), vec![v]].concat())).collect();
    }
    let complete = metric.protocol() == MarginalsProtocol::MarginalsOue;
    realized_epsilon(&events, &metric.channel_outputs(rng), complete, |e, y| metric.likelihood(e, y))
}

/// The realized ε of one attribute of a numeric metric, over every output
/// and every grid input (the support must not depend on the value: hybrid's
/// piecewise half leaves outputs impossible from every input at α = 0).
pub fn numeric_epsilon(m: &NumericMetric) -> f64 {
    let inputs: Vec<u64> = (0..=m.grid_steps()).collect();
    let outputs: Vec<u64> = (0..m.outputs()).collect();
    realized_epsilon(&inputs, &outputs, true, |&i, &k| Likelihood::new(m.channel_probability(i, k)))
}

/// The exact channel of every protocol up to the largest ε accepted (run
/// natively and in the wasm build, whose `usize` is 32 bits): never above
/// ε, and spending it ([`assert_epsilon`]). At ε = 25 OLH's `g` passes
/// 2^32, which once truncated to 0 through `usize` here.
pub fn every_channel_holds_its_epsilon_up_to_30() {
    let mut rng = SimulationRng::seed_from_u64(30);
    for &protocol in FrequencyProtocol::ALL {
        for epsilon in [1.0, 8.0, 20.0, 25.0, 30.0] {
            for d in [2, 16] {
                let oracle = super::oracle(protocol, epsilon, d);
                let realized = frequency_epsilon(&oracle, oracle.channel_outputs(&mut rng));
                // dBitFlip's reports (one bucket each) differ in one bit: ε/2.
                let spent = if protocol == FrequencyProtocol::DBitFlip { epsilon / 2.0 } else { epsilon };
                assert_epsilon(&format!("{protocol} d={d}"), realized, spent, tight_within(epsilon));
            }
        }
    }
    for &protocol in HeavyHitterProtocol::ALL {
        for epsilon in [0.5, 1.0, 8.0, 20.0, 25.0, 30.0] {
            let metric = heavy_metric(protocol, epsilon);
            let outputs = metric.channel_outputs(HEAVY_VALUES, &mut rng);
            assert!(outputs.len() >= 32, "{protocol}: {} outputs", outputs.len());
            let realized = realized_epsilon(HEAVY_VALUES, &outputs, false, |x, y| metric.likelihood(x, y));
            assert_epsilon(&format!("{protocol}"), realized, epsilon, tight_within(epsilon));
        }
    }
    // 300 bins: the tree's finest level uses HRR (above 256 nodes).
    for &protocol in DistributionProtocol::ALL {
        for epsilon in [0.5, 1.0, 8.0, 20.0, 30.0] {
            for bins in [2, 16, 300] {
                let config = format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon},"range":[0,1],"bins":{bins}}}"#);
                let metric = DistributionMetric::from_json(&config).unwrap();
                let realized = distribution_epsilon(&metric, &mut rng);
                assert_epsilon(&config, realized, epsilon, tight_within(epsilon));
            }
        }
    }
    // Three attributes (12 events), pairs and the triple: every set's cells
    // at most 12, so every unary output is enumerated.
    for &protocol in MarginalsProtocol::ALL {
        for epsilon in [0.5, 1.0, 8.0, 20.0, 30.0] {
            for way in [1, 2, 3] {
                let attributes = r#"[{"name":"a","domain":2},{"name":"b","domain":["x","y","z"]},{"name":"c","domain":2}]"#;
                let config = format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon},"way":{way},"attributes":{attributes}}}"#);
                let metric = MarginalsMetric::from_json(&config).unwrap();
                let realized = marginals_epsilon(&metric, &mut rng);
                assert_epsilon(&config, realized, epsilon, tight_within(epsilon));
            }
        }
    }
    for &protocol in NumericProtocol::ALL {
        for epsilon in [1.0, 8.0, 20.0, 30.0] {
            let config: NumericConfig =
                serde_json::from_str(&format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon},"range":[0,1]}}"#)).unwrap();
            let realized = numeric_epsilon(&NumericMetric::with_grid_steps(&config, 7).unwrap());
            // Laplace's geometric noise compounds a rounding per grid step
            // (1.6e-12 below ε).
            assert_epsilon(&format!("{protocol}"), realized, epsilon, tight_within(epsilon).max(1e-9));
        }
    }
}

/// The composed channel of every protocol with an instantaneous step
/// (permanent response at `ε_∞`, the step on top): exactly `ε_1` per report
/// ([`assert_epsilon`], [`tight_within`]); where every output is
/// enumerated, each row is a distribution. Run natively and
/// in the wasm build, up to the largest ε accepted.
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
                let realized = frequency_epsilon(&oracle, oracle.channel_outputs(&mut rng));
                assert_epsilon(&config, realized, epsilon_1, tight_within(epsilon_1));
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
