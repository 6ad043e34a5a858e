//! `localdp serve`: the collector. Stores every accepted report in SQLite or
//! PostgreSQL (`serve/database.rs`), keeps a running aggregate per metric
//! so an estimate never re-reads a report (and caches each estimate until
//! something new is committed), rebuilds the aggregates from the database
//! at start (on PostgreSQL, reads the collectors' states), and serves the demo
//! page, the npm package's web build and the operator's dashboard
//! (`serve/dashboard.rs`, built in). `docs/collector.md` lists the
//! endpoints and their JSON.
//!
//! A report post is read and validated by `serve/intake.rs` (shared with
//! the shuffler, `localdp shuffle`). Reports are stored by one writer
//! thread that commits the batches queued together in one transaction (`serve/writer.rs`); access control (tokens,
//! CORS, the names the collector answers to), per-source limits and the
//! Prometheus metrics are in `serve/access.rs`, `serve/limits.rs` and
//! `serve/telemetry.rs`.
//!
//! Nothing here logs a report or a value: log lines carry counts only.

#[path = "serve/access.rs"]
pub(crate) mod access;
#[path = "serve/app.rs"]
mod app;
#[path = "serve/assets.rs"]
mod assets;
#[cfg(unix)]
#[path = "serve/backup.rs"]
pub(crate) mod backup;
#[path = "serve/collector.rs"]
pub(crate) mod collector;
#[path = "serve/dashboard.rs"]
mod dashboard;
#[path = "serve/copy.rs"]
pub(crate) mod copy;
#[path = "serve/database.rs"]
mod database;
#[path = "serve/export.rs"]
mod export;
#[path = "serve/fold.rs"]
pub(crate) mod fold;
#[path = "serve/import.rs"]
pub(crate) mod import;
#[path = "serve/intake.rs"]
pub(crate) mod intake;
#[path = "serve/limits.rs"]
pub(crate) mod limits;
#[path = "serve/logging.rs"]
pub(crate) mod logging;
#[path = "serve/parquet.rs"]
mod parquet;
#[path = "serve/postgres.rs"]
pub(crate) mod postgres;
#[path = "serve/response.rs"]
pub(crate) mod response;
#[path = "serve/store.rs"]
pub(crate) mod store;
#[path = "serve/telemetry.rs"]
pub(crate) mod telemetry;
#[path = "serve/writer.rs"]
pub(crate) mod writer;

use crate::serve::logging::{log_error, log_info, log_warn};
use app::{authorize, authorize_batch, unknown_metric, App, ESTIMATES_WAITING};
use axum::extract::{Path as UrlPath, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use collector::{Batch, Collected, Shuffled};
use intake::{FrontArgs, Post, Refusal};
use limits::Limits;
use localdp::{Error, Metric, PostProcessing, Rejection, RejectionCounts};
use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use database::Database;
use crate::serve::postgres::Unstored;
use store::BatchId;
use telemetry::{Counted, LimitedCounts, Route, Telemetry};
use tokio::sync::Semaphore;
use response::{api_headers, json, retry_later};
use writer::{Append, Job, Writer};

/// `localdp serve` options.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// TCP port; 0 picks a free one (the URL printed first says which).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// The database of stored reports: a SQLite file (created if missing),
    /// or a PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE),
    /// which several collectors can share.
    #[arg(long, default_value = "localdp.sqlite")]
    db: PathBuf,
    /// The metrics: a JSON array of {"name", "title", "unit", "config"}, each
    /// config the same object as the CLI's --config (title and unit are
    /// optional, for display). Default: WWW/metrics.json.
    #[arg(long)]
    metrics: Option<PathBuf>,
    /// The demo page, served at /.
    #[arg(long, default_value = "www")]
    www: PathBuf,
    /// The npm package's web build (`npm run build` makes it), served at /pkg/.
    #[arg(long, default_value = "dist/web")]
    pkg: PathBuf,
    /// Estimates computed at once at most (one asked again while nothing
    /// new was committed is answered from a cache, and not counted); 16
    /// more wait their turn, and past those an estimate is 503 with
    /// Retry-After. Default: the number of CPUs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_estimates: Option<u32>,
    /// The readers' bearer tokens, one per line: with it, estimates, the
    /// metric listing and a metric's counts, report exports and /metrics
    /// need `Authorization: Bearer <token>`. They read, and only read.
    /// Posting reports and reading a metric's config stay open.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// The shuffler's bearer tokens, one per line (the same format): the
    /// only tokens that may post a shuffled batch (`Localdp-Batch`, what
    /// `localdp shuffle --token-file` sends), whose central ε is shown.
    /// They read nothing. Without it, no batch is taken.
    #[arg(long, value_name = "FILE")]
    shuffler_token_file: Option<PathBuf>,
    /// Reports one shuffler token's batches (`Localdp-Batch`) may carry
    /// per minute; more are answered 429 with Retry-After. Batches of a
    /// shuffler token are exempt from --requests-per-minute and
    /// --reports-per-minute (the shuffler is one address for all its
    /// senders, whom it limits itself). 0: no limit.
    #[arg(long, value_name = "N", default_value_t = 0)]
    shuffler_reports_per_minute: u32,
    #[command(flatten)]
    front: FrontArgs,
    /// On SIGTERM or SIGINT, keep taking requests this long with /readyz
    /// answering 503 before the listener closes, so that a load balancer
    /// that polls it stops sending first.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    shutdown_delay: f64,
    /// Retention: reports that arrived more than DAYS days ago are
    /// compacted into their metric's stored aggregate state, at start and
    /// every hour; estimates stay exact, exports no longer hold them. The
    /// store then knows the day (UTC) each report arrived, nothing finer.
    #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(1..=36_500))]
    keep: Option<u32>,
    /// The δ of the central (ε, δ) shown per metric for the shuffled batches
    /// received (`localdp shuffle`), in (1e-200, 1).
    #[arg(long, value_name = "DELTA", default_value_t = 1e-6)]
    central_delta: f64,
}

