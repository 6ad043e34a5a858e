//! Untrusted config text: `Metric::from_json`; a config it accepts must
//! produce a report that a fresh aggregator of the same config accepts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use localdp::rappor::RapporMetric;
use localdp::{Aggregator, FrequencyOracle, Metric, NumericMetric, Randomizer, SimulationRng};

/// Longer inputs are skipped: they only slow the fuzzer down.
const MAX_INPUT: usize = 4096;
/// Domains (or records) larger than this are skipped to keep runs fast; the
/// library itself accepts up to 2^22 values.
const MAX_SIZE: u64 = 1 << 16;

/// True when the config names a domain, a record or a sketch too large to
/// build quickly.
fn too_large(text: &str) -> bool {
    let Ok(serde_json::Value::Object(object)) = serde_json::from_str::<serde_json::Value>(text) else {
        return false; // Metric::from_json refuses it cheaply
    };
    let size = |v: &serde_json::Value| match v {
        serde_json::Value::Number(n) => n.as_u64().is_some_and(|d| d > MAX_SIZE),
        serde_json::Value::Array(items) => items.len() as u64 > MAX_SIZE,
        _ => false,
    };
    let number = |key: &str| object.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let sketch = |key: &str| object.get("sketch").and_then(|s| s.get(key)).and_then(serde_json::Value::as_u64).unwrap_or(0);
    object.get("domain").is_some_and(size)
        || object.get("range").is_some_and(size)
        || number("bits").saturating_mul(number("cohorts")) > MAX_SIZE
        || sketch("hashes").saturating_mul(sketch("width")) > MAX_SIZE
}

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_INPUT {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else { return };
    if too_large(text) {
        return;
    }
    let Ok(metric) = Metric::from_json(text) else { return };
    let mut rng = SimulationRng::seed_from_u64(0);
    let report = if let Some(o) = metric.mechanism::<FrequencyOracle>() {
        o.randomize_index(0, &mut rng).expect("index 0 is in every domain")
    } else if let Some(m) = metric.mechanism::<NumericMetric>() {
        m.randomize(&vec![0.5; m.ranges().len()], &mut rng).expect("a finite record of the right length")
    } else if let Some(r) = metric.mechanism::<RapporMetric>() {
        r.randomize("value", &mut rng).expect("any string is a value")
    } else {
        // A family this target does not know yet: one of its own neighbours.
        metric.randomize_text(&metric.neighbours()[0], &mut rng).expect("a neighbour is a valid value")
    };
    let line = report.to_json();
    let mut aggregator = Aggregator::new(metric.clone());
    if let Err(e) = aggregator.add_json(&line) {
        panic!("the aggregator of an accepted config refused its own report: {e}\nreport: {line}");
    }
    assert_eq!(aggregator.n(), 1);
});
