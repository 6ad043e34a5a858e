//! `localdp serve`: the collector. Stores every accepted report in SQLite,
//! keeps a running aggregate per metric so an estimate never re-reads a
//! report (and caches each estimate until something new is committed),
//! rebuilds the aggregates from the database at start, and serves the demo
//! page, the npm package's web build and the operator's dashboard
//! (`serve/dashboard.rs`, built in). `docs/collector.md` lists the
//! endpoints and their JSON.
//!
//! Reports are stored by one writer thread that commits the batches queued
//! together in one transaction (`serve/writer.rs`); access control (tokens,
//! CORS, the names the collector answers to), per-source limits and the
//! Prometheus metrics are in `serve/access.rs`, `serve/limits.rs` and
//! `serve/telemetry.rs`.
//!
//! Nothing here logs a report or a value: log lines carry counts only.

#[path = "serve/access.rs"]
mod access;
#[path = "serve/collector.rs"]
mod collector;
#[path = "serve/dashboard.rs"]
mod dashboard;
#[path = "serve/limits.rs"]
mod limits;
#[path = "serve/parquet.rs"]
mod parquet;
#[path = "serve/store.rs"]
mod store;
#[path = "serve/telemetry.rs"]
mod telemetry;
#[path = "serve/writer.rs"]
mod writer;

use access::{Access, Grant, Names, Origins, Tokens};
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Path as UrlPath, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use collector::{Batch, BodyError, Collected};
use limits::{Limits, Refused, Source};
use localdp::{Error, Metric, PostProcessing, Rejection, RejectionCounts};
use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::Store;
use telemetry::{Counted, LimitedCounts, Route, Telemetry};
use tokio::sync::Semaphore;
use writer::{Append, Job, Writer};

/// `localdp serve` options.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// TCP port; 0 picks a free one (the URL printed first says which).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Address to listen on. The default accepts connections from this
    /// machine only.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// The SQLite database of stored reports (created if missing).
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
    /// The largest request body accepted, in bytes; a larger one is refused
    /// with 413 before it is parsed.
    #[arg(long, default_value_t = 1 << 20)]
    max_body: usize,
    /// An origin (`https://app.example`) whose pages may post reports and,
    /// with a token, read; repeatable. `*`: any origin may post reports
    /// (only). With it, a report post from another page's origin is refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// A name the collector answers to besides its address (and localhost
    /// when bound to loopback): what a proxy in front forwards as Host;
    /// repeatable. A request naming any other host is answered 421 (a page
    /// reaching the collector under its own name, DNS rebinding).
    #[arg(long = "host", value_name = "NAME")]
    hosts: Vec<String>,
    /// Estimates computed at once at most (one asked again while nothing
    /// new was committed is answered from a cache, and not counted); 16
    /// more wait their turn, and past those an estimate is 503 with
    /// Retry-After. Default: the number of CPUs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_estimates: Option<u32>,
    /// Bearer tokens, one per line: with it, estimates, the metric listing
    /// and a metric's counts, report exports and /metrics need
    /// `Authorization: Bearer <token>`. Posting reports and reading a
    /// metric's config stay open.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Report posts one client address (IPv6: one /64) may make per minute;
    /// more are answered 429 with Retry-After. 0: no limit.
    #[arg(long, value_name = "N", default_value_t = 0)]
    requests_per_minute: u32,
    /// Reports one client address may post per minute (a request that would
    /// pass the limit is refused whole, 429). 0: no limit.
    #[arg(long, value_name = "N", default_value_t = 0)]
    reports_per_minute: u32,
    /// Take the client address from X-Forwarded-For (its last entry, which
    /// the proxy in front appended). Only behind a proxy that sets it:
    /// otherwise any sender picks its own address.
    #[arg(long)]
    trust_proxy: bool,
}

struct App {
    metrics: Arc<Vec<Collected>>,
    /// Per metric: the users below which its estimate means nothing yet
    /// (the planner's [`localdp::plan::min_users`]).
    min_users: Vec<u64>,
    /// Stores the batches (group commit) and reads exports.
    writer: Writer,
    telemetry: Arc<Telemetry>,
    max_body: usize,
    www: Option<PathBuf>,
    pkg: Option<PathBuf>,
    origins: Origins,
    /// `--bind` and `--host`: the `Host`s answered.
    names: Names,
    tokens: Option<Tokens>,
    /// One permit per estimate being computed (`--max-estimates`).
    computing: Arc<Semaphore>,
    /// One permit per estimate being computed or waiting its turn
    /// (`--max-estimates` + [`ESTIMATES_WAITING`]).
    admitted: Arc<Semaphore>,
    /// Per metric: held while one of its estimates is computed, so that the
    /// same estimate asked twice meanwhile is computed once.
    turns: Vec<Arc<tokio::sync::Mutex<()>>>,
    limits: Option<Limits>,
    trust_proxy: bool,
    /// Set by the first SIGINT/SIGTERM: /healthz answers 503 from then on.
    draining: AtomicBool,
}

