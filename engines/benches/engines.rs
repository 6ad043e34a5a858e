//! Reports/s of `ldp_estimate` per protocol at d = 1024, over hive-partitioned
//! Parquet files as `localdp export` writes them: DataFusion with 1 and 2 target partitions, and Ballista with
//! 2 executors (separate processes, 1 core each) on loopback. One JSON object
//! per line on stdout, for bench/ to merge with the core's and the Python
//! libraries' numbers:
//!
//! `{"path":"datafusion","threads":1,"protocol":"grr","d":1024,"reports":1000000,"seconds":0.21,"reports_per_second":4.7e6}`
//!
//! Run: `cargo bench -p localdp-datafusion --bench engines` with the profile
//! settings engines/README.md gives (REPORTS=n sets the reports per protocol,
//! default 1,000,000). Each figure is the best of
//! three runs of the whole query (planning, reading, decoding, aggregating,
//! estimating); the estimates of the three paths are checked to be equal.

#[path = "../tests/common/mod.rs"]
#[allow(dead_code)]
mod common;

use std::time::Instant;

use common::cluster::Cluster;
use common::*;
use datafusion::prelude::SessionContext;
use localdp::Metric;

/// The protocols measured: `(name, config, d)` (numeric ones have no d).
const PROTOCOLS: &[(&str, &str, Option<usize>)] = &[
    ("grr", r#"{"protocol":"grr","epsilon":1,"domain":1024}"#, Some(1024)),
    ("olh", r#"{"protocol":"olh","epsilon":1,"domain":1024}"#, Some(1024)),
    ("hr", r#"{"protocol":"hr","epsilon":1,"domain":1024}"#, Some(1024)),
    ("sue", r#"{"protocol":"sue","epsilon":1,"domain":1024}"#, Some(1024)),
    ("oue", r#"{"protocol":"oue","epsilon":1,"domain":1024}"#, Some(1024)),
    ("ss", r#"{"protocol":"ss","epsilon":1,"domain":1024}"#, Some(1024)),
    ("piecewise", r#"{"protocol":"piecewise","epsilon":1,"range":[0,1024]}"#, None),
];

/// Parquet files per protocol (one day).
const FILES: usize = 4;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::var("REPORTS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let dir = scratch("bench-engines");
    let root = dir.join("reports");
    let values: Vec<String> = (0..1024).map(|v| v.to_string()).collect();
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    let mut metrics = Vec::new();
    for &(name, config, d) in PROTOCOLS {
        let metric = metric(config);
        for part in 0..FILES {
            let reports = reports(&metric, &values, n / FILES, part as u64);
            let path = root.join(format!("metric={name}/day=2026-01-01/part-{part}.parquet"));
            export(&path, &metric, config, &reports);
        }
        metrics.push((name, config, d, metric));
    }
    let cluster = Cluster::start(&dir, 2, 1);
    for (name, config, d, metric) in &metrics {
        let run = Run { protocol: name, d: *d, n };
        let sql = format!("SELECT metric, day, {} FROM reports WHERE metric = '{name}' GROUP BY metric, day", call(config, metric));
        let mut seen = Vec::new();
        for threads in [1, 2] {
            let ctx = session(threads);
            seen.push(measure(&ctx, &root, metric, &sql, "datafusion", threads, &run).await);
        }
        let ctx = cluster.session(2).await;
        seen.push(measure(&ctx, &root, metric, &sql, "ballista", 2, &run).await);
        assert!(seen.windows(2).all(|w| w[0] == w[1]), "{name}: every path gives the same estimate");
    }
}

/// Writes `reports` to `path` as `localdp export` writes files (zstd, row
/// groups of up to 2^20 reports): the tests' files have row groups of 100
/// reports, to exercise many, and a query over those measures the engine's
/// cost per row group instead (at 10^6 reports on one partition, GRR ran at
/// 3.3M/s over those and 29M/s over these; SUE 2.3M/s and 3.9M/s).
fn export(path: &std::path::Path, metric: &Metric, config: &str, reports: &[localdp::Report]) {
    std::fs::create_dir_all(path.parent().expect("a file in a directory")).expect("a writable directory");
    let file = std::fs::File::create(path).expect("a writable file");
    let batch = record_batch(metric, reports);
    localdp_arrow::write_parquet(file, metric, config, &[batch], &localdp::RejectionCounts::default()).expect("written");
}

/// What one line reports beside the path: the protocol, its d, the reports.
struct Run<'a> {
    protocol: &'a str,
    d: Option<usize>,
    n: usize,
}

/// Runs the query three times in `ctx`, prints the best run as a JSON line,
/// and returns its estimates.
async fn measure(
    ctx: &SessionContext,
    root: &std::path::Path,
    metric: &Metric,
    sql: &str,
    path: &str,
    threads: usize,
    run: &Run<'_>,
) -> std::collections::BTreeMap<String, Option<String>> {
    register_reports(ctx, root, metric).await;
    let mut best = f64::INFINITY;
    let mut result = None;
    for _ in 0..3 {
        let start = Instant::now();
        let got = estimates(ctx, sql).await;
        best = best.min(start.elapsed().as_secs_f64());
        result = Some(got);
    }
    let line = serde_json::json!({
        "path": path, "threads": threads, "protocol": run.protocol, "d": run.d, "reports": run.n,
        "seconds": best, "reports_per_second": run.n as f64 / best,
    });
    println!("{line}");
    result.expect("three runs")
}
