//! The `localdp` command line as a user scripts it: round trips, formats,
//! rejections counted by reason, and one-line errors without partial output.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const LABELS: [&str; 5] = ["a", "b", "c", "d", "e"];

mod common;

use common::cli::{run, Scratch};

/// A config of `protocol` at `epsilon` over the labels.
fn config(dir: &Scratch, protocol: &str, epsilon: f64) -> PathBuf {
    let labels: Vec<String> = LABELS.iter().map(|l| format!("\"{l}\"")).collect();
    dir.file(
        &format!("{protocol}-{epsilon}.json"),
        &format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon},"domain":[{}]}}"#, labels.join(",")),
    )
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "localdp failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// 4000 values: a 40%, b 30%, c 20%, d 10%, e never.
fn skewed_values() -> String {
    let mut out = String::new();
    for i in 0..4000 {
        out += match i % 10 {
            0..=3 => "a\n",
            4..=6 => "b\n",
            7 | 8 => "c\n",
            _ => "d\n",
        };
    }
    out
}

fn randomize(config: &Path, seed: u64, values: &str) -> String {
    let seed = seed.to_string();
    stdout(&run(&["randomize", "--config", config.to_str().unwrap(), "--seed", &seed], values))
}

fn aggregate_json(args: &[&str], stdin: &str) -> Value {
    let mut all = vec!["aggregate"];
    all.extend_from_slice(args);
    serde_json::from_str(&stdout(&run(&all, stdin))).unwrap()
}

#[test]
fn every_protocol_round_trips_through_files_and_stdin() {
    let dir = Scratch::new("roundtrip");
    let truth = [0.4, 0.3, 0.2, 0.1, 0.0];
    for protocol in ["grr", "sue", "oue", "blh", "olh", "hr", "ss", "auto"] {
        let config = config(&dir, protocol, 2.0);
        let reports = randomize(&config, 7, &skewed_values());
        assert_eq!(reports.lines().count(), 4000, "{protocol}");
        let file = dir.file(&format!("{protocol}.jsonl"), &reports);
        let c = config.to_str().unwrap();
        let from_file = aggregate_json(&["--config", c, file.to_str().unwrap()], "");
        let from_stdin = aggregate_json(&["--config", c], &reports);
        assert_eq!(from_file, from_stdin, "{protocol}");
        assert_eq!(from_file["n"], 4000);
        assert_ne!(from_file["protocol"], "auto", "the resolved protocol is reported");
        let estimates = from_file["estimates"].as_array().unwrap();
        assert_eq!(estimates.len(), 5);
        for (e, (label, t)) in estimates.iter().zip(LABELS.iter().zip(truth)) {
            assert_eq!(e["value"], *label);
            let f = e["frequency"].as_f64().unwrap();
            let se = e["std_error"].as_f64().unwrap();
            // A 6-sigma band: false alarm below 1e-8 per value.
            assert!((f - t).abs() < 6.0 * se, "{protocol} {label}: {f} vs {t} (se {se})");
            let ci = e["ci95"].as_array().unwrap();
            assert!(ci[0].as_f64().unwrap() < f && f < ci[1].as_f64().unwrap());
        }
    }
}

#[test]
fn several_report_files_aggregate_as_their_concatenation() {
    let dir = Scratch::new("files");
    let config = config(&dir, "olh", 1.0);
    let first = randomize(&config, 1, &skewed_values());
    let second = randomize(&config, 2, &skewed_values());
    let (f1, f2) = (dir.file("1.jsonl", &first), dir.file("2.jsonl", &second));
    let c = config.to_str().unwrap();
    let split = aggregate_json(&["--config", c, f1.to_str().unwrap(), f2.to_str().unwrap()], "");
    let joined = aggregate_json(&["--config", c], &(first + &second));
    assert_eq!(split, joined);
    assert_eq!(split["n"], 8000);
}