impl App {
    fn find(&self, name: &str) -> Option<usize> {
        self.metrics.iter().position(|m| m.spec.name == name)
    }
}

/// Estimates that may wait for a turn to be computed (a dashboard asks for
/// every metric's at once); past them, a 503.
const ESTIMATES_WAITING: usize = 16;

/// How long a stop waits for the requests in flight.
const DRAIN: Duration = Duration::from_secs(30);

/// Runs the collector until SIGINT or SIGTERM, then drains: no new
/// connection is accepted, the requests in flight are answered (up to
/// [`DRAIN`], or until a second signal), and what is queued is stored.
pub fn run(args: ServeArgs) -> Result<(), String> {
    // Native panics unwind (so that localdp-arrow can refuse a damaged
    // Parquet file), but a panic in the collector ends it, after the usual
    // message: the locks a request held would stay poisoned for every later
    // one, and a supervisor restarts a process that ended, not one that limps.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort()
    }));
    let origins = Origins::parse(&args.allow_origin)?;
    let own_names = Names::new(args.bind, &args.hosts)?;
    let max_estimates = match args.max_estimates {
        Some(n) => n as usize,
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    let tokens = args.token_file.as_deref().map(Tokens::read).transpose()?;
    let limits = Limits::new(args.requests_per_minute, args.reports_per_minute);
    let metrics_file = args.metrics.clone().unwrap_or_else(|| args.www.join("metrics.json"));
    let specs = collector::read_metrics_file(&metrics_file)?;
    let mut store = Store::open(&args.db)?;
    let started = Instant::now();
    let mut metrics = Vec::with_capacity(specs.len());
    for spec in specs {
        let metric = Metric::from_json(spec.config.get())
            .map_err(|e| format!("{}: metric {:?}: {e}", metrics_file.display(), spec.name))?;
        let key = store.register(&spec.name, &metric.id(), spec.config.get())?;
        metrics.push(Collected::rebuild(spec, metric, key, &store)?);
    }
    eprintln!(
        "localdp serve: {} ({} metrics from {}, rebuilt in {} ms)",
        args.db.display(),
        metrics.len(),
        metrics_file.display(),
        started.elapsed().as_millis()
    );
    for m in &metrics {
        eprintln!(
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
        eprintln!("localdp serve: the database also holds {count} reports of metric {name:?}, not configured (kept, not served)");
    }
    if let Some(limits) = &limits {
        let per = |n: u32| if n == 0 { "no limit".to_string() } else { format!("{n}/min") };
        eprintln!(
            "localdp serve: per client address{}: requests {}, reports {}",
            if args.trust_proxy { " (from X-Forwarded-For)" } else { "" },
            per(limits.requests_per_minute),
            per(limits.reports_per_minute)
        );
    }
    let www = existing_dir(&args.www, "no demo page: --www");
    let pkg = existing_dir(&args.pkg, "the demo needs the npm package's web build (npm run build): --pkg");
    let turns = (0..metrics.len()).map(|_| Arc::default()).collect();
    let min_users = metrics.iter().map(|m| localdp::plan::min_users(&m.metric)).collect();
    let metrics = Arc::new(metrics);
    let telemetry = Arc::new(Telemetry::new(metrics.len()));
    let writer = Writer::start(store, Arc::clone(&metrics), Arc::clone(&telemetry)).map_err(|e| e.to_string())?;
    let app = Arc::new(App {
        metrics,
        min_users,
        writer,
        telemetry,
        max_body: args.max_body,
        www,
        pkg,
        origins,
        names: own_names,
        tokens,
        computing: Arc::new(Semaphore::new(max_estimates)),
        admitted: Arc::new(Semaphore::new(max_estimates + ESTIMATES_WAITING)),
        turns,
        limits,
        trust_proxy: args.trust_proxy,
        draining: AtomicBool::new(false),
    });

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    let served = runtime.block_on(serve(&app, args.bind, args.port));
    // Whatever is still queued is stored (and answered, if anyone listens).
    app.writer.stop();
    drop(runtime);
    served?;
    eprintln!("localdp serve: stopped");
    Ok(())
}

async fn serve(app: &Arc<App>, bind: IpAddr, port: u16) -> Result<(), String> {
    let listener =
        tokio::net::TcpListener::bind((bind, port)).await.map_err(|e| format!("cannot listen on {bind}:{port}: {e}"))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    // Handlers first: a signal sent as soon as the URL is read stops cleanly.
    let (first, second) = signals().map_err(|e| format!("cannot handle signals: {e}"))?;
    // The first line of stdout, and the only one: scripts read it. A base
    // without a trailing slash, so that `{url}/api/…` is an endpoint. Nobody
    // reading it (stdout closed) is no reason to stop serving.
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "http://{address}").and_then(|()| out.flush());
    }
    eprintln!("localdp serve: the operator's dashboard is http://{address}/dashboard");
    let stopping = Arc::new(tokio::sync::Notify::new());
    let stop = {
        let app = Arc::clone(app);
        let stopping = Arc::clone(&stopping);
        async move {
            let _ = first.await;
            app.draining.store(true, Ordering::SeqCst);
            let in_flight = app.telemetry.in_flight.load(Ordering::SeqCst);
            eprintln!(
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
        tokio::select! {
            _ = tokio::time::sleep(DRAIN) => "the drain took too long",
            _ = second => "a second signal",
        }
    };
    tokio::select! {
        served = server => served.map_err(|e| e.to_string()),
        why = deadline => {
            let left = app.telemetry.in_flight.load(Ordering::SeqCst);
            eprintln!("localdp serve: stopping now ({why}): {left} requests in flight are not answered");
            Ok(())
        }
    }
}

fn existing_dir(dir: &Path, missing: &str) -> Option<PathBuf> {
    if dir.is_dir() {
        Some(dir.to_path_buf())
    } else {
        eprintln!("localdp serve: {missing} {} not found", dir.display());
        None
    }
}

/// The first and the second SIGINT or SIGTERM; the handlers are installed
/// by the call.
#[cfg(unix)]
fn signals() -> std::io::Result<(tokio::sync::oneshot::Receiver<()>, tokio::sync::oneshot::Receiver<()>)> {
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
fn signals() -> std::io::Result<(tokio::sync::oneshot::Receiver<()>, tokio::sync::oneshot::Receiver<()>)> {
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
        .route("/api/metrics/{name}/export", get(export))
        .route("/api/metrics/{name}/reports.parquet", get(parquet::reports_parquet))
        .route("/healthz", get(healthz))
        .route("/metrics", get(prometheus))
        .route("/dashboard", get(dashboard::page))
        .route("/dashboard/", get(dashboard::page))
        .route("/dashboard/{file}", get(dashboard::asset))
        .method_not_allowed_fallback(|| async { json(StatusCode::METHOD_NOT_ALLOWED, json!({"error": "method not allowed"})) })
        .fallback(static_file)
        // The last layer is the outermost: every answer is tracked, CORS
        // refusals included.
        .layer(from_fn_with_state(Arc::clone(&app), cors))
        .layer(from_fn_with_state(Arc::clone(&app), own_host))
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

/// Answers only requests whose `Host` is one of the collector's names
/// ([`Names`]): a page that reached it under a name of its own (DNS
/// rebinding) would otherwise pass for the collector's own page, and read
/// what a loopback-bound collector without tokens serves. 421 for the
/// others, before anything else is looked at.
async fn own_host(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).map(|h| h.to_str().unwrap_or(""));
    let authority = request.uri().authority().map(|a| a.host());
    if host.into_iter().chain(authority).all(|h| app.names.admits(h)) {
        return next.run(request).await;
    }
    json(
        StatusCode::MISDIRECTED_REQUEST,
        json!({"error": "this collector does not answer to the host this request names (Host); \
                         a name a proxy forwards is added with --host NAME"}),
    )
}

/// What a route lets another origin do: post reports, or read.
fn cors_class(route: Route) -> Option<Grant> {
    match route {
        Route::Reports => Some(Grant::Post),
        Route::Estimate | Route::Metrics | Route::Export | Route::Prometheus => Some(Grant::Read),
        _ => None,
    }
}

/// `--allow-origin`: preflights, CORS headers on allowed requests, and
/// report posts from other origins refused. Without the flag nothing here
/// happens (an OPTIONS is a 405, as any other unrouted method).
async fn cors(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    if !app.origins.configured() {
        return next.run(request).await;
    }
    let headers = request.headers();
    let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()).map(str::to_string) else {
        return next.run(request).await;
    };
    if access::same_origin(&origin, headers) {
        return next.run(request).await;
    }
    let grant = app.origins.grant(&origin);
    let path = request.uri().path().to_string();
    if request.method() == Method::OPTIONS {
        let Some(wanted) = headers.get(header::ACCESS_CONTROL_REQUEST_METHOD) else { return next.run(request).await };
        let wanted = Method::from_bytes(wanted.as_bytes()).unwrap_or(Method::OPTIONS);
        let class = cors_class(Route::of(&wanted, &path));
        // The headers a page may send: a content type to post, a token to read.
        let (method, allowed_header) = match class {
            Some(Grant::Post) => ("POST", "content-type"),
            _ => ("GET", "authorization"),
        };
        let headers_ok = headers
            .get_all(header::ACCESS_CONTROL_REQUEST_HEADERS)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .all(|h| h.eq_ignore_ascii_case(allowed_header));
        let granted = match class {
            Some(Grant::Post) => grant != Grant::None,
            Some(Grant::Read) => grant == Grant::Read,
            _ => false,
        };
        if !(granted && headers_ok && wanted.as_str() == method) {
            let error = format!(
                "origin {origin:?} may not {} {path} here (--allow-origin; a page may send {allowed_header} only)",
                wanted.as_str()
            );
            let mut response = json(StatusCode::FORBIDDEN, json!({ "error": error }));
            response.headers_mut().insert(header::VARY, HeaderValue::from_static("Origin"));
            return response;
        }
        let mut response = StatusCode::NO_CONTENT.into_response();
        let out = response.headers_mut();
        allow_origin(out, &origin, grant);
        out.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(method));
        out.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(allowed_header));
        // Chromium caps this at 2 hours.
        out.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("7200"));
        out.insert(header::VARY, HeaderValue::from_static("Origin"));
        return response;
    }
    let class = cors_class(Route::of(request.method(), &path));
    if class == Some(Grant::Post) && grant == Grant::None {
        // Another page's beacon: refused before its body is read. A beacon
        // never shows its answer, so the operator is told (counts only).
        if let Some(refused) = app.telemetry.origin_refused() {
            eprintln!(
                "localdp serve: report posts refused for their page's origin (not in --allow-origin) so far: {refused}; \
                 each was a 403, counted in /metrics as localdp_http_requests_total{{route=\"reports\",status=\"403\"}}"
            );
        }
        let error = format!("pages from {origin:?} may not post reports here (--allow-origin); nothing was counted");
        let mut response = json(StatusCode::FORBIDDEN, json!({ "error": error }));
        response.headers_mut().insert(header::VARY, HeaderValue::from_static("Origin"));
        return response;
    }
    let mut response = next.run(request).await;
    let out = response.headers_mut();
    let allowed = match class {
        Some(Grant::Post) => grant != Grant::None,
        Some(Grant::Read) => grant == Grant::Read,
        _ => false,
    };
    if allowed {
        allow_origin(out, &origin, grant);
        out.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("retry-after"));
    }
    if class.is_some() {
        out.append(header::VARY, HeaderValue::from_static("Origin"));
    }
    response
}