/// How long a stop waits for the requests in flight.
const DRAIN: Duration = Duration::from_secs(30);

/// Runs the collector until SIGINT or SIGTERM, then drains: no new
/// connection is accepted, the requests in flight are answered (up to
/// [`DRAIN`], or until a second signal), and what is queued is stored.
pub fn run(args: ServeArgs) -> Result<(), String> {
    abort_on_panic();
    logging::set_format(args.front.log_format);
    let max_estimates = match args.max_estimates {
        Some(n) => n as usize,
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    let keys = app::KeyFiles::open(args.token_file.clone(), args.shuffler_token_file.clone())?;
    if let Some(shufflers) = &keys.current().shufflers {
        log_info!("localdp serve: shuffled batches are taken from the shuffler tokens {}", shufflers.fingerprints().join(", "));
    }
    let metrics_file = args.metrics.clone().unwrap_or_else(|| args.www.join("metrics.json"));
    let specs = collector::read_metrics_file(&metrics_file)?;
    let telemetry = Arc::new(Telemetry::new(specs.len()));
    let mut front = args.front.front("localdp serve", Arc::clone(&telemetry))?;
    front.batches = Limits::new(0, args.shuffler_reports_per_minute);
    let front = Arc::new(front);
    let mut store = Database::open(&args.db)?;
    if args.keep.is_some() {
        store.mark_days()?;
    }
    let started = Instant::now();
    let mut metrics = Vec::with_capacity(specs.len());
    for spec in specs {
        let metric = Metric::from_json(spec.config.get())
            .map_err(|e| format!("{}: metric {:?}: {e}", metrics_file.display(), spec.name))?;
        let key = store.register(&spec.name, &metric.id(), spec.config.get())?;
        metrics.push(Collected::rebuild(spec, metric, key, &store)?);
    }
    log_info!(
        "localdp serve: {} ({} metrics from {}, rebuilt in {} ms)",
        store.describe(&args.db),
        metrics.len(),
        metrics_file.display(),
        started.elapsed().as_millis()
    );
    for m in &metrics {
        log_info!(
            "  {}: {} ε={} n={} rejected={}",
            m.spec.name,
            m.metric.protocol().name(),
            m.metric.epsilon(),
            m.n(),
            m.rejected().total()
        );
    }
    let names: Vec<&str> = metrics.iter().map(|m| m.spec.name.as_str()).collect();
    for (name, count) in store.unconfigured(&names)? {
        log_info!("localdp serve: the database also holds {count} reports of metric {name:?}, not configured (kept, not served)");
    }
    if !(args.central_delta > localdp::accounting::MIN_DELTA && args.central_delta < 1.0) {
        return Err(format!("--central-delta {}: a δ is in (1e-200, 1)", args.central_delta));
    }
    let shutdown_delay = Duration::try_from_secs_f64(args.shutdown_delay)
        .ok()
        .filter(|d| *d <= Duration::from_secs(3600))
        .ok_or_else(|| format!("--shutdown-delay {}: seconds, from 0 to 3600", args.shutdown_delay))?;
    let www = existing_dir(&args.www, "no demo page: --www");
    let pkg = existing_dir(&args.pkg, "the demo needs the npm package's web build (npm run build): --pkg");
    let turns = (0..metrics.len()).map(|_| Arc::default()).collect();
    let min_users = metrics.iter().map(|m| localdp::plan::min_users(&m.metric)).collect();
    let metrics = Arc::new(metrics);
    if let Some(refresher) = store.refresher() {
        let metrics = Arc::clone(&metrics);
        std::thread::Builder::new()
            .name("localdp-others".into())
            .spawn(move || {
                let keys: Vec<_> = metrics.iter().map(|m| (m.key, &*m.metric)).collect();
                refresher.run(&keys, |index, others, batches| metrics[index].set_others(others, batches));
            })
            .map_err(|e| e.to_string())?;
    }
    // `localdp backup` reaches a SQLite store through the collector.
    let control = matches!(store, Database::Sqlite(_)).then(|| control_socket(&args.db)).flatten();
    let exporter = store.exporter()?;
    let writer = Writer::start(store, Arc::clone(&metrics), Arc::clone(&telemetry)).map_err(|e| e.to_string())?;
    let app = Arc::new(App {
        metrics,
        min_users,
        writer,
        exporter,
        telemetry,
        front,
        www,
        pkg,
        assets: Default::default(),
        keys,
        computing: Arc::new(Semaphore::new(max_estimates)),
        admitted: Arc::new(Semaphore::new(max_estimates + ESTIMATES_WAITING)),
        turns,
        central_delta: args.central_delta,
        shutdown_delay,
        started: std::time::SystemTime::now(),
        db: args.db.clone(),
        draining: AtomicBool::new(false),
    });

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    let served = runtime.block_on(serve(&app, args.front.bind, args.port, control.clone(), args.keep));
    if let Some(socket) = &control {
        let _ = std::fs::remove_file(socket);
    }
    // Whatever is still queued is stored (and answered, if anyone listens).
    app.writer.stop();
    drop(runtime);
    served?;
    log_info!("localdp serve: stopped");
    Ok(())
}

/// The control socket `localdp backup` asks (`serve/backup.rs`).
#[cfg(unix)]
fn control_socket(db: &Path) -> Option<PathBuf> {
    Some(store::control_path(db))
}

#[cfg(not(unix))]
fn control_socket(_: &Path) -> Option<PathBuf> {
    None
}

async fn serve(app: &Arc<App>, bind: IpAddr, port: u16, control: Option<PathBuf>, keep: Option<u32>) -> Result<(), String> {
    let listener =
        tokio::net::TcpListener::bind((bind, port)).await.map_err(|e| format!("cannot listen on {bind}:{port}: {e}"))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    // Handlers first: a signal sent as soon as the URL is read stops cleanly.
    let (first, second) = signals().map_err(|e| format!("cannot handle signals: {e}"))?;
    // Bound before the URL is printed: `localdp backup` works from then on.
    #[cfg(unix)]
    if let Some(socket) = control {
        let app = Arc::clone(app);
        let listening = backup::listen(socket, move |to| {
            let (reply, made) = tokio::sync::oneshot::channel();
            app.writer.send(Job::Backup { to, reply });
            made
        });
        if let Some(listening) = listening {
            tokio::spawn(listening);
        }
    }
    print_url(address);
    log_info!("localdp serve: the operator's dashboard is http://{address}/dashboard");
    // SIGHUP reads the token files (`--token-file`, `--shuffler-token-file`)
    // and the origin file (`--allow-origin-file`) again; a file that does
    // not read keeps what was read from it last, and the log says why.
    let reloaded = Arc::clone(app);
    on_hangup(move || {
        match reloaded.keys.reload() {
            Ok(keys) => log_info!("localdp serve: SIGHUP: token files read again: {}", keys.describe()),
            Err(e) => log_error!("localdp serve: SIGHUP: the old tokens are kept: {e}"),
        }
        reloaded.front.reload_origins("localdp serve");
    })?;
    tokio::spawn(log_refusals(Arc::clone(&app.telemetry)));
    if let Some(days) = keep {
        // Retention: at start (before the first post is stored), then hourly.
        let app = Arc::clone(app);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(3600));
            loop {
                tick.tick().await;
                if !app.writer.send(Job::Compact { days: i64::from(days) }) {
                    return;
                }
            }
        });
    }
    // Set by the second signal.
    let (stop_now, now) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        if second.await.is_ok() {
            let _ = stop_now.send(true);
        }
    });
    let stopping = Arc::new(tokio::sync::Notify::new());
    let stop = {
        let app = Arc::clone(app);
        let stopping = Arc::clone(&stopping);
        let mut now = now.clone();
        async move {
            let _ = first.await;
            app.draining.store(true, Ordering::SeqCst);
            if !app.shutdown_delay.is_zero() {
                log_info!(
                    "localdp serve: stopping: /readyz answers 503; the listener closes in {} s (a second signal stops now)",
                    app.shutdown_delay.as_secs_f64()
                );
                tokio::select! {
                    _ = tokio::time::sleep(app.shutdown_delay) => {}
                    _ = now.wait_for(|&now| now) => {}
                }
            }
            let in_flight = app.telemetry.in_flight.load(Ordering::SeqCst);
            log_info!(
                "localdp serve: stopping: {in_flight} requests in flight, draining (at most {} s; a second signal stops now)",
                DRAIN.as_secs()
            );
            stopping.notify_one();
        }
    };
    let service = router(Arc::clone(app)).into_make_service_with_connect_info::<SocketAddr>();
    let server = axum::serve(listener, service).with_graceful_shutdown(stop);
    let deadline = async {
        stopping.notified().await;
        let mut now = now.clone();
        tokio::select! {
            _ = tokio::time::sleep(DRAIN) => "the drain took too long",
            _ = now.wait_for(|&now| now) => "a second signal",
        }
    };
    tokio::select! {
        served = server => served.map_err(|e| e.to_string()),
        why = deadline => {
            // What is queued is still stored (`run`), but these requests
            // are not answered: not a clean stop.
            let left = app.telemetry.in_flight.load(Ordering::SeqCst);
            Err(format!("stopped now ({why}): {left} requests in flight were not answered"))
        }
    }
}

