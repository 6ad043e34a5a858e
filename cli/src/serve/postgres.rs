//! The collector's store on PostgreSQL (`--db postgres://…`): the tables of
//! the SQLite store (`store.rs`), in a schema of their own (`localdp`),
//! shared by every collector on the database, plus one aggregate state per
//! collector and metric:
//!
//! ```sql
//! localdp.migrations (version, applied)               -- the migrations applied, one row each
//! localdp.metrics    (id, name UNIQUE, randomizer, config)
//! localdp.reports    (id, metric → metrics.id, report)
//! localdp.rejections (metric, reason, slot, count)     -- per collector, summed on read
//! localdp.batches    (metric, id, size, shuffler)      -- one per (metric, id), across all collectors
//! localdp.states     (metric, slot, state)             -- a collector's aggregate (`Aggregator::to_bytes`)
//! localdp.batch_counts (metric, slot, shuffler, batches, reports, smallest)  -- per collector, summed on read
//! localdp.imports    (metric, digest, reports)         -- export files taken by `localdp import` (SHA-256)
//! localdp.compacted  (metric, reports)                 -- with `--keep`: the reports deleted by retention
//! ```
//!
//! With `--keep DAYS` (retention), a report's row holds the day (UTC) it
//! arrived (`reports.day`; without `--keep` none, and such a report counts
//! as arrived on the day a compaction first sees it: never earlier than it
//! did). Compacting deletes the rows of reports that arrived before the
//! cut-off and counts them in `compacted`: the slots' states, which every
//! estimate is read from, already count them, so estimates do not change.
//! One compaction runs at a time on a database (a transaction advisory
//! lock: a collector that finds it held skips that round).
//!
//! (Slot -1 holds what migration 2 found counted before it.)
//!
//! A collector takes a free *slot* at start (a session advisory lock, held
//! while it runs; a killed collector's slot is freed with its connection;
//! lost with a restarted server, it is taken again before the next write)
//! and, in the transaction of each group's reports, rewrites its slot's
//! state with them added. The state row is read `FOR UPDATE` in that
//! transaction, so even two processes on one slot add up. What a collector
//! estimates is its own state (current) merged with the other slots'
//! states, read again every [`REFRESH`]: an estimate misses at most what
//! the others acknowledged in the last [`REFRESH`] (plus one read). A
//! restarted collector reads the states, not the reports.
//!
//! A commit returns once PostgreSQL has flushed it (`synchronous_commit =
//! on` in every group's transaction). TLS as the URL asks for it
//! ([`tls`]).

use crate::serve::logging::{log_error, log_info, log_warn};
use super::fold::fold;
use super::store::{batch_groups, rejection_counts, today, BatchGroup, BatchId, StoreResult};
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime};
use localdp::{Aggregator, Metric, Rejection, RejectionCounts, Report};
use std::time::Duration;
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How often a collector reads the other collectors' states again: the
/// staleness of what they acknowledged, in its estimates.
pub const REFRESH: Duration = Duration::from_secs(1);
/// Connecting, and waiting for a pooled connection, give up after this.
const TIMEOUT: Duration = Duration::from_secs(5);
/// How long a group's transaction may take before its posts are answered
/// 503 (the transaction is dropped, so the server rolls it back unless its
/// commit had already arrived).
const APPEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a commit whose answer was lost is asked about (the posts'
/// `Retry-After`).
const RESOLVE: Duration = Duration::from_secs(1);
/// The first statement of each writing transaction: its id (a commit whose
/// answer is lost is asked about by it, [`Connected::lost_commit`]), and
/// acknowledged means on the server's disk, whatever the role's or the
/// server's default (a shared server may run with it off).
pub const BEGUN: &str = "SELECT txid_current(), set_config('synchronous_commit', 'on', true)";
/// Connections per collector (the writer, exports and the start's reads).
const POOL_SIZE: usize = 4;
/// Exports read at once at most (more wait for a connection, up to
/// TIMEOUT).
const EXPORTS: usize = 4;
/// How long an export's snapshot may wait for its client to take a page
/// (its transaction idle) before the server ends it, and the export is cut.
const EXPORT_IDLE: Duration = Duration::from_secs(30);
/// Collectors on one database at most (slots).
const SLOTS: i32 = 1024;
/// The first key of this program's advisory locks ("ldp"); the second is
/// the slot, or one of the locks below.
pub const LOCKS: i32 = 0x6c_6470;
/// Held while migrating or registering metrics (collectors starting together).
const START_LOCK: i32 = -1;
/// Held by a `localdp store copy` (a second one refuses).
const COPY_LOCK: i32 = -2;
/// Held by a `localdp shuffle` (a second one on the database refuses).
pub const SHUFFLER_LOCK: i32 = -3;
/// Held by a retention compaction (`--keep`), for its transaction.
const COMPACT_LOCK: i32 = -4;

/// A schema of this program's and its versioned migrations.
pub struct Schema {
    pub name: &'static str,
    /// In order: version `i + 1` is `migrations[i]`. A database migrated
    /// further than this build knows is refused.
    pub migrations: &'static [&'static str],
    /// Whether processes of the release before may be writing it (the
    /// collectors: a migration waits for them to stop).
    pub shared: bool,
}

/// The collectors' schema.
const SCHEMA: Schema = Schema { name: "localdp", migrations: MIGRATIONS, shared: true };

const MIGRATIONS: &[&str] = &["
CREATE TABLE localdp.metrics (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    randomizer TEXT NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE localdp.reports (
    id BIGSERIAL PRIMARY KEY,
    metric BIGINT NOT NULL REFERENCES localdp.metrics(id),
    report TEXT NOT NULL
);
CREATE INDEX reports_by_metric ON localdp.reports(metric, id);
CREATE TABLE localdp.rejections (
    metric BIGINT NOT NULL REFERENCES localdp.metrics(id),
    reason TEXT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (metric, reason)
);
CREATE TABLE localdp.batches (
    metric BIGINT NOT NULL REFERENCES localdp.metrics(id),
    id TEXT NOT NULL,
    size BIGINT NOT NULL,
    shuffler TEXT,
    PRIMARY KEY (metric, id)
);
CREATE TABLE localdp.states (
    metric BIGINT NOT NULL REFERENCES localdp.metrics(id),
    slot INTEGER NOT NULL,
    state BYTEA NOT NULL,
    PRIMARY KEY (metric, slot)
);
", "
ALTER TABLE localdp.rejections ADD COLUMN slot INTEGER NOT NULL DEFAULT -1;
ALTER TABLE localdp.rejections DROP CONSTRAINT rejections_pkey;
ALTER TABLE localdp.rejections ADD PRIMARY KEY (metric, reason, slot);
ALTER TABLE localdp.rejections ALTER COLUMN slot DROP DEFAULT;
CREATE TABLE localdp.batch_counts (
    metric BIGINT NOT NULL REFERENCES localdp.metrics(id),
    slot INTEGER NOT NULL,
    shuffler TEXT NOT NULL,
    batches BIGINT NOT NULL,
    reports BIGINT NOT NULL,
    smallest BIGINT NOT NULL,
    PRIMARY KEY (metric, slot, shuffler)
);
INSERT INTO localdp.batch_counts
    SELECT metric, -1, shuffler, count(*), sum(size), min(size) FROM localdp.batches
    WHERE size > 0 AND shuffler IS NOT NULL GROUP BY metric, shuffler;
", "
CREATE TABLE localdp.imports (
    metric BIGINT NOT NULL REFERENCES localdp.metrics(id),
    digest TEXT NOT NULL,
    reports BIGINT NOT NULL,
    PRIMARY KEY (metric, digest)
);
", "
ALTER TABLE localdp.reports ADD COLUMN day INTEGER;
CREATE TABLE localdp.compacted (
    metric BIGINT PRIMARY KEY REFERENCES localdp.metrics(id),
    reports BIGINT NOT NULL
);
"];

/// Whether `--db` names a PostgreSQL database rather than a SQLite file.
pub fn is_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// Why a group was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unstored {
    /// The database cannot be reached, or asked for a retry (a restart, a
    /// deadlock): the same batch may be sent again shortly.
    Unavailable,
    /// Anything else.
    Failed,
}

/// A batch of a group, as the store needs it.
pub struct Item<'a> {
    pub key: i64,
    pub metric: &'a Metric,
    pub name: &'a str,
    pub reports: &'a [String],
    pub parsed: &'a [Report],
    pub rejected: &'a RejectionCounts,
    pub batch: Option<&'a BatchId>,
}

