//! `localdp aggregate` on a distribution metric: the JSON estimate,
//! `--quantiles`, the table and CSV, and `--plot` with the quantiles marked.

mod common;

use common::cli::{run, Scratch};

/// 4,000 reports of page-load times spread over 200..1800 ms, and the config's path.
fn collected(scratch: &Scratch, protocol: &str) -> (String, String) {
    let config = scratch.file("config.json", &format!(r#"{{"protocol":"{protocol}","epsilon":2,"range":[0,5000],"bins":32}}"#));
    let values: String = (0..4000).map(|i| format!("{}\n", 200 + (i * 37) % 1600)).collect();
    let out = run(&["randomize", "--config", config.to_str().unwrap(), "--seed", "3"], &values);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (config.to_str().unwrap().to_string(), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn quantiles_table_csv_and_plot() {
    for protocol in ["square_wave", "hierarchical", "distribution"] {
        let scratch = Scratch::new(&format!("distribution-{protocol}"));
        let (config, reports) = collected(&scratch, protocol);
        let svg = scratch.0.join("h.svg");
        let args = ["aggregate", "--config", &config, "--quantiles", "0.5,0.75,0.95", "--plot", svg.to_str().unwrap()];
        let out = run(&args, &reports);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let estimate: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let levels: Vec<f64> = estimate["quantiles"].as_array().unwrap().iter().map(|q| q["q"].as_f64().unwrap()).collect();
        assert_eq!(levels, [0.5, 0.75, 0.95], "{protocol}");
        assert_eq!(estimate["histogram"].as_array().unwrap().len(), 32);
        let median = estimate["quantiles"][0]["value"].as_f64().unwrap();
        assert!((median - 1000.0).abs() < 250.0, "{protocol}: median {median}");
        assert!(estimate["mean"]["ci95"][0].as_f64().unwrap() < estimate["mean"]["ci95"][1].as_f64().unwrap());
        let picture = std::fs::read_to_string(&svg).unwrap();
        assert_eq!(picture.matches("<g class=\"quantile\">").count(), 3, "{protocol}");
        assert_eq!(picture.matches("<g class=\"bin\">").count(), 32, "{protocol}");
        assert!(picture.contains(">p75 "), "{protocol}");

        let table = run(&["aggregate", "--config", &config, "--format", "table"], &reports);
        let text = String::from_utf8(table.stdout).unwrap();
        assert_eq!(text.lines().filter(|l| l.starts_with('[')).count(), 32, "{text}");
        for name in ["p50", "p90", "p95", "p99", "mean"] {
            assert!(text.contains(name), "{protocol}: no {name} in\n{text}");
        }
        let csv = run(&["aggregate", "--config", &config, "--format", "csv"], &reports);
        let text = String::from_utf8(csv.stdout).unwrap();
        assert_eq!(text.lines().next(), Some("kind,lo,hi,q,estimate,ci95_low,ci95_high"));
        assert_eq!(text.lines().filter(|l| l.starts_with("bin,")).count(), 32);
        assert_eq!(text.lines().filter(|l| l.starts_with("quantile,")).count(), 4);
    }
}

#[test]
fn quantiles_are_checked() {
    let scratch = Scratch::new("distribution-errors");
    let (config, reports) = collected(&scratch, "hierarchical");
    for bad in ["1.5", "-0.1", "0.5,x", ""] {
        let out = run(&["aggregate", "--config", &config, &format!("--quantiles={bad}")], &reports);
        assert!(!out.status.success(), "--quantiles {bad:?} accepted");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--quantiles"), "{bad:?}");
    }
    let frequency = scratch.file("grr.json", r#"{"protocol":"grr","epsilon":1,"domain":3}"#);
    let out = run(&["aggregate", "--config", frequency.to_str().unwrap(), "--quantiles", "0.5"], "");
    assert!(String::from_utf8_lossy(&out.stderr).contains("distribution metrics only"));
}

#[test]
fn simulate_prints_the_estimate_beside_the_true_quantiles() {
    let scratch = Scratch::new("distribution-simulate");
    let config = scratch.file("config.json", r#"{"protocol":"hierarchical","epsilon":2,"range":[0,1000],"bins":16}"#);
    let out = run(&["simulate", "--config", config.to_str().unwrap(), "--users", "5000"], "");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with('[')).count(), 16, "{text}");
    assert!(text.contains("true quantiles: p50 "), "{text}");
}
