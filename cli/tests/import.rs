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

/// A metric of every family, and values for it.
const FAMILIES: &[(&str, &str)] = &[
    ("colors", r#"{"protocol":"grr","epsilon":1.0,"domain":["red","green","blue"]}"#),
    ("latency", r#"{"protocol":"auto","epsilon":1.0,"range":[0,5000]}"#),
    ("sites", r#"{"protocol":"rappor","bits":64,"hashes":2,"cohorts":8,"candidates":["a","b","c"]}"#),
    ("pages", r#"{"protocol":"heavy_hitters","epsilon":4,"max_length":8,"top":5}"#),
    ("load", r#"{"protocol":"distribution","epsilon":1.0,"range":[0,5000],"bins":16}"#),
    ("usage", r#"{"protocol":"key_value","epsilon":4,"keys":["search","share","print"],"range":[0,60],"pad":2}"#),
    ("device", r#"{"protocol":"marginals","epsilon":2,"way":2,"attributes":[{"name":"browser","domain":["Chrome","Safari"]},{"name":"os","domain":3}]}"#),
];

fn value(metric: &str, i: usize) -> String {
    match metric {
        "colors" => ["red", "green", "blue", "red"][i % 4].to_string(),
        "latency" | "load" => ((i * 37) % 5000).to_string(),
        "sites" => ["a", "b", "a", "c"][i % 4].to_string(),
        "pages" => ["/home", "/a", "/home", "/cart"][i % 4].to_string(),
        "usage" => format!(r#"{{"search": {}, "share": 50}}"#, 10 + 20 * (i % 2)),
        "device" => format!(r#"{{"browser":"{}","os":{}}}"#, ["Chrome", "Safari"][i % 2], i % 3),
        _ => unreachable!(),
    }
}

/// The scratch directory with the metrics file of [`FAMILIES`].
fn scratch(name: &str) -> Scratch {
    let scratch = Scratch::new(name);
    let entries: Vec<String> = FAMILIES
        .iter()
        .map(|(name, config)| {
            scratch.file(&format!("{name}.json"), config);
            format!(r#"{{"name":"{name}","config":{config}}}"#)
        })
        .collect();
    scratch.file("metrics.json", &format!("[{}]", entries.join(",")));
    scratch
}

fn randomized(scratch: &Scratch, metric: &str, count: usize) -> Vec<String> {
    let values: String = (0..count).map(|i| value(metric, i) + "\n").collect();
    let config = scratch.path(&format!("{metric}.json"));
    cli(&["randomize", "--config", config.to_str().unwrap(), "--seed", "11"], &values).lines().map(str::to_string).collect()
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
    for (name, _) in FAMILIES {
        let mut lines = randomized(&scratch, name, 600);
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
    let good = randomized(&scratch, "colors", 20);
    imported(&scratch, &db, "colors", &scratch.file("good.jsonl", &(good.join("\n") + "\n")));
    // Line 3: a report of another metric; line 2 of the next file: not JSON.
    let other = randomized(&scratch, "latency", 1);
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