/// A metric to copy in: its registration, its reports page by page
/// (`pages(after)`: the next reports with ids past `after`, none at the
/// end), rejection counts, batch ids, the reports retention compacted
/// (counted in the state, not in the pages) and aggregate state.
pub struct Copied<'a> {
    pub name: String,
    pub randomizer: String,
    pub config: String,
    pub pages: Box<dyn FnMut(i64) -> StoreResult<Vec<(i64, String)>> + 'a>,
    pub rejected: RejectionCounts,
    pub batches: Vec<(String, i64, Option<String>)>,
    pub compacted: u64,
    pub state: Aggregator,
}

/// A connected PostgreSQL store.
pub struct PgStore {
    db: Connected,
    /// Holds the advisory lock of `slot` for as long as it is open (one of
    /// the pool's connections, never handed out). If it is lost (the server
    /// restarted), it is taken again before the next group is written, and
    /// nothing is written while another collector holds the slot
    /// ([`PgStore::hold_slot`]); `None` from when it was found lost until
    /// it is taken again.
    lock: tokio::sync::Mutex<Option<Object>>,
    slot: i32,
    /// Whether stored reports carry the day they arrived (`--keep`).
    days: bool,
}

/// The URL without its password, for messages.
fn shown(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{host}:{port}/{}",
        config.get_user().unwrap_or("?"),
        config.get_dbname().or(config.get_user()).unwrap_or("?")
    )
}

/// TLS for the connections, when the URL asks for it.
type Tls = Option<MakeRustlsConnect>;

fn pool(config: &Config, tls: &Tls, size: usize) -> StoreResult<Pool> {
    let recycling = ManagerConfig { recycling_method: RecyclingMethod::Fast };
    let manager = match tls {
        Some(tls) => Manager::from_config(config.clone(), tls.clone(), recycling),
        None => Manager::from_config(config.clone(), NoTls, recycling),
    };
    Pool::builder(manager)
        .max_size(size)
        .runtime(Runtime::Tokio1)
        .create_timeout(Some(TIMEOUT))
        .wait_timeout(Some(TIMEOUT))
        .build()
        .map_err(|e| e.to_string())
}

/// The URL for tokio-postgres, and TLS as it asks (`sslmode`, libpq's
/// names): `disable`, `allow` and `prefer` (the default) connect without;
/// `require`, `verify-ca` and `verify-full` with, the server's certificate
/// verified in full: it chains to `sslrootcert` (a PEM file) or else to
/// the system's roots, and names the host (stricter than libpq's `require`
/// and `verify-ca`, which take any certificate or any name). Errors never
/// quote the URL.
fn tls(url: &str) -> StoreResult<(String, Tls)> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let (mut kept, mut wanted, mut roots) = (Vec::new(), false, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=').unwrap_or((pair, "")) {
            ("sslmode", "disable" | "prefer") => kept.push(pair.to_string()),
            ("sslmode", "allow") => kept.push("sslmode=prefer".into()),
            ("sslmode", "require" | "verify-ca" | "verify-full") => {
                wanted = true;
                kept.push("sslmode=require".into());
            }
            ("sslmode", other) => {
                return Err(format!("--db: sslmode={other}: one of disable, allow, prefer, require, verify-ca, verify-full"));
            }
            ("sslrootcert", path) => roots = Some(percent_encoding::percent_decode_str(path).decode_utf8_lossy().into_owned()),
            _ => kept.push(pair.to_string()),
        }
    }
    let url = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    if !wanted {
        return Ok((url, None));
    }
    let mut store = rustls::RootCertStore::empty();
    match &roots {
        Some(path) => {
            use rustls::pki_types::pem::PemObject;
            let certificates = rustls::pki_types::CertificateDer::pem_file_iter(path).map_err(|e| format!("--db: sslrootcert {path}: {e}"))?;
            for certificate in certificates {
                let certificate = certificate.map_err(|e| format!("--db: sslrootcert {path}: {e}"))?;
                store.add(certificate).map_err(|e| format!("--db: sslrootcert {path}: {e}"))?;
            }
        }
        None => {
            for certificate in rustls_native_certs::load_native_certs().certs {
                // One the system has but rustls cannot use is no root.
                let _ = store.add(certificate);
            }
        }
    }
    if store.is_empty() {
        return Err(format!(
            "--db: TLS asked, but {} holds no certificate to verify the server's by",
            roots.as_deref().map_or("the system".to_string(), |p| format!("sslrootcert {p}"))
        ));
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok((url, Some(MakeRustlsConnect::new(config))))
}

/// What failed at connecting, named: the password (or user), the
/// database, or reaching the server. Never the password itself.
fn connect_error(shown: &str, config: &Config, e: &PoolError) -> String {
    let user = config.get_user().unwrap_or("?");
    let database = config.get_dbname().unwrap_or(user);
    match e {
        PoolError::Backend(e) => match (e.code(), explain(e)) {
            (Some(c), e) if *c == SqlState::INVALID_PASSWORD || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
                format!("{shown}: the server refused user {user:?} (wrong password or no such user): {e}")
            }
            (Some(c), e) if *c == SqlState::INVALID_CATALOG_NAME => {
                format!("{shown}: the database {database:?} does not exist on the server (create it first): {e}")
            }
            (Some(_), e) => format!("{shown}: {e}"),
            (None, e) if config.get_password().is_none() && e.contains("password missing") => {
                format!("{shown}: the server asks for a password, and neither the URL nor PGPASSWORD gives one")
            }
            (None, e) => format!("{shown}: cannot reach the server: {e}"),
        },
        PoolError::Timeout(_) => format!("{shown}: cannot reach the server: no connection within {} s", TIMEOUT.as_secs()),
        other => format!("{shown}: {other}"),
    }
}

