//! Untrusted report bytes: `Report::from_json`, then `Aggregator::add_json`
//! against a few fixed configurations (one per payload shape).
//!
//! Property: no panic; a refused report leaves `n` unchanged and is counted
//! exactly once; an accepted one adds exactly one to `n` and no rejection.
#![no_main]

use libfuzzer_sys::fuzz_target;
use localdp::{Aggregator, Metric, PostProcessing, Report};
use std::sync::OnceLock;

const CONFIGS: &[&str] = &[
    r#"{"protocol":"grr","epsilon":1,"domain":8}"#,
    r#"{"protocol":"olh","epsilon":1,"domain":["a","b","c"]}"#,
    r#"{"protocol":"ss","epsilon":1,"domain":13}"#,
    r#"{"protocol":"hr","epsilon":2,"domain":5}"#,
    r#"{"protocol":"sue","epsilon":1,"domain":9}"#,
    r#"{"protocol":"hybrid","epsilon":2,"range":[0,10]}"#,
    r#"{"protocol":"laplace","epsilon":1,"range":[[0,1],[0,5],[2,3]]}"#,
    r#"{"protocol":"dbitflip","epsilon":1,"domain":6,"d":2}"#,
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
