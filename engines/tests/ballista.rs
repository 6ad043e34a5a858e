//! `ldp_estimate` on Apache Ballista: a scheduler and two executors, each a
//! process of its own on loopback, run the GROUP BY over hive-partitioned
//! Parquet files of every protocol's reports and give the estimates one
//! machine gives (the core's, the CLI's), byte for byte.

mod common;

use std::collections::BTreeMap;

use common::cluster::Cluster;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_executors_give_one_machines_estimates() {
    let dir = scratch("ballista");
    let root = dir.join("reports");
    let cluster = Cluster::start(&dir, 2, 1);
    for (seed, &(name, config, values)) in CASES.iter().enumerate() {
        let metric = metric(config);
        let by_day = write_metric(&root, name, &metric, values, seed as u64 + 100);
        let expected: BTreeMap<String, Option<String>> =
            by_day.iter().map(|(day, reports)| (format!("{name}/{day}"), Some(cli_estimate(&metric, reports)))).collect();
        let sql = format!("SELECT metric, day, {} FROM reports WHERE metric = '{name}' GROUP BY metric, day", call(config, &metric));
        // Two partitions: each executor reads some of the files, and the
        // partial states meet in a final aggregate.
        let ctx = cluster.session(2).await;
        register_reports(&ctx, &root, &metric).await;
        let distributed = estimates(&ctx, &sql).await;
        let local = session(1);
        register_reports(&local, &root, &metric).await;
        assert_eq!(distributed, estimates(&local, &sql).await, "{name}: Ballista and one machine");
        assert_eq!(distributed.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>(), "{name}");
        for (key, estimate) in &distributed {
            assert_same(estimate.as_deref().expect("an estimate"), expected[key].as_deref().unwrap(), key);
        }
    }
    // Both executors ran tasks: each wrote shuffle files in its work directory.
    for executor in ["executor-0", "executor-1"] {
        let files = std::fs::read_dir(dir.join(executor)).expect("a work directory").count();
        assert!(files > 0, "{executor} ran no task");
    }
}
