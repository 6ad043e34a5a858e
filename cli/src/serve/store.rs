//! The collector's storage: one SQLite file (WAL, `synchronous = FULL`,
//! exclusive locking), holding every accepted report and the rejection
//! counts, never a rejected report.
//!
//! ```sql
//! metrics    (id, name UNIQUE, randomizer, config)   -- randomizer = Metric::id()
//! reports    (id, metric → metrics.id, report)       -- one accepted report, canonical JSON
//! rejections (metric, reason, count)                 -- rejected reports, counted by reason
//! batches    (metric → metrics.id, id, size, shuffler) -- shuffled batches received (`localdp shuffle`), one per (metric, id)
//! imports    (metric → metrics.id, digest, reports)   -- export files taken by `localdp import` (SHA-256), one per (metric, digest)
//! days       (day, first, last)                       -- with `--keep`: the first and last report ids stored on each day (UTC)
//! compacted  (metric → metrics.id, state, reports)    -- with `--keep`: the aggregate state of the reports removed
//! ```
//!
//! With `--keep DAYS` (retention), the day each report arrived is known
//! (nothing finer): `days` holds the first and last row ids stored on each
//! day. Report ids only grow (each is one past the largest stored or ever
//! marked, so ids freed by a compaction are not taken again), so the days'
//! ranges are in order. Reports that arrived before the cut-off are added
//! to the metric's `compacted` state (`Aggregator::to_bytes`) and deleted,
//! in one transaction; the start reads that state and then the remaining
//! reports. Reports stored while no day was marked (before `--keep` was
//! first given, while it was off, or by `localdp import`) count as arrived
//! on the day a collector next starts with it: never earlier than they did.
//!
//! A batch id is stored in the transaction that stores the batch's reports,
//! so a batch sent again (a shuffler's retry after a crash) finds its id and
//! is stored, and counted, once. `shuffler` is the fingerprint of the
//! shuffler token that posted it; batches stored by a collector of schema
//! 2 have none (any token holder could post them) and are not counted as
//! shuffled.
//!
//! The batches of the requests queued together (a group, see `writer.rs`)
//! are one transaction: their accepted reports and rejection counts are
//! written together or not at all, and the running aggregates in memory are
//! updated only after the commit, so everything an estimate counts is on
//! disk. Exclusive locking makes a second collector on the same file fail at
//! start instead of silently diverging from the first one's aggregate.

use localdp::{Aggregator, Metric, Rejection, RejectionCounts};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};

