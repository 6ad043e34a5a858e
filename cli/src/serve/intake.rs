//! Taking a report post, as the collector (`localdp serve`) and the
//! shuffler (`localdp shuffle`) both do before they store a batch: the names
//! a request may use (421 for others), CORS (`--allow-origin`), the
//! per-source limits, the body's size and time limits, the validation of its
//! reports against the metric (`collector::validate`), and the answer.

use crate::serve::logging::{log_error, log_info};
use super::access::{self, AllowedOrigins, Grant, Names};
use super::collector::{self, Batch};
use super::limits::{self, Limits, Refused, Source};
use super::response::{json, retry_later};
use super::telemetry::{Route, Telemetry};
use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Path as UrlPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use localdp::{Metric, Rejection, RejectionCounts};
use serde::Serialize;
use serde_json::json;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

/// The header that names a shuffled batch (`localdp shuffle` sends it): the
/// collector stores a batch of one id once, however often it is sent.
pub const BATCH_HEADER: &str = "localdp-batch";

/// The options of [`Front`], shared by `localdp serve` and `localdp shuffle`.
#[derive(clap::Args)]
pub struct FrontArgs {
    /// Address to listen on. The default accepts connections from this
    /// machine only.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// The largest request body accepted, in bytes; a larger one is refused
    /// with 413 before it is parsed.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body: usize,
    /// An origin (`https://app.example`) whose pages may post reports and,
    /// with a token, read; repeatable. `*`: any origin may post reports
    /// (only). A report post from a page of any other origin is refused
    /// (403, counting nothing), with or without this flag.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// A file of origins, one per line (`#` starts a comment line), taken
    /// as --allow-origin takes them and besides them; read again on
    /// SIGHUP (a file that does not read keeps the origins, and the log
    /// says why).
    #[arg(long = "allow-origin-file", value_name = "FILE")]
    allow_origin_file: Option<std::path::PathBuf>,
    /// A name the server answers to besides its address (and localhost
    /// when bound to loopback): what a proxy in front forwards as Host;
    /// repeatable. A request naming any other host is answered 421 (a page
    /// reaching the server under its own name, DNS rebinding).
    #[arg(long = "host", value_name = "NAME")]
    hosts: Vec<String>,
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
    /// Log lines (stderr) as text (`TIME LEVEL message`) or as JSON, one
    /// object per line (`{"ts", "level", "msg"}`).
    #[arg(long, value_enum, default_value_t = super::logging::Format::Text)]
    pub log_format: super::logging::Format,
}

impl FrontArgs {
    /// Whether `--reports-per-minute` limits each sender.
    pub fn limits_reports(&self) -> bool {
        self.reports_per_minute > 0
    }

    /// The checks these options ask for; `program` names the server in the
    /// log line that states the per-source limits.
    pub fn front(&self, program: &str, telemetry: Arc<Telemetry>) -> Result<Front, String> {
        let limits = Limits::new(self.requests_per_minute, self.reports_per_minute);
        if let Some(limits) = &limits {
            let per = |n: u32| if n == 0 { "no limit".to_string() } else { format!("{n}/min") };
            log_info!(
                "{program}: per client address{}: requests {}, reports {}",
                if self.trust_proxy { " (from X-Forwarded-For)" } else { "" },
                per(limits.requests_per_minute),
                per(limits.reports_per_minute)
            );
        }
        Ok(Front {
            max_body: self.max_body,
            origins: AllowedOrigins::open(self.allow_origin.clone(), self.allow_origin_file.clone())?,
            names: Names::new(self.bind, &self.hosts)?,
            limits,
            trust_proxy: self.trust_proxy,
            batches: None,
            telemetry,
        })
    }
}

/// What a report post is checked against before its batch is stored.
pub struct Front {
    /// `--max-body`.
    pub max_body: usize,
    /// `--allow-origin`, `--allow-origin-file`.
    pub origins: AllowedOrigins,
    /// `--bind` and `--host`: the `Host`s answered.
    pub names: Names,
    /// `--requests-per-minute`, `--reports-per-minute`.
    pub limits: Option<Limits>,
    /// `--trust-proxy`.
    pub trust_proxy: bool,
    /// The collector's `--shuffler-reports-per-minute`: the limit of the
    /// shuffled batches of each shuffler token (exempt from `limits`).
    pub batches: Option<Limits>,
    /// Counts the report posts refused for their origin.
    pub telemetry: Arc<Telemetry>,
}

/// A report post, as its handler takes it: the metric's name (from the
/// path), the peer's address, the headers, and the body (not yet read).
pub struct Post {
    /// The metric's name, as the path gives it (not yet looked up).
    pub name: String,
    /// The peer's address (the client's, or a proxy's: `--trust-proxy`).
    pub peer: IpAddr,
    pub headers: HeaderMap,
    pub body: Body,
}

