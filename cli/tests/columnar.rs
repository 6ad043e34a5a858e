//! Reports as Parquet through the CLI and the collector: `localdp export
//! --format parquet`, `localdp aggregate FILE.parquet` (the estimate of the
//! JSON Lines the file came from, byte for byte, whatever the threads and
//! row groups), and `GET /api/metrics/{name}/reports.parquet`.

mod common;
#[path = "../../columnar/tests/protocols/mod.rs"]
mod protocols;
mod serving;

use common::cli::{run, stdout, Scratch};
use localdp::rng::UniformBelow;
use localdp::SimulationRng;
use protocols::{value, PROTOCOLS};
use std::path::{Path, PathBuf};

/// `n` seeded reports of a config, as JSON lines.
fn simulated(config: &Path, values: &[&str], n: usize, seed: u64) -> Vec<String> {
    let input: String = (0..n).map(|i| format!("{}\n", value(values, i))).collect();
    let out = stdout(&["randomize", "--config", config.to_str().unwrap(), "--seed", &seed.to_string()], &input);
    out.lines().map(str::to_string).collect()
}

/// The report with one field replaced or added.
fn edited(report: &str, key: &str, value: serde_json::Value) -> String {
    let mut object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(report).unwrap();
    object.insert(key.to_string(), value);
    serde_json::Value::Object(object).to_string()
}

/// Reports that `aggregate` rejects, each for its own reason: not JSON,
/// another version, another ε, another domain, an unknown field, a report of
/// another protocol.
fn hostile(report: &str, foreign: &str) -> Vec<String> {
    vec![
        "not a report".to_string(),
        r#"{"version":2,"protocol":"grr","epsilon":1,"domain":"x","value":0}"#.to_string(),
        edited(report, "epsilon", 7.5.into()),
        edited(report, "domain", "0000000000000000".into()),
        edited(report, "color", "red".into()),
        foreign.to_string(),
    ]
}

/// `localdp aggregate` of `files` with extra arguments: (stdout, stderr),
/// which must succeed.
fn aggregate(config: &Path, extra: &[&str], files: &[&Path]) -> (String, String) {
    let mut args = vec!["aggregate", "--config", config.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let out = run(&args, "");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "localdp {args:?}: {stderr}");
    (String::from_utf8(out.stdout).unwrap(), stderr)
}

/// `localdp export` of `files` into `output` in row groups of `rows`; its stderr.
fn export(config: &Path, output: &Path, rows: usize, files: &[&Path]) -> String {
    let rows = rows.to_string();
    let mut args = vec!["export", "--config", config.to_str().unwrap(), "--format", "parquet", "-o", output.to_str().unwrap()];
    args.extend(["--row-group-size", &rows]);
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let out = run(&args, "");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "localdp {args:?}: {stderr}");
    stderr
}

#[test]
fn every_protocol_aggregates_from_parquet_as_from_its_json_lines() {
    let scratch = Scratch::new("columnar-protocols");
    for (k, (config, values)) in PROTOCOLS.iter().enumerate() {
        let config_path = scratch.file(&format!("config-{k}.json"), config);
        let mut lines = simulated(&config_path, values, 1000, 40 + k as u64);
        // Another protocol's report, as a collector shared by two metrics would mix them.
        let (other, other_values) = PROTOCOLS[(k + 1) % PROTOCOLS.len()];
        let other_path = scratch.file(&format!("other-{k}.json"), other);
        let foreign = simulated(&other_path, other_values, 1, 1).remove(0);
        for (i, line) in hostile(&lines[0], &foreign).into_iter().enumerate() {
            lines.insert(i * 150, line);
        }
        let jsonl = scratch.file(&format!("reports-{k}.jsonl"), &(lines.join("\n") + "\n\n"));
        let parquet = scratch.0.join(format!("reports-{k}.parquet"));
        // Row groups of 97 reports: 11 of them, the last one short.
        let exported = export(&config_path, &parquet, 97, &[&jsonl]);
        let expected = aggregate(&config_path, &["--threads", "1"], &[&jsonl]);
        assert!(expected.1.starts_with("localdp: skipped 6 rejected reports ("), "{config}: {}", expected.1);
        assert_eq!(exported, expected.1, "{config}: export counts the rejections as aggregate does");
        for threads in ["1", "2"] {
            let from_parquet = aggregate(&config_path, &["--threads", threads], &[&parquet]);
            assert_eq!(from_parquet, expected, "{config}, --threads {threads}");
        }
    }
}