#[test]
fn a_seed_reproduces_and_no_seed_uses_fresh_randomness() {
    let dir = Scratch::new("seed");
    let config = config(&dir, "oue", 1.0);
    let values = skewed_values();
    assert_eq!(randomize(&config, 5, &values), randomize(&config, 5, &values));
    assert_ne!(randomize(&config, 5, &values), randomize(&config, 6, &values));
    let c = config.to_str().unwrap();
    let secure = |_| stdout(&run(&["randomize", "--config", c], &values));
    // 4000 reports of 5 random bits each: equal by chance with probability 2^-6000.
    assert_ne!(secure(0), secure(1));
}

#[test]
fn csv_and_table_formats_carry_the_same_estimate() {
    let dir = Scratch::new("formats");
    let config = config(&dir, "grr", 1.0);
    let reports = randomize(&config, 3, &skewed_values());
    let c = config.to_str().unwrap();
    let json = aggregate_json(&["--config", c], &reports);

    let csv = stdout(&run(&["aggregate", "--config", c, "--format", "csv"], &reports));
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), "value,frequency,unbiased_frequency,std_error,ci95_low,ci95_high");
    for (line, e) in lines.zip(json["estimates"].as_array().unwrap()) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], e["value"].as_str().unwrap());
        assert_eq!(cells[1].parse::<f64>().unwrap(), e["frequency"].as_f64().unwrap());
        assert_eq!(cells[3].parse::<f64>().unwrap(), e["std_error"].as_f64().unwrap());
    }
    assert_eq!(csv.lines().count(), 6);

    let table = stdout(&run(&["aggregate", "--config", c, "--format", "table"], &reports));
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(rows.len(), 5);
    let shown: Vec<f64> = rows.iter().map(|r| r.split_whitespace().nth(1).unwrap().parse().unwrap()).collect();
    assert!(shown.windows(2).all(|w| w[0] >= w[1]), "top values first: {shown:?}");
    assert!(rows[0].starts_with("a "), "the most frequent value leads:\n{table}");
    assert!(table.lines().next().unwrap().contains("n 4000"));
}

#[test]
fn post_processing_changes_frequency_but_not_the_unbiased_estimate() {
    let dir = Scratch::new("post");
    let config = config(&dir, "sue", 0.5);
    let reports = randomize(&config, 11, &skewed_values());
    let c = config.to_str().unwrap();
    let plain = aggregate_json(&["--config", c], &reports);
    for post in ["norm-sub", "project"] {
        let processed = aggregate_json(&["--config", c, "--post", post], &reports);
        let (a, b) = (plain["estimates"].as_array().unwrap(), processed["estimates"].as_array().unwrap());
        let mut total = 0.0;
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x["unbiased_frequency"], y["unbiased_frequency"]);
            assert_eq!(x["std_error"], y["std_error"]);
            let f = y["frequency"].as_f64().unwrap();
            assert!(f >= 0.0, "{post}: {f}");
            total += f;
        }
        assert!((total - 1.0).abs() < 1e-9, "{post}: sums to {total}");
    }
    let bad = run(&["aggregate", "--config", c, "--post", "round"], &reports);
    assert!(!bad.status.success());
}

/// One bad report per reason, with the protocol that can produce it.
fn bad_reports(dir: &Scratch) -> (String, String) {
    let grr = config(dir, "grr", 1.0);
    let good = randomize(&grr, 1, "a\n");
    let good: Value = serde_json::from_str(good.trim()).unwrap();
    let with = |key: &str, value: Value| {
        let mut r = good.clone();
        r[key] = value;
        r.to_string() + "\n"
    };
    let grr_bad = [
        "not json\n".to_string(),
        "{\"version\":1}\n".to_string(),
        with("version", 2.into()),
        with("epsilon", 2.0.into()),
        with("domain", "0000000000000000".into()),
        with("value", 5.into()),
    ]
    .concat();
    let ss = config(dir, "ss", 1.0);
    let good: Value = serde_json::from_str(randomize(&ss, 1, "a\n").trim()).unwrap();
    let with_bits = |bits: &str| {
        let mut r = good.clone();
        r["bits"] = bits.into();
        r.to_string() + "\n"
    };
    // Five bits fit one byte: a second byte or a set padding bit is a bad
    // length; a subset of the wrong size is its own reason.
    let ss_bad = [with_bits("0100"), with_bits("21"), with_bits("03")].concat();
    (grr_bad, ss_bad)
}

