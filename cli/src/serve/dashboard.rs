//! The operator's dashboard at `/dashboard`: one page, its script and its
//! style, built into the binary (it needs no `--www`), over the same API
//! any client reads (`/api/metrics`, `/api/metrics/{name}/estimate`), with
//! the same token. Served under a policy that allows nothing but the
//! collector's own files and API: no inline script or style, no other origin.

use super::response::json;
use axum::extract::Path as UrlPath;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Scripts and styles from the collector only, fetches to it only, no
/// frames, forms or plugins.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src data:; \
     connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The page's files: name under `/dashboard/`, content type, text. The
/// demo (`--www`) links `base.css` too.
const FILES: [(&str, &str, &str); 3] = [
    ("base.css", "text/css; charset=utf-8", include_str!("dashboard/base.css")),
    ("dashboard.js", "text/javascript; charset=utf-8", include_str!("dashboard/dashboard.js")),
    ("dashboard.css", "text/css; charset=utf-8", include_str!("dashboard/dashboard.css")),
];

/// `GET /dashboard`: the page.
pub async fn page() -> Response {
    served("text/html; charset=utf-8", include_str!("dashboard/index.html"))
}

/// `GET /dashboard/{file}`: its script and its style.
pub async fn asset(UrlPath(file): UrlPath<String>) -> Response {
    match FILES.iter().find(|(name, ..)| *name == file) {
        Some((_, content_type, text)) => served(content_type, text),
        None => json(StatusCode::NOT_FOUND, json!({"error": "not found"})),
    }
}

fn served(content_type: &'static str, text: &'static str) -> Response {
    let mut response = (StatusCode::OK, text).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}