/// Whether a failed statement is worth a retry (the server went away or
/// restarts, a deadlock or serialization failure) rather than a bug.
pub fn unavailable(e: &tokio_postgres::Error) -> bool {
    match e.code() {
        None => true,
        Some(code) => {
            let code = code.code();
            code.starts_with("08") || code.starts_with("57P") || code == "40001" || code == "40P01"
        }
    }
}

/// An error with its cause (tokio-postgres's own text is only its kind,
/// e.g. "db error"; the cause is the server's message).
fn explain(e: &tokio_postgres::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

pub fn db(e: tokio_postgres::Error) -> String {
    format!("database: {}", explain(&e))
}

/// A pool on the database of a `--db` URL (TLS as it asks), and the
/// runtime that drives it (one worker thread).
pub struct Connected {
    pub runtime: tokio::runtime::Runtime,
    pub pool: Pool,
    pub config: Config,
    tls: Tls,
    /// `user@host:port/dbname`: the URL without its password.
    pub shown: String,
}

/// Connects to `url` as `application` (unless the URL names one), with
/// pools of `size` connections: errors never quote the URL.
pub fn connect(url: &str, application: &str, size: usize) -> StoreResult<Connected> {
    let (url, tls) = tls(url)?;
    // The parser's errors never quote the URL.
    let mut config: Config = url.parse().map_err(|e| format!("--db: not a PostgreSQL URL: {}", explain(&e)))?;
    let shown = shown(&config);
    // libpq's PGPASSWORD, for a URL without a password: a password in the
    // URL is on the command line, which every user of the machine may read
    // (ps), and a process's environment is its owner's alone.
    if config.get_password().is_none() {
        if let Some(password) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
            config.password(password.as_encoded_bytes());
        }
    }
    if config.get_application_name().is_none() {
        config.application_name(application);
    }
    config.connect_timeout(TIMEOUT);
    // A connection whose server went silent fails within TIMEOUT.
    config.keepalives(true);
    config.keepalives_idle(TIMEOUT);
    #[cfg(target_os = "linux")]
    config.tcp_user_timeout(TIMEOUT);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("localdp-postgres")
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let pool = runtime.block_on(async { pool(&config, &tls, size) })?;
    Ok(Connected { runtime, pool, config, tls, shown })
}

impl Connected {
    /// A connection of the pool; what failed, named, if none.
    pub async fn client(&self) -> StoreResult<Object> {
        self.pool.get().await.map_err(|e| connect_error(&self.shown, &self.config, &e))
    }

    /// After a COMMIT left without an answer (`e`: the connection lost, or
    /// no answer in time) on `client`, for `program`'s log: `Ok` if the
    /// server committed transaction `xid` all the same. Failing there
    /// would answer 503 for what is stored, and it would be stored again
    /// when sent again.
    pub async fn lost_commit(&self, client: Object, xid: i64, e: String, program: &str) -> StoreResult<()> {
        // The connection's state is unknown: it goes, and its server ends
        // the transaction if it is still open.
        drop(Object::take(client));
        match self.committed(xid).await {
            Some(true) => {
                log_warn!("{program}: a commit's answer was lost ({e}); the server committed it");
                Ok(())
            }
            Some(false) => Err(e),
            None => Err(format!("{e}; whether the server committed it is unknown (it may be stored, and stored again if sent again)")),
        }
    }

