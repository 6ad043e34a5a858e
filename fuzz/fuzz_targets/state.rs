//! Untrusted aggregator state bytes (what a distributed engine ships between
//! machines): `Aggregator::from_bytes` against a few fixed configurations,
//! of the bytes as they are or of the bytes sealed with their checksum.
//!
//! Property: no panic; bytes that load estimate without a panic, serialize
//! back to exactly the same bytes, merge with themselves (or refuse to, past
//! the count cap), and take more reports, without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use localdp::state::crc32;
use localdp::{Aggregator, Metric, PostProcessing, SimulationRng};
use std::sync::OnceLock;

mod configs;
use configs::CONFIGS;

fn metrics() -> &'static [Metric] {
    static METRICS: OnceLock<Vec<Metric>> = OnceLock::new();
    METRICS.get_or_init(|| CONFIGS.iter().map(|c| Metric::from_json(c).expect("a valid fuzz config")).collect())
}

fuzz_target!(|data: &[u8]| {
    // The first byte: its low 7 bits pick the configuration, so that the
    // fuzzer can learn a state's header (which names its configuration) for
    // each one; its top bit says that the rest is a state without its
    // checksum, which is appended here, so that mutated bytes pass the
    // checksum and reach the readers of the counts (the seeds in
    // corpus/state/ are such states, one per configuration).
    let Some((&pick, rest)) = data.split_first() else { return };
    let metric = &metrics()[usize::from(pick & 0x7f) % CONFIGS.len()];
    let mut bytes = rest.to_vec();
    if pick & 0x80 != 0 {
        bytes.extend_from_slice(&crc32(rest).to_le_bytes());
    }
    if let Ok(mut aggregator) = Aggregator::from_bytes(metric.clone(), &bytes) {
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
