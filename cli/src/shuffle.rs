//! `localdp shuffle`: a shuffler another party runs between the pages and
//! the collector (docs/shuffler.md).
//!
//! It takes the collector's own report posts (`POST
//! /api/metrics/{name}/reports`, checked by the collector's own code:
//! `serve/intake.rs`), keeps every accepted report in its SQLite file, and
//! per metric, once it holds `--batch` of them, forwards `--batch` of them
//! (chosen, and put in order, uniformly by the OS CSPRNG) to the collector
//! in one post.
//!
//! **Nothing about a sender is kept.** A report is stored as the canonical
//! JSON the validation produced (never the bytes sent), without an address,
//! a header or a time. Its row id is drawn at random, so the table's order
//! is not the arrival order; the only time kept is in memory (when the
//! oldest held report of a metric arrived, for `--max-wait`). In a SQLite
//! file, deleted rows are overwritten (`secure_delete`) and the write-ahead
//! log is truncated after each round that forwarded, so a forwarded batch
//! leaves no report in the file. On PostgreSQL (`shuffle/postgres.rs`)
//! the rows are deleted and vacuumed, which erases less.
//!
//! **Exactly once.** A batch is formed in one transaction: its reports
//! leave the held ones and enter the outbox, already in their shuffled
//! order and under a random batch id, before the first attempt to send it.
//! It leaves the outbox only once the collector has acknowledged it, and
//! the collector stores a batch id once (`Localdp-Batch`), so a batch sent
//! again after a crash is stored once. A report is acknowledged to its
//! sender only once it is on disk here.
//!
//! **Nothing stalls.** Each round sends every batch of the outbox once; a
//! batch the collector will not take as it is (413, 401, 403, 404) is
//! *parked*: kept, logged, and sent again at the next start and once an
//! hour, while the other metrics' batches go on. A batch is dropped only
//! when the collector's own answer says it rejected every report of it.

use crate::serve::logging::{log_error, log_info, log_warn};
use crate::serve::access::{fingerprint, Tokens};
use crate::serve::collector::{self, Batch};
use crate::serve::intake::{self, Front, FrontArgs, Post, BATCH_HEADER};
use crate::serve::store::{self, StoreResult};
use crate::serve::writer::MAX_GROUP_REPORTS;
use crate::serve::telemetry::{family, Telemetry};
use crate::serve::response::{json, retry_later};
use crate::serve::signals;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, Method, Request, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use localdp::rng::{RngCore, UniformBelow};
use localdp::{Metric, SecureRng};
use rusqlite::{params, Connection};
use serde_json::json;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod outgoing;
mod postgres;
use outgoing::{Hold, Outgoing};

/// A post waiting for the commit of its reports: `Ok` once they are on
/// disk, else why nothing of them is.
type Queued = (Hold, tokio::sync::oneshot::Sender<StoreResult<()>>);

/// `localdp shuffle` options.
#[derive(clap::Args)]
pub struct ShuffleArgs {
    /// The collector's URL, as `localdp serve` prints it (`http://HOST:PORT`,
    /// optionally with a path prefix). Plain HTTP only: run the shuffler
    /// where it reaches the collector over a private network or a tunnel.
    #[arg(long, value_name = "URL")]
    forward: String,
    /// Reports per metric that make a batch: once the shuffler holds this
    /// many of a metric, it forwards this many of them (chosen by the
    /// CSPRNG), shuffled; a batch never holds more.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,
    /// Also forward a smaller batch once its oldest report has waited this
    /// long (`90`, `90s`, `15m`, `2h`), if it holds at least --min-batch. A
    /// small batch weakens the central ε of every report in it.
    #[arg(long, value_name = "T", requires = "min_batch", value_parser = parse_wait)]
    max_wait: Option<Duration>,
    /// The smallest batch --max-wait forwards.
    #[arg(long, value_name = "M", requires = "max_wait", value_parser = clap::value_parser!(u64).range(1..))]
    min_batch: Option<u64>,
    /// Shuffler tokens, one per line: tokens of the collector's
    /// --shuffler-token-file (the only ones it takes batches from); the
    /// first is sent with each batch.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Where the reports held and the batches not yet acknowledged are
    /// kept: a SQLite file (created if missing), or a PostgreSQL database
    /// (`postgres://` or `postgresql://` URL; one shuffler per database).
    /// On SQLite a forwarded batch leaves no report in the file. On
    /// PostgreSQL its rows are deleted and VACUUMed after each round, but
    /// their bytes stay in the write-ahead log (and in archives of it) and
    /// in freed pages until reused: where erasure matters, use SQLite, or an
    /// encrypted volume and no WAL archiving (docs/shuffler.md).
    #[arg(long, default_value = "localdp-shuffle.sqlite")]
    db: PathBuf,
    /// TCP port; 0 picks a free one (the URL printed first says which).
    #[arg(long, default_value_t = 8081)]
    port: u16,
    #[command(flatten)]
    front: FrontArgs,
}

/// `90`, `90s`, `15m`, `2h`: a wait of at least a second.
fn parse_wait(text: &str) -> Result<Duration, String> {
    let (number, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, "s"),
    };
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return Err("a wait is a number of seconds, optionally followed by s, m or h (90, 90s, 15m, 2h)".into()),
    };
    match number.parse::<u64>().ok().and_then(|n| n.checked_mul(scale)) {
        Some(seconds) if seconds > 0 => Ok(Duration::from_secs(seconds)),
        _ => Err("a wait is a whole number of seconds, minutes or hours, at least 1 s".into()),
    }
}