/// Every [`logging::EVERY`], a line with the answers of 400 and above
/// since the last one, by status (none when there were none): refusals
/// are counted in /metrics and summed up in the log, never a line each.
async fn log_refusals(telemetry: Arc<Telemetry>) {
    let mut logged = std::collections::BTreeMap::new();
    let mut tick = tokio::time::interval(logging::EVERY);
    loop {
        tick.tick().await;
        let now = telemetry.refusals();
        let new: Vec<String> = now
            .iter()
            .filter_map(|(&status, &n)| {
                let new = n - logged.get(&status).copied().unwrap_or(0);
                let reason = StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
                (new > 0).then(|| format!("{new} × {status} {reason}"))
            })
            .collect();
        if !new.is_empty() {
            log_info!(
                "localdp serve: refused in the last {} s: {} (localdp_http_requests_total by route and status)",
                logging::EVERY.as_secs(),
                new.join(", ")
            );
        }
        logged = now;
    }
}

/// Runs `reload` at each SIGHUP (the handler is installed by the call):
/// connections and requests carry on.
#[cfg(unix)]
pub(crate) fn on_hangup(reload: impl Fn() + Send + 'static) -> Result<(), String> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hangup = signal(SignalKind::hangup()).map_err(|e| format!("cannot handle SIGHUP: {e}"))?;
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            reload();
        }
    });
    Ok(())
}

