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

const CONFIGS: &[&str] = &[
    r#"{"protocol":"grr","epsilon":1,"domain":8}"#,
    r#"{"protocol":"olh","epsilon":1,"domain":["a","b","c"]}"#,
    r#"{"protocol":"ss","epsilon":1,"domain":13}"#,
    r#"{"protocol":"hr","epsilon":2,"domain":5}"#,
    r#"{"protocol":"dbitflip","epsilon":1,"domain":6,"d":2}"#,
    r#"{"protocol":"hybrid","epsilon":2,"range":[0,10]}"#,
    r#"{"protocol":"laplace","epsilon":1,"range":[[0,1],[0,5],[2,3]]}"#,
    r#"{"protocol":"rappor","bits":16,"hashes":2,"cohorts":4,"candidates":["a","b"]}"#,
    r#"{"protocol":"pem","epsilon":2,"max_length":4}"#,
    r#"{"protocol":"treehist","epsilon":2,"max_length":4}"#,
    r#"{"protocol":"sfp","epsilon":2,"max_length":4,"sketch":{"hashes":4,"width":16}}"#,
    r#"{"protocol":"cms","epsilon":1,"sketch":{"hashes":4,"width":16},"candidates":["a","b"]}"#,
    r#"{"protocol":"hcms","epsilon":1,"sketch":{"hashes":4,"width":16},"candidates":["a","b"]}"#,
    r#"{"protocol":"square_wave","epsilon":1,"range":[0,1],"bins":8}"#,
    r#"{"protocol":"hierarchical","epsilon":1,"range":[0,1],"bins":16}"#,
    r#"{"protocol":"grr","epsilon":2,"instantaneous_epsilon":1,"domain":4,"memoize":true}"#,
];

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