/// `Access-Control-Allow-Origin`: the origin itself if it is listed, `*` if
/// it may post only because `*` is allowed.
fn allow_origin(out: &mut HeaderMap, origin: &str, grant: Grant) {
    let value = match grant {
        Grant::Read => HeaderValue::from_str(origin).unwrap_or_else(|_| HeaderValue::from_static("null")),
        _ => HeaderValue::from_static("*"),
    };
    out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
}

/// `None` if the request may read (no tokens configured, or a valid one
/// given); else the 401.
fn authorize(app: &App, headers: &HeaderMap) -> Option<Response> {
    let tokens = app.tokens.as_ref()?;
    let (error, challenge) = match tokens.admits(headers) {
        Access::Granted => return None,
        Access::Missing => ("this endpoint needs Authorization: Bearer <token>", "Bearer realm=\"localdp\""),
        Access::Invalid => ("the token is not valid", "Bearer realm=\"localdp\", error=\"invalid_token\""),
    };
    let mut response = json(StatusCode::UNAUTHORIZED, json!({ "error": error }));
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    Some(response)
}

/// A JSON response (compact, one line).
fn json(status: StatusCode, body: impl Serialize) -> Response {
    let mut text = serde_json::to_string(&body).expect("serializes");
    text.push('\n');
    (status, api_headers(), text).into_response()
}

