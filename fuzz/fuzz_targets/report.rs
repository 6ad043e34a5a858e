//! Untrusted report bytes: `Report::from_json`, then `Aggregator::add_json`
//! against a few fixed configurations (one per payload shape).
//!
//! Property: no panic; a refused report leaves `n` unchanged and is counted
//! exactly once; an accepted one adds exactly one to `n` and no rejection.
#![no_main]

use libfuzzer_sys::fuzz_target;
use localdp::{Aggregator, Metric, PostProcessing, Report};
use std::sync::OnceLock;

mod configs;
use configs::CONFIGS;

fn aggregators() -> &'static [Aggregator] {
    static AGGREGATORS: OnceLock<Vec<Aggregator>> = OnceLock::new();
    AGGREGATORS.get_or_init(|| {
        CONFIGS.iter().map(|c| Aggregator::new(Metric::from_json(c).expect("a valid fuzz config"))).collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let parsed = Report::from_json(data);
    if let Ok(report) = &parsed {
        // What was parsed serializes and parses back to the same report.
        let again = Report::from_json(report.to_json()).expect("a parsed report re-parses");
        assert_eq!(&again, report);
    }
    for base in aggregators() {
        let mut aggregator = base.clone();
        let (n0, rejected0) = (aggregator.n(), aggregator.rejected().total());
        match aggregator.add_json(data) {
            Ok(()) => {
                assert!(parsed.is_ok(), "add_json accepted what Report::from_json refused");
                assert_eq!(aggregator.n(), n0 + 1);
                assert_eq!(aggregator.rejected().total(), rejected0);
            }
            Err(_) => {
                assert_eq!(aggregator.n(), n0, "a refused report changed n");
                assert_eq!(aggregator.rejected().total(), rejected0 + 1, "a refused report must be counted once");
            }
        }
        if aggregator.n() > 0 {
            let _ = aggregator.estimate(PostProcessing::None);
        }
    }
});
