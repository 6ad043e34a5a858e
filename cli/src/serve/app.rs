//! The collector's state ([`App`]) and what every endpoint checks first: a
//! reader's token where one is needed ([`authorize`]), a shuffler's token
//! on a shuffled batch ([`authorize_batch`]), and the metric's name
//! ([`App::find`], [`unknown_metric`]).

use super::access::{Access, Tokens};
use super::collector::Collected;
use super::intake::Front;
use super::response::json;
use super::telemetry::Telemetry;
use super::writer::Writer;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};
use tokio::sync::Semaphore;

/// The collector's state, shared by every request handler.
pub(super) struct App {
    pub(super) metrics: Arc<Vec<Collected>>,
    /// Per metric: the users below which its estimate means nothing yet
    /// (the planner's [`localdp::plan::min_users`]).
    pub(super) min_users: Vec<u64>,
    /// Stores the batches (group commit) and reads exports.
    pub(super) writer: Writer,
    /// On PostgreSQL, reads exports instead of the writer.
    pub(super) exporter: Option<super::postgres::Exporter>,
    pub(super) telemetry: Arc<Telemetry>,
    /// What a report post is checked against (shared with the shuffler).
    pub(super) front: Arc<Front>,
    pub(super) www: Option<PathBuf>,
    pub(super) pkg: Option<PathBuf>,
    /// The compressed copies of `www` and `pkg` files.
    pub(super) assets: super::assets::Assets,
    /// The token files, read again on SIGHUP.
    pub(super) keys: KeyFiles,
    /// One permit per estimate being computed (`--max-estimates`).
    pub(super) computing: Arc<Semaphore>,
    /// One permit per estimate being computed or waiting its turn
    /// (`--max-estimates` + [`ESTIMATES_WAITING`]).
    pub(super) admitted: Arc<Semaphore>,
    /// Per metric: held while one of its estimates is computed, so that the
    /// same estimate asked twice meanwhile is computed once.
    pub(super) turns: Vec<Arc<tokio::sync::Mutex<()>>>,
    /// `--central-delta`.
    pub(super) central_delta: f64,
    /// When the process started (`/metrics`).
    pub(super) started: std::time::SystemTime,
    /// `--db` (`/metrics` shows its size and its write-ahead log's).
    pub(super) db: PathBuf,
    /// `--shutdown-delay`.
    pub(super) shutdown_delay: std::time::Duration,
    /// Set by the first SIGINT/SIGTERM: /readyz answers 503 from then on.
    pub(super) draining: AtomicBool,
}

impl App {
    /// The index of the metric named `name`.
    pub(super) fn find(&self, name: &str) -> Option<usize> {
        self.metrics.iter().position(|m| m.spec.name == name)
    }

    /// The tokens now (a reload replaces them whole).
    pub(super) fn keys(&self) -> Arc<Keys> {
        self.keys.current()
    }
}

/// The tokens of `--token-file` and `--shuffler-token-file`.
pub(super) struct Keys {
    /// The readers' tokens.
    pub(super) readers: Option<Tokens>,
    /// The only tokens that may post a shuffled batch (they read nothing).
    pub(super) shufflers: Option<Tokens>,
}

impl Keys {
    /// Reads both files, and refuses a token in both (a reader could then
    /// post shuffled batches) or two shuffler tokens of one fingerprint.
    fn read(readers: Option<&std::path::Path>, shufflers: Option<&std::path::Path>) -> Result<Keys, String> {
        let readers = readers.map(|file| Tokens::read(file, "--token-file")).transpose()?;
        let shufflers = shufflers.map(|file| Tokens::read(file, "--shuffler-token-file")).transpose()?;
        if let Some(shufflers) = &shufflers {
            if readers.as_ref().is_some_and(|readers| readers.shares_a_token_with(shufflers)) {
                return Err("a token is in both --token-file and --shuffler-token-file: a reader could then post \
                            shuffled batches; give the shuffler tokens of its own"
                    .into());
            }
            let fingerprints = shufflers.fingerprints();
            if (1..fingerprints.len()).any(|i| fingerprints[..i].contains(&fingerprints[i])) {
                return Err("--shuffler-token-file: two tokens have the same fingerprint (or are the same token); \
                            the dashboard could not tell their batches apart"
                    .into());
            }
        }
        Ok(Keys { readers, shufflers })
    }

