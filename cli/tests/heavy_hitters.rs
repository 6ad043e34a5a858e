//! Heavy hitters on the command line: `randomize` takes one string per line
//! (a too-long one fails the run naming the line, never the value, unless
//! the config truncates), `aggregate` prints the values found as JSON, a
//! table, CSV, and `--plot` draws one bar per value.

mod common;

use common::cli::{run, stdout, Scratch};
#[path = "../../tests/common/demo.rs"]
mod demo;

/// 6,000 lines: "/" half of them, "/pricing" a third, "/docs" a sixth.
fn pages() -> String {
    (0..6000).map(|i| ["/", "/", "/", "/pricing", "/pricing", "/docs"][i % 6]).collect::<Vec<_>>().join("\n") + "\n"
}

#[test]
fn pages_are_found_and_shown_as_json_table_csv_and_plot() {
    let scratch = Scratch::new("heavy-hitters");
    let config = scratch.file("pages.json", r#"{"protocol":"heavy_hitters","epsilon":4,"max_length":8,"top":5}"#);
    let config = config.to_str().unwrap();
    let reports = stdout(&["randomize", "--config", config, "--seed", "13"], &pages());
    assert_eq!(reports.lines().count(), 6000);
    assert!(!reports.contains("pricing"), "reports never hold the value");

    let estimate: serde_json::Value = serde_json::from_str(&stdout(&["aggregate", "--config", config], &reports)).unwrap();
    assert_eq!(estimate["protocol"], "pem", "heavy_hitters resolves to PEM");
    assert_eq!(estimate["n"], 6000);
    let found: Vec<&str> = estimate["heavy_hitters"].as_array().unwrap().iter().map(|e| e["value"].as_str().unwrap()).collect();
    assert_eq!(found, ["/", "/pricing", "/docs"], "ranked by frequency");

    let table = stdout(&["aggregate", "--config", config, "--format", "table"], &reports);
    assert!(table.starts_with("protocol pem  epsilon 4  n 6000  rejected 0\nvalue"), "{table}");
    assert_eq!(table.lines().nth(3).unwrap().split_whitespace().next(), Some("/pricing"), "{table}");
    let csv = stdout(&["aggregate", "--config", config, "--format", "csv"], &reports);
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(csv.starts_with("value,frequency,std_error,ci95_low,ci95_high\n/,"), "{csv}");

    let svg = scratch.0.join("pages.svg");
    stdout(&["aggregate", "--config", config, "--plot", svg.to_str().unwrap()], &reports);
    let svg = std::fs::read_to_string(svg).unwrap();
    assert_eq!(svg.matches("class=\"bar\"").count(), 3, "one bar per value found");
    assert!(svg.contains("Heavy hitters found — pem"));
}

#[test]
fn a_value_longer_than_max_length_fails_the_run_naming_the_line() {
    let scratch = Scratch::new("heavy-hitters-long");
    let strict = scratch.file("strict.json", r#"{"protocol":"pem","epsilon":2,"max_length":8}"#);
    let out = run(&["randomize", "--config", strict.to_str().unwrap()], "/home\n/a-secret-page\n");
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "nothing is written when a line fails");
    let error = String::from_utf8(out.stderr).unwrap();
    assert!(error.contains("line 2") && error.contains("at most 8 bytes"), "{error}");
    assert!(!error.contains("secret"), "the value is never echoed: {error}");

    let lenient = scratch.file("lenient.json", r#"{"protocol":"pem","epsilon":2,"max_length":8,"truncate":true}"#);
    let reports = stdout(&["randomize", "--config", lenient.to_str().unwrap()], "/home\n/a-secret-page\n");
    assert_eq!(reports.lines().count(), 2);
}

/// Discovered values come from devices: a population can make any value
/// heavy. CSV quotes them (RFC 4180) and defuses spreadsheet formulas; the
/// table shows control characters escaped, never as terminal escapes.
#[test]
fn hostile_values_are_quoted_in_csv_and_escaped_in_tables() {
    let scratch = Scratch::new("heavy-hitters-hostile");
    let config = scratch.file("hostile.json", r#"{"protocol":"pem","epsilon":4,"max_length":8,"top":5}"#);
    let config = config.to_str().unwrap();
    let lines = (0..6000).map(|i| ["=1+2,\"x", "\u{1b}[2J"][i % 2]).collect::<Vec<_>>().join("\n") + "\n";
    let reports = stdout(&["randomize", "--config", config, "--seed", "17"], &lines);
    let csv = stdout(&["aggregate", "--config", config, "--format", "csv"], &reports);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    // The value is the field before the last four (numbers).
    let mut values: Vec<&str> = rows.iter().map(|r| r.rsplitn(5, ',').last().unwrap()).collect();
    values.sort();
    assert_eq!(values, ["\u{1b}[2J", r#""'=1+2,""x""#], "quoted, the formula defused: {csv}");
    let table = stdout(&["aggregate", "--config", config, "--format", "table"], &reports);
    assert!(!table.contains('\u{1b}'), "no raw escape reaches the terminal: {table:?}");
    assert!(table.contains("\\u{1b}[2J"), "{table}");
}

/// The demo's ten pages held by 20,000 devices (40.5%, 17.6%, …, 2.2%), at
/// ε = 2 where a level's noise is large beside the pages' shares: the
/// values listed are pages, never a page's prefix followed by noise (the
/// best of thousands of noisy extensions, which the reports that picked it
/// overstate).
#[test]
fn only_values_devices_hold_are_listed() {
    let scratch = Scratch::new("heavy-hitters-demo");
    let config = scratch.file("demo.json", &demo::config(2.0));
    let config = config.to_str().unwrap();
    let lines: String = demo::PAGES.iter().flat_map(|&(page, count)| std::iter::repeat_n(page, count)).map(|page| page.to_string() + "\n").collect();
    let reports = stdout(&["randomize", "--config", config, "--seed", "0"], &lines);
    let estimate: serde_json::Value = serde_json::from_str(&stdout(&["aggregate", "--config", config], &reports)).unwrap();
    let listed: Vec<&str> = estimate["heavy_hitters"].as_array().unwrap().iter().map(|e| e["value"].as_str().unwrap()).collect();
    assert_eq!(listed.first(), Some(&"/"), "{listed:?}");
    assert!(listed.iter().all(|v| demo::PAGES.iter().any(|(page, _)| page == v)), "listed a value nobody holds: {listed:?}");
}