/// The schema version in `PRAGMA user_version` (4: `days`, `compacted` and
/// `imports`, which a build before them would ignore: it would then count
/// no compacted report, so it must refuse the file instead).
const SCHEMA_VERSION: i64 = 4;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS metrics (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    randomizer TEXT NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS reports (
    id INTEGER PRIMARY KEY,
    metric INTEGER NOT NULL REFERENCES metrics(id),
    report TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS reports_by_metric ON reports(metric, id);
CREATE TABLE IF NOT EXISTS rejections (
    metric INTEGER NOT NULL REFERENCES metrics(id),
    reason TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (metric, reason)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS batches (
    metric INTEGER NOT NULL REFERENCES metrics(id),
    id TEXT NOT NULL,
    size INTEGER NOT NULL,
    shuffler TEXT,
    PRIMARY KEY (metric, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS days (
    day INTEGER PRIMARY KEY,
    first INTEGER NOT NULL,
    last INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS compacted (
    metric INTEGER PRIMARY KEY REFERENCES metrics(id),
    state BLOB NOT NULL,
    reports INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS imports (
    metric INTEGER NOT NULL REFERENCES metrics(id),
    digest TEXT NOT NULL,
    reports INTEGER NOT NULL,
    PRIMARY KEY (metric, digest)
) WITHOUT ROWID;
";

/// Stores a report (metric, report) as row `?1`, from [`NEXT_REPORT`].
const INSERT_REPORT: &str = "INSERT INTO reports (id, metric, report) VALUES (?1, ?2, ?3)";

/// The id of the next report: one past the largest stored, or marked in
/// `days` (a compaction may have deleted the largest stored).
const NEXT_REPORT: &str =
    "SELECT max(coalesce((SELECT max(id) FROM reports), 0), coalesce((SELECT max(last) FROM days), 0)) + 1";

/// Marks reports `?2` to `?3` as stored on day `?1`.
const MARK_DAY: &str = "INSERT INTO days (day, first, last) VALUES (?1, ?2, ?3) \
     ON CONFLICT (day) DO UPDATE SET last = max(last, excluded.last)";

/// Adds to a metric's count of rejections for one reason.
const COUNT_REJECTIONS: &str = "INSERT INTO rejections (metric, reason, count) VALUES (?1, ?2, ?3) \
     ON CONFLICT (metric, reason) DO UPDATE SET count = count + excluded.count";

/// A shuffled batch's id (`Localdp-Batch`) and the fingerprint of the
/// shuffler token it was posted with.
pub struct BatchId {
    pub id: String,
    pub shuffler: String,
}

/// An open database.
pub struct Store {
    connection: Connection,
    /// Whether commits mark the day they happen on (`--keep`).
    days: bool,
}

/// Today, in days since 1970-01-01 (UTC).
pub fn today() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (now.as_secs() / 86_400) as i64
}

pub type StoreResult<T> = Result<T, String>;

/// Opens (or creates) a SQLite file the way `program` keeps its data: WAL,
/// `synchronous = FULL` (a commit returns once it is on disk), foreign keys,
/// and an exclusive lock held until exit (a second process on the same file
/// fails here). Creates `schema` and refuses a file of a newer `version`.
pub fn open(path: &Path, schema: &str, version: i64, program: &str) -> StoreResult<Connection> {
    let at = |e: rusqlite::Error| format!("{}: {e}", path.display());
    let connection = Connection::open(path).map_err(at)?;
    // Exclusive before WAL: no shared-memory index, and the lock is held
    // from the first write (below) until the process exits.
    connection
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(|e| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy) => {
                format!("{}: the database is in use (another `{program}`?)", path.display())
            }
            _ => at(e),
        })?;
    let found: i64 = connection.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(at)?;
    if found > version {
        return Err(format!(
            "{}: made by a newer localdp (schema version {found}, this build reads {version})",
            path.display()
        ));
    }
    let busy = |e: rusqlite::Error| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy) => {
            format!("{}: the database is in use (another `{program}`?)", path.display())
        }
        _ => at(e),
    };
    connection
        .execute_batch(&format!("BEGIN IMMEDIATE; {schema} PRAGMA user_version = {version}; COMMIT;"))
        .map_err(busy)?;
    Ok(connection)
}

/// Rejection counts from stored `(reason, count)` rows (either store's).
pub fn rejection_counts(rows: impl IntoIterator<Item = (String, i64)>) -> StoreResult<RejectionCounts> {
    let mut counts = RejectionCounts::default();
    for (reason, count) in rows {
        let reason = Rejection::ALL
            .into_iter()
            .find(|r| r.as_str() == reason)
            .ok_or_else(|| format!("database: unknown rejection reason {reason:?}"))?;
        let count = u64::try_from(count).map_err(|_| format!("database: a negative count of {reason} rejections"))?;
        counts.add(reason, count).map_err(|e| format!("database: {e}"))?;
    }
    Ok(counts)
}

/// A metric's stored batches from one shuffler token: its fingerprint, the
/// batches, their reports, and the smallest batch's.
pub type BatchGroup = (String, u64, u64, u64);

/// Batch groups from stored `(shuffler, batches, reports, smallest)` rows
/// (either store's `GROUP BY shuffler`), and how many batches have no
/// shuffler (the row without one).
pub fn batch_groups(rows: impl IntoIterator<Item = (Option<String>, i64, i64, i64)>) -> (Vec<BatchGroup>, u64) {
    let (mut signed, mut unsigned) = (Vec::new(), 0);
    for (shuffler, batches, reports, smallest) in rows {
        match shuffler {
            Some(shuffler) => signed.push((shuffler, batches as u64, reports as u64, smallest as u64)),
            None => unsigned += batches as u64,
        }
    }
    (signed, unsigned)
}

impl Store {
    /// Opens (or creates) the database and takes its exclusive lock.
    pub fn open(path: &Path) -> StoreResult<Store> {
        let connection = open(path, SCHEMA, SCHEMA_VERSION, "localdp serve")?;
        // Schema 2 → 3: a batch's shuffler; none for the batches already stored.
        let db = |e: rusqlite::Error| format!("{}: {e}", path.display());
        let has_shuffler: bool = connection
            .query_row("SELECT count(*) > 0 FROM pragma_table_info('batches') WHERE name = 'shuffler'", [], |r| r.get(0))
            .map_err(db)?;
        if !has_shuffler {
            connection.execute_batch("ALTER TABLE batches ADD COLUMN shuffler TEXT").map_err(db)?;
        }
        Ok(Store { connection, days: false })
    }

    /// From now on, commits mark the day they happen on (`--keep`); the
    /// reports stored while no day was marked count as stored today.
    pub fn mark_days(&mut self) -> StoreResult<()> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let (unmarked, newest): (i64, i64) = self
            .connection
            .query_row(
                "SELECT coalesce((SELECT max(last) FROM days), 0) + 1, coalesce((SELECT max(id) FROM reports), 0)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(db)?;
        if newest >= unmarked {
            self.connection.execute(MARK_DAY, params![today(), unmarked, newest]).map_err(db)?;
        }
        self.days = true;
        Ok(())
    }

    /// Opens a store that must exist, for a copy (`localdp backup`):
    /// nothing is created or migrated, and the exclusive lock taken by the
    /// first read keeps a collector from starting on it meanwhile.
    pub fn existing(path: &Path) -> StoreResult<Store> {
        let refused = |e: rusqlite::Error| not_a_store(path, &e);
        let connection = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(refused)?;
        connection.execute_batch("PRAGMA locking_mode = EXCLUSIVE").map_err(refused)?;
        let tables: i64 = connection
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('metrics', 'reports', 'rejections', 'batches')",
                [],
                |r| r.get(0),
            )
            .map_err(refused)?;
        let version: i64 = connection.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(refused)?;
        if tables != 4 || version < 1 {
            return Err(format!("{}: not a localdp store (a SQLite database without its tables)", path.display()));
        }
        if version > SCHEMA_VERSION {
            return Err(format!(
                "{}: made by a newer localdp (schema version {version}, this build reads {SCHEMA_VERSION})",
                path.display()
            ));
        }
        Ok(Store { connection, days: false })
    }

    /// Writes a consistent copy of the whole store to `to`, an empty or new
    /// file (`VACUUM INTO`, on this connection: between two commits).
    pub fn snapshot(&self, to: &Path) -> StoreResult<()> {
        let to_text = to.to_str().ok_or_else(|| format!("{}: not a UTF-8 path", to.display()))?;
        self.connection.execute("VACUUM INTO ?1", [to_text]).map(drop).map_err(|e| format!("copying the store: {e}"))
    }

    /// Checks the store's pages (`PRAGMA quick_check`), then per metric:
    /// its name, stored reports, counted rejections and shuffled batches.
    pub fn summary(&self) -> StoreResult<Vec<(String, u64, u64, u64)>> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let check: String = self.connection.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(db)?;
        if check != "ok" {
            return Err(format!("damaged: {check}"));
        }
        let mut statement = self
            .connection
            .prepare(
                "SELECT name, (SELECT count(*) FROM reports WHERE metric = m.id), \
                 (SELECT coalesce(sum(count), 0) FROM rejections WHERE metric = m.id), \
                 (SELECT count(*) FROM batches WHERE metric = m.id) FROM metrics m ORDER BY name",
            )
            .map_err(db)?;
        let rows = statement
            .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64, r.get::<_, i64>(3)? as u64)))
            .map_err(db)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(db)
    }

    /// The key of the metric `name`, registering it if new. A metric that
    /// already holds reports or rejections must keep its randomizer
    /// (protocol, ε, domain or range): the stored reports were made with it.
    pub fn register(&mut self, name: &str, randomizer: &str, config: &str) -> StoreResult<i64> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let existing: Option<(i64, String)> = self
            .connection
            .query_row("SELECT id, randomizer FROM metrics WHERE name = ?1", [name], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(db)?;
        match existing {
            None => {
                self.connection
                    .execute("INSERT INTO metrics (name, randomizer, config) VALUES (?1, ?2, ?3)", params![name, randomizer, config])
                    .map_err(db)?;
                Ok(self.connection.last_insert_rowid())
            }
            Some((key, stored)) => {
                if stored != randomizer {
                    let (reports, rejected) = self.held(key)?;
                    if reports + rejected > 0 {
                        return Err(format!(
                            "metric {name:?}: its config changed (randomizer {stored} when its {reports} stored \
                             reports and {rejected} rejections were counted, {randomizer} now); restore the old \
                             config, rename the metric, or use another --db"
                        ));
                    }
                }
                self.connection
                    .execute("UPDATE metrics SET randomizer = ?2, config = ?3 WHERE id = ?1", params![key, randomizer, config])
                    .map_err(db)?;
                Ok(key)
            }
        }
    }

    /// Stored reports and counted rejections of a metric.
    fn held(&self, key: i64) -> StoreResult<(u64, u64)> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let reports: i64 =
            self.connection.query_row("SELECT count(*) FROM reports WHERE metric = ?1", [key], |r| r.get(0)).map_err(db)?;
        let rejected: i64 = self
            .connection
            .query_row("SELECT coalesce(sum(count), 0) FROM rejections WHERE metric = ?1", [key], |r| r.get(0))
            .map_err(db)?;
        let compacted = self.compacted(key)?.map_or(0, |(_, reports)| reports);
        Ok((reports as u64 + compacted, rejected as u64))
    }

    /// Calls `each` on every stored report of a metric, oldest first.
    pub fn replay(&self, key: i64, mut each: impl FnMut(&str)) -> StoreResult<()> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let mut statement =
            self.connection.prepare("SELECT report FROM reports WHERE metric = ?1 ORDER BY id").map_err(db)?;
        let mut rows = statement.query([key]).map_err(db)?;
        while let Some(row) = rows.next().map_err(db)? {
            each(row.get_ref(0).map_err(db)?.as_str().map_err(|e| format!("database: {e}"))?);
        }
        Ok(())
    }

    /// The counted rejections of a metric.
    pub fn rejections(&self, key: i64) -> StoreResult<RejectionCounts> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let mut statement = self.connection.prepare("SELECT reason, count FROM rejections WHERE metric = ?1").map_err(db)?;
        let rows = statement
            .query_map([key], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(db)?;
        rejection_counts(rows.collect::<rusqlite::Result<Vec<_>>>().map_err(db)?)
    }

    /// Names and report counts of stored metrics not in `configured`.
    pub fn unconfigured(&self, configured: &[&str]) -> StoreResult<Vec<(String, u64)>> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let mut statement = self
            .connection
            .prepare("SELECT name, (SELECT count(*) FROM reports WHERE metric = metrics.id) FROM metrics ORDER BY name")
            .map_err(db)?;
        let rows = statement.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))).map_err(db)?;
        let mut out = Vec::new();
        for row in rows {
            let (name, count) = row.map_err(db)?;
            if !configured.contains(&name.as_str()) {
                out.push((name, count as u64));
            }
        }
        Ok(out)
    }

    /// Stores the batches of one group in one transaction: their accepted
    /// reports (canonical JSON) and their rejection counts, all or nothing.
    /// The commit returns once the WAL is synced (`synchronous = FULL`).
    ///
    /// A batch with an id is stored with its id, its size (accepted
    /// reports) and its shuffler's fingerprint; one whose id is already
    /// stored (before, or earlier in the group) is a duplicate, and nothing
    /// of it is stored. Per batch: `true` if it was stored, `false` if it
    /// was a duplicate.
    pub fn append_group<'a>(
        &mut self,
        batches: impl IntoIterator<Item = (i64, &'a [String], &'a RejectionCounts, Option<&'a BatchId>)>,
    ) -> rusqlite::Result<Vec<bool>> {
        let transaction = self.connection.transaction()?;
        let first: i64 = transaction.prepare_cached(NEXT_REPORT)?.query_row([], |r| r.get(0))?;
        let mut next = first;
        let mut stored = Vec::new();
        {
            let mut insert = transaction.prepare_cached(INSERT_REPORT)?;
            let mut batch_id = transaction.prepare_cached(
                "INSERT INTO batches (metric, id, size, shuffler) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (metric, id) DO NOTHING",
            )?;
            // Rejections summed per metric first: one upsert per (metric, reason).
            let mut rejections: Vec<(i64, [u64; Rejection::ALL.len()])> = Vec::new();
            for (key, reports, rejected, id) in batches {
                let new = match id {
                    Some(batch) => batch_id.execute(params![key, batch.id, reports.len() as i64, batch.shuffler])? == 1,
                    None => true,
                };
                stored.push(new);
                if !new {
                    continue;
                }
                for report in reports {
                    insert.execute(params![next, key, report])?;
                    next += 1;
                }
                if rejected.total() > 0 {
                    let at = match rejections.iter().position(|(k, _)| *k == key) {
                        Some(at) => at,
                        None => {
                            rejections.push((key, [0; Rejection::ALL.len()]));
                            rejections.len() - 1
                        }
                    };
                    for (sum, reason) in rejections[at].1.iter_mut().zip(Rejection::ALL) {
                        *sum += rejected.get(reason);
                    }
                }
            }
            let mut count = transaction.prepare_cached(COUNT_REJECTIONS)?;
            for (key, sums) in rejections {
                for (n, reason) in sums.into_iter().zip(Rejection::ALL) {
                    if n > 0 {
                        count.execute(params![key, reason.as_str(), n as i64])?;
                    }
                }
            }
            if self.days && next > first {
                transaction.prepare_cached(MARK_DAY)?.execute(params![today(), first, next - 1])?;
            }
        }
        transaction.commit()?;
        Ok(stored)
    }

    /// Retention: adds a metric's reports that arrived before day `cutoff`
    /// to its compacted state and deletes them, in one transaction; how
    /// many.
    pub fn compact(&mut self, key: i64, metric: &Metric, cutoff: i64) -> StoreResult<u64> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let transaction = self.connection.transaction().map_err(db)?;
        // The days' ranges are in order and hold every report (a start with
        // --keep marks what none did): every report below the boundary
        // arrived before the cut-off.
        let boundary: i64 = transaction
            .query_row("SELECT coalesce(max(last), 0) + 1 FROM days WHERE day < ?1", [cutoff], |r| r.get(0))
            .map_err(db)?;
        if boundary == 1 {
            return Ok(0);
        }
        let held: Option<Vec<u8>> = transaction
            .query_row("SELECT state FROM compacted WHERE metric = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(db)?;
        let mut state = match held {
            Some(bytes) => Aggregator::from_bytes(metric.clone(), &bytes).map_err(|e| format!("database: a compacted state: {e}"))?,
            None => Aggregator::new(metric.clone()),
        };
        let mut old = 0;
        {
            let mut statement =
                transaction.prepare("SELECT report FROM reports WHERE metric = ?1 AND id < ?2 ORDER BY id").map_err(db)?;
            let mut rows = statement.query(params![key, boundary]).map_err(db)?;
            while let Some(row) = rows.next().map_err(db)? {
                let text = row.get_ref(0).map_err(db)?.as_str().map_err(|e| format!("database: {e}"))?;
                state.add_json(text).map_err(|e| format!("a stored report does not validate under the config: {e}"))?;
                old += 1;
            }
        }
        if old == 0 {
            return Ok(0);
        }
        transaction.execute("DELETE FROM reports WHERE metric = ?1 AND id < ?2", params![key, boundary]).map_err(db)?;
        transaction
            .execute(
                "INSERT INTO compacted (metric, state, reports) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (metric) DO UPDATE SET state = excluded.state, reports = reports + excluded.reports",
                params![key, state.to_bytes(), old as i64],
            )
            .map_err(db)?;
        transaction.commit().map_err(db)?;
        Ok(old)
    }

    /// A metric's compacted state (retention) and the reports it counts.
    pub fn compacted(&self, key: i64) -> StoreResult<Option<(Vec<u8>, u64)>> {
        self.connection
            .query_row("SELECT state, reports FROM compacted WHERE metric = ?1", [key], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))
            .optional()
            .map_err(|e| format!("database: {e}"))
    }

    /// Starts importing the file of SHA-256 `digest` into metric `key`, in
    /// one transaction (nothing is stored unless [`Import::commit`] is
    /// reached); `None` if that file was imported into it before.
    pub fn import(&mut self, key: i64, digest: &str) -> StoreResult<Option<Import<'_>>> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let transaction = self.connection.transaction().map_err(db)?;
        let new = transaction
            .execute("INSERT INTO imports (metric, digest, reports) VALUES (?1, ?2, 0) ON CONFLICT DO NOTHING", params![key, digest])
            .map_err(db)?;
        if new != 1 {
            return Ok(None);
        }
        let next = transaction.query_row(NEXT_REPORT, [], |r| r.get(0)).map_err(db)?;
        Ok(Some(Import { transaction, key, digest: digest.to_string(), next, reports: 0 }))
    }

    /// The sizes and shufflers of a metric's stored batches (received with
    /// an id) that held an accepted report: one whose reports
    /// were all rejected is stored (so a retry of it is a duplicate) but is
    /// no batch to hide in. Also how many such batches have no shuffler
    /// (stored before schema 3), which are not to be counted.
    pub fn batch_sizes(&self, key: i64) -> StoreResult<(Vec<BatchGroup>, u64)> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let mut statement = self
            .connection
            .prepare("SELECT shuffler, count(*), sum(size), min(size) FROM batches WHERE metric = ?1 AND size > 0 GROUP BY shuffler")
            .map_err(db)?;
        let rows = statement.query_map([key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).map_err(db)?;
        Ok(batch_groups(rows.collect::<rusqlite::Result<Vec<_>>>().map_err(db)?))
    }

    /// Every stored metric: key, name, randomizer and config.
    pub fn metrics(&self) -> StoreResult<Vec<(i64, String, String, String)>> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let mut statement = self.connection.prepare("SELECT id, name, randomizer, config FROM metrics ORDER BY id").map_err(db)?;
        let rows = statement.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).map_err(db)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(db)
    }

    /// Every stored batch id of a metric, with its size and shuffler.
    pub fn batches(&self, key: i64) -> StoreResult<Vec<(String, i64, Option<String>)>> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let mut statement = self.connection.prepare("SELECT id, size, shuffler FROM batches WHERE metric = ?1").map_err(db)?;
        let rows = statement.query_map([key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).map_err(db)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(db)
    }

    /// The row id of a metric's newest stored report (0 if none): an export
    /// reads up to it, so reports stored meanwhile are not half-included.
    pub fn last_report(&self, key: i64) -> StoreResult<i64> {
        self.connection
            .query_row("SELECT coalesce(max(id), 0) FROM reports WHERE metric = ?1", [key], |r| r.get(0))
            .map_err(|e| format!("database: {e}"))
    }

    /// Up to `limit` stored reports of a metric with row ids in
    /// `(after, upto]`, oldest first, with their ids.
    pub fn page(&self, key: i64, after: i64, upto: i64, limit: usize) -> StoreResult<Vec<(i64, String)>> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        let mut statement = self
            .connection
            .prepare_cached("SELECT id, report FROM reports WHERE metric = ?1 AND id > ?2 AND id <= ?3 ORDER BY id LIMIT ?4")
            .map_err(db)?;
        let rows = statement
            .query_map(params![key, after, upto, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(db)
    }
}