#[cfg(not(unix))]
pub(crate) fn on_hangup(_: impl Fn() + Send + 'static) -> Result<(), String> {
    Ok(())
}

/// Native panics unwind (so that localdp-arrow can refuse a damaged Parquet
/// file), but a panic in a server ends it, after the usual message: the
/// locks a request held would stay poisoned for every later one, and a
/// supervisor restarts a process that ended, not one that limps.
pub(crate) fn abort_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort()
    }));
}

/// The first line of stdout, and the only one: scripts read it. A base
/// without a trailing slash, so that `{url}/api/…` is an endpoint. Nobody
/// reading it (stdout closed) is no reason to stop serving.
pub(crate) fn print_url(address: SocketAddr) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "http://{address}").and_then(|()| out.flush());
}

fn existing_dir(dir: &Path, missing: &str) -> Option<PathBuf> {
    if dir.is_dir() {
        Some(dir.to_path_buf())
    } else {
        log_warn!("localdp serve: {missing} {} not found", dir.display());
        None
    }
}

/// The first and the second SIGINT or SIGTERM; the handlers are installed
/// by the call.
#[cfg(unix)]
pub(crate) fn signals() -> std::io::Result<(tokio::sync::oneshot::Receiver<()>, tokio::sync::oneshot::Receiver<()>)> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (first, first_rx) = tokio::sync::oneshot::channel();
    let (second, second_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        for tx in [first, second] {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            let _ = tx.send(());
        }
    });
    Ok((first_rx, second_rx))
}