#[test]
fn every_rejection_reason_is_counted_and_good_reports_are_kept() {
    let dir = Scratch::new("reject");
    let (grr_bad, ss_bad) = bad_reports(&dir);
    let grr = config(&dir, "grr", 1.0);
    let good = randomize(&grr, 2, &skewed_values());
    let out = run(&["aggregate", "--config", grr.to_str().unwrap()], &(grr_bad.clone() + &good + "\n  \n"));
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["n"], 4000, "every good report survives the bad ones");
    let rejected = &json["rejected"];
    assert_eq!(rejected["malformed"], 2);
    assert_eq!(rejected["unsupported_version"], 1);
    assert_eq!(rejected["config_mismatch"], 2);
    assert_eq!(rejected["out_of_range"], 1);
    assert!(stderr(&out).contains("skipped 6 rejected reports"), "{}", stderr(&out));
    let clean = aggregate_json(&["--config", grr.to_str().unwrap()], &good);
    assert_eq!(clean["estimates"], json["estimates"], "rejections do not disturb the estimate");

    let ss = config(&dir, "ss", 1.0);
    let good = randomize(&ss, 2, &skewed_values());
    let json = aggregate_json(&["--config", ss.to_str().unwrap()], &(ss_bad + &good));
    assert_eq!(json["n"], 4000);
    assert_eq!(json["rejected"]["bad_length"], 2);
    assert_eq!(json["rejected"]["bad_subset_size"], 1);
    assert_eq!(json["rejected"]["malformed"], 0, "every reason is listed, zeros included");
}

#[test]
fn strict_fails_on_the_first_rejection_and_names_its_line() {
    let dir = Scratch::new("strict");
    let grr = config(&dir, "grr", 1.0);
    let good = randomize(&grr, 2, "a\nb\n");
    let out = run(&["aggregate", "--config", grr.to_str().unwrap(), "--strict"], &(good.clone() + "{oops\n"));
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "no estimate after a strict failure");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("line 3") && err.contains("malformed"), "{err}");
    assert!(stdout(&run(&["aggregate", "--config", grr.to_str().unwrap(), "--strict"], &good)).contains("\"n\": 2"));
}

#[test]
fn randomize_refuses_a_value_outside_the_domain_naming_the_line_not_the_value() {
    let dir = Scratch::new("outside");
    for protocol in ["grr", "olh"] {
        let config = config(&dir, protocol, 1.0);
        let out = run(&["randomize", "--config", config.to_str().unwrap()], "a\nb\nsecret-value\nc\n");
        assert!(!out.status.success());
        assert!(out.stdout.is_empty(), "no partial output");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("line 3") && err.contains("not in the domain"), "{err}");
        assert!(!err.contains("secret-value"), "the raw value leaked: {err}");
    }
    let sized = dir.file("sized.json", r#"{"protocol":"grr","epsilon":1,"domain":4}"#);
    let out = run(&["randomize", "--config", sized.to_str().unwrap()], "0\n3\n4\n");
    assert!(!out.status.success() && out.stdout.is_empty());
    assert!(stderr(&out).contains("line 3"), "{}", stderr(&out));
}