    /// Whether transaction `xid` committed, asked on another connection
    /// for up to [`RESOLVE`]; `None` if that cannot be known by then (the
    /// server is away: its posts are answered 503 at once, as the outage's
    /// others are).
    async fn committed(&self, xid: i64) -> Option<bool> {
        let ask = async {
            loop {
                if let Ok(client) = self.pool.get().await {
                    match client.query_one("SELECT txid_status($1)", &[&xid]).await {
                        Ok(row) => match row.get::<_, Option<&str>>(0) {
                            Some("committed") => return true,
                            Some("aborted") => return false,
                            // In progress: its server has not yet seen its
                            // connection go.
                            _ => {}
                        },
                        // A server that restarted without the transaction in
                        // its log has not used its id yet: never committed.
                        Err(e) if e.code() == Some(&SqlState::INVALID_PARAMETER_VALUE) => return false,
                        Err(_) => {}
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(RESOLVE, ask).await.ok()
    }
}

/// `--db`: a PostgreSQL URL (`Some`), or a SQLite file's path (`None`).
/// Another scheme (a typo of postgres://) is no file name, and the error
/// does not echo it: it may hold a password.
pub fn url_of(db: &std::path::Path) -> StoreResult<Option<&str>> {
    match db.to_str() {
        Some(url) if is_url(url) => Ok(Some(url)),
        Some(url) if url.contains("://") => {
            Err("--db: a URL must be postgres://… or postgresql://… (anything else is a SQLite file's path)".to_string())
        }
        _ => Ok(None),
    }
}

/// Takes this program's session advisory lock `key` on `client` (held
/// until the connection closes), if no other session holds it.
pub async fn try_lock(client: &Object, key: i32) -> StoreResult<bool> {
    Ok(client.query_one("SELECT pg_try_advisory_lock($1, $2)", &[&LOCKS, &key]).await.map_err(db)?.get(0))
}

/// A session lock's connection, checked before a write: kept if its
/// session still holds the lock ([`holds`]). Else (a restarted server, a
/// session terminated, or one whose connection died without the client
/// noticing, behind a proxy that keeps the client's socket open) it is
/// closed, not put back in the pool, and the lock is taken again on a new
/// connection.
pub async fn hold_lock(held: &tokio::sync::Mutex<Option<Object>>, connected: &Connected, key: i32) -> StoreResult<Lock> {
    let mut held = held.lock().await;
    if let Some(client) = held.take() {
        if holds(&client, key).await {
            *held = Some(client);
            return Ok(Lock::Kept);
        }
        drop(Object::take(client));
    }
    // A pooled connection to a server that stopped answering would wait
    // for ever. One that timed out may have taken the lock all the same
    // (its answer late or lost): it is closed, so the lock goes with its
    // session, rather than put back in the pool still holding it.
    let mut tried = None;
    let retake = async {
        let lock = tried.insert(connected.client().await?);
        try_lock(lock, key).await
    };
    match tokio::time::timeout(TIMEOUT, retake).await {
        Ok(Ok(true)) => {
            *held = tried;
            Ok(Lock::Again)
        }
        Ok(Ok(false)) => Ok(Lock::Lost),
        Ok(Err(e)) => Err(e),
        Err(_) => {
            if let Some(tried) = tried {
                drop(Object::take(tried));
            }
            Err(format!("{}: no answer within {} s", connected.shown, TIMEOUT.as_secs()))
        }
    }
}

/// Whether `client`'s session holds this program's advisory lock `key`
/// now, as `pg_locks` says, asked on that session and answered within
/// [`TIMEOUT`]: a connection that looks open (`is_closed()` is false)
/// may have lost its session, and the lock with it.
async fn holds(client: &Object, key: i32) -> bool {
    if client.is_closed() {
        return false;
    }
    let asked = async {
        let statement = client
            .prepare_cached(
                "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() \
                 AND classid = $1::int4::oid AND objid = $2::int4::oid AND objsubid = 2 AND granted)",
            )
            .await?;
        client.query_one(&statement, &[&LOCKS, &key]).await
    };
    matches!(tokio::time::timeout(TIMEOUT, asked).await, Ok(Ok(row)) if row.get::<_, bool>(0))
}

/// A session lock, as [`hold_lock`] found it.
pub enum Lock {
    /// Held all along.
    Kept,
    /// Lost with its connection, and taken again.
    Again,
    /// Lost, and taken by another session meanwhile.
    Lost,
}

impl PgStore {
    /// Connects, migrates the schema, and takes a free slot.
    pub fn open(url: &str) -> StoreResult<PgStore> {
        let db = connect(url, "localdp serve", POOL_SIZE)?;
        let shown = &db.shown;
        let (lock, slot) = db.runtime.block_on(async {
            let mut lock = db.client().await?;
            migrate(&mut lock, &SCHEMA).await.map_err(|e| format!("{shown}: {e}"))?;
            for slot in 0..SLOTS {
                if try_lock(&lock, slot).await? {
                    return Ok((lock, slot));
                }
            }
            Err(format!("{shown}: {SLOTS} collectors run on this database already"))
        })?;
        Ok(PgStore { db, lock: tokio::sync::Mutex::new(Some(lock)), slot, days: false })
    }

    /// `postgres://user@host:port/dbname (slot N)`.
    pub fn describe(&self) -> String {
        format!("{} (collector slot {})", self.db.shown, self.slot)
    }

    fn run<T>(&self, work: impl std::future::Future<Output = StoreResult<T>>) -> StoreResult<T> {
        self.db.runtime.block_on(work)
    }

    /// Registers a metric (or finds it), one collector at a time. A
    /// metric whose randomizer changed is refused while another collector
    /// runs on the database (it would fold reports of the old config into
    /// the same estimates), and when it holds reports or rejections.
    pub fn register(&mut self, name: &str, randomizer: &str, config: &str) -> StoreResult<i64> {
        let slot = self.slot;
        self.run(async {
            let mut client = self.db.client().await?;
            let transaction = client.transaction().await.map_err(db)?;
            transaction.execute("SELECT pg_advisory_xact_lock($1, $2)", &[&LOCKS, &START_LOCK]).await.map_err(db)?;
            let existing = transaction
                .query_opt("SELECT id, randomizer FROM localdp.metrics WHERE name = $1", &[&name])
                .await
                .map_err(db)?;
            let key = match existing {
                None => transaction
                    .query_one(
                        "INSERT INTO localdp.metrics (name, randomizer, config) VALUES ($1, $2, $3) RETURNING id",
                        &[&name, &randomizer, &config],
                    )
                    .await
                    .map_err(db)?
                    .get(0),
                Some(row) => {
                    let (key, stored): (i64, String) = (row.get(0), row.get(1));
                    if stored != randomizer {
                        let others: i64 = transaction
                            .query_one(
                                OTHER_COLLECTORS,
                                &[&i64::from(LOCKS), &i64::from(SLOTS), &i64::from(slot)],
                            )
                            .await
                            .map_err(db)?
                            .get(0);
                        if others > 0 {
                            return Err(format!(
                                "metric {name:?}: another collector on {} runs it with another config; start \
                                 every collector on one database with the same config of each metric",
                                self.db.shown
                            ));
                        }
                        let held = transaction
                            .query_one(
                                "SELECT (SELECT count(*) FROM localdp.reports WHERE metric = $1) \
                                 + (SELECT coalesce(sum(reports), 0)::bigint FROM localdp.compacted WHERE metric = $1), \
                                 (SELECT coalesce(sum(count), 0)::bigint FROM localdp.rejections WHERE metric = $1)",
                                &[&key],
                            )
                            .await
                            .map_err(db)?;
                        let (reports, rejected): (i64, i64) = (held.get(0), held.get(1));
                        if reports + rejected > 0 {
                            return Err(format!(
                                "metric {name:?}: its config changed (randomizer {stored} when its {reports} stored \
                                 reports and {rejected} rejections were counted, {randomizer} now); restore the old \
                                 config, rename the metric, or use another --db"
                            ));
                        }
                    }
                    transaction
                        .execute("UPDATE localdp.metrics SET randomizer = $2, config = $3 WHERE id = $1", &[&key, &randomizer, &config])
                        .await
                        .map_err(db)?;
                    key
                }
            };
            transaction.commit().await.map_err(db)?;
            Ok(key)
        })
    }

    /// This collector's state of a metric (empty if it has none) and the
    /// other slots' states merged.
    pub fn states(&self, key: i64, metric: &Metric) -> StoreResult<(Aggregator, Aggregator)> {
        self.run(async { states(&self.db.client().await?, key, metric, self.slot).await })
    }

    /// Names and report counts of stored metrics not in `configured`
    /// (counted for those only).
    pub fn unconfigured(&self, configured: &[&str]) -> StoreResult<Vec<(String, u64)>> {
        self.run(async {
            let client = self.db.client().await?;
            let rows = client.query("SELECT id, name FROM localdp.metrics ORDER BY name", &[]).await.map_err(db)?;
            let mut out = Vec::new();
            for row in rows {
                let (key, name): (i64, String) = (row.get(0), row.get(1));
                if !configured.contains(&name.as_str()) {
                    let count = client
                        .query_one("SELECT count(*) FROM localdp.reports WHERE metric = $1", &[&key])
                        .await
                        .map_err(db)?;
                    out.push((name, count.get::<_, i64>(0) as u64));
                }
            }
            Ok(out)
        })
    }

    /// Stores a group in one transaction (as the SQLite store does), and
    /// rewrites this collector's state of each metric it touches. Per
    /// batch: stored (`true`) or a duplicate; and the new states, by
    /// metric key. A COMMIT left without an answer (the connection lost,
    /// or no answer in time) is not a failure until the server says it
    /// did not commit: a group answered 503 but stored would be stored
    /// again when its posts are sent again.
    pub fn append_group(&mut self, items: &[Item<'_>]) -> Result<Appended, (Unstored, String)> {
        self.db.runtime.block_on(async {
            self.hold_slot().await.map_err(|e| (Unstored::Unavailable, e))?;
            let mut client = self.db.client().await.map_err(|e| (Unstored::Unavailable, e))?;
            // A server that stops answering (a partition, a failover that
            // drops packets) is unavailable after APPEND_TIMEOUT, not after
            // TCP gives up minutes later: every post waits on this group.
            let mut sent = None;
            let appended = match tokio::time::timeout(APPEND_TIMEOUT, append(&mut client, items, (self.slot, self.days.then(|| today() as i32)), &mut sent)).await {
                Ok(appended) => appended.map_err(|(retry, e)| (if retry { Unstored::Unavailable } else { Unstored::Failed }, e)),
                Err(_) => Err((Unstored::Unavailable, format!("{}: no answer within {} s", self.db.shown, APPEND_TIMEOUT.as_secs()))),
            };
            match (appended, sent) {
                (Ok(()), Some((_, stored))) => Ok(stored),
                (Err((Unstored::Unavailable, e)), Some((xid, stored))) => {
                    self.db.lost_commit(client, xid, e, "localdp serve").await.map(|()| stored).map_err(|e| (Unstored::Unavailable, e))
                }
                (Err(e), _) => Err(e),
                (Ok(()), None) => Err((Unstored::Failed, "database: a group committed without its answer".into())),
            }
        })
    }

    /// A collector writes only while it holds its slot's lock. The lock
    /// goes with its connection (a restarted server); it is taken again
    /// here, before a group. If another collector took the slot meanwhile,
    /// two would add to one state and neither would count the other's
    /// part: this one stores nothing (503) while that one holds the slot,
    /// and tries again before each group (it goes on once that one stops).
    async fn hold_slot(&self) -> StoreResult<()> {
        match hold_lock(&self.lock, &self.db, self.slot).await? {
            Lock::Kept => Ok(()),
            Lock::Again => {
                log_info!("localdp serve: {} taken again", self.describe());
                Ok(())
            }
            Lock::Lost => Err(format!(
                "{}: collector slot {} was taken by another collector while this one's connection was lost; \
                 this collector stores nothing while that one runs (it tries to take the slot again at each group; \
                 restarted, it takes a free slot)",
                self.db.shown, self.slot
            )),
        }
    }

    /// From now on, stored reports carry the day they arrive (`--keep`).
    pub fn mark_days(&mut self) {
        self.days = true;
    }

    /// Retention: deletes a metric's reports that arrived before day
    /// `cutoff` and counts them as compacted, in one transaction (the
    /// states count them already); how many. Reports of no day count as
    /// arrived today. Nothing (0) while another compaction runs.
    pub fn compact(&self, key: i64, cutoff: i64) -> StoreResult<u64> {
        self.run(async {
            let mut client = self.db.client().await?;
            let transaction = client.transaction().await.map_err(db)?;
            let alone: bool =
                transaction.query_one("SELECT pg_try_advisory_xact_lock($1, $2)", &[&LOCKS, &COMPACT_LOCK]).await.map_err(db)?.get(0);
            if !alone {
                return Ok(0);
            }
            transaction
                .execute("UPDATE localdp.reports SET day = $2 WHERE metric = $1 AND day IS NULL", &[&key, &(today() as i32)])
                .await
                .map_err(db)?;
            let old = transaction
                .execute("DELETE FROM localdp.reports WHERE metric = $1 AND day < $2", &[&key, &(cutoff as i32)])
                .await
                .map_err(db)?;
            if old > 0 {
                transaction
                    .execute(
                        "INSERT INTO localdp.compacted (metric, reports) VALUES ($1, $2) \
                         ON CONFLICT (metric) DO UPDATE SET reports = localdp.compacted.reports + excluded.reports",
                        &[&key, &(old as i64)],
                    )
                    .await
                    .map_err(db)?;
            }
            transaction.commit().await.map_err(db)?;
            Ok(old)
        })
    }

    /// A metric's reports compacted by retention.
    pub fn compacted(&self, key: i64) -> StoreResult<u64> {
        self.run(async { compacted(&self.db.client().await?, key).await })
    }

    /// A metric's shuffled batches per shuffler (the SQLite store's
    /// `batch_sizes`), and how many have no shuffler (read at start only).
    pub fn batch_sizes(&self, key: i64) -> StoreResult<(Vec<BatchGroup>, u64)> {
        self.run(async {
            let client = self.db.client().await?;
            let unsigned: i64 = client
                .query_one("SELECT count(*) FROM localdp.batches WHERE metric = $1 AND size > 0 AND shuffler IS NULL", &[&key])
                .await
                .map_err(db)?
                .get(0);
            Ok((batch_counts(&client, key).await?, unsigned as u64))
        })
    }

    /// Copies metrics in one transaction (`localdp store copy`): all of
    /// them, or nothing. A metric already holding reports or rejections
    /// here is refused (a copy run twice stores nothing twice). Their
    /// states go to this process's slot, merged with what it holds. Per
    /// metric, the reports moved.
    pub fn copy(&mut self, metrics: Vec<Copied<'_>>) -> StoreResult<Vec<u64>> {
        let slot = self.slot;
        self.db.runtime.block_on(async {
            let mut client = self.db.client().await?;
            let transaction = client.transaction().await.map_err(db)?;
            let alone: bool =
                transaction.query_one("SELECT pg_try_advisory_xact_lock($1, $2)", &[&LOCKS, &COPY_LOCK]).await.map_err(db)?.get(0);
            if !alone {
                return Err(format!("another localdp store copy into {} is running: nothing was copied", self.db.shown));
            }
            let mut moved = Vec::with_capacity(metrics.len());
            for mut metric in metrics {
                let row = transaction
                    .query_one(
                        "INSERT INTO localdp.metrics (name, randomizer, config) VALUES ($1, $2, $3) \
                         ON CONFLICT (name) DO UPDATE SET config = localdp.metrics.config RETURNING id, randomizer, \
                         ((SELECT count(*) FROM localdp.reports WHERE metric = localdp.metrics.id) \
                         + (SELECT coalesce(sum(reports), 0) FROM localdp.compacted WHERE metric = localdp.metrics.id) \
                         + (SELECT coalesce(sum(count), 0) FROM localdp.rejections WHERE metric = localdp.metrics.id))::bigint",
                        &[&metric.name, &metric.randomizer, &metric.config],
                    )
                    .await
                    .map_err(db)?;
                let (key, randomizer, held): (i64, String, i64) = (row.get(0), row.get(1), row.get(2));
                if held > 0 {
                    return Err(format!("metric {:?} already holds reports in {}: nothing was copied", metric.name, self.db.shown));
                }
                if randomizer != metric.randomizer {
                    // A collector running meanwhile folds its reports by the
                    // config it started with, which the copy would change.
                    let others: i64 = transaction
                        .query_one(OTHER_COLLECTORS, &[&i64::from(LOCKS), &i64::from(SLOTS), &i64::from(slot)])
                        .await
                        .map_err(db)?
                        .get(0);
                    if others > 0 {
                        return Err(format!(
                            "metric {:?}: {others} collector(s) run on {} with another config of it: stop them (or \
                             start them with the copied store's config) before the copy; nothing was copied",
                            metric.name, self.db.shown
                        ));
                    }
                    transaction
                        .execute("UPDATE localdp.metrics SET randomizer = $2, config = $3 WHERE id = $1", &[&key, &metric.randomizer, &metric.config])
                        .await
                        .map_err(db)?;
                }
                let insert = transaction
                    .prepare("INSERT INTO localdp.reports (metric, report) SELECT $1, unnest($2::text[])")
                    .await
                    .map_err(db)?;
                let (mut after, mut count) = (0, 0u64);
                loop {
                    let page = (metric.pages)(after)?;
                    let Some(&(last, _)) = page.last() else { break };
                    let texts: Vec<&str> = page.iter().map(|(_, text)| text.as_str()).collect();
                    transaction.execute(&insert, &[&key, &texts]).await.map_err(db)?;
                    count += page.len() as u64;
                    after = last;
                }
                let mut groups = Vec::new();
                for (id, size, shuffler) in &metric.batches {
                    transaction
                        .execute(
                            "INSERT INTO localdp.batches (metric, id, size, shuffler) VALUES ($1, $2, $3, $4)",
                            &[&key, id, size, shuffler],
                        )
                        .await
                        .map_err(db)?;
                    if let Some(shuffler) = shuffler.as_deref().filter(|_| *size > 0) {
                        add_batch(&mut groups, shuffler, *size as u64);
                    }
                }
                if metric.compacted > 0 {
                    transaction
                        .execute("INSERT INTO localdp.compacted (metric, reports) VALUES ($1, $2)", &[&key, &(metric.compacted as i64)])
                        .await
                        .map_err(db)?;
                }
                let copied = &metric.state;
                add_to_slot(&transaction, (key, slot), (copied.metric(), &metric.name), &metric.rejected, &groups, |state| {
                    state.merge(copied).map_err(|e| format!("database: {e}"))
                })
                .await
                .map_err(|(_, e)| e)?;
                moved.push(count);
            }
            transaction.commit().await.map_err(db)?;
            Ok(moved)
        })
    }

    /// Starts importing the file of SHA-256 `digest` into metric `key`
    /// (`localdp import`), in one transaction that also adds the file to
    /// this process's slot state, as a collector's group does: nothing is
    /// stored unless [`Import::commit`] is reached. `None` if that file was
    /// imported into it before (or is being imported: this waits for that
    /// import to end).
    pub fn import<'a>(&'a self, key: i64, digest: &str, metric: &Metric, name: &str) -> StoreResult<Option<Import<'a>>> {
        let client = self.run(async {
            let client = self.db.client().await?;
            client.batch_execute("BEGIN; SET LOCAL synchronous_commit = on").await.map_err(db)?;
            let new = client
                .execute(
                    "INSERT INTO localdp.imports (metric, digest, reports) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING",
                    &[&key, &digest],
                )
                .await
                .map_err(db)?;
            Ok((new == 1).then_some(client))
        })?;
        Ok(client.map(|client| Import {
            store: self,
            client: Some(client),
            key,
            digest: digest.to_string(),
            name: name.to_string(),
            texts: Vec::new(),
            state: Aggregator::new(metric.clone()),
            reports: 0,
        }))
    }

    /// What reads exports, each in a snapshot of its own, on connections
    /// of its own (an export never holds one the writer needs).
    pub fn exporter(&self) -> StoreResult<Exporter> {
        Ok(Exporter { pool: pool(&self.db.config, &self.db.tls, EXPORTS)?, shown: self.db.shown.clone(), config: self.db.config.clone() })
    }

    /// What reads the other collectors' states every [`REFRESH`], on a
    /// thread and a connection of its own.
    pub fn refresher(&self) -> Refresher {
        Refresher { config: self.db.config.clone(), tls: self.db.tls.clone(), shown: self.db.shown.clone(), slot: self.slot }
    }
}

/// An import under way ([`PgStore::import`]): its transaction is open
/// on `client`, and rolled back (the connection closed) unless committed.
pub struct Import<'a> {
    store: &'a PgStore,
    client: Option<Object>,
    key: i64,
    digest: String,
    name: String,
    /// Reports not yet sent, canonical JSON.
    texts: Vec<String>,
    /// The reports added, as an aggregate, for the slot's state.
    state: Aggregator,
    reports: u64,
}

/// Reports an import sends per statement.
const IMPORT_PAGE: usize = 10_000;

impl Import<'_> {
    fn client(&self) -> StoreResult<&Object> {
        self.client.as_ref().ok_or_else(|| "database: the import's transaction is closed".to_string())
    }

    /// Stores an accepted report.
    pub fn add(&mut self, report: &Report) -> StoreResult<()> {
        self.state.add(report).map_err(|e| format!("a report the collector accepts was refused by the aggregate: {e}"))?;
        self.texts.push(report.to_json());
        self.reports += 1;
        if self.texts.len() == IMPORT_PAGE {
            self.send()?;
        }
        Ok(())
    }

    /// Inserts the reports not yet sent.
    fn send(&mut self) -> StoreResult<()> {
        let texts = std::mem::take(&mut self.texts);
        if texts.is_empty() {
            return Ok(());
        }
        let client = self.client()?;
        self.store.run(async {
            client
                .execute("INSERT INTO localdp.reports (metric, report) SELECT $1, unnest($2::text[])", &[&self.key, &texts])
                .await
                .map(drop)
                .map_err(db)
        })
    }

    /// Adds the file's rejection counts, adds everything to this process's
    /// slot state (while it holds the slot), and commits; the reports
    /// stored.
    pub fn commit(mut self, rejected: &RejectionCounts) -> StoreResult<u64> {
        self.send()?;
        fold(&mut self.state, &[], rejected, &self.name);
        let store = self.store;
        let client = self.client()?;
        store.run(async {
            store.hold_slot().await?;
            client
                .execute("UPDATE localdp.imports SET reports = $3 WHERE metric = $1 AND digest = $2", &[&self.key, &self.digest, &(self.reports as i64)])
                .await
                .map_err(db)?;
            let imported = &self.state;
            add_to_slot(client, (self.key, store.slot), (imported.metric(), &self.name), rejected, &[], |state| {
                state.merge(imported).map_err(|e| format!("database: {e}"))
            })
            .await
            .map_err(|(_, e)| e)?;
            client.batch_execute("COMMIT").await.map_err(db)
        })?;
        // Committed: the connection goes back to the pool.
        self.client = None;
        Ok(self.reports)
    }
}

impl Drop for Import<'_> {
    fn drop(&mut self) {
        // Not committed: the connection is closed, and its server rolls
        // the transaction back.
        if let Some(client) = self.client.take() {
            drop(Object::take(client));
        }
    }
}

