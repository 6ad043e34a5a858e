//! `localdp aggregate --plot FILE.svg` (well-formed SVG, one bar per value,
//! one mean per attribute, labels escaped) and the progress line (drawn on a
//! terminal, never into a pipe).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

mod common;

use common::cli::{Scratch, BIN};

/// Runs `localdp`, which must succeed.
fn run(args: &[&str], stdin: &str) -> Output {
    let out = common::cli::run(args, stdin);
    assert!(out.status.success(), "localdp {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Reports of `values` under `config`, as JSON lines.
fn reports(scratch: &Scratch, config: &str, values: &[String]) -> (PathBuf, String) {
    let config = scratch.file("config.json", config);
    let out = run(&["randomize", "--config", config.to_str().unwrap(), "--seed", "5"], &(values.join("\n") + "\n"));
    (config, String::from_utf8(out.stdout).unwrap())
}

/// Aggregates with `--plot`; the SVG and the estimate printed on stdout.
fn plot(scratch: &Scratch, config: &str, values: &[String], extra: &[&str]) -> (String, serde_json::Value) {
    let (config, lines) = reports(scratch, config, values);
    let svg = scratch.0.join("estimate.svg");
    let _ = std::fs::remove_file(&svg);
    let mut args = vec!["aggregate", "--config", config.to_str().unwrap(), "--plot", svg.to_str().unwrap()];
    args.extend(extra);
    let out = run(&args, &lines);
    let estimate = serde_json::from_slice(&out.stdout).expect("the estimate is still printed");
    (std::fs::read_to_string(&svg).expect("the SVG is written"), estimate)
}

/// Checks the document is well-formed XML as far as this writer can break
/// it: every tag closed in order, attributes quoted, entities known, no
/// stray `<` or `&` in text.
fn assert_well_formed(svg: &str) {
    assert!(svg.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\""));
    let body = &svg[svg.find("?>").unwrap() + 2..];
    let mut open: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find(['<', '&']) {
        check_text(&rest[..start]);
        rest = &rest[start..];
        if rest.starts_with('&') {
            let end = rest.find(';').expect("an entity ends with ;");
            assert!(["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&&rest[..=end]), "entity {}", &rest[..=end]);
            rest = &rest[end + 1..];
            continue;
        }
        let end = rest.find('>').expect("a tag ends");
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop().as_deref(), Some(name), "closing </{name}>");
        } else {
            let name: String = tag.chars().take_while(|c| !c.is_whitespace() && *c != '/').collect();
            assert!(!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()), "tag {tag:?}");
            let attributes = tag[name.len()..].trim_end_matches('/');
            assert_eq!(attributes.matches('"').count() % 2, 0, "attributes of {tag:?}");
            assert!(!attributes.contains('<'), "{tag:?}");
            if !tag.ends_with('/') {
                open.push(name);
            }
        }
    }
    check_text(rest);
    assert!(open.is_empty(), "unclosed {open:?}");

    fn check_text(text: &str) {
        assert!(!text.contains('>') || text.trim().is_empty(), "stray > in {text:?}");
    }
}