/// Puts `items` in a uniformly random order (Fisher–Yates): every one of
/// the `n!` orders is equally likely, given uniform integers, which
/// [`UniformBelow`] draws exactly (by rejection, never `%`). Production
/// passes [`SecureRng`]; tests pass a seeded generator.
pub fn shuffle<T, R: RngCore + ?Sized>(items: &mut [T], rng: &mut R) {
    for i in (1..items.len()).rev() {
        let j = UniformBelow::new(i as u64 + 1).expect("i + 1 is at least 1").sample(rng) as usize;
        items.swap(i, j);
    }
}

const SCHEMA_VERSION: i64 = 1;

/// `pending`: the reports held, one row each, under a random row id.
/// `outbox`: the batches formed and not yet acknowledged, each its shuffled
/// body; `parked` if the collector refused it as it is (sent again at the
/// next start and once an hour).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pending (
    id INTEGER PRIMARY KEY,
    metric TEXT NOT NULL,
    report TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_by_metric ON pending(metric);
CREATE TABLE IF NOT EXISTS outbox (
    id TEXT PRIMARY KEY,
    metric TEXT NOT NULL,
    size INTEGER NOT NULL,
    body TEXT NOT NULL,
    parked INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
";

/// A batch of at most `size` of the reports `held` (row id, report) of
/// `metric`: chosen and ordered uniformly, under a random id; and the row
/// ids chosen.
fn choose(mut held: Vec<(i64, String)>, metric: &str, size: u64, rng: &mut dyn RngCore) -> (Vec<i64>, Outgoing) {
    // A uniform order of all held: its first `size` are a uniform choice
    // of them, in a uniform order.
    shuffle(&mut held, rng);
    held.truncate(usize::try_from(size).unwrap_or(usize::MAX));
    let (ids, reports): (Vec<i64>, Vec<String>) = held.into_iter().unzip();
    let mut id = [0u8; 16];
    rng.fill_bytes(&mut id);
    let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let outgoing = Outgoing { id, metric: metric.to_string(), size: reports.len() as u64, body: format!("[{}]", reports.join(",")) };
    (ids, outgoing)
}

/// Where the reports held and the batches not yet acknowledged are kept.
enum Tables {
    /// A SQLite file: deleted rows are overwritten (`secure_delete`), and
    /// the write-ahead log is truncated after each round that forwarded.
    Sqlite(Connection),
    /// PostgreSQL (`--db postgres://…`).
    Postgres(postgres::Tables),
}

/// The shuffler's tables, and the generator that draws row ids, choices,
/// orders and batch ids: the OS CSPRNG ([`SecureRng`]) in production, a
/// seeded one in unit tests only.
struct Held {
    tables: Tables,
    rng: Box<dyn RngCore + Send>,
}

/// A SQLite error, as PostgreSQL's are shown.
fn sql(e: rusqlite::Error) -> String {
    format!("database: {e}")
}

impl Held {
    /// `--db`: a PostgreSQL URL, else a SQLite file.
    fn open(db: &std::path::Path) -> StoreResult<Held> {
        let rng = Box::new(SecureRng::new().map_err(|e| e.to_string())?);
        match crate::serve::postgres::url_of(db)? {
            Some(url) => Ok(Held { tables: Tables::Postgres(postgres::Tables::open(url)?), rng }),
            None => Held::open_with(db, rng),
        }
    }

    /// A SQLite file, with the generator `rng`.
    fn open_with(path: &std::path::Path, rng: Box<dyn RngCore + Send>) -> StoreResult<Held> {
        let connection = store::open(path, SCHEMA, SCHEMA_VERSION, "localdp shuffle")?;
        connection.execute_batch("PRAGMA secure_delete = ON;").map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Held { tables: Tables::Sqlite(connection), rng })
    }

    /// What the log names: the file, or the URL without its password.
    fn describe(&self, db: &std::path::Path) -> String {
        match &self.tables {
            Tables::Sqlite(_) => db.display().to_string(),
            Tables::Postgres(p) => p.describe().to_string(),
        }
    }

    /// Keeps the accepted reports of `posts`, all or none, in one
    /// transaction, each under a random row id (drawn again in the unlikely
    /// case it is taken).
    fn hold(&mut self, posts: &[Hold]) -> StoreResult<()> {
        let rng = &mut *self.rng;
        match &mut self.tables {
            Tables::Sqlite(connection) => (|| {
                let transaction = connection.transaction()?;
                {
                    let mut insert = transaction
                        .prepare_cached("INSERT OR IGNORE INTO pending (id, metric, report) VALUES (?1, ?2, ?3)")?;
                    for post in posts {
                        for report in &post.reports {
                            while insert.execute(params![rng.next_u64() as i64, post.metric, report])? == 0 {}
                        }
                    }
                }
                transaction.commit()
            })()
            .map_err(sql),
            Tables::Postgres(p) => p.hold(posts, rng),
        }
    }

    /// Reports held per metric.
    fn held(&self) -> StoreResult<Vec<(String, u64)>> {
        match &self.tables {
            Tables::Sqlite(connection) => (|| {
                let mut statement = connection.prepare_cached("SELECT metric, count(*) FROM pending GROUP BY metric")?;
                let rows = statement.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64)))?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })()
            .map_err(sql),
            Tables::Postgres(p) => p.held(),
        }
    }

    /// Forms a batch of at most `size` reports held of `metric`, in one
    /// transaction: chosen and ordered uniformly, under a random id, into
    /// the outbox, and out of `pending`.
    fn form(&mut self, metric: &str, size: u64) -> StoreResult<Outgoing> {
        let rng = &mut *self.rng;
        match &mut self.tables {
            Tables::Sqlite(connection) => (|| {
                let transaction = connection.transaction()?;
                let held: Vec<(i64, String)> = {
                    let mut select = transaction.prepare_cached("SELECT id, report FROM pending WHERE metric = ?1 ORDER BY id")?;
                    let rows = select.query_map([metric], |r| Ok((r.get(0)?, r.get(1)?)))?;
                    rows.collect::<rusqlite::Result<_>>()?
                };
                let (ids, outgoing) = choose(held, metric, size, rng);
                {
                    let mut delete = transaction.prepare_cached("DELETE FROM pending WHERE id = ?1")?;
                    for id in &ids {
                        delete.execute([id])?;
                    }
                }
                transaction.execute(
                    "INSERT INTO outbox (id, metric, size, body) VALUES (?1, ?2, ?3, ?4)",
                    params![outgoing.id, outgoing.metric, outgoing.size as i64, outgoing.body],
                )?;
                transaction.commit()?;
                Ok(outgoing)
            })()
            .map_err(sql),
            Tables::Postgres(p) => p.form(metric, |held| choose(held, metric, size, rng)),
        }
    }

    /// The batches formed, not yet acknowledged and not parked.
    fn outbox(&self) -> StoreResult<Vec<Outgoing>> {
        match &self.tables {
            Tables::Sqlite(connection) => (|| {
                let mut statement = connection.prepare_cached("SELECT id, metric, size, body FROM outbox WHERE parked = 0")?;
                let rows = statement.query_map([], |r| {
                    Ok(Outgoing { id: r.get(0)?, metric: r.get(1)?, size: r.get::<_, i64>(2)? as u64, body: r.get(3)? })
                })?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })()
            .map_err(sql),
            Tables::Postgres(p) => p.outbox(),
        }
    }

    /// The batches formed and not yet acknowledged: (waiting, parked).
    fn batches(&self) -> StoreResult<(u64, u64)> {
        match &self.tables {
            Tables::Sqlite(connection) => connection
                .query_row("SELECT count(*) - coalesce(sum(parked), 0), coalesce(sum(parked), 0) FROM outbox", [], |r| {
                    Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
                })
                .map_err(sql),
            Tables::Postgres(p) => p.batches(),
        }
    }

    /// Parks a batch the collector would not take as it is.
    fn park(&mut self, id: &str) -> StoreResult<()> {
        match &self.tables {
            Tables::Sqlite(connection) => connection.execute("UPDATE outbox SET parked = 1 WHERE id = ?1", [id]).map(|_| ()).map_err(sql),
            Tables::Postgres(p) => p.park(id),
        }
    }

    /// Makes the parked batches due again; how many there were.
    fn unpark(&mut self) -> StoreResult<usize> {
        match &self.tables {
            Tables::Sqlite(connection) => connection.execute("UPDATE outbox SET parked = 0 WHERE parked = 1", []).map_err(sql),
            Tables::Postgres(p) => p.unpark(),
        }
    }

    /// Drops an acknowledged batch.
    fn sent(&mut self, id: &str) -> StoreResult<()> {
        match &self.tables {
            Tables::Sqlite(connection) => connection.execute("DELETE FROM outbox WHERE id = ?1", [id]).map(|_| ()).map_err(sql),
            Tables::Postgres(p) => p.sent(id),
        }
    }

    /// After a round that dropped batches: erases what held their reports
    /// as far as the database can (SQLite: truncates the write-ahead log;
    /// PostgreSQL: `VACUUM`s the tables).
    fn scrub(&mut self) -> StoreResult<()> {
        match &self.tables {
            Tables::Sqlite(connection) => connection.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).map_err(sql),
            Tables::Postgres(p) => p.scrub(),
        }
    }
}

