//! Estimates as `--format csv` and `--format table` print them (`localdp
//! aggregate`), and as `localdp simulate` shows them beside the truth.
//! Values that come from devices are escaped: CSV fields against
//! spreadsheet formulas, table cells against terminal escapes.

use localdp::heavy::HeavyHitterEstimate;
use localdp::rappor::{CandidateEstimate, RapporEstimate};
use localdp::{DistributionEstimate, FrequencyEstimate, NumericEstimate};

/// A frequency estimate as CSV, one row per value in the domain's order.
pub fn csv(estimate: &FrequencyEstimate) -> String {
    let mut out = String::from("value,frequency,unbiased_frequency,std_error,ci95_low,ci95_high\n");
    for e in &estimate.estimates {
        let value = match &e.value {
            serde_json::Value::String(s) if s.contains([',', '"', '\n', '\r']) => {
                format!("\"{}\"", s.replace('"', "\"\""))
            }
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out += &format!(
            "{value},{},{},{},{},{}\n",
            e.frequency, e.unbiased_frequency, e.std_error, e.ci95[0], e.ci95[1]
        );
    }
    out.pop();
    out
}

/// Aligned columns, the most frequent values first.
pub fn table(estimate: &FrequencyEstimate, truth: Option<&[f64]>, top: usize) -> String {
    let mut order: Vec<usize> = (0..estimate.estimates.len()).collect();
    order.sort_by(|&a, &b| estimate.estimates[b].frequency.total_cmp(&estimate.estimates[a].frequency));
    let mut header = vec!["value", "frequency", "std_error", "95% interval"];
    if truth.is_some() {
        header.push("true");
    }
    let mut rows = vec![header.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    for &i in order.iter().take(top) {
        let e = &estimate.estimates[i];
        let value = match &e.value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut row = vec![
            value,
            format!("{:.4}", e.frequency),
            format!("{:.4}", e.std_error),
            format!("[{:.4}, {:.4}]", e.ci95[0], e.ci95[1]),
        ];
        if let Some(t) = truth {
            row.push(format!("{:.4}", t[i]));
        }
        rows.push(row);
    }
    let mut out = format!(
        "{}  post {}\n",
        table_header(estimate.protocol, estimate.epsilon, estimate.n, &estimate.rejected),
        serde_json::to_value(estimate.post).expect("serializes").as_str().unwrap_or("none"),
    );
    out += &align(&rows);
    out.push('\n');
    if order.len() > top {
        out += &format!("… {} more values\n", order.len() - top);
    }
    out.pop();
    out
}

/// A numeric estimate as CSV, one row per attribute.
pub fn numeric_csv(estimate: &NumericEstimate) -> String {
    let mut out = String::from("attribute,mean,std_error,ci95_low,ci95_high");
    for (i, a) in estimate.attributes.iter().enumerate() {
        out += &format!("\n{i},{},{},{},{}", a.mean, a.std_error, a.ci95[0], a.ci95[1]);
    }
    out
}

/// Aligned columns, one row per attribute.
pub fn numeric_table(estimate: &NumericEstimate, truth: Option<&[f64]>) -> String {
    let mut rows = vec![vec!["attribute".to_string(), "mean".into(), "std_error".into(), "95% interval".into()]];
    if truth.is_some() {
        rows[0].push("true".into());
    }
    for (i, a) in estimate.attributes.iter().enumerate() {
        let mut row = vec![
            i.to_string(),
            format!("{:.4}", a.mean),
            format!("{:.4}", a.std_error),
            format!("[{:.4}, {:.4}]", a.ci95[0], a.ci95[1]),
        ];
        if let Some(t) = truth {
            row.push(format!("{:.4}", t[i]));
        }
        rows.push(row);
    }
    let header = table_header(estimate.protocol, estimate.epsilon, estimate.n, &estimate.rejected);
    format!("{header}\n{}", align(&rows))
}

/// The first line of every `--format table` estimate but RAPPOR's.
fn table_header(protocol: impl std::fmt::Display, epsilon: f64, n: u64, rejected: &localdp::RejectionCounts) -> String {
    format!("protocol {protocol}  epsilon {epsilon}  n {n}  rejected {}", rejected.total())
}

/// Rows as aligned columns: the first left-aligned, the others right-aligned.
fn align(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let lines: Vec<String> = rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(c, cell)| {
                    let pad = " ".repeat(widths[c] - cell.chars().count());
                    if c == 0 { format!("{cell}{pad}") } else { format!("{pad}{cell}") }
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect();
    lines.join("\n")
}

/// Strings with their frequencies (RAPPOR's candidates, a sketch's
/// candidates, the heavy hitters found), as CSV.
pub fn candidates_csv(values: &[CandidateEstimate]) -> String {
    let mut out = String::from("value,frequency,std_error,ci95_low,ci95_high");
    for e in values {
        out += &format!("\n{},{},{},{},{}", csv_field(&e.value), e.frequency, e.std_error, e.ci95[0], e.ci95[1]);
    }
    out
}

/// A value from devices as one CSV field: a leading `=`, `+`, `-`, `@`, tab
/// or carriage return (a spreadsheet formula) is prefixed with `'`, and the field is quoted
/// (RFC 4180: `"` doubled) when it holds a comma, a quote or a line break.
/// Discovered values are chosen by the population, so an attacker's value
/// can be among them.
fn csv_field(value: &str) -> String {
    let guarded = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{value}") } else { value.to_string() };
    if guarded.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

/// A value from devices as terminal text: control characters (terminal
/// escapes, line breaks) and a backslash shown as Rust escapes (`\u{1b}`,
/// `\n`, `\\`), so a value cannot restyle or rewrite the table.
fn printable(value: &str) -> String {
    value.chars().map(|c| if c.is_control() || c == '\\' { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// Strings with their frequencies as an aligned table, with the true
/// frequencies when simulated.
fn candidates_rows(values: &[CandidateEstimate], truth: Option<&[(String, f64)]>) -> String {
    let mut rows = vec![vec!["value".to_string(), "frequency".into(), "std_error".into(), "95% interval".into()]];
    if truth.is_some() {
        rows[0].push("true".into());
    }
    let true_of = |v: &str| truth.and_then(|t| t.iter().find(|(c, _)| c == v)).map(|(_, f)| format!("{f:.4}"));
    for e in values {
        let mut row = vec![printable(&e.value), format!("{:.4}", e.frequency), format!("{:.4}", e.std_error), format!("[{:.4}, {:.4}]", e.ci95[0], e.ci95[1])];
        row.extend(true_of(&e.value));
        rows.push(row);
    }
    align(&rows)
}

/// The detected candidates, most frequent first, then the undetected.
pub fn rappor_table(estimate: &RapporEstimate, truth: Option<&[(String, f64)]>) -> String {
    let header = format!(
        "protocol rappor  epsilon_1 {:.4}  epsilon_inf {:.4}  n {}  rejected {}",
        estimate.epsilon,
        estimate.epsilon_infinity,
        estimate.n,
        estimate.rejected.total()
    );
    format!("{header}\n{}\nnot detected: {}", candidates_rows(&estimate.estimates, truth), estimate.not_detected.join(", "))
}

/// A sketch's candidates in the config's order, or the heavy hitters found,
/// most frequent first.
pub fn heavy_hitter_table(estimate: &HeavyHitterEstimate) -> String {
    let header = table_header(estimate.protocol, estimate.epsilon, estimate.n, &estimate.rejected);
    let rows = if estimate.values().is_empty() { "no value found".to_string() } else { candidates_rows(estimate.values(), None) };
    format!("{header}\n{rows}")
}

/// The quantile names (`p50`, `p99.9`) of a distribution estimate.
pub fn quantile_name(q: f64) -> String {
    format!("p{}", (q * 1000.0).round() / 10.0)
}

/// A distribution estimate as CSV: one row per bin, quantile and the mean.
pub fn distribution_csv(estimate: &DistributionEstimate) -> String {
    let mut out = String::from("kind,lo,hi,q,estimate,ci95_low,ci95_high");
    for b in &estimate.histogram {
        out += &format!("\nbin,{},{},,{},{},{}", b.lo, b.hi, b.frequency, b.ci95[0], b.ci95[1]);
    }
    for q in &estimate.quantiles {
        out += &format!("\nquantile,,,{},{},{},{}", q.q, q.value, q.ci95[0], q.ci95[1]);
    }
    let m = &estimate.mean;
    out + &format!("\nmean,,,,{},{},{}", m.value, m.ci95[0], m.ci95[1])
}

/// The histogram as rows with a bar each, the quantiles marked in the bins
/// they fall in, then the quantiles and the mean with their intervals.
pub fn distribution_table(estimate: &DistributionEstimate) -> String {
    let header = table_header(estimate.protocol, estimate.epsilon, estimate.n, &estimate.rejected);
    let most = estimate.histogram.iter().map(|b| b.frequency).fold(1e-12, f64::max);
    let mut rows = vec![vec!["bin".to_string(), "frequency".into(), "95% interval".into(), String::new(), String::new()]];
    for (i, b) in estimate.histogram.iter().enumerate() {
        let last = i + 1 == estimate.histogram.len();
        let marks: Vec<String> = estimate
            .quantiles
            .iter()
            .filter(|q| q.value >= b.lo && (q.value < b.hi || (last && q.value <= b.hi)))
            .map(|q| quantile_name(q.q))
            .collect();
        let bar = "#".repeat((b.frequency.max(0.0) / most * 40.0).round() as usize);
        rows.push(vec![
            format!("[{}, {})", b.lo, b.hi),
            format!("{:.4}", b.frequency),
            format!("[{:.4}, {:.4}]", b.ci95[0], b.ci95[1]),
            format!("{bar:<40}"),
            marks.join(" "),
        ]);
    }
    let mut quantiles = vec![vec!["quantile".to_string(), "value".into(), "95% interval".into()]];
    for q in &estimate.quantiles {
        quantiles.push(vec![quantile_name(q.q), format!("{:.4}", q.value), format!("[{:.4}, {:.4}]", q.ci95[0], q.ci95[1])]);
    }
    let m = &estimate.mean;
    quantiles.push(vec!["mean".into(), format!("{:.4}", m.value), format!("[{:.4}, {:.4}]", m.ci95[0], m.ci95[1])]);
    format!("{header}\n{}\n\n{}", align(&rows), align(&quantiles))
}