#[cfg(not(unix))]
pub(crate) fn signals() -> std::io::Result<(tokio::sync::oneshot::Receiver<()>, tokio::sync::oneshot::Receiver<()>)> {
    let (first, first_rx) = tokio::sync::oneshot::channel();
    let (second, second_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        for tx in [first, second] {
            let _ = tokio::signal::ctrl_c().await;
            let _ = tx.send(());
        }
    });
    Ok((first_rx, second_rx))
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/api/metrics", get(list_metrics))
        .route("/api/metrics/{name}", get(show_metric))
        .route("/api/metrics/{name}/reports", post(post_reports))
        .route("/api/metrics/{name}/estimate", get(estimate))
        .route("/api/metrics/{name}/export", get(export::export))
        .route("/api/metrics/{name}/reports.parquet", get(parquet::reports_parquet))
        .route("/healthz", get(readyz))
        .route("/readyz", get(readyz))
        .route("/livez", get(livez))
        .route("/metrics", get(prometheus))
        .route("/dashboard", get(dashboard::page))
        .route("/dashboard/", get(dashboard::page))
        .route("/dashboard/{file}", get(dashboard::asset))
        .method_not_allowed_fallback(|| async { json(StatusCode::METHOD_NOT_ALLOWED, json!({"error": "method not allowed"})) })
        .fallback(static_file)
        // The last layer is the outermost: every answer is tracked, CORS
        // refusals included.
        .layer(from_fn_with_state(Arc::clone(&app.front), intake::cors))
        .layer(from_fn_with_state(Arc::clone(&app.front), intake::own_host))
        .layer(from_fn_with_state(Arc::clone(&app), track))
        .with_state(app)
}

/// Counts every request by route and status, and times it.
async fn track(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    /// Decrements the in-flight gauge even if the request is dropped.
    struct InFlight(Arc<Telemetry>);
    impl Drop for InFlight {
        fn drop(&mut self) {
            self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let route = Route::of(request.method(), request.uri().path());
    let started = Instant::now();
    app.telemetry.in_flight.fetch_add(1, Ordering::SeqCst);
    let _in_flight = InFlight(Arc::clone(&app.telemetry));
    let response = next.run(request).await;
    app.telemetry.answered(route, response.status().as_u16(), started.elapsed());
    response
}

/// A metric as `GET /api/metrics` lists it; without its counts, its
/// public part (what a client randomizes with).
#[derive(Serialize)]
struct Described<'a> {
    name: &'a str,
    title: Option<&'a str>,
    unit: Option<&'a str>,
    /// `frequency` (a "domain"), `numeric` (a "range") or `rappor`.
    kind: &'static str,
    /// The resolved protocol.
    protocol: &'static str,
    epsilon: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    n: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rejected: Option<RejectionCounts>,
    /// Report posts refused by the per-source limits since start.
    #[serde(skip_serializing_if = "Option::is_none")]
    limited: Option<LimitedCounts>,
    /// The users below which the estimate means nothing yet (the planner's
    /// `min_users`: a 95% half-width above 0.05 of a share or of the range).
    #[serde(skip_serializing_if = "Option::is_none")]
    min_users: Option<u64>,
    /// With the counts: the shuffled batches received (`null` before the
    /// first), with the central (ε, δ) of the smallest.
    #[serde(skip_serializing_if = "Option::is_none")]
    shuffled: Option<Option<Shuffled>>,
    /// Verbatim from the metrics file: what a client randomizes with.
    config: &'a RawValue,
}

/// Metric `i`; with `counts`: with `n`, `rejected`, `limited`, `min_users`
/// and `shuffled` (which [`shuffled`] gives).
fn describe(app: &App, i: usize, counts: Option<Option<Shuffled>>) -> Described<'_> {
    let m = &app.metrics[i];
    Described {
        name: &m.spec.name,
        title: m.spec.title.as_deref(),
        unit: m.spec.unit.as_deref(),
        kind: m.metric.family(),
        protocol: m.metric.protocol().name(),
        epsilon: m.metric.epsilon(),
        n: counts.is_some().then(|| m.n()),
        rejected: counts.is_some().then(|| m.rejected()),
        limited: counts.is_some().then(|| app.telemetry.limited[i].counts()),
        min_users: counts.is_some().then_some(app.min_users[i]),
        shuffled: counts,
        config: &m.spec.config,
    }
}