/// The collector, as `--forward` names it.
struct Collector {
    /// `host:port`, to connect to and to send as `Host`.
    authority: String,
    /// The path before `/api/…`, without a trailing slash.
    prefix: String,
    /// `Authorization` for batches (`--token-file`).
    authorization: std::sync::RwLock<Option<HeaderValue>>,
    /// `--token-file`, read again on SIGHUP.
    token_file: Option<PathBuf>,
}

impl Collector {
    fn parse(url: &str) -> Result<Collector, String> {
        let bad = |why: &str| format!("--forward {url:?}: {why}");
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            bad("the collector's URL starts with http:// (https is not supported: reach the collector over a private network or a tunnel)")
        })?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority.is_empty() || authority.contains(['@', '?', '#', ' ']) {
            return Err(bad("expected http://HOST[:PORT][/PATH]"));
        }
        let authority = if authority.rsplit_once(':').is_some_and(|(_, port)| port.parse::<u16>().is_ok()) {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        Ok(Collector { authority, prefix: path.trim_end_matches('/').to_string(), authorization: Default::default(), token_file: None })
    }

    /// One request on a fresh connection: the status and body of the answer.
    /// Reads `--token-file` (at start, and again on SIGHUP): its first token
    /// goes with each batch from now on.
    fn read_token(&self) -> Result<(), String> {
        let Some(file) = &self.token_file else { return Ok(()) };
        let token = Tokens::read(file, "--token-file")?;
        log_info!("localdp shuffle: batches are sent with the shuffler token {}", fingerprint(token.first()));
        let value = [&b"Bearer "[..], token.first()].concat();
        let mut value = HeaderValue::from_bytes(&value).map_err(|e| e.to_string())?;
        value.set_sensitive(true);
        *self.authorization.write().expect("no panics while holding the lock") = Some(value);
        Ok(())
    }

    /// The answer's status and body, and its `Retry-After` (in seconds).
    async fn request(&self, method: Method, path: &str, batch: Option<&Outgoing>) -> Result<Answer, String> {
        let exchange = async {
            let stream = tokio::net::TcpStream::connect(&self.authority).await.map_err(|e| e.to_string())?;
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
            tokio::spawn(connection);
            let mut request = Request::builder()
                .method(method)
                .uri(format!("{}{path}", self.prefix))
                .header(header::HOST, &self.authority);
            let body = match batch {
                Some(batch) => {
                    request = request.header(header::CONTENT_TYPE, "application/json").header(BATCH_HEADER, &batch.id);
                    if let Some(authorization) = self.authorization.read().expect("no panics while holding the lock").clone() {
                        request = request.header(header::AUTHORIZATION, authorization);
                    }
                    Body::from(batch.body.clone())
                }
                None => Body::empty(),
            };
            let request = request.body(body).map_err(|e| e.to_string())?;
            let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
            let status = response.status();
            let retry_after = response
                .headers()
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
                .map(|seconds| Duration::from_secs(seconds.min(MAX_RETRY_AFTER.as_secs())));
            let body = axum::body::to_bytes(Body::new(response.into_body()), 1 << 20).await.map_err(|e| e.to_string())?;
            Ok(Answer { status, body: body.to_vec(), retry_after })
        };
        tokio::time::timeout(COLLECTOR_TIMEOUT, exchange)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {} s", COLLECTOR_TIMEOUT.as_secs())))
    }
}