fn api_headers() -> [(HeaderName, HeaderValue); 3] {
    [
        (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    ]
}

/// The 404 of a metric name that is not configured: it lists the metrics,
/// unless tokens are configured (the list is then for token holders, and a
/// report post needs none).
fn unknown_metric(app: &App, name: &str) -> Response {
    if app.tokens.is_some() {
        return json(StatusCode::NOT_FOUND, json!({"error": "no such metric"}));
    }
    let names: Vec<&str> = app.metrics.iter().map(|m| m.spec.name.as_str()).collect();
    json(StatusCode::NOT_FOUND, json!({"error": format!("no metric named {name:?}"), "metrics": names}))
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
    /// Verbatim from the metrics file: what a client randomizes with.
    config: &'a RawValue,
}

/// Metric `i`; with `counts`: with `n`, `rejected`, `limited` and `min_users`.
fn describe(app: &App, i: usize, counts: bool) -> Described<'_> {
    let m = &app.metrics[i];
    Described {
        name: &m.spec.name,
        title: m.spec.title.as_deref(),
        unit: m.spec.unit.as_deref(),
        kind: m.metric.family(),
        protocol: m.metric.protocol().name(),
        epsilon: m.metric.epsilon(),
        n: counts.then(|| m.n()),
        rejected: counts.then(|| m.rejected()),
        limited: counts.then(|| app.telemetry.limited[i].counts()),
        min_users: counts.then_some(app.min_users[i]),
        config: &m.spec.config,
    }
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
    json(StatusCode::OK, List { metrics: (0..app.metrics.len()).map(|i| describe(&app, i, true)).collect() })
}