    /// What the log says of them: counts and the shufflers' fingerprints.
    pub(super) fn describe(&self) -> String {
        let count = |t: &Option<Tokens>| t.as_ref().map_or(0, |t| t.fingerprints().len());
        let mut text = format!("{} reader tokens, {} shuffler tokens", count(&self.readers), count(&self.shufflers));
        if let Some(shufflers) = &self.shufflers {
            text.push_str(&format!(" ({})", shufflers.fingerprints().join(", ")));
        }
        text
    }
}

/// The token files and the tokens read from them last.
pub(super) struct KeyFiles {
    readers: Option<PathBuf>,
    shufflers: Option<PathBuf>,
    current: RwLock<Arc<Keys>>,
}

impl KeyFiles {
    pub(super) fn open(readers: Option<PathBuf>, shufflers: Option<PathBuf>) -> Result<KeyFiles, String> {
        let keys = Keys::read(readers.as_deref(), shufflers.as_deref())?;
        Ok(KeyFiles { readers, shufflers, current: RwLock::new(Arc::new(keys)) })
    }

    /// The tokens read last.
    pub(super) fn current(&self) -> Arc<Keys> {
        Arc::clone(&self.current.read().expect("no panics while holding the lock"))
    }

    /// Reads the files again (SIGHUP): their new tokens from the next
    /// request on, or, if they do not read, the old ones kept and the
    /// error. A request being answered keeps the tokens it started with.
    pub(super) fn reload(&self) -> Result<Arc<Keys>, String> {
        let keys = Arc::new(Keys::read(self.readers.as_deref(), self.shufflers.as_deref())?);
        *self.current.write().expect("no panics while holding the lock") = Arc::clone(&keys);
        Ok(keys)
    }
}

/// Estimates that may wait for a turn to be computed (a dashboard asks for
/// every metric's at once); past them, a 503.
pub(super) const ESTIMATES_WAITING: usize = 16;

/// `None` if the request may read (no readers' tokens configured, or a
/// valid one given); else the 401.
pub(super) fn authorize(app: &App, headers: &HeaderMap) -> Option<Response> {
    match app.keys().readers.as_ref()?.admits(headers) {
        Access::Granted(_) => None,
        refused => Some(unauthorized(&refused)),
    }
}

/// The fingerprint of the shuffler token a shuffled batch (`Localdp-Batch`)
/// was posted with; else the refusal: 403 from a collector without
/// shuffler tokens or with a reader's token, 401 without a valid token.
/// Only a shuffler token's batches feed the central ε shown to operators,
/// so no one who merely reads can claim that reports came shuffled.
pub(super) fn authorize_batch(app: &App, headers: &HeaderMap) -> Result<String, Response> {
    let forbidden = |error: &str| json(StatusCode::FORBIDDEN, json!({ "error": error }));
    let keys = app.keys();
    let Some(shufflers) = &keys.shufflers else {
        return Err(forbidden(
            "this collector takes no shuffled batches (Localdp-Batch): it needs --shuffler-token-file, and the \
             shuffler one of its tokens; nothing was counted",
        ));
    };
    match shufflers.admits(headers) {
        Access::Granted(fingerprint) => Ok(fingerprint),
        _ if keys.readers.as_ref().is_some_and(|readers| matches!(readers.admits(headers), Access::Granted(_))) => Err(forbidden(
            "a reader's token (--token-file) may not post a shuffled batch (Localdp-Batch): only a token of \
             --shuffler-token-file may; nothing was counted",
        )),
        refused => Err(unauthorized(&refused)),
    }
}

/// The 401 of a missing or invalid token.
fn unauthorized(access: &Access) -> Response {
    let (error, challenge) = match access {
        Access::Missing => ("this endpoint needs Authorization: Bearer <token>", "Bearer realm=\"localdp\""),
        _ => ("the token is not valid", "Bearer realm=\"localdp\", error=\"invalid_token\""),
    };
    let mut response = json(StatusCode::UNAUTHORIZED, json!({ "error": error }));
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    response
}

/// The 404 of a metric name that is not configured: it lists the metrics,
/// unless tokens are configured (the list is then for token holders, and a
/// report post needs none).
pub(super) fn unknown_metric(app: &App, name: &str) -> Response {
    if app.keys().readers.is_some() {
        return json(StatusCode::NOT_FOUND, json!({"error": "no such metric"}));
    }
    let names: Vec<&str> = app.metrics.iter().map(|m| m.spec.name.as_str()).collect();
    json(StatusCode::NOT_FOUND, json!({"error": format!("no metric named {name:?}"), "metrics": names}))
}