/// An answer of the collector.
struct Answer {
    status: StatusCode,
    body: Vec<u8>,
    /// `Retry-After` in seconds (up to [`MAX_RETRY_AFTER`]).
    retry_after: Option<Duration>,
}

/// The longest `Retry-After` of the collector's that is honoured as it is.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);
/// How long one request to the collector may take.
const COLLECTOR_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest pause between two rounds that left a batch to retry.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often the parked batches are sent again (and at each start).
const PARKED_RETRY: Duration = Duration::from_secs(3600);

struct App {
    /// Batches acknowledged, and attempts that were not (`/metrics`).
    forwarded: AtomicU64,
    errors: AtomicU64,
    /// When the process started, and `--db` (`/metrics`).
    started: std::time::SystemTime,
    db: PathBuf,
    front: Arc<Front>,
    collector: Collector,
    /// The metrics learnt from the collector, by name.
    metrics: Mutex<HashMap<String, Arc<Metric>>>,
    held: Mutex<Held>,
    /// Per metric with reports held: when the oldest of them arrived (in
    /// memory only; the file keeps no time).
    since: Mutex<HashMap<String, Instant>>,
    /// Posts whose reports wait for the next commit (group commit).
    queued: Mutex<Vec<Queued>>,
    /// Rung when reports were held.
    wake: tokio::sync::Notify,
    batch: u64,
    /// `--max-wait` and `--min-batch`.
    max_wait: Option<(Duration, u64)>,
}

impl App {
    /// The metric `name` as the collector describes it (asked once), or the
    /// answer to give.
    async fn metric(&self, name: &str) -> Result<Arc<Metric>, Response> {
        if let Some(metric) = self.metrics.lock().expect("no panics while holding the lock").get(name) {
            return Ok(Arc::clone(metric));
        }
        let unknown = || json(StatusCode::NOT_FOUND, json!({"error": format!("the collector has no metric named {name:?}")}));
        if !collector::valid_name(name) {
            return Err(unknown());
        }
        let unreachable = |why: String| {
            log_warn!("localdp shuffle: could not learn metric {name:?} from the collector: {why}");
            let error = "the collector could not be asked for this metric's config; nothing was counted; retry later";
            retry_later(StatusCode::BAD_GATEWAY, json!({ "error": error, "retry_after": 5 }), 5)
        };
        let Answer { status, body, .. } =
            self.collector.request(Method::GET, &format!("/api/metrics/{name}"), None).await.map_err(unreachable)?;
        match status {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND => return Err(unknown()),
            other => return Err(unreachable(format!("answered {other}"))),
        }
        #[derive(serde::Deserialize)]
        struct Described {
            config: Box<serde_json::value::RawValue>,
        }
        let metric = serde_json::from_slice::<Described>(&body)
            .map_err(|e| e.to_string())
            .and_then(|d| Metric::from_json(d.config.get()).map_err(|e| e.to_string()))
            .map_err(unreachable)?;
        log_info!("localdp shuffle: metric {name:?}: {} ε={}", metric.protocol().name(), metric.epsilon());
        let metric = Arc::new(metric);
        self.metrics.lock().expect("no panics while holding the lock").insert(name.to_string(), Arc::clone(&metric));
        Ok(metric)
    }