/// Opens exports' snapshots.
pub struct Exporter {
    pool: Pool,
    config: Config,
    shown: String,
}

impl Exporter {
    /// A metric's stored reports as one snapshot (a `REPEATABLE READ`
    /// transaction): with several collectors, row ids are not in commit
    /// order, so "the rows up to the newest id" is no snapshot. Also the
    /// rejection counts and the reports compacted, read in it.
    pub async fn snapshot(&self, key: i64) -> StoreResult<(Snapshot, RejectionCounts, u64)> {
        let client = self.pool.get().await.map_err(|e| connect_error(&self.shown, &self.config, &e))?;
        let snapshot = Snapshot { client: Some(client), key };
        let client = snapshot.client()?;
        // A client that stops reading holds the snapshot (and holds back
        // VACUUM on the whole cluster) only for so long: the server ends it.
        client
            .batch_execute(&format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
                 SET LOCAL idle_in_transaction_session_timeout = {}",
                EXPORT_IDLE.as_millis()
            ))
            .await
            .map_err(db)?;
        let rows = client
            .query("SELECT reason, sum(count)::bigint FROM localdp.rejections WHERE metric = $1 GROUP BY reason", &[&key])
            .await
            .map_err(db)?;
        let rejected = rejection_counts(rows.iter().map(|row| (row.get(0), row.get(1))))?;
        let compacted = compacted(client, key).await?;
        Ok((snapshot, rejected, compacted))
    }
}