impl<S: Send + Sync> FromRequest<S> for Post {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Post, Response> {
        let (mut parts, body) = request.into_parts();
        let UrlPath(name) =
            UrlPath::<String>::from_request_parts(&mut parts, state).await.map_err(IntoResponse::into_response)?;
        let ConnectInfo(peer) =
            ConnectInfo::<SocketAddr>::from_request_parts(&mut parts, state).await.map_err(IntoResponse::into_response)?;
        Ok(Post { name, peer: peer.ip(), headers: parts.headers, body })
    }
}

/// A report post read, validated and within the per-source limits: its
/// batch, to store.
pub struct Received {
    /// The validated reports, and the rejected ones counted.
    pub batch: Batch,
    /// What the per-source limits took for it.
    pub taken: Taken,
}

/// What a received post took from the per-source limits.
pub struct Taken {
    source: Source,
    /// Reports posted (accepted and rejected).
    posted: u64,
    /// Taken from [`Front::batches`].
    batch: bool,
}

/// A report post answered before anything of it was stored.
pub enum Refusal {
    /// Over the per-source request limit (429).
    Requests(Response),
    /// Over the per-source report limit (429 or 413), with the reports it
    /// carried.
    Reports(Response, u64),
    /// Any other refusal: the body too large, too slow, not JSON.
    Body(Response),
}

impl Refusal {
    /// The answer.
    pub fn response(self) -> Response {
        match self {
            Refusal::Requests(r) | Refusal::Reports(r, _) | Refusal::Body(r) => r,
        }
    }
}

impl Front {
    /// Reads `--allow-origin-file` again (SIGHUP), and logs what came of
    /// it; `program` names the server.
    pub fn reload_origins(&self, program: &str) {
        match self.origins.reload() {
            Some(Ok(origins)) => log_info!("{program}: SIGHUP: origin file read again: {}", origins.describe()),
            Some(Err(e)) => log_error!("{program}: SIGHUP: the old origins are kept: {e}"),
            None => {}
        }
    }

    /// Reads a report post's body for the metric `name` (the per-source
    /// request limit first, then the size and time limits), validates its
    /// reports, and takes them from the per-source report limit, all or
    /// none: a refused request counts nothing. A shuffled batch of the
    /// shuffler token `shuffler` (its fingerprint) is limited per token by
    /// [`Front::batches`] instead: the shuffler is one address for all of
    /// its senders, whom it limits itself.
    pub async fn receive(&self, metric: &Arc<Metric>, post: Post, shuffler: Option<&str>) -> Result<Received, Refusal> {
        let Post { peer, headers, mut body, .. } = post;
        let (source, limits) = match shuffler {
            Some(fingerprint) => (Source::shuffler(fingerprint), &self.batches),
            None => (Source::of(limits::client_address(peer, &headers, self.trust_proxy)), &self.limits),
        };
        if let Some(limits) = limits {
            if let Err(refused) = limits.take_request(source, Instant::now()) {
                return Err(Refusal::Requests(discard(body, too_many(limits, refused)).await));
            }
        }
        let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|length| length > self.max_body as u64) {
            return Err(Refusal::Body(discard(body, too_large(self.max_body)).await));
        }
        let body = match tokio::time::timeout(BODY_TIMEOUT, read_limited(&mut body, self.max_body)).await {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(ReadError::TooLarge)) => return Err(Refusal::Body(discard(body, too_large(self.max_body)).await)),
            Ok(Err(ReadError::Failed(e))) => {
                return Err(Refusal::Body(json(StatusCode::BAD_REQUEST, json!({"error": format!("could not read the body: {e}")}))))
            }
            Err(_) => {
                let error = format!("the body did not arrive within {} s", BODY_TIMEOUT.as_secs());
                return Err(Refusal::Body(json(StatusCode::REQUEST_TIMEOUT, json!({ "error": error }))));
            }
        };
        // A beacon's few hundred bytes are validated right here; a large batch
        // off the async workers.
        let validated = if body.len() <= VALIDATE_INLINE {
            collector::validate(metric, &body)
        } else {
            let metric = Arc::clone(metric);
            match tokio::task::spawn_blocking(move || collector::validate(&metric, &body)).await {
                Ok(validated) => validated,
                Err(_) => return Err(Refusal::Body(internal_error())),
            }
        };
        let batch = match validated {
            Ok(batch) => batch,
            Err(e) => return Err(Refusal::Body(json(StatusCode::BAD_REQUEST, json!({"error": e.to_string()})))),
        };
        let posted = batch.reports.len() as u64 + batch.rejected.total();
        if let Some(limits) = limits {
            if let Err(refused) = limits.take_reports(source, posted, Instant::now()) {
                return Err(Refusal::Reports(too_many(limits, refused), posted));
            }
        }
        Ok(Received { batch, taken: Taken { source, posted, batch: shuffler.is_some() } })
    }

    /// Gives back what a received post took from the per-source limits: it
    /// could not be stored, and a failure of the server's is not the
    /// client's spending.
    pub fn refund(&self, taken: &Taken) {
        if let Some(limits) = if taken.batch { &self.batches } else { &self.limits } {
            limits.refund(taken.source, taken.posted, Instant::now());
        }
    }
}

