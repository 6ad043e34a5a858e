//! `ldp_estimate` in DataFusion: over hive-partitioned Parquet files of every
//! protocol's reports, with one and two target partitions, the estimates are
//! the core's (and the CLI's) for the same reports, byte for byte.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use datafusion::arrow::array::{Array, ArrayRef, BinaryArray, RecordBatch, StringArray, UInt32Array, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use localdp::{Aggregator, PostProcessing};

#[tokio::test]
async fn every_protocol_gives_the_cores_estimates() {
    let root = scratch("every-protocol");
    let mut written = Vec::new();
    for (seed, &(name, config, values)) in CASES.iter().enumerate() {
        let metric = metric(config);
        written.push((name, config, metric.clone(), write_metric(&root, name, &metric, values, seed as u64 + 1)));
    }
    for (name, config, metric, by_day) in &written {
        let expected: BTreeMap<String, Option<String>> = by_day
            .iter()
            .map(|(day, reports)| {
                let cli = cli_estimate(metric, reports);
                assert_same(&core_estimate(metric, reports), &cli, name);
                (format!("{name}/{day}"), Some(cli))
            })
            .collect();
        for partitions in [1, 2] {
            let ctx = session(partitions);
            register_reports(&ctx, &root, metric).await;
            let sql = format!(
                "SELECT metric, day, {} FROM reports WHERE metric = '{name}' GROUP BY metric, day",
                call(config, metric)
            );
            let got = estimates(&ctx, &sql).await;
            assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>(), "{name}");
            for (key, estimate) in &got {
                assert_same(estimate.as_deref().expect("an estimate"), expected[key].as_deref().unwrap(), &format!("{key}, {partitions} partitions"));
            }
        }
    }
}

#[tokio::test]
async fn without_group_by_one_estimate_of_every_file() {
    let root = scratch("no-group-by");
    let (name, config, values) = CASES.iter().find(|c| c.0 == "olh").copied().unwrap();
    let metric = metric(config);
    let by_day = write_metric(&root, name, &metric, values, 7);
    let ctx = session(2);
    register_reports(&ctx, &root, &metric).await;
    let sql = format!("SELECT 'all', {} FROM reports", call(config, &metric));
    let got = estimates(&ctx, &sql).await;
    assert_same(got["all"].as_deref().unwrap(), &cli_estimate(&metric, by_day.values().flatten()), "all days");
}