/// An export's open snapshot; its transaction ends with it (the connection
/// is closed, not pooled with the transaction open).
pub struct Snapshot {
    client: Option<Object>,
    key: i64,
}

impl Snapshot {
    fn client(&self) -> StoreResult<&Object> {
        self.client.as_ref().ok_or_else(|| "database: the export's snapshot is closed".to_string())
    }

    /// The next reports after row `after`, `limit` at most, in id order.
    pub async fn page(&self, after: i64, limit: usize) -> StoreResult<Vec<(i64, String)>> {
        let rows = self
            .client()?
            .query(
                "SELECT id, report FROM localdp.reports WHERE metric = $1 AND id > $2 ORDER BY id LIMIT $3",
                &[&self.key, &after, &(limit as i64)],
            )
            .await
            .map_err(db)?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            drop(Object::take(client));
        }
    }
}

/// Reads the other collectors' states of the given metrics, again and again.
pub struct Refresher {
    config: Config,
    tls: Tls,
    shown: String,
    slot: i32,
}

impl Refresher {
    /// Every [`REFRESH`]: `each(index, others, batches)` with the merged
    /// states of the other slots and every collector's batch counts, per
    /// `(key, metric)`: rows per collector, not per report or batch. A failed read is logged and
    /// tried again at the next turn (the last states read stay).
    pub fn run(self, metrics: &[(i64, &Metric)], mut each: impl FnMut(usize, Aggregator, Vec<BatchGroup>)) {
        let started = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string());
        let started = started.and_then(|runtime| {
            let pool = runtime.block_on(async { pool(&self.config, &self.tls, 1) })?;
            Ok((runtime, pool))
        });
        let (runtime, pool) = match started {
            Ok(started) => started,
            Err(e) => {
                log_error!("localdp serve: the other collectors' states cannot be read: {e}");
                return;
            }
        };
        let mut failing = false;
        loop {
            std::thread::sleep(REFRESH);
            // Per metric: its others' states and batches, or why not (one
            // metric's unreadable state does not stop the others').
            let read = runtime.block_on(async {
                let client = pool.get().await.map_err(|e| connect_error(&self.shown, &self.config, &e))?;
                let mut out = Vec::with_capacity(metrics.len());
                for (key, metric) in metrics {
                    let one = async { Ok::<_, String>((states(&client, *key, metric, self.slot).await?.1, batch_counts(&client, *key).await?)) };
                    out.push(one.await);
                }
                Ok::<_, String>(out)
            });
            let mut failed = None;
            match read {
                Ok(others) => {
                    for (index, read) in others.into_iter().enumerate() {
                        match read {
                            Ok((others, batches)) => each(index, others, batches),
                            Err(e) => failed = failed.or(Some(e)),
                        }
                    }
                }
                Err(e) => failed = Some(e),
            }
            match failed {
                None if failing => {
                    log_info!("localdp serve: the other collectors' states are read again");
                    failing = false;
                }
                Some(e) if !failing => {
                    log_warn!("localdp serve: the other collectors' states could not be read (estimates count what was read last): {e}");
                    failing = true;
                }
                _ => {}
            }
        }
    }
}

