//! `localdp aggregate --threads N`: the inputs split across threads and
//! merged exactly, so the output is byte for byte the same for 1, 2 and 3
//! threads, for every protocol; with `--strict` the first rejected line is
//! named by file and line whatever the number of threads.

use localdp::{Metric, Report, SimulationRng};

mod common;

use common::cli::{run, Scratch};

#[path = "../../columnar/tests/protocols/mod.rs"]
mod protocols;

/// `n` simulated report lines (fixed seed), with a blank line, a line that
/// is not a report and one out of range among them.
fn report_lines(metric: &Metric, n: usize) -> Vec<String> {
    let mut rng = SimulationRng::seed_from_u64(16);
    let [a, b] = metric.neighbours();
    let mut lines: Vec<String> = (0..n)
        .map(|i| {
            let value = match metric.value_kind() {
                localdp::metric::ValueKind::Index { size: Some(d) } => (i % d).to_string(),
                _ if i % 3 == 0 => a.clone(),
                _ => b.clone(),
            };
            metric.randomize_text(&value, &mut rng).expect("a value of the metric").to_json()
        })
        .collect();
    lines.insert(n / 3, String::new());
    lines.insert(n / 2, "not a report".to_string());
    let report = Report::from_json(&lines[0]).unwrap();
    let payload = match report.payload {
        localdp::Payload::Sampled { attributes, values } => {
            localdp::Payload::Sampled { attributes: vec![u32::MAX; attributes.len()], values }
        }
        _ => localdp::Payload::Index(u64::MAX),
    };
    lines.insert(2 * n / 3, Report { payload, ..report }.to_json());
    lines
}

#[test]
fn the_output_does_not_depend_on_the_number_of_threads() {
    let dir = Scratch::new("threads");
    for (i, (config, _)) in protocols::PROTOCOLS.iter().enumerate() {
        let metric = Metric::from_json(config).expect("a valid config");
        let config_path = dir.file(&format!("config-{i}.json"), config);
        let lines = report_lines(&metric, 3000);
        // Two files, the first big enough to be split in several parts.
        let first = dir.file(&format!("reports-{i}-a.jsonl"), &(lines.join("\n") + "\n"));
        let second = dir.file(&format!("reports-{i}-b.jsonl"), &lines[..100].join("\n")); // no final newline
        let output = |threads: &str| {
            let args = ["aggregate", "--config", config_path.to_str().unwrap(), "--threads", threads];
            let out = run(&[&args[..], &[first.to_str().unwrap(), second.to_str().unwrap()]].concat(), "");
            assert!(out.status.success(), "{config}: {}", String::from_utf8_lossy(&out.stderr));
            (out.stdout, out.stderr)
        };
        let one = output("1");
        assert!(String::from_utf8_lossy(&one.1).contains("skipped 2 rejected reports"), "{config}");
        assert_eq!(output("2"), one, "{config}: 2 threads");
        assert_eq!(output("3"), one, "{config}: 3 threads");
        // The same reports through stdin (one thread).
        let stdin = lines.join("\n") + "\n" + &lines[..100].join("\n");
        let out = run(&["aggregate", "--config", config_path.to_str().unwrap(), "--threads", "3"], &stdin);
        assert_eq!((out.stdout, out.stderr), one, "{config}: stdin");
    }
}

#[test]
fn strict_names_the_first_rejected_line_whatever_the_threads() {
    let dir = Scratch::new("threads-strict");
    let config = r#"{"protocol":"oue","epsilon":1,"domain":100}"#;
    let metric = Metric::from_json(config).unwrap();
    let config_path = dir.file("config.json", config);
    let mut lines = report_lines(&metric, 20_000);
    lines.retain(|l| !l.is_empty() && l != "not a report" && Report::from_json(l).is_ok_and(|r| matches!(r.payload, localdp::Payload::Bits(_))));
    lines.insert(15_000, lines[0].replace("\"bits\":\"", "\"bits\":\"00"));
    lines.insert(17_000, "not a report".to_string());
    let file = dir.file("reports.jsonl", &(lines.join("\n") + "\n"));
    for threads in ["1", "2", "3"] {
        let out = run(&["aggregate", "--strict", "--threads", threads, "--config", config_path.to_str().unwrap(), file.to_str().unwrap()], "");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("{}: line 15001: ", file.display())), "{threads} threads: {stderr}");
        assert!(stderr.contains("report rejected (bad_length)"), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}