/// An import under way ([`Store::import`]): rolled back unless committed.
pub struct Import<'a> {
    transaction: rusqlite::Transaction<'a>,
    key: i64,
    digest: String,
    /// The id of the next report it stores (the transaction holds the write lock).
    next: i64,
    reports: u64,
}

impl Import<'_> {
    /// Stores an accepted report (canonical JSON).
    pub fn add(&mut self, report: &str) -> StoreResult<()> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        self.transaction.prepare_cached(INSERT_REPORT).and_then(|mut s| s.execute(params![self.next, self.key, report])).map_err(db)?;
        self.next += 1;
        self.reports += 1;
        Ok(())
    }

    /// Adds the file's rejection counts and commits; the reports stored.
    pub fn commit(self, rejected: &RejectionCounts) -> StoreResult<u64> {
        let db = |e: rusqlite::Error| format!("database: {e}");
        {
            let mut count = self.transaction.prepare_cached(COUNT_REJECTIONS).map_err(db)?;
            for reason in Rejection::ALL.into_iter().filter(|r| rejected.get(*r) > 0) {
                count.execute(params![self.key, reason.as_str(), rejected.get(reason) as i64]).map_err(db)?;
            }
        }
        self.transaction
            .execute("UPDATE imports SET reports = ?3 WHERE metric = ?1 AND digest = ?2", params![self.key, self.digest, self.reports as i64])
            .map_err(db)?;
        self.transaction.commit().map_err(db)?;
        Ok(self.reports)
    }
}

/// The control socket of the collector on `db`.
pub fn control_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".control");
    PathBuf::from(name)
}

/// How a store that must exist is opened for a copy (never created).
fn not_a_store(path: &Path, e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => format!("{}: not a localdp store (not a SQLite database)", path.display()),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => format!(
            "{}: the database is in use, by another program or a collector that does not answer on {}",
            path.display(),
            control_path(path).display()
        ),
        Some(rusqlite::ErrorCode::CannotOpen) => format!("{}: cannot open it (no such file?)", path.display()),
        _ => format!("{}: {e}", path.display()),
    }
}
