//! Shared by the engine tests: one config per protocol, reports drawn from
//! them, hive-partitioned Parquet files of those reports, and the estimates
//! the core gives for the same reports.
#![allow(dead_code)]

pub mod cluster;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use localdp::{Aggregator, Metric, PostProcessing, Report, SimulationRng};

/// `(metric name, config, values the simulated users hold)`: every protocol.
pub const CASES: &[(&str, &str, &[&str])] = &[
    ("grr", r#"{"protocol":"grr","epsilon":1,"domain":16}"#, INTEGERS),
    ("sue", r#"{"protocol":"sue","epsilon":1,"domain":16}"#, INTEGERS),
    ("oue", r#"{"protocol":"oue","epsilon":1,"domain":16}"#, INTEGERS),
    ("blh", r#"{"protocol":"blh","epsilon":1,"domain":["a","b","c","d"]}"#, LABELS),
    ("olh", r#"{"protocol":"olh","epsilon":1,"domain":16}"#, INTEGERS),
    ("hr", r#"{"protocol":"hr","epsilon":2,"domain":16}"#, INTEGERS),
    ("hrr", r#"{"protocol":"hrr","epsilon":2,"domain":16}"#, INTEGERS),
    ("ss", r#"{"protocol":"ss","epsilon":1,"domain":16}"#, INTEGERS),
    ("dbitflip", r#"{"protocol":"dbitflip","epsilon":1,"domain":16,"d":2}"#, INTEGERS),
    ("duchi", r#"{"protocol":"duchi","epsilon":1,"range":[0,10]}"#, NUMBERS),
    ("laplace", r#"{"protocol":"laplace","epsilon":1,"range":[[0,1],[0,5],[2,3]]}"#, RECORDS),
    ("piecewise", r#"{"protocol":"piecewise","epsilon":1,"range":[0,10]}"#, NUMBERS),
    ("hybrid", r#"{"protocol":"hybrid","epsilon":2,"range":[0,10]}"#, NUMBERS),
    ("one_bit_mean", r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,10]}"#, NUMBERS),
    ("rappor", r#"{"protocol":"rappor","bits":16,"hashes":2,"cohorts":4,"candidates":["a","b"]}"#, LABELS),
    ("pem", r#"{"protocol":"pem","epsilon":2,"max_length":4}"#, PATHS),
    ("treehist", r#"{"protocol":"treehist","epsilon":2,"max_length":4}"#, PATHS),
    ("sfp", r#"{"protocol":"sfp","epsilon":2,"max_length":4,"sketch":{"hashes":4,"width":16}}"#, PATHS),
    ("cms", r#"{"protocol":"cms","epsilon":1,"sketch":{"hashes":4,"width":16},"candidates":["/a","/b"]}"#, PATHS),
    ("hcms", r#"{"protocol":"hcms","epsilon":1,"sketch":{"hashes":4,"width":16},"candidates":["/a","/b"]}"#, PATHS),
    ("square_wave", r#"{"protocol":"square_wave","epsilon":1,"range":[0,1],"bins":8}"#, FRACTIONS),
    ("hierarchical", r#"{"protocol":"hierarchical","epsilon":1,"range":[0,1],"bins":16}"#, FRACTIONS),
];

pub const INTEGERS: &[&str] = &["0", "1", "1", "2", "3", "3", "3", "7", "15"];
pub const LABELS: &[&str] = &["a", "b", "b", "c", "d"];
pub const NUMBERS: &[&str] = &["0", "2.5", "3", "9", "10"];
pub const RECORDS: &[&str] = &["0.5,2,2.5", "1,5,3", "0,0,2"];
pub const PATHS: &[&str] = &["/a", "/b", "/b", "/ab", "/cd"];
pub const FRACTIONS: &[&str] = &["0.1", "0.25", "0.5", "0.9"];

/// The days the reports are spread over.
pub const DAYS: [&str; 2] = ["2026-01-01", "2026-01-02"];
/// Parquet files per day, and reports per file (several row groups each).
pub const FILES_PER_DAY: usize = 3;
pub const REPORTS_PER_FILE: usize = 250;
pub const ROW_GROUP: usize = 100;

/// A case's metric.
pub fn metric(config: &str) -> Metric {
    Metric::from_json(config).expect("a valid config")
}

/// `n` reports of `values` (cycled), drawn from `seed`.
pub fn reports(metric: &Metric, values: &[&str], n: usize, seed: u64) -> Vec<Report> {
    let mut rng = SimulationRng::seed_from_u64(seed);
    (0..n).map(|i| metric.randomize_text(values[i % values.len()], &mut rng).expect("a value of the metric")).collect()
}

/// The reports as one Arrow batch of the metric's schema (localdp-arrow).
pub fn record_batch(metric: &Metric, reports: &[Report]) -> RecordBatch {
    let mut builder = localdp_arrow::ReportBuilder::new(metric);
    for report in reports {
        builder.push(report).expect("a report of the metric");
    }
    builder.finish()
}

/// Writes `reports` to `path` as Parquet, `ROW_GROUP` reports per row group.
pub fn write_parquet(path: &Path, metric: &Metric, reports: &[Report]) {
    std::fs::create_dir_all(path.parent().expect("a file in a directory")).expect("a writable directory");
    let file = std::fs::File::create(path).expect("a writable file");
    let properties = WriterProperties::builder().set_max_row_group_row_count(Some(ROW_GROUP)).build();
    let batch = record_batch(metric, reports);
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(properties)).expect("a Parquet writer");
    writer.write(&batch).expect("written");
    writer.close().expect("closed");
}

/// Every day's reports of a metric, written under
/// `root/metric=NAME/day=DAY/part-N.parquet` (hive-style).
pub fn write_metric(root: &Path, name: &str, metric: &Metric, values: &[&str], seed: u64) -> BTreeMap<String, Vec<Report>> {
    let mut by_day = BTreeMap::new();
    for (d, day) in DAYS.iter().enumerate() {
        let mut all = Vec::new();
        for part in 0..FILES_PER_DAY {
            let reports = reports(metric, values, REPORTS_PER_FILE, seed * 1000 + (d * FILES_PER_DAY + part) as u64);
            let path = root.join(format!("metric={name}/day={day}/part-{part}.parquet"));
            write_parquet(&path, metric, &reports);
            all.extend(reports);
        }
        by_day.insert(day.to_string(), all);
    }
    by_day
}

/// The estimate `localdp aggregate --config C` prints for these reports
/// (their JSON lines through `add_json`), as compact JSON.
pub fn cli_estimate<'a>(metric: &Metric, reports: impl IntoIterator<Item = &'a Report>) -> String {
    let mut aggregator = Aggregator::new(metric.clone());
    for report in reports {
        let _ = aggregator.add_json(report.to_json());
    }
    serde_json::to_string(&aggregator.estimate(PostProcessing::None).expect("an estimate")).expect("serializes")
}

/// The estimate of the core's aggregator fed the reports themselves.
pub fn core_estimate<'a>(metric: &Metric, reports: impl IntoIterator<Item = &'a Report>) -> String {
    let mut aggregator = Aggregator::new(metric.clone());
    for report in reports {
        aggregator.add(report).expect("a valid report");
    }
    serde_json::to_string(&aggregator.estimate(PostProcessing::None).expect("an estimate")).expect("serializes")
}

/// A session with `target_partitions` and `ldp_estimate`.
pub fn session(target_partitions: usize) -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(target_partitions));
    localdp_datafusion::register(&ctx);
    ctx
}

/// Registers `reports`: every Parquet file under `root` (partitioned by
/// metric and day), read with this metric's schema.
pub async fn register_reports(ctx: &SessionContext, root: &Path, metric: &Metric) {
    let schema = localdp_arrow::schema(metric);
    let options = ParquetReadOptions::default()
        .table_partition_cols(vec![("metric".to_string(), DataType::Utf8), ("day".to_string(), DataType::Utf8)])
        .schema(&schema);
    ctx.register_parquet("reports", root.to_str().expect("a UTF-8 path"), options).await.expect("registered");
}

/// The `ldp_estimate` call with the metric's columns, in the schema's order
/// reversed (arguments bind by name, not position).
pub fn call(config: &str, metric: &Metric) -> String {
    let columns: Vec<String> = localdp_arrow::schema(metric).fields().iter().rev().map(|f| f.name().clone()).collect();
    format!("ldp_estimate('{config}', {})", columns.join(", "))
}

/// Runs a query whose rows are `(key..., estimate)` and returns them by key
/// (the key columns joined with `/`), estimates as text (None for NULL).
pub async fn estimates(ctx: &SessionContext, sql: &str) -> BTreeMap<String, Option<String>> {
    let batches = ctx.sql(sql).await.expect("planned").collect().await.expect("ran");
    rows(&batches)
}

/// The rows of `(key..., estimate)` batches by key.
pub fn rows(batches: &[RecordBatch]) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    for batch in batches {
        let last = batch.num_columns() - 1;
        let keys: Vec<_> = (0..last)
            .map(|c| datafusion::arrow::compute::cast(batch.column(c), &DataType::Utf8).expect("a key as text"))
            .collect();
        let estimates = datafusion::arrow::compute::cast(batch.column(last), &DataType::Utf8).expect("text");
        let estimates = estimates.as_string::<i32>();
        for row in 0..batch.num_rows() {
            let key: Vec<&str> = keys.iter().map(|k| k.as_string::<i32>().value(row)).collect();
            let estimate = estimates.is_valid(row).then(|| estimates.value(row).to_string());
            assert!(out.insert(key.join("/"), estimate).is_none(), "one row per group");
        }
    }
    out
}

/// A fresh directory under the target dir (removed first if left over).
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// Asserts two estimates are the same JSON, value for value and byte for byte.
pub fn assert_same(got: &str, expected: &str, what: &str) {
    let parsed: serde_json::Value = serde_json::from_str(got).expect("JSON");
    let wanted: serde_json::Value = serde_json::from_str(expected).expect("JSON");
    assert_eq!(parsed, wanted, "{what}");
    assert_eq!(got, expected, "{what}: the same bytes");
}
