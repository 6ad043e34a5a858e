//! `localdp plan`: the planner (`localdp::plan`) as a table or JSON.

use crate::output::{say, CliResult};
use clap::{Args, ValueEnum};
use localdp::plan::{plan, Plan, PlanRequest};
use std::path::PathBuf;

/// `localdp plan --config C --users N [--target-error E] [--format json]`.
#[derive(Args)]
pub struct PlanArgs {
    /// The metric's config (JSON).
    #[arg(long)]
    config: PathBuf,
    /// The users, one report each.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    users: u64,
    /// A target 95% half-width, in the first error's units (a share for
    /// frequencies and ranks, the range's units for a mean): prints the users
    /// it needs at the config's ε, and the ε it needs at N users.
    #[arg(long, value_name = "E")]
    target_error: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Table)]
    format: PlanFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum PlanFormat {
    Table,
    Json,
}

pub fn run(args: &PlanArgs) -> CliResult {
    let path = args.config.display();
    let text = std::fs::read_to_string(&args.config).map_err(|e| format!("{path}: {e}"))?;
    let config: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{path}: not JSON: {e}"))?;
    let request = PlanRequest { users: args.users, target_error: args.target_error };
    let plan = plan(&config, &request).map_err(|e| format!("{path}: {e}"))?;
    match args.format {
        PlanFormat::Json => say(serde_json::to_string_pretty(&plan).expect("a plan serializes")),
        PlanFormat::Table => say(table(&plan)),
    }
}

/// `x` with four significant digits (a whole number as it is); `-` for none.
fn number(x: Option<f64>) -> String {
    match x {
        None => "-".to_string(),
        Some(x) if x.fract() == 0.0 || !x.is_finite() => format!("{x}"),
        Some(x) => {
            let decimals = (3 - x.abs().log10().floor() as i64).clamp(0, 12) as usize;
            format!("{x:.decimals$}")
        }
    }
}

fn users(n: Option<u64>) -> String {
    match n {
        None => "-".to_string(),
        Some(u64::MAX) => "out of reach".to_string(),
        Some(n) => n.to_string(),
    }
}

/// The plan as an aligned table, its legend below.
fn table(plan: &Plan) -> String {
    let errors = plan.protocols.first().map_or(0, |p| p.errors.len());
    let mut header = vec!["protocol".to_string()];
    for i in 1..=errors {
        let suffix = if errors > 1 { format!(" {i}") } else { String::new() };
        header.push(format!("std error{suffix}"));
        header.push(format!("±95%{suffix}"));
    }
    header.extend(["bytes", "client coins", "client hashes", "agg counters", "agg hashes", "min users"].map(String::from));
    if plan.target_error.is_some() {
        header.extend(["users needed", "ε needed"].map(String::from));
    }
    let mut rows = vec![header];
    for p in &plan.protocols {
        let mark = format!("{}{}", if p.auto { "*" } else { " " }, if p.configured { ">" } else { " " });
        let mut row = vec![format!("{mark} {}", p.protocol)];
        for e in &p.errors {
            row.push(number(e.std_error));
            row.push(number(e.half_width));
        }
        let c = &p.cost;
        for x in [p.bytes, c.client_coins, c.client_hashes, c.aggregation_counters, c.aggregation_hashes] {
            row.push(number(Some(x)));
        }
        row.push(users(Some(p.min_users)));
        if plan.target_error.is_some() {
            row.push(users(p.users_needed));
            row.push(number(p.epsilon_needed));
        }
        rows.push(row);
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = format!("{} metric, ε {}", plan.family, number(Some(plan.epsilon)));
    if plan.long_run_epsilon != plan.epsilon {
        out += &format!(" (long run {})", number(Some(plan.long_run_epsilon)));
    }
    out += &format!(", {} users", plan.users);
    if let Some(e) = plan.target_error {
        out += &format!(", target ±{} (95%)", number(Some(e)));
    }
    out.push('\n');
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, &w))| if i == 0 { format!("{cell:<w$}") } else { format!("{cell:>w$}") })
            .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
    }
    out += "* auto's choice   > the config's protocol   costs: counted per report, not timed\n";
    if let Some(note) = localdp::audit::unused_budget(plan.long_run_epsilon, plan.realized_epsilon) {
        out += &format!("note: {note}\n");
    }
    if let Some(p) = plan.protocols.first() {
        for (i, e) in p.errors.iter().enumerate() {
            let label = if errors > 1 { format!("error {}", i + 1) } else { "error".to_string() };
            out += &format!("{label}: {}\n", e.quantity);
        }
    }
    out += plan.rule;
    out
}
