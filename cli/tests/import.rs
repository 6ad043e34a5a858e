//! `localdp import`: a metric's export (JSON Lines or Parquet) into an
//! empty store gives the same estimate, for a metric of every family; a
//! file imported twice is stored once; a bad line refuses the whole file,
//! naming its line and not its content.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
mod serving;

use common::cli::BIN;
use serving::*;

/// The scratch directory with the metrics file of every family
/// ([`METRICS`] and [`FAMILIES`]).
fn scratch(name: &str) -> Scratch {
    Scratch::with_metrics(name, &[METRICS, FAMILIES].concat())
}

fn import(scratch: &Scratch, db: &Path, metric: &str, export: &Path) -> Output {
    let metrics = scratch.path("metrics.json");
    std::process::Command::new(BIN)
        .args(["import", "--db"])
        .arg(db)
        .args(["--metrics", metrics.to_str().unwrap(), "--metric", metric])
        .arg(export)
        .output()
        .unwrap()
}

fn imported(scratch: &Scratch, db: &Path, metric: &str, export: &Path) -> String {
    let out = import(scratch, db, metric, export);
    let said = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{metric}: {said}");
    said
}

#[test]
fn an_export_imported_into_an_empty_store_gives_the_same_estimates_for_every_family() {
    let scratch = scratch("import-families");
    let original = Server::start(&scratch, &[]);
    let (from_lines, from_parquet) = (scratch.path("lines.sqlite"), scratch.path("parquet.sqlite"));
    let mut exports: Vec<(&str, PathBuf, PathBuf)> = Vec::new();
    for (name, _) in [METRICS, FAMILIES].concat() {
        let mut lines = reports(&scratch, name, 600, 11);
        lines.push(r#"{"not":"a report"}"#.to_string());
        let posted = original.post_reports(name, &array(&lines));
        assert_eq!(posted.status, 200, "{name}: {}", posted.text());
        let jsonl = scratch.file(&format!("{name}.jsonl"), &(original.export(name, &[]).join("\n") + "\n"));
        let parquet = scratch.path(&format!("{name}.parquet"));
        let response = original.get(&format!("/api/metrics/{name}/reports.parquet"));
        assert_eq!(response.status, 200);
        std::fs::write(&parquet, &response.body).unwrap();
        let said = imported(&scratch, &from_lines, name, &jsonl);
        assert!(said.contains(&format!("into metric \"{name}\" of {}: 600 reports, 0 rejections counted", from_lines.display())), "{said}");
        let said = imported(&scratch, &from_parquet, name, &parquet);
        assert!(said.contains(": 600 reports, 1 rejections counted"), "{said}");
        // The same file again: stored once.
        let said = imported(&scratch, &from_lines, name, &jsonl);
        assert!(said.contains("was imported into metric") && said.contains("nothing stored"), "{said}");
        exports.push((name, jsonl, parquet));
    }
    let lines_store = Server::try_start_on(&scratch, from_lines.to_str().unwrap(), &[]).unwrap_or_else(|log| panic!("{log}"));
    let parquet_store = Server::try_start_on(&scratch, from_parquet.to_str().unwrap(), &[]).unwrap_or_else(|log| panic!("{log}"));
    for (name, jsonl, _) in &exports {
        let estimate = original.estimate(name, "none");
        assert_eq!(estimate.status, 200, "{name}: {}", estimate.text());
        // Parquet carries the rejection counts: the original's estimate, byte for byte.
        assert_eq!(parquet_store.estimate(name, "none").text(), estimate.text(), "{name}");
        // JSON Lines holds the reports alone: `localdp aggregate` of the file.
        let config = scratch.path(&format!("{name}.json"));
        let expected = cli(&["aggregate", "--config", config.to_str().unwrap(), jsonl.to_str().unwrap()], "");
        assert_eq!(lines_store.estimate(name, "none").text(), expected, "{name}");
        assert_eq!(lines_store.export(name, &[]), original.export(name, &[]), "{name}");
    }
}

#[test]
fn a_bad_line_refuses_the_whole_file_naming_the_line_not_its_content() {
    let scratch = scratch("import-refused");
    let db = scratch.path("store.sqlite");
    let good = reports(&scratch, "colors", 20, 11);
    imported(&scratch, &db, "colors", &scratch.file("good.jsonl", &(good.join("\n") + "\n")));
    // Line 3: a report of another metric; line 2 of the next file: not JSON.
    let other = reports(&scratch, "latency", 1, 11);
    let files = [
        (format!("{}\n{}\n{}\n{}\n", good[0], good[1], other[0], good[2]), "line 3: rejected (config_mismatch)"),
        (format!("{}\n{{\"secret-value-7\": \n", good[0]), "line 2: "),
    ];
    for (i, (text, why)) in files.iter().enumerate() {
        let bad = scratch.file(&format!("bad-{i}.jsonl"), text);
        let out = import(&scratch, &db, "colors", &bad);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{said}");
        assert!(said.contains(why) && said.contains("nothing was imported"), "{why}: {said}");
        assert!(!said.contains("secret-value"), "the line is echoed: {said}");
    }
    // Nothing of the refused files, and the good file once.
    let server = Server::try_start_on(&scratch, db.to_str().unwrap(), &[]).unwrap_or_else(|log| panic!("{log}"));
    assert_eq!(server.export("colors", &[]), good);
    // The store is in use by the collector: refused, clearly.
    let out = import(&scratch, &db, "colors", &scratch.path("bad-0.jsonl"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the database is in use"), "{out:?}");
    let out = import(&scratch, &db, "nope", &scratch.path("good.jsonl"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--metric \"nope\": not in"), "{out:?}");
}
