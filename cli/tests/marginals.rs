//! `localdp randomize` of events (one JSON object per line, read from a
//! file), `aggregate` of their reports into every 2-way marginal and each
//! field's histogram, the same through `export` to Parquet and through the
//! collector, and a bad event refused naming its line and field, never its
//! value.

mod common;
mod serving;

use common::cli::{run, Scratch};

const CONFIG: &str = r#"{"protocol":"marginals","epsilon":2,"way":2,"attributes":[
    {"name":"browser","domain":["Chrome","Firefox","Safari"]},{"name":"os","domain":4},{"name":"mobile","domain":2}]}"#;

/// 6,000 events: Safari always on os 3 and mobile; the others spread.
fn events() -> String {
    (0..6000)
        .map(|i| match i % 3 {
            2 => r#"{"browser":"Safari","os":3,"mobile":1}"#.to_string() + "\n",
            b => format!(r#"{{"browser":"{}","os":{},"mobile":"0"}}"#, ["Chrome", "Firefox"][b], (i / 3) % 3) + "\n",
        })
        .collect()
}

#[test]
fn events_from_a_file_randomize_and_aggregate_into_marginals() {
    let scratch = Scratch::new("marginals");
    let config = scratch.file("config.json", CONFIG);
    let values = scratch.file("events.jsonl", &events());
    let (config, values) = (config.to_str().unwrap(), values.to_str().unwrap());
    let out = run(&["randomize", "--config", config, "--seed", "7", values], "");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reports = String::from_utf8(out.stdout).unwrap();
    assert_eq!(reports.lines().count(), 6000);
    assert!(reports.lines().all(|l| l.contains(r#""protocol":"marginals_oue""#) && l.contains(r#""cohort":"#)));
    let jsonl = scratch.file("reports.jsonl", &reports);

    let out = run(&["aggregate", "--config", config, "--post", "project"], &reports);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let estimate: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(estimate["n"], 6000);
    let marginals = estimate["marginals"].as_array().unwrap();
    assert_eq!(marginals.len(), 3);
    assert_eq!(marginals[0]["attributes"], serde_json::json!(["browser", "os"]));
    // browser × os: Safari on os 3 holds a third of the events.
    let cell = |m: &serde_json::Value, values: serde_json::Value| {
        m["cells"].as_array().unwrap().iter().find(|c| c["values"] == values).unwrap()["frequency"].as_f64().unwrap()
    };
    let safari = cell(&marginals[0], serde_json::json!(["Safari", 3]));
    assert!((safari - 1.0 / 3.0).abs() < 0.05, "{safari}");
    assert!(cell(&marginals[2], serde_json::json!([3, 0])).abs() < 0.05, "os 3 is never desktop");
    let browser = &estimate["histograms"][0]["values"];
    assert_eq!(browser[2]["value"], "Safari");
    assert!((browser[2]["frequency"].as_f64().unwrap() - 1.0 / 3.0).abs() < 0.05);

    // The same reports through Parquet give the same estimate.
    let parquet = scratch.0.join("reports.parquet");
    let out = run(&["export", "--config", config, "--format", "parquet", "-o", parquet.to_str().unwrap(), jsonl.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again = run(&["aggregate", "--config", config, "--post", "project", parquet.to_str().unwrap()], "");
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(again.stdout, out_json(&["aggregate", "--config", config, "--post", "project"], &reports));
}

fn out_json(args: &[&str], stdin: &str) -> Vec<u8> {
    run(args, stdin).stdout
}

#[test]
fn a_bad_event_names_its_line_and_field_not_its_value() {
    let scratch = Scratch::new("marginals-bad");
    let config = scratch.file("config.json", CONFIG);
    let good: String = events().lines().take(5).map(|l| format!("{l}\n")).collect();
    let lines = format!("{good}{}\n", r#"{"browser":"Lynx-secret","os":1,"mobile":0}"#);
    let out = run(&["randomize", "--config", config.to_str().unwrap()], &lines);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("browser") && stderr.contains("line 6") && !stderr.contains("secret"), "{stderr}");
    assert!(out.stdout.is_empty(), "no partial output");
}

/// The collector takes a marginals metric as any other: listed with its
/// resolved protocol and the planner's floor, its reports stored, its
/// estimate (post-processed or not) the CLI's for the same reports, and a
/// report of another metric refused and counted.
#[test]
fn the_collector_serves_a_marginals_metric() {
    let scratch = serving::Scratch::new("marginals-serve");
    let config = CONFIG.replace('\n', "");
    scratch.file("metrics.json", &format!(r#"[{{"name":"events","title":"Events","config":{config}}}]"#));
    let config_path = scratch.file("events.json", &config);
    let server = serving::Server::start(&scratch, &[]);
    let reports = String::from_utf8(run(&["randomize", "--config", config_path.to_str().unwrap(), "--seed", "9"], &events()).stdout).unwrap();
    let lines: Vec<String> = reports.lines().map(str::to_string).collect();
    for chunk in lines.chunks(500) {
        let answer = server.post_reports("events", &serving::array(chunk));
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert_eq!(answer.json()["accepted"], serde_json::json!(chunk.len()));
    }
    let foreign = r#"{"version":1,"protocol":"grr","epsilon":1.0,"domain":"0000000000000000","value":1}"#;
    assert_eq!(server.post_reports("events", foreign).json()["rejected"]["config_mismatch"], 1);
    let listed = server.get("/api/metrics/events").json();
    assert_eq!((listed["protocol"].as_str(), listed["n"].as_u64()), (Some("marginals_oue"), Some(6000)));
    assert!(listed["min_users"].as_u64().is_some_and(|n| n > 0), "{listed}");
    for post in ["none", "project"] {
        let served = server.estimate("events", post);
        assert_eq!(served.status, 200, "{}", served.text());
        let mut expected: serde_json::Value = serde_json::from_str(&serving::cli_estimate(&scratch, "events", &lines, post)).unwrap();
        expected["rejected"]["config_mismatch"] = serde_json::json!(1);
        assert_eq!(served.json(), expected, "{post}");
    }
}