/// The shuffled batches of the metrics `which`, off the async workers (a
/// new smallest batch's central ε can take seconds to compute).
async fn shuffled(app: &Arc<App>, which: std::ops::Range<usize>) -> Option<Vec<Option<Shuffled>>> {
    let shared = Arc::clone(app);
    tokio::task::spawn_blocking(move || which.map(|i| shared.metrics[i].shuffled(shared.central_delta)).collect())
        .await
        .ok()
}

/// `GET /api/metrics`: every metric with its config, resolved protocol and counts.
async fn list_metrics(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(denied) = authorize(&app, &headers) {
        return denied;
    }
    #[derive(Serialize)]
    struct List<'a> {
        metrics: Vec<Described<'a>>,
    }
    let Some(shuffled) = shuffled(&app, 0..app.metrics.len()).await else { return intake::internal_error() };
    json(StatusCode::OK, List { metrics: shuffled.into_iter().enumerate().map(|(i, s)| describe(&app, i, Some(s))).collect() })
}

/// `GET /api/metrics/{name}`: one metric, as in the list. Its config is
/// public (clients need it): with tokens and no valid one, it is answered
/// without the counts.
async fn show_metric(State(app): State<Arc<App>>, UrlPath(name): UrlPath<String>, headers: HeaderMap) -> Response {
    let Some(i) = app.find(&name) else { return unknown_metric(&app, &name) };
    if authorize(&app, &headers).is_some() {
        return json(StatusCode::OK, describe(&app, i, None));
    }
    let Some(mut shuffled) = shuffled(&app, i..i + 1).await else { return intake::internal_error() };
    json(StatusCode::OK, describe(&app, i, shuffled.pop()))
}

/// `POST /api/metrics/{name}/reports`: one report or an array of them; with
/// a `Localdp-Batch` header, a shuffled batch (which needs a shuffler token,
/// [`authorize_batch`]), stored once however often it is sent.
async fn post_reports(State(app): State<Arc<App>>, post: Post) -> Response {
    let Some(index) = app.find(&post.name) else { return intake::discard(post.body, unknown_metric(&app, &post.name)).await };
    let batch_id = match post.headers.get(intake::BATCH_HEADER).map(|v| v.to_str().ok().filter(|id| collector::valid_name(id))) {
        None => None,
        Some(Some(id)) => Some(id.to_string()),
        Some(None) => {
            let error = "the Localdp-Batch header is 1 to 64 letters, digits, '_' or '-'; nothing was counted";
            return intake::discard(post.body, json(StatusCode::BAD_REQUEST, json!({ "error": error }))).await;
        }
    };
    // Only a shuffler token may say that reports came shuffled: the central
    // ε shown rests on it. Refused before the body is read.
    let batch = match batch_id {
        None => None,
        Some(id) => match authorize_batch(&app, &post.headers) {
            Ok(shuffler) => Some(BatchId { id, shuffler }),
            Err(refused) => return intake::discard(post.body, refused).await,
        },
    };
    let shuffler = batch.as_ref().map(|b| b.shuffler.clone());
    let received = match app.front.receive(&app.metrics[index].metric, post, shuffler.as_deref()).await {
        Ok(received) => received,
        Err(refusal) => {
            let limited = &app.telemetry.limited[index];
            match &refusal {
                Refusal::Requests(_) => {
                    limited.requests.fetch_add(1, Ordering::Relaxed);
                }
                Refusal::Reports(_, posted) => {
                    limited.report_requests.fetch_add(1, Ordering::Relaxed);
                    limited.reports.fetch_add(*posted, Ordering::Relaxed);
                }
                Refusal::Body(_) => {}
            }
            return refusal.response();
        }
    };
    let response = ingest(&app, index, received.batch, batch).await;
    if matches!(response.status(), StatusCode::INTERNAL_SERVER_ERROR | StatusCode::SERVICE_UNAVAILABLE) {
        // Nothing of it was counted: nor is it against the client's limits
        // (a client retrying through a database's outage is not then 429).
        app.front.refund(&received.taken);
    }
    response
}