#[test]
fn a_parquet_file_of_another_config_is_counted_as_mismatched() {
    let scratch = Scratch::new("columnar-mismatch");
    let (grr, grr_values) = PROTOCOLS[0];
    let (oue, oue_values) = PROTOCOLS[2];
    let grr_config = scratch.file("grr.json", grr);
    let oue_config = scratch.file("oue.json", oue);
    let grr_lines = scratch.file("grr.jsonl", &(simulated(&grr_config, grr_values, 300, 1).join("\n") + "\n"));
    let oue_lines = scratch.file("oue.jsonl", &(simulated(&oue_config, oue_values, 200, 2).join("\n") + "\n"));
    let (grr_file, oue_file) = (scratch.0.join("grr.parquet"), scratch.0.join("oue.parquet"));
    export(&grr_config, &grr_file, 1000, &[&grr_lines]);
    export(&oue_config, &oue_file, 1000, &[&oue_lines]);
    // A file of OUE reports given to the GRR config: 200 config mismatches,
    // as the same reports in JSON Lines; in any order of the files.
    let expected = aggregate(&grr_config, &[], &[&grr_lines, &oue_lines]);
    assert_eq!(expected.1, "localdp: skipped 200 rejected reports (200 config_mismatch)\n");
    assert_eq!(aggregate(&grr_config, &[], &[&oue_file, &grr_file]), expected);
    assert_eq!(aggregate(&grr_config, &[], &[&grr_file, &oue_lines]), expected);
}

#[test]
fn strict_refuses_a_file_exported_with_rejections() {
    let scratch = Scratch::new("columnar-strict");
    let (config, values) = PROTOCOLS[0];
    let config = scratch.file("grr.json", config);
    let clean = scratch.file("clean.jsonl", &(simulated(&config, values, 50, 3).join("\n") + "\n"));
    let dirty = scratch.file("dirty.jsonl", "not a report\n");
    let (clean_file, dirty_file) = (scratch.0.join("clean.parquet"), scratch.0.join("dirty.parquet"));
    export(&config, &clean_file, 1000, &[&clean]);
    export(&config, &dirty_file, 1000, &[&clean, &dirty]);
    assert!(aggregate(&config, &["--strict"], &[&clean_file]).1.is_empty());
    let out = run(&["aggregate", "--config", config.to_str().unwrap(), "--strict", dirty_file.to_str().unwrap()], "");
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("dirty.parquet: 1 reports were rejected when it was exported (localdp.rejected)"), "{stderr}");
    // A file of nothing but rejected reports has no row group: its count
    // still counts, as its JSON Lines would.
    let rejected_only = scratch.0.join("rejected.parquet");
    export(&config, &rejected_only, 1000, &[&dirty]);
    let expected = aggregate(&config, &[], &[&clean, &dirty]);
    assert!(expected.1.starts_with("localdp: skipped 1 rejected reports"), "{}", expected.1);
    assert_eq!(aggregate(&config, &["--threads", "2"], &[&clean_file, &rejected_only]), expected);
}

#[test]
fn a_failed_export_leaves_no_file() {
    let scratch = Scratch::new("columnar-failed");
    let config = scratch.file("grr.json", PROTOCOLS[0].0);
    let output = scratch.0.join("out.parquet");
    let missing = scratch.0.join("missing.jsonl");
    let args = ["export", "--config", config.to_str().unwrap(), "--format", "parquet", "-o", output.to_str().unwrap()];
    let out = run(&[&args[..], &[missing.to_str().unwrap()]].concat(), "");
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr).unwrap().contains("missing.jsonl"));
    // Nothing at the output, nothing partial beside it.
    assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 1);
    // From stdin, and aggregated as stdin's lines are.
    let lines = simulated(&config, PROTOCOLS[0].1, 20, 4).join("\n") + "\n";
    assert!(run(&args, &lines).status.success());
    let from_stdin = stdout(&["aggregate", "--config", config.to_str().unwrap()], &lines);
    assert_eq!(aggregate(&config, &[], &[&output]).0, from_stdin);
}

