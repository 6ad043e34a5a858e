//! `localdp plan`: its JSON is the library's `plan` (one config per family),
//! its table marks `auto`'s choice, and bad input is a one-line error.

mod common;

use common::cli::{run, Scratch};
use localdp::plan::{plan, PlanRequest};
use serde_json::{json, Value};

/// One config per family (and both kinds of heavy hitters).
fn configs() -> Vec<(&'static str, Value)> {
    vec![
        ("frequency", json!({"protocol": "auto", "epsilon": 1, "domain": 16})),
        ("numeric", json!({"protocol": "auto", "epsilon": 1, "range": [0, 10]})),
        ("distribution", json!({"protocol": "distribution", "epsilon": 1, "range": [0, 64], "bins": 16})),
        ("sketch", json!({"protocol": "cms", "epsilon": 4, "sketch": {"hashes": 64, "width": 64}, "candidates": ["a", "b"]})),
        ("discovery", json!({"protocol": "heavy_hitters", "epsilon": 4, "max_length": 12, "top": 8})),
        ("rappor", json!({"protocol": "rappor", "bits": 64, "hashes": 2, "cohorts": 8, "candidates": ["a", "b", "c"]})),
    ]
}

#[test]
fn json_is_the_library_plan() {
    let dir = Scratch::new("plan-json");
    for (name, config) in configs() {
        let path = dir.file(&format!("{name}.json"), &config.to_string());
        let out = run(&["plan", "--config", path.to_str().unwrap(), "--users", "10000", "--target-error", "0.02", "--format", "json"], "");
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
        let expected = plan(&config, &PlanRequest { users: 10_000, target_error: Some(0.02) }).unwrap();
        assert_eq!(printed, serde_json::to_value(&expected).unwrap(), "{name}");
        assert!(expected.protocols.iter().any(|p| p.configured), "{name}: the config's protocol is listed");
    }
}

#[test]
fn table_marks_auto_and_the_configured_protocol() {
    let dir = Scratch::new("plan-table");
    let path = dir.file("auto.json", r#"{"protocol":"auto","epsilon":1,"domain":16}"#);
    let out = run(&["plan", "--config", path.to_str().unwrap(), "--users", "10000", "--target-error", "0.02"], "");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success());
    assert!(text.starts_with("frequency metric, ε 1, 10000 users, target ±0.02000 (95%)\n"), "{text}");
    // auto picks subset selection at d = 16, ε = 1; 4,896 users for ±0.05.
    let ss = text.lines().find(|l| l.starts_with("*> ss ")).unwrap_or_else(|| panic!("{text}"));
    assert!(ss.contains(" 4896 ") && ss.contains(" 30598 "), "{ss}");
    assert_eq!(text.lines().filter(|l| l.starts_with('*') || l.starts_with(" >")).count(), 2, "{text}");
    assert!(text.contains("error: frequency of a value held by 1/d of the users\n"), "{text}");
    // Without a target there are no target columns.
    let out = run(&["plan", "--config", path.to_str().unwrap(), "--users", "10000"], "");
    assert!(!String::from_utf8(out.stdout).unwrap().contains("users needed"));
}

