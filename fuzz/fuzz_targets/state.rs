//! Untrusted aggregator state bytes (what a distributed engine ships between
//! machines): `Aggregator::from_bytes` against a few fixed configurations.
//!
//! Property: no panic; bytes that load estimate without a panic, serialize
//! back to exactly the same bytes, merge with themselves (or refuse to, past
//! the count cap), and take more reports, without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use localdp::{Aggregator, Metric, PostProcessing, SimulationRng};
use std::sync::OnceLock;

mod configs;
use configs::CONFIGS;

fn metrics() -> &'static [Metric] {
    static METRICS: OnceLock<Vec<Metric>> = OnceLock::new();
    METRICS.get_or_init(|| CONFIGS.iter().map(|c| Metric::from_json(c).expect("a valid fuzz config")).collect())
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the configuration, so that the fuzzer can learn a
    // state's header (which names its configuration) for each one.
    let Some((&pick, bytes)) = data.split_first() else { return };
    let metric = &metrics()[usize::from(pick) % CONFIGS.len()];
    if let Ok(mut aggregator) = Aggregator::from_bytes(metric.clone(), bytes) {
        let _ = aggregator.estimate(PostProcessing::None);
        assert_eq!(aggregator.to_bytes(), bytes, "a loaded state re-serializes to the same bytes");
        let copy = aggregator.clone();
        let _ = aggregator.merge(&copy);
        // More reports on top of whatever was loaded: a valid one and a
        // rejected one.
        let mut rng = SimulationRng::seed_from_u64(u64::from(pick));
        let value = &metric.neighbours()[0];
        let _ = aggregator.add(&metric.randomize_text(value, &mut rng).expect("a valid value"));
        let _ = aggregator.add_json(b"{}");
        let _ = aggregator.estimate(PostProcessing::None);
    }
});