/// `GET /api/metrics/{name}`: one metric, as in the list. Its config is
/// public (clients need it): with tokens and no valid one, it is answered
/// without the counts.
async fn show_metric(State(app): State<Arc<App>>, UrlPath(name): UrlPath<String>, headers: HeaderMap) -> Response {
    let counts = authorize(&app, &headers).is_none();
    match app.find(&name) {
        Some(i) => json(StatusCode::OK, describe(&app, i, counts)),
        None => unknown_metric(&app, &name),
    }
}

/// `POST /api/metrics/{name}/reports`: one report or an array of them.
async fn post_reports(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(index) = app.find(&name) else { return unknown_metric(&app, &name) };
    // The per-source limits: a request first, before its body is read.
    let source = Source::of(limits::client_address(peer.ip(), &headers, app.trust_proxy));
    if let Some(limits) = &app.limits {
        if let Err(refused) = limits.take_request(source, Instant::now()) {
            app.telemetry.limited[index].requests.fetch_add(1, Ordering::Relaxed);
            return too_many(limits, refused);
        }
    }
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > app.max_body as u64) {
        return too_large(app.max_body);
    }
    let body = match tokio::time::timeout(BODY_TIMEOUT, read_limited(body, app.max_body)).await {
        Ok(Ok(body)) => body,
        Ok(Err(ReadError::TooLarge)) => return too_large(app.max_body),
        Ok(Err(ReadError::Failed(e))) => {
            return json(StatusCode::BAD_REQUEST, json!({"error": format!("could not read the body: {e}")}))
        }
        Err(_) => {
            let error = format!("the body did not arrive within {} s", BODY_TIMEOUT.as_secs());
            return json(StatusCode::REQUEST_TIMEOUT, json!({ "error": error }));
        }
    };
    // A beacon's few hundred bytes are validated right here; a large batch
    // off the async workers.
    let size = body.len();
    let validated = if body.len() <= VALIDATE_INLINE {
        app.metrics[index].validate(&body)
    } else {
        let shared = Arc::clone(&app);
        match tokio::task::spawn_blocking(move || shared.metrics[index].validate(&body)).await {
            Ok(validated) => validated,
            Err(_) => return internal_error(),
        }
    };
    let batch = match validated {
        Ok(batch) => batch,
        Err(e) => {
            let what = match e {
                BodyError::NotJson(_) => "not JSON",
                BodyError::NotReports => "not a report or an array",
            };
            eprintln!("{name}: refused a body of {size} bytes ({what})");
            return json(StatusCode::BAD_REQUEST, json!({"error": e.to_string()}));
        }
    };
    let posted = batch.reports.len() as u64 + batch.rejected.total();
    // Then its reports, all or none: a refused request counts nothing.
    if let Some(limits) = &app.limits {
        if let Err(refused) = limits.take_reports(source, posted, Instant::now()) {
            let limited = &app.telemetry.limited[index];
            limited.report_requests.fetch_add(1, Ordering::Relaxed);
            limited.reports.fetch_add(posted, Ordering::Relaxed);
            return too_many(limits, refused);
        }
    }
    let response = ingest(&app, index, batch).await;
    if response.status() == StatusCode::INTERNAL_SERVER_ERROR {
        // Nothing of it was counted: nor is it against the client's limits.
        if let Some(limits) = &app.limits {
            limits.refund(source, posted, Instant::now());
        }
    }
    response
}

