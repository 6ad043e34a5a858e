//! `localdp store copy --from FILE.sqlite --to postgres://…`: moves a
//! collector's SQLite store into PostgreSQL, in one transaction (all or
//! nothing), refusing metrics that already hold something there, so a copy
//! run twice stores nothing twice. The collectors on the target read the
//! copied reports through the aggregate state written with them, which also
//! counts what retention compacted (its count is copied: exports say it).

use super::collector::replay;
use super::postgres::{self, Copied, PgStore};
use super::store::Store;
use localdp::Metric;
use std::path::Path;

/// Reports read from the file per page.
const PAGE: usize = 10_000;

pub fn run(from: &Path, to: &str) -> Result<(), String> {
    if !postgres::is_url(to) {
        return Err("--to: a PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE)".into());
    }
    if !from.is_file() {
        return Err(format!("{}: no such file (--from names a collector's SQLite database)", from.display()));
    }
    let source = Store::open(from)?;
    let mut target = PgStore::open(to)?;
    let mut copied = Vec::new();
    let mut counts = Vec::new();
    for (key, name, randomizer, config) in source.metrics()? {
        let metric = Metric::from_json(&config).map_err(|e| format!("{}: metric {name:?}: {e}", from.display()))?;
        // The state the collectors will read instead of the reports
        // (retention's compacted state included).
        let state = replay(&name, &metric, key, &source).map_err(|e| format!("{}: {e}; nothing was copied", from.display()))?;
        let rejected = *state.rejected();
        counts.push((name.clone(), rejected.total()));
        let source = &source;
        copied.push(Copied {
            name,
            randomizer,
            config,
            pages: Box::new(move |after| source.page(key, after, i64::MAX, PAGE)),
            rejected,
            batches: source.batches(key)?,
            compacted: source.compacted(key)?.map_or(0, |(_, reports)| reports),
            state,
        });
    }
    let moved = target.copy(copied)?;
    for ((name, rejected), moved) in counts.iter().zip(&moved) {
        eprintln!("localdp store copy: metric {name:?}: {moved} reports, {rejected} rejections counted");
    }
    eprintln!(
        "localdp store copy: {} metrics, {} reports moved from {} to {}",
        moved.len(),
        moved.iter().sum::<u64>(),
        from.display(),
        target.describe()
    );
    Ok(())
}