    /// Runs `work` on the file, off the async workers.
    async fn with_held<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&mut Held) -> StoreResult<T> + Send + 'static,
    ) -> Result<T, String> {
        let app = Arc::clone(self);
        tokio::task::spawn_blocking(move || work(&mut app.held.lock().expect("no panics while holding the lock")))
            .await
            .map_err(|e| e.to_string())?
    }

    /// Group commit: holds the reports of every post queued by now, in one
    /// transaction per [`MAX_GROUP_REPORTS`] reports, and answers each post
    /// once its transaction is committed (or failed). Called with the
    /// tables by each post after it queued itself, so a post waits for at
    /// most the commit under way and the one that holds it; under load one
    /// commit serves many posts.
    fn hold_queued(&self, held: &mut Held) {
        loop {
            let group: Vec<Queued> = {
                let mut queued = self.queued.lock().expect("no panics while holding the lock");
                let mut reports = 0;
                let take = queued
                    .iter()
                    .take_while(|(post, _)| {
                        let first = reports == 0;
                        reports += post.reports.len();
                        first || reports <= MAX_GROUP_REPORTS
                    })
                    .count();
                queued.drain(..take).collect()
            };
            if group.is_empty() {
                return;
            }
            let (posts, replies): (Vec<Hold>, Vec<_>) = group.into_iter().unzip();
            let stored = held.hold(&posts);
            if stored.is_ok() {
                // Under the tables' lock, as a batch is formed: the wait
                // starts with the first report a batch will hold.
                let mut since = self.since.lock().expect("no panics while holding the lock");
                for post in posts {
                    since.entry(post.metric).or_insert_with(Instant::now);
                }
            }
            for reply in replies {
                let _ = reply.send(stored.clone());
            }
        }
    }
}

/// Runs the shuffler until SIGINT or SIGTERM. The reports held and the
/// batches not yet acknowledged stay in the file for the next start.
pub fn run(args: ShuffleArgs) -> Result<(), String> {
    crate::serve::abort_on_panic();
    crate::serve::logging::set_format(args.front.log_format);
    let mut collector = Collector::parse(&args.forward)?;
    collector.token_file = args.token_file.clone();
    collector.read_token()?;
    if args.min_batch.is_some_and(|m| m > args.batch) {
        return Err(format!("--min-batch {} is larger than --batch {}", args.min_batch.unwrap_or(0), args.batch));
    }
    let front = Arc::new(args.front.front("localdp shuffle", Arc::new(Telemetry::new(0)))?);
    if !args.front.limits_reports() {
        log_info!(
            "localdp shuffle: no --reports-per-minute: one sender may fill a batch with its own reports, and the \
             central ε shown assumes the others of a batch come from distinct honest users (docs/shuffler.md)"
        );
    }
    let mut held = Held::open(&args.db)?;
    let parked = held.unpark()?;
    let (waiting, unsent) = (held.held()?, held.outbox()?.len());
    log_info!(
        "localdp shuffle: {} ({} reports held, {unsent} batches to send again, {parked} of them parked before), forwarding to http://{}{} in batches of {}{}",
        held.describe(&args.db),
        waiting.iter().map(|(_, n)| n).sum::<u64>(),
        collector.authority,
        collector.prefix,
        args.batch,
        match (args.max_wait, args.min_batch) {
            (Some(wait), Some(min)) => format!(", or of at least {min} after {} s", wait.as_secs()),
            _ => String::new(),
        }
    );
    let now = Instant::now();
    let app = Arc::new(App {
        front,
        collector,
        metrics: Mutex::new(HashMap::new()),
        held: Mutex::new(held),
        since: Mutex::new(waiting.into_iter().map(|(metric, _)| (metric, now)).collect()),
        queued: Mutex::new(Vec::new()),
        wake: tokio::sync::Notify::new(),
        forwarded: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        started: std::time::SystemTime::now(),
        db: args.db.clone(),
        batch: args.batch,
        max_wait: args.max_wait.zip(args.min_batch),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(serve(app, args.front.bind, args.port))?;
    log_info!("localdp shuffle: stopped");
    Ok(())
}

async fn serve(app: Arc<App>, bind: std::net::IpAddr, port: u16) -> Result<(), String> {
    let listener =
        tokio::net::TcpListener::bind((bind, port)).await.map_err(|e| format!("cannot listen on {bind}:{port}: {e}"))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let (first, _second) = signals().map_err(|e| format!("cannot handle signals: {e}"))?;
    // SIGHUP reads `--token-file` (a token rotated at the collector) and
    // `--allow-origin-file` again; a file that does not read keeps what was
    // read from it last, and the log says why.
    let reloaded = Arc::clone(&app);
    crate::serve::on_hangup(move || {
        if let Err(e) = reloaded.collector.read_token() {
            log_error!("localdp shuffle: SIGHUP: the old token is kept: {e}");
        }
        reloaded.front.reload_origins("localdp shuffle");
    })?;
    crate::serve::print_url(address);
    tokio::spawn(forward(Arc::clone(&app)));
    let router = Router::new()
        .route("/api/metrics/{name}/reports", post(post_reports))
        .route("/healthz", get(|| async { json(StatusCode::OK, json!({"status": "ok"})) }))
        .route("/metrics", get(prometheus))
        .fallback(|| async { json(StatusCode::NOT_FOUND, json!({"error": "no such endpoint (a shuffler takes report posts only)"})) })
        .layer(from_fn_with_state(Arc::clone(&app.front), intake::cors))
        .layer(from_fn_with_state(Arc::clone(&app.front), intake::own_host))
        .with_state(app);
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, service)
        .with_graceful_shutdown(async move {
            let _ = first.await;
        })
        .await
        .map_err(|e| e.to_string())
}

/// `GET /metrics`: Prometheus text: the reports held, the batches waiting
/// and parked, the batches forwarded and the failed attempts, and the
/// process (as the collector's).
async fn prometheus(State(app): State<Arc<App>>) -> Response {
    let Ok((held, (waiting, parked))) = app.with_held(|held| Ok((held.held()?, held.batches()?))).await else {
        return json(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "the shuffler's file could not be read"}));
    };
    let mut out = String::new();
    family(&mut out, "localdp_shuffler_reports_held", "gauge", "Reports held until their batch is formed, per metric.");
    for (metric, n) in held {
        out.push_str(&format!("localdp_shuffler_reports_held{{metric=\"{metric}\"}} {n}\n"));
    }
    family(&mut out, "localdp_shuffler_batches_waiting", "gauge", "Batches formed and not yet acknowledged by the collector.");
    out.push_str(&format!("localdp_shuffler_batches_waiting {waiting}\n"));
    family(&mut out, "localdp_shuffler_batches_parked", "gauge", "Batches the collector would not take as they are (sent again hourly and at start).");
    out.push_str(&format!("localdp_shuffler_batches_parked {parked}\n"));
    family(&mut out, "localdp_shuffler_batches_forwarded_total", "counter", "Batches the collector acknowledged, since start.");
    out.push_str(&format!("localdp_shuffler_batches_forwarded_total {}\n", app.forwarded.load(Ordering::Relaxed)));
    family(
        &mut out,
        "localdp_shuffler_forward_errors_total",
        "counter",
        "Attempts to forward a batch that were not acknowledged (no answer, 5xx, 429, …), since start.",
    );
    out.push_str(&format!("localdp_shuffler_forward_errors_total {}\n", app.errors.load(Ordering::Relaxed)));
    crate::serve::telemetry::render_process(&mut out, app.started, &app.db);
    crate::serve::telemetry::response(out)
}