/// Creates the schema and applies the migrations this build knows that the
/// database has not had, under a lock (collectors starting together). A
/// schema already at this build's migration is left as it is, without DDL:
/// PostgreSQL checks CREATE before it checks `IF NOT EXISTS`, and a
/// collector's role needs CREATE only the first time.
/// How many collectors hold a slot of this database, other than slot `$3`
/// (`$1` LOCKS, `$2` SLOTS; pg_locks spans the cluster's databases).
const OTHER_COLLECTORS: &str = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 \
     AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
     AND classid::bigint = $1 AND objid::bigint < $2 AND objid::bigint <> $3";

pub async fn migrate(client: &mut Object, schema: &Schema) -> StoreResult<()> {
    let Schema { name, migrations, shared } = schema;
    let table = format!("{name}.migrations");
    let exists: bool = client.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table]).await.map_err(db)?.get(0);
    if exists {
        let found: i32 =
            client.query_one(&format!("SELECT coalesce(max(version), 0) FROM {table}"), &[]).await.map_err(db)?.get(0);
        if found as usize == migrations.len() {
            return Ok(());
        }
    }
    let transaction = client.transaction().await.map_err(db)?;
    transaction
        .batch_execute(&format!(
            "SELECT pg_advisory_xact_lock({LOCKS}, {START_LOCK}); CREATE SCHEMA IF NOT EXISTS {name}; \
             CREATE TABLE IF NOT EXISTS {table} (version INTEGER PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now());"
        ))
        .await
        .map_err(db)?;
    let found: i32 = transaction
        .query_one(&format!("SELECT coalesce(max(version), 0) FROM {table}"), &[])
        .await
        .map_err(db)?
        .get(0);
    if found as usize > migrations.len() {
        return Err(format!(
            "made by a newer localdp (schema {name} at migration {found}, this build knows {})",
            migrations.len()
        ));
    }
    // A collector of the release before writes the tables as they were
    // (migration 2 keys rejections by slot: its upsert would fail on every
    // rejection, and its batches would go uncounted): migrate a schema in
    // use only once they are stopped.
    if *shared && found > 0 && (found as usize) < migrations.len() {
        let running: i64 = transaction
            .query_one(OTHER_COLLECTORS, &[&i64::from(LOCKS), &i64::from(SLOTS), &-1i64])
            .await
            .map_err(db)?
            .get(0);
        if running > 0 {
            return Err(format!(
                "schema {name} is at migration {found} and this build needs {}, which the {running} collector(s) \
                 running on this database cannot write to: stop them, then start this release",
                migrations.len()
            ));
        }
    }
    for (version, sql) in migrations.iter().enumerate().skip(found as usize) {
        transaction.batch_execute(sql).await.map_err(db)?;
        transaction
            .execute(&format!("INSERT INTO {table} (version) VALUES ($1)"), &[&(version as i32 + 1)])
            .await
            .map_err(db)?;
    }
    transaction.commit().await.map_err(db)
}

/// A metric's reports compacted by retention (`--keep`).
async fn compacted(client: &impl GenericClient, key: i64) -> StoreResult<u64> {
    let row = client
        .query_one("SELECT coalesce(sum(reports), 0)::bigint FROM localdp.compacted WHERE metric = $1", &[&key])
        .await
        .map_err(db)?;
    Ok(row.get::<_, i64>(0) as u64)
}

/// A metric's stored batches that held an accepted report, per shuffler:
/// the collectors' counts, summed.
async fn batch_counts(client: &Object, key: i64) -> StoreResult<Vec<BatchGroup>> {
    let rows = client
        .query(
            "SELECT shuffler, sum(batches)::bigint, sum(reports)::bigint, min(smallest) FROM localdp.batch_counts \
             WHERE metric = $1 GROUP BY shuffler",
            &[&key],
        )
        .await
        .map_err(db)?;
    Ok(batch_groups(rows.iter().map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))).0)
}

async fn states(client: &Object, key: i64, metric: &Metric, slot: i32) -> StoreResult<(Aggregator, Aggregator)> {
    let rows = client.query("SELECT slot, state FROM localdp.states WHERE metric = $1", &[&key]).await.map_err(db)?;
    let (mut own, mut others) = (Aggregator::new(metric.clone()), Aggregator::new(metric.clone()));
    for row in rows {
        let state = Aggregator::from_bytes(metric.clone(), row.get::<_, &[u8]>(1))
            .map_err(|e| format!("database: a stored aggregate state does not fit the metric's config: {e}"))?;
        if row.get::<_, i32>(0) == slot {
            own = state;
        } else {
            others.merge(&state).map_err(|e| format!("database: {e}"))?;
        }
    }
    Ok((own, others))
}

