//! `localdp randomize` of key-value maps (one JSON object per line, one
//! user's map), `aggregate` and `export` of their reports.

mod common;

use common::cli::{run, Scratch};

/// 6,000 users' maps in a file: `search` for all (value 10 or 30), `share`
/// for a third (value 50).
fn maps() -> String {
    (0..6000)
        .map(|i| match i % 3 {
            0 => format!("{{\"search\": {}, \"share\": 50}}\n", 10 + 20 * (i % 2)),
            _ => format!("{{\"search\": {}}}\n", 10 + 20 * (i % 2)),
        })
        .collect()
}

#[test]
fn maps_randomize_from_a_file_aggregate_and_export() {
    // "key_value" picks GRR for 3 keys + 2 dummies at ε 4; UE's bits take the other columnar path.
    for (protocol, resolved) in [("key_value", "pckv_grr"), ("pckv_ue", "pckv_ue")] {
        collect(protocol, resolved);
    }
}

fn collect(protocol: &str, resolved: &str) {
    let scratch = Scratch::new(&format!("key-value-{protocol}"));
    let config = format!(r#"{{"protocol":"{protocol}","epsilon":4,"keys":["search","share","print"],"range":[0,60],"pad":2}}"#);
    let config = scratch.file("config.json", &config);
    let config = config.to_str().unwrap();
    let values = scratch.file("maps.jsonl", &maps());
    let out = run(&["randomize", "--config", config, "--seed", "5", values.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reports = String::from_utf8(out.stdout).unwrap();
    assert_eq!(reports.lines().count(), 6000);
    assert!(reports.lines().all(|l| l.contains(&format!(r#""protocol":"{resolved}""#))));

    let out = run(&["aggregate", "--config", config], &reports);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let estimate: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys = estimate["keys"].as_array().unwrap();
    assert_eq!(keys.iter().map(|k| k["key"].as_str().unwrap()).collect::<Vec<_>>(), ["search", "share", "print"]);
    let stat = |k: usize, what: &str| keys[k][what]["estimate"].as_f64().unwrap();
    let se = |k: usize, what: &str| keys[k][what]["se"].as_f64().unwrap();
    // 6 standard errors: a fixed seed, far from a flaky bound.
    for (k, frequency, mean) in [(0, 1.0, 20.0), (1, 1.0 / 3.0, 50.0)] {
        assert!((stat(k, "frequency") - frequency).abs() < 6.0 * se(k, "frequency"), "{}", keys[k]);
        assert!((stat(k, "mean") - mean).abs() < 6.0 * se(k, "mean"), "{}", keys[k]);
    }
    assert!(stat(2, "frequency").abs() < 6.0 * se(2, "frequency"), "{}", keys[2]);

    let parquet = scratch.0.join("reports.parquet");
    let out = run(&["export", "--config", config, "--format", "parquet", "-o", parquet.to_str().unwrap()], &reports);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again = run(&["aggregate", "--config", config, parquet.to_str().unwrap()], "");
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again, estimate, "the Parquet file aggregates to the estimate of the lines");
}

#[test]
fn a_map_with_an_unknown_key_names_the_line_not_the_key() {
    let scratch = Scratch::new("key-value-errors");
    let config = scratch.file("config.json", r#"{"protocol":"pckv_grr","epsilon":1,"keys":4,"range":[0,1],"pad":1}"#);
    let out = run(&["randomize", "--config", config.to_str().unwrap()], "{\"0\": 1}\n{\"secret-feature\": 1}\n");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 2") && !stderr.contains("secret"), "{stderr}");
}