/// `POST /api/metrics/{name}/reports`: the collector's, with the
/// collector's checks and answers; the accepted reports are held (on disk
/// before the answer), the rejected ones only counted in the answer.
async fn post_reports(State(app): State<Arc<App>>, post: Post) -> Response {
    let name = post.name.clone();
    let metric = match app.metric(&name).await {
        Ok(metric) => metric,
        Err(response) => return response,
    };
    let received = match app.front.receive(&metric, post, None).await {
        Ok(received) => received,
        Err(refusal) => return refusal.response(),
    };
    let Batch { reports, rejected, described, .. } = received.batch;
    let accepted = reports.len();
    if accepted > 0 {
        let (reply, stored) = tokio::sync::oneshot::channel();
        app.queued.lock().expect("no panics while holding the lock").push((Hold { metric: name.clone(), reports }, reply));
        // Whoever has the tables next holds this post's reports with every
        // other post queued by then; by the time this post has had them,
        // its reports were committed (or failed), and it was told.
        let shared = Arc::clone(&app);
        let held = match app.with_held(move |held| {
            shared.hold_queued(held);
            Ok(())
        })
        .await {
            Ok(()) => stored.await.unwrap_or_else(|_| Err("the shuffler is stopping".into())),
            Err(e) => Err(e),
        };
        if let Err(e) = held {
            log_error!("{name}: {accepted} reports not held: {e}");
            app.front.refund(&received.taken);
            // As the collector answers a store it cannot write (a database
            // restarting): nothing was kept, so the sender may post again.
            let error = "the reports could not be stored; nothing of them was counted";
            return retry_later(StatusCode::SERVICE_UNAVAILABLE, json!({ "error": error, "retry_after": 1 }), 1);
        }
        app.wake.notify_one();
    }
    intake::answer(accepted, rejected, &described)
}