/// What a group's transaction stores, as [`PgStore::append_group`]
/// answers it.
type Appended = (Vec<bool>, Vec<(i64, Aggregator)>);

/// Stores a group in one transaction. Just before its COMMIT is sent,
/// `sent` takes the transaction's id (a commit whose answer is lost is
/// asked about by it) and what the group stores, which is the answer once
/// committed.
async fn append(client: &mut Object, items: &[Item<'_>], (slot, day): (i32, Option<i32>), sent: &mut Option<(i64, Appended)>) -> Result<(), (bool, String)> {
    let pg = |e: tokio_postgres::Error| (unavailable(&e), explain(&e));
    let transaction = client.transaction().await.map_err(pg)?;
    let begun = transaction.prepare_cached(BEGUN).await.map_err(pg)?;
    let xid: i64 = transaction.query_one(&begun, &[]).await.map_err(pg)?.get(0);
    let batch_id = transaction
        .prepare_cached(
            "INSERT INTO localdp.batches (metric, id, size, shuffler) VALUES ($1, $2, $3, $4) ON CONFLICT (metric, id) DO NOTHING",
        )
        .await.map_err(pg)?;
    let mut stored = Vec::with_capacity(items.len());
    let (mut keys, mut texts): (Vec<i64>, Vec<&str>) = (Vec::new(), Vec::new());
    for item in items {
        let new = match item.batch {
            Some(batch) => {
                transaction.execute(&batch_id, &[&item.key, &batch.id, &(item.reports.len() as i64), &batch.shuffler]).await.map_err(pg)? == 1
            }
            None => true,
        };
        stored.push(new);
        if new {
            keys.extend(std::iter::repeat_n(item.key, item.reports.len()));
            texts.extend(item.reports.iter().map(String::as_str));
        }
    }
    if !texts.is_empty() {
        // One statement for the group's reports, in order.
        let insert = transaction
            .prepare_cached("INSERT INTO localdp.reports (metric, report, day) SELECT *, $3::integer FROM unnest($1::bigint[], $2::text[])")
            .await.map_err(pg)?;
        transaction.execute(&insert, &[&keys, &texts, &day]).await.map_err(pg)?;
    }
    // Per metric, in key order: this slot's rows, with the batches added.
    let mut touched: Vec<i64> = items.iter().zip(&stored).filter(|(_, &new)| new).map(|(item, _)| item.key).collect();
    touched.sort_unstable();
    touched.dedup();
    let mut states = Vec::with_capacity(touched.len());
    for key in touched {
        let batches: Vec<&Item> = items.iter().zip(&stored).filter(|(item, &new)| new && item.key == key).map(|(item, _)| item).collect();
        let mut rejected = RejectionCounts::default();
        let mut groups = Vec::new();
        for item in &batches {
            for reason in Rejection::ALL {
                rejected.add(reason, item.rejected.get(reason)).map_err(|e| (false, format!("database: {e}")))?;
            }
            // A batch whose reports were all rejected hides no one.
            if let Some(batch) = item.batch.filter(|_| !item.reports.is_empty()) {
                add_batch(&mut groups, &batch.shuffler, item.reports.len() as u64);
            }
        }
        let state = add_to_slot(&transaction, (key, slot), (batches[0].metric, batches[0].name), &rejected, &groups, |state| {
            for item in &batches {
                fold(state, item.parsed, item.rejected, item.name);
            }
            Ok(())
        })
        .await?;
        states.push((key, state));
    }
    *sent = Some((xid, (stored, states)));
    transaction.commit().await.map_err(pg)
}

/// Adds a batch of `size` reports from `shuffler` to per-shuffler counts.
fn add_batch(groups: &mut Vec<BatchGroup>, shuffler: &str, size: u64) {
    match groups.iter_mut().find(|g| g.0 == shuffler) {
        Some(group) => {
            group.1 += 1;
            group.2 += size;
            group.3 = group.3.min(size);
        }
        None => groups.push((shuffler.to_string(), 1, size, size)),
    }
}

/// Adds to a collector slot's rows of metric `key`, in the transaction of
/// what they count: its rejections by reason, its shuffled batches per
/// shuffler, and its aggregate state, read `FOR UPDATE` (two processes on
/// one slot still add up) and `change`d. A group's append, `store copy`
/// and `import` write through here. The slot's new state; `Err((retry, why))`.
async fn add_to_slot(
    transaction: &impl GenericClient,
    (key, slot): (i64, i32),
    (metric, name): (&Metric, &str),
    rejected: &RejectionCounts,
    groups: &[BatchGroup],
    change: impl FnOnce(&mut Aggregator) -> Result<(), String>,
) -> Result<Aggregator, (bool, String)> {
    let pg = |e: tokio_postgres::Error| (unavailable(&e), explain(&e));
    let count = transaction
        .prepare_cached(
            "INSERT INTO localdp.rejections (metric, reason, slot, count) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (metric, reason, slot) DO UPDATE SET count = localdp.rejections.count + excluded.count",
        )
        .await
        .map_err(pg)?;
    for reason in Rejection::ALL {
        let n = rejected.get(reason);
        if n > 0 {
            transaction.execute(&count, &[&key, &reason.as_str(), &slot, &(n as i64)]).await.map_err(pg)?;
        }
    }
    let batches = transaction
        .prepare_cached(
            "INSERT INTO localdp.batch_counts (metric, slot, shuffler, batches, reports, smallest) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (metric, slot, shuffler) DO UPDATE SET batches = localdp.batch_counts.batches + excluded.batches, \
             reports = localdp.batch_counts.reports + excluded.reports, smallest = least(localdp.batch_counts.smallest, excluded.smallest)",
        )
        .await
        .map_err(pg)?;
    for (shuffler, n, reports, smallest) in groups {
        transaction
            .execute(&batches, &[&key, &slot, shuffler, &(*n as i64), &(*reports as i64), &(*smallest as i64)])
            .await
            .map_err(pg)?;
    }
    let read = transaction.prepare_cached("SELECT state FROM localdp.states WHERE metric = $1 AND slot = $2 FOR UPDATE").await.map_err(pg)?;
    let mut state = match transaction.query_opt(&read, &[&key, &slot]).await.map_err(pg)? {
        // One that does not read back fails the transaction: nothing of it
        // is stored, nothing is lost.
        Some(row) => Aggregator::from_bytes(metric.clone(), row.get::<_, &[u8]>(0))
            .map_err(|e| (false, format!("collector slot {slot}'s stored state of {name} is unreadable: {e}")))?,
        None => Aggregator::new(metric.clone()),
    };
    change(&mut state).map_err(|e| (false, e))?;
    let write = transaction
        .prepare_cached(
            "INSERT INTO localdp.states (metric, slot, state) VALUES ($1, $2, $3) \
             ON CONFLICT (metric, slot) DO UPDATE SET state = excluded.state",
        )
        .await
        .map_err(pg)?;
    transaction.execute(&write, &[&key, &slot, &state.to_bytes()]).await.map_err(pg)?;
    Ok(state)
}