#[test]
fn bad_configs_are_one_line_errors() {
    let dir = Scratch::new("config");
    let cases = [
        (r#"{"protocol":"grr","epsilon":0,"domain":4}"#, "epsilon"),
        (r#"{"protocol":"grr","epsilon":-1,"domain":4}"#, "epsilon"),
        (r#"{"protocol":"grr","epsilon":1,"domain":1}"#, "domain"),
        (r#"{"protocol":"grr","epsilon":1,"domain":["a","a"]}"#, "domain"),
        (r#"{"protocol":"nope","epsilon":1,"domain":4}"#, "protocol"),
        (r#"{"protocol":"grr","domain":4}"#, "epsilon"),
        (r#"{"protocol":"grr","epsilon":"1","domain":4}"#, "epsilon"),
        (r#"[1, 2]"#, "configuration"),
        ("not json", "configuration"),
    ];
    for (i, (text, names)) in cases.iter().enumerate() {
        let config = dir.file(&format!("bad{i}.json"), text);
        for command in ["randomize", "aggregate"] {
            let out = run(&[command, "--config", config.to_str().unwrap()], "a\n");
            assert!(!out.status.success(), "{command} accepted {text}");
            assert!(out.stdout.is_empty());
            let err = stderr(&out);
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(names), "{text}: {err}");
        }
    }
    let out = run(&["randomize", "--config", "/nonexistent/config.json"], "");
    assert!(!out.status.success() && stderr(&out).contains("/nonexistent/config.json"));
}

#[test]
fn aggregating_nothing_is_an_error() {
    let dir = Scratch::new("empty");
    let config = config(&dir, "hr", 1.0);
    let out = run(&["aggregate", "--config", config.to_str().unwrap()], "");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no accepted reports"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let out = run(&["aggregate", "--config", config.to_str().unwrap()], "junk\n");
    assert!(!out.status.success() && stderr(&out).contains("no accepted reports"));
}

#[test]
fn numeric_metrics_round_trip_and_refuse_non_numbers() {
    let dir = Scratch::new("numeric");
    let values: String = (0..4000).map(|i| format!("{}\n", if i % 10 < 7 { i % 20 } else { 180 + i % 20 })).collect();
    let truth = (0..4000).map(|i| f64::from(if i % 10 < 7 { i % 20 } else { 180 + i % 20 })).sum::<f64>() / 4000.0;
    for protocol in ["duchi", "laplace", "piecewise", "hybrid", "one_bit_mean", "auto"] {
        let config = dir.file(
            &format!("{protocol}.json"),
            &format!(r#"{{"protocol":"{protocol}","epsilon":2,"range":[0,200]}}"#),
        );
        let c = config.to_str().unwrap();
        let reports = randomize(&config, 4, &values);
        assert_eq!(reports, randomize(&config, 4, &values), "{protocol}: seeded runs reproduce");
        let json = aggregate_json(&["--config", c], &reports);
        let keys: Vec<&str> = ["protocol", "epsilon", "n", "rejected", "mean", "std_error", "ci95"].to_vec();
        let text = serde_json::to_string(&json).unwrap();
        assert!(keys.iter().all(|k| text.contains(&format!("\"{k}\":"))), "{text}");
        assert_eq!(json["n"], 4000);
        let (mean, se) = (json["mean"].as_f64().unwrap(), json["std_error"].as_f64().unwrap());
        assert!((mean - truth).abs() < 6.0 * se, "{protocol}: {mean} vs {truth} (se {se})");
        let csv = stdout(&run(&["aggregate", "--config", c, "--format", "csv"], &reports));
        assert_eq!(csv.lines().next().unwrap(), "attribute,mean,std_error,ci95_low,ci95_high");
        assert_eq!(csv.lines().nth(1).unwrap().split(',').nth(1).unwrap().parse::<f64>().unwrap(), mean);
        let out = run(&["aggregate", "--config", c, "--post", "project"], &reports);
        assert!(!out.status.success() && stderr(&out).contains("frequency"), "{}", stderr(&out));

        for (input, problem) in [("1\n2\nNaN\n", "finite"), ("1\n2\ninf\n", "finite"), ("1\n2\nfast\n", "not a number"), ("1\n2\n\n", "not a number")] {
            let out = run(&["randomize", "--config", c], input);
            assert!(!out.status.success() && out.stdout.is_empty(), "{protocol} {input:?}");
            let err = stderr(&out);
            assert!(err.contains("line 3") && err.contains(problem), "{err}");
            assert!(!err.contains("fast"), "{err}");
        }
    }
}

#[test]
fn records_take_comma_separated_numbers_and_report_every_attribute() {
    let dir = Scratch::new("records");
    let config = dir.file("record.json", r#"{"protocol":"piecewise","epsilon":6,"range":[[0,10],[100,200],[-1,1]]}"#);
    let c = config.to_str().unwrap();
    let values: String = (0..6000).map(|i| format!("{}, {},-0.5\n", i % 11, 100 + i % 101)).collect();
    let reports = randomize(&config, 8, &values);
    assert!(reports.lines().next().unwrap().contains("\"attributes\":["), "{reports:.200}");
    let json = aggregate_json(&["--config", c], &reports);
    let attributes = json["attributes"].as_array().unwrap();
    for (a, truth) in attributes.iter().zip([5.0, 150.0, -0.5]) {
        let (mean, se) = (a["mean"].as_f64().unwrap(), a["std_error"].as_f64().unwrap());
        assert!((mean - truth).abs() < 6.0 * se, "{mean} vs {truth}");
    }
    let table = stdout(&run(&["aggregate", "--config", c, "--format", "table"], &reports));
    assert_eq!(table.lines().count(), 5, "{table}");
    let out = run(&["randomize", "--config", c], "1,150,0\n1,150\n");
    assert!(!out.status.success() && stderr(&out).contains("line 2") && stderr(&out).contains("expected 3 numbers"));
}

#[test]
fn user_tab_value_input_simulates_users_with_memos_and_ledgers() {
    let dir = Scratch::new("users");
    let config = dir.file(
        "memo.json",
        r#"{"protocol":"oue","epsilon":1,"domain":["a","b","c"],"memoize":true,"budget":{"epsilon":2,"window":"1h"}}"#,
    );
    let c = config.to_str().unwrap();
    let input = "ann\ta\nann\ta\nbob\ta\nann\tb\nann\tc\t1000\nann\ta\t1000\nann\tc\t3600000\n";
    let out = run(&["randomize", "--config", c, "--seed", "9"], input);
    let lines: Vec<String> = stdout(&out).lines().map(String::from).collect();
    assert_eq!(lines.len(), 6, "ann's third value within the hour is refused");
    assert_eq!(lines[0], lines[1], "ann's memo for a");
    assert_eq!(lines[0], lines[4], "still ann's memo for a, free of charge");
    assert!(stderr(&out).contains("1 reports refused by the privacy budget"), "{}", stderr(&out));
    let out = run(&["randomize", "--config", c], "ann\ta\nann\n");
    assert!(!out.status.success() && stderr(&out).contains("line 2") && out.stdout.is_empty());
    // Without a user column every line is its own fresh report.
    let json = aggregate_json(&["--config", c], &randomize(&config, 1, &"a\n".repeat(50)));
    assert_eq!(json["n"], 50, "the aggregator ignores memoize and budget");
}

#[test]
fn a_reader_that_goes_away_ends_the_run_quietly() {
    // `localdp … | head -1`: stdout is a pipe whose reader is gone (closed
    // here before the command starts, so its first write fails).
    let dir = Scratch::new("closed-stdout");
    let config = config(&dir, "grr", 1.0);
    let c = config.to_str().unwrap();
    let values = dir.file("values.txt", &skewed_values());
    let reports = dir.file("reports.jsonl", &randomize(&config, 3, &skewed_values()));
    for args in [
        vec!["randomize", "--config", c, values.to_str().unwrap()],
        vec!["aggregate", "--config", c, reports.to_str().unwrap()],
        vec!["simulate", "--config", c, "--users", "100"],
        vec!["audit", "--config", c, "--samples", "100", "--seed", "1"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(common::cli::BIN).args(&args).stdout(writer).output().unwrap();
        // SIGPIPE's status, as a C tool's, and no panic on stderr.
        assert_eq!(out.status.code(), Some(141), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).is_empty(), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn privacy_accounting_prints_json() {
    let json = |args: &[&str]| -> Value { serde_json::from_str(&stdout(&run(args, ""))).unwrap() };
    // dp_accounting 0.6.0's PLD gives 10.313864609391837 (tests/accounting.rs).
    let year = json(&["privacy", "compose", "--delta", "1e-6", "0.1x365"]);
    let epsilon = year["epsilon"].as_f64().unwrap();
    assert!((10.313864609391837..10.313864609391837 * 1.02).contains(&epsilon), "{year}");
    assert_eq!(year["delta"], 1e-6);
    assert!(year["sum"].as_f64().unwrap() >= 36.5, "{year}");
    let mixed = json(&["privacy", "compose", "--delta", "1e-6", "0.5x10", "0.1x365", "2"]);
    assert!(mixed["epsilon"].as_f64().unwrap() > epsilon && mixed["sum"].as_f64().unwrap() >= 43.5, "{mixed}");

    let shuffled = json(&["privacy", "shuffle", "--epsilon", "4", "--n", "100000", "--delta", "1e-6"]);
    assert!((0.1675..=0.1728).contains(&shuffled["epsilon"].as_f64().unwrap()), "{shuffled}");
    assert!(shuffled["lower"].as_f64().unwrap() <= shuffled["epsilon"].as_f64().unwrap(), "{shuffled}");
    assert!((shuffled["closed_form"].as_f64().unwrap() - 0.5378).abs() < 5e-5, "{shuffled}");
    let small = json(&["privacy", "shuffle", "--epsilon", "4", "--n", "1000", "--delta", "1e-6"]);
    assert!(small["closed_form"].is_null(), "{small}");
    // k-ary randomized response: more clones than any ε₀-DP randomizer has.
    let grr = ["privacy", "shuffle", "--epsilon", "4", "--n", "100000", "--delta", "1e-6", "--protocol", "grr", "--domain", "16"];
    let grr = json(&grr);
    assert!(grr["epsilon"].as_f64().unwrap() < shuffled["epsilon"].as_f64().unwrap(), "{grr}");
    assert_eq!(grr["closed_form"], shuffled["closed_form"]);

    for (args, message) in [
        (vec!["compose", "--delta", "1e-6", "0.1x0"], "a count must be at least 1"),
        (vec!["compose", "--delta", "1e-6", "--", "-1x3"], "epsilon must be a finite number > 0"),
        (vec!["compose", "--delta", "1e-6", "NaNx3"], "epsilon must be a finite number > 0, got NaN"),
        (vec!["compose", "--delta", "1e-6", "0.1x3.5"], "expected EPSILONxCOUNT"),
        (vec!["compose", "--delta", "1", "0.1x3"], "delta must be in (1e-200, 1)"),
        (vec!["compose", "--delta", "0", "0.1x3"], "delta must be in (1e-200, 1)"),
        (vec!["shuffle", "--epsilon", "4", "--n", "0", "--delta", "1e-6"], "n must be in 1..="),
        (vec!["shuffle", "--epsilon", "4", "--n", "10", "--delta", "NaN"], "delta must be in (1e-200, 1)"),
        (
            vec!["shuffle", "--epsilon", "4", "--n", "10", "--delta", "1e-6", "--protocol", "grr", "--domain", "1"],
            "domain size must be between 2 and 4194304, got 1",
        ),
    ] {
        let out = run(&[&["privacy"], &args[..]].concat(), "");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty() && stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}