/// Forms each batch that is due, then sends every batch of the outbox
/// once, round after round, for as long as the process runs. A batch that
/// is not acknowledged waits for the next round (after a pause that doubles
/// while batches fail), never holding up the others.
async fn forward(app: Arc<App>) {
    let mut pause = Duration::from_millis(500);
    let mut unparked = Instant::now();
    loop {
        if unparked.elapsed() >= PARKED_RETRY {
            unparked = Instant::now();
            match app.with_held(|held| held.unpark()).await {
                Ok(0) => {}
                Ok(n) => log_info!("localdp shuffle: {n} parked batches are sent again"),
                Err(e) => log_error!("localdp shuffle: {e}"),
            }
        }
        form_due(&app).await;
        let mut retry = false;
        // The collector's Retry-After: the batches left wait for it too
        // (they would be refused the same way).
        let mut wait = None;
        let mut done = false;
        match app.with_held(|held| held.outbox()).await {
            Ok(outbox) => {
                for batch in outbox {
                    match deliver(&app, batch).await {
                        Ok(()) => done = true,
                        Err(asked) => {
                            retry = true;
                            wait = asked;
                            if wait.is_some() {
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => log_error!("localdp shuffle: {e}"),
        }
        // The batches dropped (or parked) leave nothing of their reports
        // that the database can erase.
        if done {
            if let Err(e) = app.with_held(|held| held.scrub()).await {
                log_error!("localdp shuffle: {e}");
            }
        }
        if retry {
            let next = wait.unwrap_or(pause);
            let why = if wait.is_some() { " (the collector's Retry-After)" } else { "" };
            log_info!("localdp shuffle: batches not acknowledged are sent again in {} ms{why}", next.as_millis());
            tokio::time::sleep(next).await;
            pause = (pause * 2).min(MAX_BACKOFF);
            continue;
        }
        pause = Duration::from_millis(500);
        // A post wakes it; the tick sees --max-wait pass.
        tokio::select! {
            _ = app.wake.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// Forms the batches that are due: per metric, one of `--batch` for every
/// `--batch` held, then one of what is left if `--max-wait` has passed and
/// at least `--min-batch` is left.
async fn form_due(app: &Arc<App>) {
    let held = match app.with_held(|held| held.held()).await {
        Ok(held) => held,
        Err(e) => return log_error!("localdp shuffle: {e}"),
    };
    for (metric, n) in held {
        let late = {
            let since = app.since.lock().expect("no panics while holding the lock");
            app.max_wait.is_some_and(|(wait, min)| n % app.batch >= min && since.get(&metric).is_none_or(|t| t.elapsed() >= wait))
        };
        let sizes = std::iter::repeat_n(app.batch, (n / app.batch) as usize).chain(late.then_some(n % app.batch));
        let sizes: Vec<u64> = sizes.collect();
        if sizes.is_empty() {
            continue;
        }
        let shared = Arc::clone(app);
        let formed = app
            .with_held(move |held| {
                for size in sizes {
                    held.form(&metric, size)?;
                }
                // Reports held from here on (or left) wait for the next batch.
                let left = held.held()?.into_iter().any(|(m, _)| m == metric);
                let mut since = shared.since.lock().expect("no panics while holding the lock");
                if left {
                    since.insert(metric, Instant::now());
                } else {
                    since.remove(&metric);
                }
                Ok(())
            })
            .await;
        if let Err(e) = formed {
            log_error!("localdp shuffle: a batch could not be formed: {e}");
        }
    }
}

/// What to do with a batch after the collector's answer.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Acknowledged (stored, or stored before): drop it.
    Stored,
    /// The collector's own answer that it rejected every report of it
    /// (its config changed since they were accepted here): counted there as
    /// rejections, and not to be sent again.
    Rejected,
    /// Refused as it is (too large, not authorized, no such metric):
    /// sending it again at once would be refused again.
    Parked,
    /// Anything else (a 5xx, a 429, a proxy's answer, no answer): send it
    /// again next round.
    Retry,
}

/// The outcome of an answer `status` with `body`. A 400 drops the batch
/// only if its body is the collector's answer with nothing accepted and
/// something rejected: a proxy, or a body that could not be read, also
/// answers 400, and the batch's reports were acknowledged to their senders.
fn outcome(status: StatusCode, body: &[u8]) -> Outcome {
    #[derive(serde::Deserialize)]
    struct Answer {
        accepted: u64,
        rejected: HashMap<String, u64>,
    }
    match status {
        StatusCode::OK => Outcome::Stored,
        StatusCode::BAD_REQUEST => match serde_json::from_slice::<Answer>(body) {
            Ok(answer) if answer.accepted == 0 && answer.rejected.values().any(|n| *n > 0) => Outcome::Rejected,
            _ => Outcome::Retry,
        },
        StatusCode::PAYLOAD_TOO_LARGE | StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::NOT_FOUND => {
            Outcome::Parked
        }
        _ => Outcome::Retry,
    }
}

/// Sends a batch once; drops it if the collector acknowledged it (or
/// rejected all of it), parks it if the collector will not take it as it
/// is. `Err` if it is to be sent again next round, with the collector's
/// `Retry-After` if it gave one.
async fn deliver(app: &Arc<App>, batch: Outgoing) -> Result<(), Option<Duration>> {
    let delivered = attempt(app, batch).await;
    let counter = if delivered.is_ok() { &app.forwarded } else { &app.errors };
    counter.fetch_add(1, Ordering::Relaxed);
    delivered
}

/// [`deliver`]'s one attempt.
async fn attempt(app: &Arc<App>, batch: Outgoing) -> Result<(), Option<Duration>> {
    let path = format!("/api/metrics/{}/reports", batch.metric);
    let Answer { status, body, retry_after } = match app.collector.request(Method::POST, &path, Some(&batch)).await {
        Ok(answer) => answer,
        Err(e) => {
            log_warn!("{}: a batch of {} reports was not acknowledged ({e})", batch.metric, batch.size);
            return Err(None);
        }
    };
    let why = || format!("answered {status}: {}", String::from_utf8_lossy(&body).trim());
    let id = batch.id.clone();
    let done = match outcome(status, &body) {
        Outcome::Retry => {
            log_warn!("{}: a batch of {} reports was not acknowledged ({})", batch.metric, batch.size, why());
            return Err(retry_after);
        }
        Outcome::Parked => {
            log_info!(
                "{}: a batch of {} reports is parked ({}): kept, and sent again at the next start and every {} min",
                batch.metric,
                batch.size,
                why(),
                PARKED_RETRY.as_secs() / 60
            );
            return app.with_held(move |held| held.park(&id)).await.map_err(|e| {
                log_error!("{}: a batch could not be parked: {e}", batch.metric);
                None
            });
        }
        Outcome::Rejected => format!("the collector rejected every report of a batch of {} ({})", batch.size, why()),
        Outcome::Stored => format!("forwarded a shuffled batch of {} reports", batch.size),
    };
    match app.with_held(move |held| held.sent(&id)).await {
        Ok(()) => log_info!("{}: {done}", batch.metric),
        // Sent again at the next start (or the next round): the collector
        // stores it once.
        Err(e) => log_error!("{}: a forwarded batch could not be dropped: {e}", batch.metric),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use localdp::SimulationRng;

    /// Every order of 4 items comes out as often as a uniform shuffle says:
    /// 240,000 shuffles with a seeded generator (the shuffle takes any
    /// generator; production passes the OS CSPRNG), each of the 24 counts
    /// within 5.6 standard deviations of 10,000 (two-sided, 24 counts:
    /// a false alarm at most 24 × 2.1e-8 = 5e-7).
    #[test]
    fn every_order_is_equally_likely() {
        let mut rng = SimulationRng::seed_from_u64(26);
        let mut counts: HashMap<[u8; 4], u64> = HashMap::new();
        let trials = 240_000u64;
        for _ in 0..trials {
            let mut items = [0u8, 1, 2, 3];
            shuffle(&mut items, &mut rng);
            *counts.entry(items).or_default() += 1;
        }
        assert_eq!(counts.len(), 24);
        let p = 1.0 / 24.0;
        let mean = trials as f64 * p;
        let sd = (trials as f64 * p * (1.0 - p)).sqrt();
        for (order, count) in counts {
            assert!((count as f64 - mean).abs() < 5.6 * sd, "{order:?}: {count} (mean {mean}, sd {sd:.1})");
        }
    }

    /// `form` chooses and orders a batch with the generator it is given: the
    /// held rows are read in row-id order (inserted here 0, 1, …, 199), so
    /// without the shuffle a batch would be the first 100 of them, in order.
    /// With a seeded generator, the batch is neither (each has probability
    /// 1/C(200, 100) ≈ 1e-59 and 1/100! under a uniform shuffle), every
    /// report goes exactly once over two batches, and the rest stay held.
    #[test]
    fn form_chooses_and_orders_a_batch_with_the_generator() {
        let path = std::env::temp_dir().join(format!("localdp-shuffle-form-{}.sqlite", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut held = Held::open_with(&path, Box::new(SimulationRng::seed_from_u64(7))).unwrap();
        let Tables::Sqlite(connection) = &held.tables else { unreachable!("a file") };
        for value in 0..200i64 {
            connection
                .execute("INSERT INTO pending (id, metric, report) VALUES (?1, 'm', ?2)", params![value, value.to_string()])
                .unwrap();
        }
        let values = |batch: &Outgoing| -> Vec<i64> { serde_json::from_str(&batch.body).unwrap() };
        let first = held.form("m", 100).unwrap();
        assert_eq!(first.size, 100);
        let first = values(&first);
        let mut sorted = first.clone();
        sorted.sort_unstable();
        assert_ne!(first, sorted, "not shuffled");
        assert_ne!(sorted, (0..100).collect::<Vec<_>>(), "not a random choice");
        assert_eq!(held.held().unwrap(), [("m".to_string(), 100)]);
        let second = values(&held.form("m", 1000).unwrap());
        let mut all: Vec<i64> = first.into_iter().chain(second).collect();
        all.sort_unstable();
        assert_eq!(all, (0..200).collect::<Vec<_>>());
        assert_eq!(held.outbox().unwrap().len(), 2);
        drop(held);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    /// Only the collector's own "all rejected" answer drops a batch; what
    /// the collector will not take as it is parks it; anything else
    /// (a proxy's 400, a body-read failure's 400, 5xx, 429) is retried.
    #[test]
    fn an_answer_drops_parks_or_retries_a_batch() {
        let rejected = br#"{"error":"no report in the body is valid for this metric","accepted":0,"rejected":{"malformed":0,"protocol":3},"errors":[]}"#;
        assert_eq!(outcome(StatusCode::OK, b"{}"), Outcome::Stored);
        assert_eq!(outcome(StatusCode::BAD_REQUEST, rejected), Outcome::Rejected);
        let none_rejected = br#"{"error":"the body holds no reports","accepted":0,"rejected":{"malformed":0}}"#;
        for body in [&b"<html>400 Bad Request</html>"[..], b"", br#"{"error":"the body could not be read"}"#, none_rejected] {
            assert_eq!(outcome(StatusCode::BAD_REQUEST, body), Outcome::Retry, "{}", String::from_utf8_lossy(body));
        }
        for status in [StatusCode::PAYLOAD_TOO_LARGE, StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN, StatusCode::NOT_FOUND] {
            assert_eq!(outcome(status, b"{}"), Outcome::Parked, "{status}");
        }
        for status in [StatusCode::TOO_MANY_REQUESTS, StatusCode::INTERNAL_SERVER_ERROR, StatusCode::BAD_GATEWAY] {
            assert_eq!(outcome(status, rejected), Outcome::Retry, "{status}");
        }
    }

    #[test]
    fn a_wait_is_seconds_minutes_or_hours() {
        assert_eq!(parse_wait("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_wait("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_wait("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_wait("2h"), Ok(Duration::from_secs(7200)));
        for bad in ["", "0", "1.5m", "m", "10d", "-1"] {
            assert!(parse_wait(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_collector_url_is_plain_http() {
        let c = Collector::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!((c.authority.as_str(), c.prefix.as_str()), ("127.0.0.1:8080", ""));
        let c = Collector::parse("http://collector.example/localdp/").unwrap();
        assert_eq!((c.authority.as_str(), c.prefix.as_str()), ("collector.example:80", "/localdp"));
        for bad in ["https://collector.example", "collector.example", "http://", "http://user@host"] {
            assert!(Collector::parse(bad).is_err(), "{bad}");
        }
    }
}
