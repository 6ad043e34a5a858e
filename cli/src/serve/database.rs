//! The collector's database, whichever it is: a SQLite file (`store.rs`,
//! one collector) or PostgreSQL (`postgres.rs`, `--db postgres://…`, any
//! number of collectors). The writer and the start only talk to this.

pub use super::postgres::{Item, Unstored};
use super::postgres::{self, Exporter, PgStore, Refresher};
use super::store::{self, BatchGroup, Store, StoreResult};
use localdp::{Aggregator, Metric, RejectionCounts, Report};
use std::path::Path;

/// The writer reads exports' pages on SQLite only: on PostgreSQL an export
/// reads a snapshot of its own ([`Database::exporter`]).
fn exported_apart<T>() -> StoreResult<T> {
    Err("database: on PostgreSQL an export reads its own snapshot, not the writer's pages".into())
}

pub enum Database {
    Sqlite(Store),
    Postgres(PgStore),
}

/// A group stored: per batch, stored (`true`) or a duplicate; and, on
/// PostgreSQL, this collector's new aggregate state of each metric touched
/// (by key), which replaces the one in memory. On SQLite (`None`) the
/// stored batches are added to the aggregates in memory.
pub type Stored = (Vec<bool>, Option<Vec<(i64, Aggregator)>>);

impl Database {
    /// `--db`: a `postgres://` or `postgresql://` URL, else a SQLite file.
    pub fn open(db: &Path) -> StoreResult<Database> {
        match postgres::url_of(db)? {
            Some(url) => PgStore::open(url).map(Database::Postgres),
            None => Store::open(db).map(Database::Sqlite),
        }
    }

    /// What the log names: the file, or the URL without its password.
    pub fn describe(&self, db: &Path) -> String {
        match self {
            Database::Sqlite(_) => db.display().to_string(),
            Database::Postgres(pg) => pg.describe(),
        }
    }

    pub fn register(&mut self, name: &str, randomizer: &str, config: &str) -> StoreResult<i64> {
        match self {
            Database::Sqlite(s) => s.register(name, randomizer, config),
            Database::Postgres(p) => p.register(name, randomizer, config),
        }
    }

    pub fn rejections(&self, key: i64) -> StoreResult<RejectionCounts> {
        match self {
            Database::Sqlite(s) => s.rejections(key),
            Database::Postgres(_) => exported_apart(),
        }
    }

    pub fn unconfigured(&self, configured: &[&str]) -> StoreResult<Vec<(String, u64)>> {
        match self {
            Database::Sqlite(s) => s.unconfigured(configured),
            Database::Postgres(p) => p.unconfigured(configured),
        }
    }

    /// Stores a group in one transaction, all or nothing; else why not.
    pub fn append_group(&mut self, batches: &[Item<'_>]) -> Result<Stored, (Unstored, String)> {
        match self {
            Database::Sqlite(s) => s
                .append_group(batches.iter().map(|b| (b.key, b.reports, b.rejected, b.batch)))
                .map(|stored| (stored, None))
                .map_err(|e| (Unstored::Failed, e.to_string())),
            Database::Postgres(p) => p.append_group(batches).map(|(stored, states)| (stored, Some(states))),
        }
    }

    pub fn batch_sizes(&self, key: i64) -> StoreResult<(Vec<BatchGroup>, u64)> {
        match self {
            Database::Sqlite(s) => s.batch_sizes(key),
            Database::Postgres(p) => p.batch_sizes(key),
        }
    }

    pub fn last_report(&self, key: i64) -> StoreResult<i64> {
        match self {
            Database::Sqlite(s) => s.last_report(key),
            Database::Postgres(_) => exported_apart(),
        }
    }

    pub fn page(&self, key: i64, after: i64, upto: i64, limit: usize) -> StoreResult<Vec<(i64, String)>> {
        match self {
            Database::Sqlite(s) => s.page(key, after, upto, limit),
            Database::Postgres(_) => exported_apart(),
        }
    }

    /// On PostgreSQL, what reads exports in snapshots (on SQLite the
    /// writer reads them: row ids are in commit order there).
    pub fn exporter(&self) -> StoreResult<Option<Exporter>> {
        match self {
            Database::Sqlite(_) => Ok(None),
            Database::Postgres(p) => p.exporter().map(Some),
        }
    }

    /// Reports of a metric compacted by retention (`--keep`): counted in
    /// its estimate, no longer stored.
    pub fn compacted_reports(&self, key: i64) -> StoreResult<u64> {
        match self {
            Database::Sqlite(s) => Ok(s.compacted(key)?.map_or(0, |(_, reports)| reports)),
            Database::Postgres(p) => p.compacted(key),
        }
    }

    /// From now on, stored reports carry the day they arrive (`--keep`).
    pub fn mark_days(&mut self) -> StoreResult<()> {
        match self {
            Database::Sqlite(s) => s.mark_days(),
            Database::Postgres(p) => {
                p.mark_days();
                Ok(())
            }
        }
    }

    /// Retention: compacts what arrived before day `cutoff` (see
    /// `store.rs` and `postgres.rs`); how many reports.
    pub fn compact(&mut self, key: i64, metric: &Metric, cutoff: i64) -> StoreResult<u64> {
        match self {
            Database::Sqlite(s) => s.compact(key, metric, cutoff),
            Database::Postgres(p) => p.compact(key, cutoff),
        }
    }

    /// Starts importing the file of SHA-256 `digest` into metric `key`
    /// (`localdp import`), in one transaction; `None` if that file was
    /// imported into it before.
    pub fn import(&mut self, key: i64, digest: &str, metric: &Metric, name: &str) -> StoreResult<Option<Import<'_>>> {
        Ok(match self {
            Database::Sqlite(s) => s.import(key, digest)?.map(Import::Sqlite),
            Database::Postgres(p) => p.import(key, digest, metric, name)?.map(Import::Postgres),
        })
    }

    /// A consistent copy of the store at `to` (`localdp backup`).
    pub fn snapshot(&self, to: &Path) -> StoreResult<()> {
        match self {
            Database::Sqlite(s) => s.snapshot(to),
            Database::Postgres(_) => Err(super::backup::POSTGRES.to_string()),
        }
    }

    /// On PostgreSQL, what keeps the other collectors' states read.
    pub fn refresher(&self) -> Option<Refresher> {
        match self {
            Database::Sqlite(_) => None,
            Database::Postgres(p) => Some(p.refresher()),
        }
    }
}

/// An import under way ([`Database::import`]): nothing of it is stored
/// unless committed.
pub enum Import<'a> {
    Sqlite(store::Import<'a>),
    Postgres(postgres::Import<'a>),
}

impl Import<'_> {
    /// Stores an accepted report.
    pub fn add(&mut self, report: &Report) -> StoreResult<()> {
        match self {
            Import::Sqlite(i) => i.add(&report.to_json()),
            Import::Postgres(i) => i.add(report),
        }
    }

    /// Adds the file's rejection counts and commits; the reports stored.
    pub fn commit(self, rejected: &RejectionCounts) -> StoreResult<u64> {
        match self {
            Import::Sqlite(i) => i.commit(rejected),
            Import::Postgres(i) => i.commit(rejected),
        }
    }
}