/// Two metrics whose reports have the same columns (GRR at two ε): read with
/// one's config, the other's reports are rejected as config_mismatch, as
/// `localdp aggregate` rejects them; a group of nothing but those has no
/// estimate (NULL).
#[tokio::test]
async fn reports_of_another_config_are_config_mismatches() {
    let root = scratch("mismatch");
    let ours = metric(r#"{"protocol":"grr","epsilon":1,"domain":16}"#);
    let theirs = metric(r#"{"protocol":"grr","epsilon":2,"domain":16}"#);
    let our_days = write_metric(&root, "ours", &ours, common::CASES[0].2, 1);
    let their_days = write_metric(&root, "theirs", &theirs, common::CASES[0].2, 2);
    let config = r#"{"protocol":"grr","epsilon":1,"domain":16}"#;
    for partitions in [1, 2] {
        let ctx = session(partitions);
        register_reports(&ctx, &root, &ours).await;
        let by_day = estimates(&ctx, &format!("SELECT day, {} FROM reports GROUP BY day", call(config, &ours))).await;
        for day in DAYS {
            let mixed = our_days[day].iter().chain(&their_days[day]);
            let expected = cli_estimate(&ours, mixed);
            assert!(expected.contains(&format!(r#""config_mismatch":{}"#, their_days[day].len())), "{expected}");
            assert_same(by_day[day].as_deref().unwrap(), &expected, day);
        }
        let by_metric = estimates(&ctx, &format!("SELECT metric, day, {} FROM reports GROUP BY metric, day", call(config, &ours))).await;
        for day in DAYS {
            assert_same(by_metric[&format!("ours/{day}")].as_deref().unwrap(), &cli_estimate(&ours, &our_days[day]), day);
            assert_eq!(by_metric[&format!("theirs/{day}")], None, "no report of ours that day");
        }
    }
}

/// Rows of many groups in one batch (gathered per group), a FILTER clause,
/// and DataFusion's fallback that turns each row into a state of its own.
#[tokio::test]
async fn many_groups_in_a_batch_filters_and_row_states() {
    let (_, config, values) = CASES.iter().find(|c| c.0 == "sue").copied().unwrap();
    let metric = metric(config);
    let reports = reports(&metric, values, 2000, 11);
    let batch = record_batch(&metric, &reports);
    let group: ArrayRef = Arc::new(UInt32Array::from_iter_values((0..reports.len() as u32).map(|i| i % 5)));
    let mut fields = batch.schema().fields().to_vec();
    fields.push(Arc::new(Field::new("user_group", DataType::UInt32, false)));
    let mut columns = batch.columns().to_vec();
    columns.push(group);
    let table = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    let of = |keep: &dyn Fn(usize) -> bool| reports.iter().enumerate().filter(|(i, _)| keep(*i)).map(|(_, r)| r).collect::<Vec<_>>();
    for (partitions, skip_partial) in [(1, false), (2, false), (2, true)] {
        let ctx = session(partitions);
        if skip_partial {
            // Every partial aggregate gives up at once and emits row states.
            let options = ctx.state_ref();
            let mut state = options.write();
            let execution = &mut state.config_mut().options_mut().execution;
            execution.skip_partial_aggregation_probe_rows_threshold = 0;
            execution.skip_partial_aggregation_probe_ratio_threshold = 0.0;
        }
        ctx.register_batch("t", table.clone()).unwrap();
        let got = estimates(&ctx, &format!("SELECT user_group, {} FROM t GROUP BY user_group", call(config, &metric))).await;
        assert_eq!(got.len(), 5);
        for g in 0..5 {
            assert_same(got[&g.to_string()].as_deref().unwrap(), &cli_estimate(&metric, of(&|i| i % 5 == g)), &format!("group {g}"));
        }
        let sql = format!(
            "SELECT user_group % 2, {} FILTER (WHERE user_group <> 1) FROM t GROUP BY user_group % 2",
            call(config, &metric)
        );
        let got = estimates(&ctx, &sql).await;
        assert_same(got["0"].as_deref().unwrap(), &cli_estimate(&metric, of(&|i| i % 5 % 2 == 0)), "even groups");
        assert_same(got["1"].as_deref().unwrap(), &cli_estimate(&metric, of(&|i| i % 5 == 3)), "odd groups but 1");
    }
}

/// A null where a report needs a value rejects that row (malformed, as the
/// JSON report without that field is); the others count.
#[tokio::test]
async fn nulls_are_rejected_rows_not_errors() {
    let (_, config, values) = CASES.iter().find(|c| c.0 == "olh").copied().unwrap();
    let metric = metric(config);
    let reports = reports(&metric, values, 300, 5);
    let batch = record_batch(&metric, &reports);
    let id_column = batch.column_by_name("id").unwrap().clone();
    let seed = batch.column_by_name("seed").unwrap().clone();
    let value = batch.column_by_name("value").unwrap().as_any().downcast_ref::<UInt64Array>().unwrap().clone();
    let holed: UInt64Array = value.iter().enumerate().map(|(i, v)| if i % 7 == 0 { None } else { v }).collect();
    let schema = Schema::new(vec![
        Field::new("id", id_column.data_type().clone(), false),
        Field::new("seed", DataType::UInt32, false),
        Field::new("value", DataType::UInt64, true),
    ]);
    let table = RecordBatch::try_new(Arc::new(schema), vec![id_column, seed, Arc::new(holed)]).unwrap();
    let ctx = session(1);
    ctx.register_batch("t", table).unwrap();
    let got = estimates(&ctx, &format!("SELECT 'all', {} FROM t", call(config, &metric))).await;
    let mut aggregator = Aggregator::new(metric.clone());
    for (i, report) in reports.iter().enumerate() {
        let mut json = report.to_json_value();
        if i % 7 == 0 {
            json.as_object_mut().unwrap().remove("value");
        }
        let _ = aggregator.add_json(json.to_string());
    }
    assert!(aggregator.rejected().total() > 0);
    let expected = serde_json::to_string(&aggregator.estimate(PostProcessing::None).unwrap()).unwrap();
    assert_same(got["all"].as_deref().unwrap(), &expected, "holed values");
}

/// Wrong calls fail when the query is planned, saying what is wrong.
#[tokio::test]
async fn wrong_calls_fail_at_planning() {
    let config = r#"{"protocol":"olh","epsilon":1,"domain":16}"#;
    let metric = metric(config);
    let batch = record_batch(&metric, &reports(&metric, INTEGERS, 10, 1));
    // OLH's columns and a `bits` column, which OLH's reports do not have.
    let mut fields = batch.schema().fields().to_vec();
    fields.push(Arc::new(Field::new("bits", DataType::Binary, false)));
    let mut columns = batch.columns().to_vec();
    columns.push(Arc::new(BinaryArray::from_iter_values(std::iter::repeat_n(b"\x01", 10))));
    let ctx = session(1);
    ctx.register_batch("t", RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()).unwrap();
    let texts: ArrayRef = Arc::new(StringArray::from(vec!["1"; 10]));
    let odd = RecordBatch::try_new(
        Arc::new(Schema::new(["id", "seed", "value"].map(|name| Field::new(name, DataType::Utf8, false)).to_vec())),
        vec![texts.clone(), texts.clone(), texts],
    )
    .unwrap();
    ctx.register_batch("odd", odd).unwrap();
    let cases = [
        ("SELECT ldp_estimate(id, seed, value) FROM t".to_string(), "the first argument must be the metric's config"),
        (r#"SELECT ldp_estimate('{"protocol":"nope"}', id, seed, value) FROM t"#.to_string(), "ldp_estimate: the config"),
        (format!("SELECT ldp_estimate('{config}', id, value) FROM t"), "the column seed is missing"),
        (format!("SELECT ldp_estimate('{config}', id, seed, value, seed) FROM t"), "the column seed is given twice"),
        (format!("SELECT ldp_estimate('{config}', id, seed, value + 1) FROM t"), "must be plain columns"),
        (format!("SELECT ldp_estimate('{config}', id, seed, value, bits) FROM t"), "bits is not a column of this metric's reports"),
        (format!("SELECT ldp_estimate('{config}', id, seed, value) FROM odd"), "the column value is Utf8, which does not read as UInt64"),
    ];
    for (sql, message) in cases {
        let planned = match ctx.sql(&sql).await {
            Ok(frame) => frame.create_physical_plan().await.map(|_| ()),
            Err(e) => Err(e),
        };
        let error = planned.expect_err(&sql).to_string();
        assert!(error.contains(message), "{sql}: {error}");
    }
}

/// docs/sql.md's SQL block, run as written: only the table's location is
/// this test's folder (the page's `reports/` directory of Parquet files).
#[tokio::test]
async fn the_sql_block_of_docs_sql_md_runs_as_written() {
    let page = include_str!("../../docs/sql.md");
    let block = page.split("```sql\n").nth(1).and_then(|rest| rest.split("\n```").next()).expect("a sql block");
    let config = r#"{"protocol":"olh","epsilon":1,"domain":1024}"#;
    assert!(block.contains(&format!("ldp_estimate('{config}', id, seed, value)")), "the block's metric:\n{block}");
    let root = scratch("docs-sql");
    let metric = metric(config);
    let by_day = write_metric(&root.join("reports"), "page_views", &metric, INTEGERS, 91);
    let block = block.replace("'reports/", &format!("'{}/reports/", root.display()));
    let (create, select) = block.split_once(';').expect("two statements");
    let ctx = session(2);
    ctx.sql(create).await.expect("a table").collect().await.expect("created");
    let got = estimates(&ctx, select.trim().trim_end_matches(';')).await;
    assert_eq!(got.len(), by_day.len(), "one row per day");
    for (day, reports) in &by_day {
        assert_same(got[day].as_deref().expect("an estimate"), &cli_estimate(&metric, reports), day);
    }
}

/// The SQL the README shows, in SQL only: a table per metric over its
/// directory (the schema read from the files, as DataFusion reads them:
/// strings and binaries as views), the day from the path.
#[tokio::test]
async fn the_documented_sql_over_each_metrics_directory() {
    let root = scratch("documented-sql");
    for (seed, &(name, config, values)) in CASES.iter().enumerate() {
        let metric = metric(config);
        let by_day = write_metric(&root, name, &metric, values, seed as u64 + 50);
        let ctx = session(2);
        let location = root.join(format!("metric={name}/"));
        let create = format!("CREATE EXTERNAL TABLE {name} STORED AS PARQUET PARTITIONED BY (day) LOCATION '{}'", location.display());
        ctx.sql(&create).await.expect("a table").collect().await.expect("created");
        let sql = format!("SELECT day, {} AS estimate FROM {name} GROUP BY day ORDER BY day", call(config, &metric));
        let got = estimates(&ctx, &sql).await;
        for (day, reports) in &by_day {
            assert_same(got[day].as_deref().expect("an estimate"), &cli_estimate(&metric, reports), &format!("{name} {day}"));
        }
    }
}