/// Stores (with the other batches queued meanwhile, in one transaction)
/// and counts a validated batch; answers once it is on disk.
async fn ingest(app: &App, index: usize, batch: Batch, batch_id: Option<BatchId>) -> Response {
    let Batch { reports, parsed, rejected, described } = batch;
    let accepted = reports.len();
    if accepted > 0 || rejected.total() > 0 {
        let (reply, stored) = tokio::sync::oneshot::channel();
        let job = Job::Append(Append { metric: index, reports, parsed, rejected, batch: batch_id, reply });
        match (app.writer.send(job), stored.await) {
            (true, Ok(Ok(true))) => {}
            (true, Ok(Ok(false))) => {
                // Stored before: this is a retry, and nothing more is counted.
                return json(
                    StatusCode::OK,
                    json!({"accepted": 0, "rejected": RejectionCounts::default(), "duplicate": true}),
                );
            }
            (true, Ok(Err(Unstored::Unavailable))) => {
                // The writer logged the database error; the database may be
                // back in a moment.
                let error = "the database is unavailable; the batch was not acknowledged; retry after 1 s";
                return retry_later(StatusCode::SERVICE_UNAVAILABLE, json!({ "error": error, "retry_after": 1 }), 1);
            }
            _ => {
                // The writer logged the database error.
                return json(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    json!({"error": "the batch could not be stored; nothing of it was counted"}),
                );
            }
        }
    }
    intake::answer(accepted, rejected, &described)
}

/// `GET /api/metrics/{name}/estimate[?post=none|norm-sub|project]`: the
/// text `localdp aggregate --format json` prints for the same reports.
async fn estimate(
    State(app): State<Arc<App>>,
    UrlPath(name): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Some(denied) = authorize(&app, &headers) {
        return denied;
    }
    let Some(index) = app.find(&name) else { return unknown_metric(&app, &name) };
    let mut post = PostProcessing::None;
    for pair in query.as_deref().unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("post", value)) => match value.parse() {
                Ok(p) => post = p,
                Err(e) => return json(StatusCode::BAD_REQUEST, json!({ "error": e })),
            },
            _ => {
                return json(
                    StatusCode::BAD_REQUEST,
                    json!({"error": "unknown query parameter (the only one is post=none|norm-sub|project)"}),
                )
            }
        }
    }
    let estimated = match app.metrics[index].cached(post) {
        Some(text) => Ok(text),
        None => {
            let failed = || json(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "internal error"}));
            let Ok(admitted) = Arc::clone(&app.admitted).try_acquire_owned() else { return busy() };
            let turn = Arc::clone(&app.turns[index]).lock_owned().await;
            // Never closed: an error is not expected here.
            let Ok(computing) = Arc::clone(&app.computing).acquire_owned().await else { return failed() };
            // The permits go with the computation: a client that leaves does
            // not free them before the work is done. One that waited its
            // turn finds the estimate computed meanwhile in the cache.
            let shared = Arc::clone(&app);
            let computed = tokio::task::spawn_blocking(move || {
                let _held = (admitted, turn, computing);
                shared.metrics[index].estimate(post)
            });
            let Ok(estimated) = computed.await else { return failed() };
            estimated
        }
    };
    match estimated {
        Ok(text) => (StatusCode::OK, api_headers(), text.to_string()).into_response(),
        Err((Error::NoReports, n, rejected)) => json(
            StatusCode::CONFLICT,
            json!({"error": Error::NoReports.to_string(), "n": n, "rejected": rejected}),
        ),
        Err((e, ..)) => json(StatusCode::BAD_REQUEST, json!({"error": e.to_string()})),
    }
}

/// 503 with `Retry-After`: `--max-estimates` estimates are being computed
/// and [`ESTIMATES_WAITING`] more wait.
fn busy() -> Response {
    let error = "too many estimates are being computed or waiting (--max-estimates); retry after 1 s";
    retry_later(StatusCode::SERVICE_UNAVAILABLE, json!({ "error": error, "retry_after": 1 }), 1)
}