#[test]
fn frequency_plot_has_one_bar_per_value() {
    let scratch = Scratch::new("frequency");
    let labels = ["chrome", "R&D <beta>", "\"quoted\"", "firefox", "a label long enough to be shortened in the picture"];
    let config = format!(
        r#"{{"protocol":"oue","epsilon":1.0,"domain":{}}}"#,
        serde_json::to_string(&labels).unwrap()
    );
    let values: Vec<String> = (0..3000).map(|i| labels[[0, 0, 1, 2, 0, 3, 4][i % 7]].to_string()).collect();
    for post in ["none", "project"] {
        let (svg, estimate) = plot(&scratch, &config, &values, &["--post", post]);
        assert_well_formed(&svg);
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), labels.len());
        assert_eq!(svg.matches("<path class=\"ci\"").count(), labels.len());
        assert!(svg.contains("R&amp;D &lt;beta&gt;") && svg.contains("&quot;quoted&quot;"));
        assert!(svg.contains(&format!("n = {}", estimate["n"])));
        assert!(svg.contains(&format!("post-processing: {post}")));
        // The bar lengths follow the estimates: the largest estimate, the longest bar.
        let widths: Vec<f64> = svg
            .match_indices("<rect class=\"bar\"")
            .map(|(i, _)| {
                let tag = &svg[i..i + svg[i..].find("/>").unwrap()];
                let w = &tag[tag.find("width=\"").unwrap() + 7..];
                w[..w.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        let frequencies: Vec<f64> =
            estimate["estimates"].as_array().unwrap().iter().map(|e| e["frequency"].as_f64().unwrap()).collect();
        let widest = (0..widths.len()).max_by(|&a, &b| widths[a].total_cmp(&widths[b])).unwrap();
        let largest = (0..frequencies.len()).max_by(|&a, &b| frequencies[a].total_cmp(&frequencies[b])).unwrap();
        assert_eq!(widest, largest);
    }
    // A sized domain: values 0..d.
    let values: Vec<String> = (0..2000).map(|i| (i % 12).to_string()).collect();
    let (svg, _) = plot(&scratch, r#"{"protocol":"grr","epsilon":2.0,"domain":12}"#, &values, &[]);
    assert_well_formed(&svg);
    assert_eq!(svg.matches("<rect class=\"bar\"").count(), 12);
}

#[test]
fn numeric_plot_has_one_mean_per_attribute() {
    let scratch = Scratch::new("numeric");
    let values: Vec<String> = (0..2000).map(|i| format!("{}", (i * 7) % 5000)).collect();
    let (svg, estimate) = plot(&scratch, r#"{"protocol":"auto","epsilon":1.0,"range":[0,5000]}"#, &values, &[]);
    assert_well_formed(&svg);
    assert_eq!(svg.matches("<circle class=\"mean\"").count(), 1);
    assert_eq!(svg.matches("<rect class=\"bar\"").count(), 0);
    assert!(svg.contains(&format!("n = {}", estimate["n"])));

    let records: Vec<String> = (0..2000).map(|i| format!("{},{},{}", i % 100, (i * 3) % 10, (i % 3) as f64 - 1.0)).collect();
    let (svg, estimate) =
        plot(&scratch, r#"{"protocol":"piecewise","epsilon":4.0,"range":[[0,100],[0,10],[-1,1]]}"#, &records, &[]);
    assert_well_formed(&svg);
    assert_eq!(svg.matches("<circle class=\"mean\"").count(), 3);
    assert_eq!(estimate["attributes"].as_array().unwrap().len(), 3);
    for i in 0..3 {
        assert!(svg.contains(&format!(">attribute {i}<")));
    }
}

#[test]
fn a_plot_that_cannot_be_written_is_an_error() {
    let scratch = Scratch::new("unwritable");
    let (config, lines) = reports(&scratch, r#"{"protocol":"grr","epsilon":1.0,"domain":3}"#, &["0".into(), "1".into()]);
    let missing = scratch.0.join("no/such/dir/estimate.svg");
    let out = Command::new(BIN)
        .args(["aggregate", "--config", config.to_str().unwrap(), "--plot", missing.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(lines.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("estimate.svg"));
    assert!(out.stdout.is_empty(), "nothing printed when the plot fails");
}

/// Reports trickling in over about 1.5 s: long enough for the progress line.
fn slow_aggregation(scratch: &Scratch) -> String {
    let values: Vec<String> = (0..6000).map(|i| (i % 8).to_string()).collect();
    let (config, lines) = reports(scratch, r#"{"protocol":"grr","epsilon":1.0,"domain":8}"#, &values);
    let file = scratch.file("reports.jsonl", &lines);
    format!(
        "for i in 1 2 3 4 5; do cat {0}; sleep 0.3; done | {BIN} aggregate --config {1} > {2}",
        file.display(),
        config.display(),
        scratch.0.join("estimate.json").display()
    )
}

#[test]
fn progress_is_drawn_on_a_terminal_only() {
    let scratch = Scratch::new("progress");
    let pipeline = slow_aggregation(&scratch);
    // stderr a pipe: no progress line.
    let piped = Command::new("sh").args(["-c", &pipeline]).output().unwrap();
    assert!(piped.status.success());
    assert!(piped.stderr.is_empty(), "{:?}", String::from_utf8_lossy(&piped.stderr));
    let estimate: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scratch.0.join("estimate.json")).unwrap()).unwrap();
    assert_eq!(estimate["n"], serde_json::json!(30000));

    // stderr a terminal (util-linux `script` gives the command a pty).
    let Ok(terminal) = Command::new("script").args(["-qec", &pipeline, "/dev/null"]).output() else {
        eprintln!("skipped: no `script` to run the command on a terminal");
        return;
    };
    assert!(terminal.status.success());
    let shown = String::from_utf8_lossy(&terminal.stdout);
    assert!(shown.contains("\r") && shown.contains(" lines ") && shown.contains("/s"), "{shown:?}");
    assert!(shown.contains("\r\x1b[K"), "the line is erased at the end: {shown:?}");
}