/// Bodies up to this size are validated on the async worker.
const VALIDATE_INLINE: usize = 16 << 10;

fn internal_error() -> Response {
    json(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "internal error; nothing of this batch was counted"}))
}

/// 429 with `Retry-After`, or 413 for a batch larger than the per-minute
/// report limit (it can never fit).
fn too_many(limits: &Limits, refused: Refused) -> Response {
    let per_minute =
        if refused.limit == "requests" { limits.requests_per_minute } else { limits.reports_per_minute };
    if refused.never {
        let error = format!(
            "a request may carry at most {per_minute} reports (the per-minute limit per client address); \
             send smaller batches; nothing of this one was counted"
        );
        return json(StatusCode::PAYLOAD_TOO_LARGE, json!({ "error": error, "max_reports": per_minute }));
    }
    let error = format!(
        "too many {} from this address (at most {per_minute} per minute); nothing of this request was counted; \
         retry after {} s",
        refused.limit, refused.retry_after
    );
    let mut response = json(
        StatusCode::TOO_MANY_REQUESTS,
        json!({"error": error, "limit": refused.limit, "per_minute": per_minute, "retry_after": refused.retry_after}),
    );
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(refused.retry_after));
    response
}

fn too_large(limit: usize) -> Response {
    json(
        StatusCode::PAYLOAD_TOO_LARGE,
        json!({"error": format!("the body is larger than {limit} bytes; send smaller batches"), "max_body": limit}),
    )
}

/// How long a body may take to arrive (a slow sender holds a connection).
const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

enum ReadError {
    TooLarge,
    Failed(String),
}

/// The body, refused as soon as it grows past `limit` (a body without a
/// Content-Length, e.g. chunked, is measured as it arrives).
async fn read_limited(mut body: Body, limit: usize) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(|e| ReadError::Failed(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > limit {
                return Err(ReadError::TooLarge);
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(bytes)
}

/// Stores (with the other batches queued meanwhile, in one transaction)
/// and counts a validated batch; answers once it is on disk.
async fn ingest(app: &App, index: usize, batch: Batch) -> Response {
    let name = &app.metrics[index].spec.name;
    let Batch { reports, parsed, rejected, described } = batch;
    let accepted = reports.len();
    if accepted > 0 || rejected.total() > 0 {
        let (reply, stored) = tokio::sync::oneshot::channel();
        let job = Job::Append(Append { metric: index, reports, parsed, rejected, reply });
        if !app.writer.send(job) || !matches!(stored.await, Ok(Ok(()))) {
            // The writer logged the database error.
            return json(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": "the batch could not be stored; nothing of it was counted"}),
            );
        }
    } else {
        eprintln!("{name}: 0 accepted, 0 rejected");
    }
    let error = match (accepted, rejected.total()) {
        (0, 0) => Some("the body holds no reports"),
        (0, _) => Some("no report in the body is valid for this metric"),
        _ => None,
    };
    let response = Ingested {
        error,
        accepted,
        rejected,
        errors: described
            .iter()
            .map(|(index, reason, message)| DescribedRejection { index: *index, reason: reason.as_str(), message })
            .collect(),
    };
    json(if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK }, response)
}

/// The answer to a batch.
#[derive(Serialize)]
struct Ingested<'a> {
    /// Only when nothing was accepted (a 400).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'static str>,
    accepted: usize,
    /// Every reason, zeros included.
    rejected: RejectionCounts,
    /// The first few rejected reports, one by one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<DescribedRejection<'a>>,
}