/// `GET /readyz` (and its older name `/healthz`), readiness: 200 while
/// the collector takes reports; 503 once it is stopping (from the signal
/// on, before the listener closes: `--shutdown-delay`) or if its database
/// writer has stopped.
async fn readyz(State(app): State<Arc<App>>) -> Response {
    if app.draining.load(Ordering::SeqCst) {
        json(StatusCode::SERVICE_UNAVAILABLE, json!({"status": "draining"}))
    } else {
        livez(State(app)).await
    }
}

/// `GET /livez`, liveness: 200 while the process can do its work, draining
/// included; 503 only if its database writer has stopped (a restart is
/// then what helps).
async fn livez(State(app): State<Arc<App>>) -> Response {
    if app.writer.alive() {
        json(StatusCode::OK, json!({"status": "ok"}))
    } else {
        json(StatusCode::SERVICE_UNAVAILABLE, json!({"status": "failing", "error": "the database writer stopped"}))
    }
}

/// `GET /metrics`: Prometheus text (a token is needed when tokens are
/// configured: it carries the counts).
async fn prometheus(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(denied) = authorize(&app, &headers) {
        return denied;
    }
    let counts: Vec<Counted<'_>> = app
        .metrics
        .iter()
        .map(|m| {
            let (accepted, rejected) = m.counts();
            let rejected = Rejection::ALL.iter().map(|r| (r.as_str(), rejected.get(*r))).collect();
            Counted { name: &m.spec.name, accepted, rejected, compacted: m.compacted.load(Ordering::Relaxed) }
        })
        .collect();
    let sources = app.front.limits.as_ref().map_or(0, Limits::tracked);
    let mut text = app.telemetry.render(&counts, sources);
    telemetry::render_process(&mut text, app.started, &app.db);
    telemetry::response(text)
}

const PAGE_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The demo (`--www`) at `/` and the package's web build (`--pkg`) at `/pkg/`,
/// compressed and cached as `serve/assets.rs` says; every other path is a
/// JSON 404 (405 for a method other than GET or HEAD).
async fn static_file(State(app): State<Arc<App>>, method: Method, uri: Uri, request: HeaderMap) -> Response {
    let path = uri.path();
    if path.contains("//") {
        let error = "no such endpoint: the path holds an empty segment (//); \
                     join the collector's URL and /api/… with one slash";
        return json(StatusCode::NOT_FOUND, json!({ "error": error }));
    }
    if path == "/api" || path.starts_with("/api/") {
        return json(StatusCode::NOT_FOUND, json!({"error": "no such endpoint"}));
    }
    if method != Method::GET && method != Method::HEAD {
        let mut response = json(StatusCode::METHOD_NOT_ALLOWED, json!({"error": "method not allowed"}));
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET,HEAD"));
        return response;
    }
    let not_found = || json(StatusCode::NOT_FOUND, json!({"error": "not found"}));
    let (root, rest) = match path.strip_prefix("/pkg/") {
        Some(rest) => (&app.pkg, rest),
        None => (&app.www, &path[1..]),
    };
    let Some(root) = root else { return not_found() };
    let rest = if rest.is_empty() || rest.ends_with('/') { format!("{rest}index.html") } else { rest.to_string() };
    // Plain names only: no `..`, no hidden files, no percent-escapes.
    let safe = rest.split('/').all(|segment| {
        !segment.is_empty()
            && !segment.starts_with('.')
            && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    });
    if !safe {
        return not_found();
    }
    let file = root.join(&rest);
    let Ok(bytes) = tokio::fs::read(&file).await else { return not_found() };
    let extension = file.extension().and_then(|e| e.to_str()).unwrap_or("");
    let content_type = match extension {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "wasm" => "application/wasm",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "ts" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    };
    let compressible = !matches!(extension, "png" | "ico") && content_type != "application/octet-stream";
    let html = extension == "html";
    // Compressing a file the first time is work for a blocking thread (brotli at its best: about a second for the
    // demo's 390 KB of wasm), kept for the requests that follow.
    let shared = Arc::clone(&app);
    let Ok(mut response) = tokio::task::spawn_blocking(move || shared.assets.serve(&request, file, bytes, compressible)).await
    else {
        return json(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "internal error"}));
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if html {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_POLICY));
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    }
    response
}