/// `localdp export` files damaged by a seeded stream of edits (a few bytes
/// overwritten anywhere, or in the footer, where the schema and metadata
/// are, or the file cut short): each one is read, or refused with exit
/// status 1 and a message that names it; never a panic.
#[test]
fn damaged_parquet_files_are_read_or_refused_by_name() {
    const FILES: usize = 800;
    let scratch = Scratch::new("columnar-damaged");
    // Every payload column among them: value (GRR), bits (OUE), value and
    // seed (OLH), attributes and values (Laplace), cohort and bits (RAPPOR).
    let sources: Vec<(PathBuf, Vec<u8>)> = [0, 2, 4, 10, 14]
        .into_iter()
        .map(|k| {
            let (config, values) = PROTOCOLS[k];
            let config = scratch.file(&format!("config-{k}.json"), config);
            let lines = scratch.file(&format!("reports-{k}.jsonl"), &(simulated(&config, values, 60, k as u64).join("\n") + "\n"));
            let file = scratch.0.join(format!("reports-{k}.parquet"));
            export(&config, &file, 25, &[&lines]);
            (config, std::fs::read(&file).unwrap())
        })
        .collect();
    let mut rng = SimulationRng::seed_from_u64(24);
    let mut below = |n: usize| UniformBelow::new(n as u64).unwrap().sample(&mut rng) as usize;
    let (mut read, mut refused) = (0, 0);
    for i in 0..FILES {
        let (config, original) = &sources[i % sources.len()];
        let mut bytes = original.clone();
        let len = bytes.len();
        match below(3) {
            0 => bytes.truncate(below(len)),
            anywhere => {
                // The footer: its metadata, its length and "PAR1".
                let footer = u32::from_le_bytes(bytes[len - 8..len - 4].try_into().unwrap()) as usize + 8;
                let start = if anywhere == 1 { 0 } else { len - footer };
                for _ in 0..1 + below(4) {
                    let at = start + below(len - start);
                    bytes[at] = below(256) as u8;
                }
            }
        }
        let path = scratch.0.join(format!("damaged-{i}.parquet"));
        std::fs::write(&path, &bytes).unwrap();
        let out = run(&["aggregate", "--config", config.to_str().unwrap(), path.to_str().unwrap()], "");
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => read += 1,
            Some(1) if stderr.starts_with(&format!("localdp: error: {}: ", path.display())) => refused += 1,
            status => panic!("damaged-{i}.parquet: exit status {status:?}: {stderr}"),
        }
        std::fs::remove_file(&path).unwrap();
    }
    assert_eq!(read + refused, FILES);
    assert!(refused > FILES / 2, "the edits damage files: {refused} of {FILES} refused");
}

mod collector {
    use super::serving::{cli_estimate, reports, Scratch, Server};

    const TOKEN: &str = "parquet-reader-token-0123456789";

    #[test]
    fn reports_parquet_is_the_estimate_behind_the_estimates_access_rule() {
        let scratch = Scratch::new("columnar-collector");
        let tokens = scratch.file("tokens.txt", &format!("{TOKEN}\n"));
        let server = Server::start(&scratch, &["--token-file", tokens.to_str().unwrap()]);
        let mut sent = reports(&scratch, "bits", 300, 9);
        sent.push(r#"{"version":1,"protocol":"oue","epsilon":1.0,"domain":"nope","bits":"00"}"#.to_string());
        for chunk in sent.chunks(70) {
            assert_eq!(server.post_reports("bits", &super::serving::array(chunk)).status, 200);
        }
        let path = "/api/metrics/bits/reports.parquet";
        // Refused exactly as the estimate is.
        for headers in [&[][..], &[("Authorization", "Bearer wrong")][..]] {
            let refused = server.request("GET", path, headers, None);
            let estimate = server.request("GET", "/api/metrics/bits/estimate", headers, None);
            assert_eq!(refused.status, 401);
            assert_eq!((refused.text(), refused.header("www-authenticate")), (estimate.text(), estimate.header("www-authenticate")));
        }
        let bearer = format!("Bearer {TOKEN}");
        let response = server.request("GET", path, &[("Authorization", &bearer)], None);
        assert_eq!(response.status, 200, "{}", String::from_utf8_lossy(&response.body));
        assert_eq!(response.header("content-type"), Some("application/vnd.apache.parquet"));
        assert_eq!(response.header("content-disposition"), Some("attachment; filename=\"bits.parquet\""));
        assert!(response.body.starts_with(b"PAR1") && response.body.ends_with(b"PAR1"));
        let file = scratch.file("bits.parquet", "");
        std::fs::write(&file, &response.body).unwrap();
        let estimate = server.request("GET", "/api/metrics/bits/estimate", &[("Authorization", &bearer)], None).text();
        let config = scratch.path("bits.json");
        let from_file = super::aggregate(&config, &[], &[&file]);
        assert_eq!(from_file.0, estimate);
        assert_eq!(from_file.1, "localdp: skipped 1 rejected reports (1 config_mismatch)\n");
        assert_eq!(estimate, cli_estimate(&scratch, "bits", &sent, "none"));
        // A metric with nothing stored: a valid file of no rows.
        let empty = server.request("GET", "/api/metrics/colors/reports.parquet", &[("Authorization", &bearer)], None);
        assert_eq!(empty.status, 200);
        assert!(empty.body.starts_with(b"PAR1") && empty.body.ends_with(b"PAR1"));
    }
}