#[derive(Serialize)]
struct DescribedRejection<'a> {
    /// Position in the body's array (0 for a single report).
    index: usize,
    reason: &'static str,
    /// What was wrong (never a raw value: reports hold none).
    message: &'a str,
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
    let mut response = json(
        StatusCode::SERVICE_UNAVAILABLE,
        json!({"error": "too many estimates are being computed or waiting (--max-estimates); retry after 1 s",
               "retry_after": 1}),
    );
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(1));
    response
}

/// Reports per page of an export (one writer job each).
const EXPORT_PAGE: usize = 10_000;

/// `GET /api/metrics/{name}/export`: every stored report of the metric,
/// oldest first, one canonical JSON line each (what `localdp aggregate`
/// reads), up to the newest stored when the export began. A database error
/// midway cuts the connection, so a truncated export cannot pass for a
/// complete one.
async fn export(State(app): State<Arc<App>>, UrlPath(name): UrlPath<String>, headers: HeaderMap) -> Response {
    if let Some(denied) = authorize(&app, &headers) {
        return denied;
    }
    let Some(index) = app.find(&name) else { return unknown_metric(&app, &name) };
    let key = app.metrics[index].key;
    let first = match export_page(&app, key, 0, None).await {
        Ok(page) => page,
        Err(e) => {
            eprintln!("{name}: export failed: {e}");
            return json(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "the reports could not be read"}));
        }
    };
    let (lines, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    let shared = Arc::clone(&app);
    tokio::spawn(async move {
        let mut page = first;
        while let Some(&(last, _)) = page.rows.last() {
            let full = page.rows.len() == EXPORT_PAGE;
            let mut chunk = String::with_capacity(page.rows.iter().map(|(_, r)| r.len() + 1).sum());
            for (_, report) in &page.rows {
                chunk.push_str(report);
                chunk.push('\n');
            }
            if lines.send(Ok(Bytes::from(chunk))).await.is_err() || !full {
                break; // the client left, or that was all
            }
            page = match export_page(&shared, key, last, Some(page.upto)).await {
                Ok(next) => next,
                Err(e) => {
                    eprintln!("{}: export failed: {e}", shared.metrics[index].spec.name);
                    let _ = lines.send(Err(std::io::Error::other(e))).await;
                    break;
                }
            };
        }
    });
    let mut response = Response::new(Body::new(Lines(rx)));
    let out = response.headers_mut();
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-ndjson"));
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    out.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

async fn export_page(app: &App, key: i64, after: i64, upto: Option<i64>) -> Result<writer::Page, String> {
    let (reply, page) = tokio::sync::oneshot::channel();
    if !app.writer.send(Job::Export { key, after, upto, limit: EXPORT_PAGE, reply }) {
        return Err("the database writer stopped".into());
    }
    page.await.map_err(|_| "the database writer stopped".to_string())?
}

/// A response body fed by a channel; an `Err` aborts the response.
struct Lines(tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl HttpBody for Lines {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx).map(|line| line.map(|l| l.map(http_body::Frame::data)))
    }
}

/// `GET /healthz`: 200 while the collector takes reports; 503 once it is
/// stopping (draining) or if its database writer has stopped.
async fn healthz(State(app): State<Arc<App>>) -> Response {
    if app.draining.load(Ordering::SeqCst) {
        json(StatusCode::SERVICE_UNAVAILABLE, json!({"status": "draining"}))
    } else if !app.writer.alive() {
        json(StatusCode::SERVICE_UNAVAILABLE, json!({"status": "failing", "error": "the database writer stopped"}))
    } else {
        json(StatusCode::OK, json!({"status": "ok"}))
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
            Counted { name: &m.spec.name, accepted, rejected }
        })
        .collect();
    let sources = app.limits.as_ref().map_or(0, Limits::tracked);
    let text = app.telemetry.render(&counts, sources);
    let mut response = (StatusCode::OK, text).into_response();
    let out = response.headers_mut();
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

const PAGE_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The demo (`--www`) at `/` and the package's web build (`--pkg`) at `/pkg/`;
/// every other path is a JSON 404 (405 for a method other than GET or HEAD).
async fn static_file(State(app): State<Arc<App>>, method: Method, uri: Uri) -> Response {
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
    let mut response = (StatusCode::OK, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if extension == "html" {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_POLICY));
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    }
    response
}