/// A config whose channel realizes less ε than each report is charged
/// (PCKV-GRR padding to 3 pairs: `ln(1 + (e − 1)/3)` = 0.45 of 1) is told
/// so by `plan` (its JSON's `realized_epsilon`, a note under its table) and
/// by `audit` (its JSON, a note on stderr); a config that spends its ε gets
/// no note.
#[test]
fn budget_a_config_pays_for_and_does_not_use_is_named() {
    let dir = Scratch::new("plan-unused");
    let padded = dir.file("padded.json", r#"{"protocol":"pckv_grr","epsilon":1,"keys":8,"range":[0,10],"pad":3}"#);
    let tight = dir.file("tight.json", r#"{"protocol":"pckv_ue","epsilon":1,"keys":8,"range":[0,10],"pad":3}"#);
    let note = "the channel realizes ε 0.45 of the 1.0 each report is charged: 0.55 is privacy budget the config pays for and does not use";
    let realized = (1.0 + (1f64.exp() - 1.0) / 3.0).ln();
    for (config, told) in [(&padded, true), (&tight, false)] {
        let c = config.to_str().unwrap();
        let table = run(&["plan", "--config", c, "--users", "1000"], "");
        assert!(table.status.success(), "{}", String::from_utf8_lossy(&table.stderr));
        assert_eq!(String::from_utf8_lossy(&table.stdout).contains(&format!("note: {note}")), told, "{c}");
        let json: Value = serde_json::from_slice(&run(&["plan", "--config", c, "--users", "1000", "--format", "json"], "").stdout).unwrap();
        let audit = run(&["audit", "--config", c, "--samples", "2000", "--seed", "1"], "");
        assert!(audit.status.success(), "{}", String::from_utf8_lossy(&audit.stderr));
        let result: Value = serde_json::from_slice(&audit.stdout).unwrap();
        assert_eq!(String::from_utf8_lossy(&audit.stderr).contains(note), told, "{c}");
        for printed in [&json["realized_epsilon"], &result["realized_epsilon"]] {
            let printed = printed.as_f64().unwrap();
            if told {
                assert!((printed - realized).abs() < 1e-9, "{c}: {printed}");
            } else {
                assert!(printed > 1.0 - 1e-9 && printed <= 1.0, "{c}: {printed}");
            }
        }
    }
}

#[test]
fn bad_input_is_a_one_line_error() {
    let dir = Scratch::new("plan-errors");
    let good = dir.file("good.json", r#"{"protocol":"grr","epsilon":1,"domain":4}"#);
    let bad = dir.file("bad.json", r#"{"protocol":"grr","epsilon":-1,"domain":4}"#);
    for args in [
        vec!["plan", "--config", bad.to_str().unwrap(), "--users", "100"],
        vec!["plan", "--config", good.to_str().unwrap(), "--users", "100", "--target-error", "-0.1"],
        vec!["plan", "--config", good.to_str().unwrap(), "--users", "0"],
    ] {
        let out = run(&args, "");
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("error"), "{args:?}: {err}");
    }
}

/// docs/choosing-epsilon.md shows the command's real output: every sh block
/// that writes a config (`cat > NAME <<'EOF'`) and runs `localdp plan` is
/// followed by a text block with exactly what it prints
/// (scripts/plan-docs.py writes them).
#[test]
fn the_docs_show_real_output() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let page = std::fs::read_to_string(root.join("docs/choosing-epsilon.md")).unwrap();
    let dir = Scratch::new("plan-docs");
    let mut checked = 0;
    let blocks: Vec<&str> = page.split("```sh\n").skip(1).collect();
    for block in blocks {
        let (sh, rest) = block.split_once("```\n").unwrap();
        let indent = sh.len() - sh.trim_start().len();
        let lines: Vec<&str> = sh.lines().map(|l| l.get(indent..).unwrap_or("")).collect();
        let Some(command) = lines.iter().find_map(|l| l.strip_prefix("localdp plan ")) else { continue };
        let name = lines[0].strip_prefix("cat > ").and_then(|l| l.strip_suffix(" <<'EOF'")).unwrap();
        let end = lines.iter().position(|l| *l == "EOF").unwrap();
        let config = dir.file(name, &lines[1..end].join("\n"));
        let config = config.display().to_string();
        let mut args = vec!["plan"];
        args.extend(command.split(' ').map(|a| if a == name { config.as_str() } else { a }));
        let out = run(&args, "");
        assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        let text = rest.trim_start().strip_prefix("```text\n").unwrap_or_else(|| panic!("{command}: no text block after it"));
        let shown: Vec<&str> = text.split("```").next().unwrap().lines().map(|l| l.get(indent..).unwrap_or("").trim_end()).collect();
        let printed = String::from_utf8(out.stdout).unwrap();
        assert_eq!(shown.join("\n").trim_end(), printed.trim_end(), "{command}: run `python3 scripts/plan-docs.py`");
        checked += 1;
    }
    assert!(checked >= 7, "{checked} commands checked");
}