/// The answer to a stored batch: 200 with the counts, or 400 when nothing
/// in it was accepted.
pub fn answer(accepted: usize, rejected: RejectionCounts, described: &[(usize, Rejection, String)]) -> Response {
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
pub struct Ingested<'a> {
    /// Only when nothing was accepted (a 400).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'static str>,
    pub accepted: usize,
    /// Every reason, zeros included.
    pub rejected: RejectionCounts,
    /// The first few rejected reports, one by one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<DescribedRejection<'a>>,
}

#[derive(Serialize)]
pub struct DescribedRejection<'a> {
    /// Position in the body's array (0 for a single report).
    index: usize,
    reason: &'static str,
    /// What was wrong (never a raw value: reports hold none).
    message: &'a str,
}


/// Answers only requests whose `Host` is one of the server's names
/// ([`Names`]): a page that reached it under a name of its own (DNS
/// rebinding) would otherwise pass for the collector's own page, and read
/// what a loopback-bound collector without tokens serves. 421 for the
/// others, before anything else is looked at.
pub async fn own_host(State(front): State<Arc<Front>>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).map(|h| h.to_str().unwrap_or(""));
    let authority = request.uri().authority().map(|a| a.host());
    if host.into_iter().chain(authority).all(|h| front.names.admits(h)) {
        return next.run(request).await;
    }
    let refused = json(
        StatusCode::MISDIRECTED_REQUEST,
        json!({"error": "this collector does not answer to the host this request names (Host); \
                         a name a proxy forwards is added with --host NAME"}),
    );
    discard(request.into_body(), refused).await
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
/// report posts from other origins refused, with or without the flag (a
/// page could not read the answer to such a post, so it could not know it
/// was counted and would send it again). Requests without `Origin` (the
/// CLI, servers) and the collector's own pages pass untouched. Browser
/// extensions may post as a listed origin may, with CORS headers: one
/// without host permissions for the collector reads the answer only
/// through them (without, its post was counted and its `fetch` failed, so
/// it sent it again).
pub async fn cors(State(front): State<Arc<Front>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()).map(str::to_string) else {
        return next.run(request).await;
    };
    if access::same_origin(&origin, headers) {
        return next.run(request).await;
    }
    let grant = match front.origins.current().grant(&origin) {
        Grant::None if access::extension(&origin) => Grant::Post,
        grant => grant,
    };
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
        if let Some(refused) = front.telemetry.origin_refused() {
            log_info!(
                "localdp serve: report posts refused for their page's origin (not in --allow-origin) so far: {refused}; \
                 each was a 403, counted in /metrics as localdp_http_requests_total{{route=\"reports\",status=\"403\"}}"
            );
        }
        let error = format!(
            "pages from {origin:?} may not post reports here: the collector takes them from its own pages and \
             from the origins of --allow-origin ORIGIN; nothing was counted"
        );
        let mut response = json(StatusCode::FORBIDDEN, json!({ "error": error }));
        // Readable by the page, so that it can show why (and not retry).
        allow_origin(response.headers_mut(), &origin, Grant::Read);
        response.headers_mut().insert(header::VARY, HeaderValue::from_static("Origin"));
        return discard(request.into_body(), response).await;
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

/// Bodies up to this size are validated on the async worker.
const VALIDATE_INLINE: usize = 16 << 10;

pub fn internal_error() -> Response {
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
    retry_later(
        StatusCode::TOO_MANY_REQUESTS,
        json!({"error": error, "limit": refused.limit, "per_minute": per_minute, "retry_after": refused.retry_after}),
        refused.retry_after,
    )
}

pub fn too_large(limit: usize) -> Response {
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
async fn read_limited(body: &mut Body, limit: usize) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    while let Some(frame) = next_frame(body).await {
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


async fn next_frame(body: &mut Body) -> Option<Result<http_body::Frame<axum::body::Bytes>, axum::Error>> {
    std::future::poll_fn(|cx| std::pin::Pin::new(&mut *body).poll_frame(cx)).await
}

/// How much of a refused request's body [`discard`] reads at most.
pub const DISCARD: u64 = 16 << 20;

/// Answers `response` to a request refused before its body was read, once
/// the body has been read and thrown away (at most [`DISCARD`] bytes,
/// within [`BODY_TIMEOUT`]): a proxy in front (nginx) sends the whole body
/// before it reads the answer, and a server that answers and closes while
/// the body is still coming makes it answer 502 instead. A longer or
/// slower body is not waited for: the answer then closes the connection.
pub async fn discard(mut body: Body, mut response: Response) -> Response {
    let read = async {
        if body.size_hint().lower() > DISCARD {
            return false;
        }
        let mut left = DISCARD;
        while let Some(frame) = next_frame(&mut body).await {
            let Ok(frame) = frame else { return false };
            if let Ok(data) = frame.into_data() {
                let Some(rest) = left.checked_sub(data.len() as u64) else { return false };
                left = rest;
            }
        }
        true
    };
    if !matches!(tokio::time::timeout(BODY_TIMEOUT, read).await, Ok(true)) {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
