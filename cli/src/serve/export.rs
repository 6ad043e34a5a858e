//! `GET /api/metrics/{name}/export`: a metric's stored reports as JSON
//! Lines, and the pages of stored reports that it and the Parquet export
//! (`serve/parquet.rs`) stream.

use crate::serve::logging::{log_error};
use super::app::{authorize, unknown_metric, App};
use super::response::json;
use super::postgres::Snapshot;
use super::writer::{self, Job, Page};
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::json;
use std::sync::Arc;

/// On an export, the reports it no longer holds: compacted into the
/// metric's stored state by retention (`--keep`), still in its estimate.
pub(super) const COMPACTED_HEADER: HeaderName = HeaderName::from_static("localdp-compacted");

/// Reports per page of an export (one writer job each).
pub(super) const EXPORT_PAGE: usize = 10_000;

/// `GET /api/metrics/{name}/export`: every stored report of the metric,
/// oldest first, one canonical JSON line each (what `localdp aggregate`
/// reads), up to the newest stored when the export began. A database error
/// midway cuts the connection, so a truncated export cannot pass for a
/// complete one.
pub(super) async fn export(State(app): State<Arc<App>>, UrlPath(name): UrlPath<String>, headers: HeaderMap) -> Response {
    if let Some(denied) = authorize(&app, &headers) {
        return denied;
    }
    let Some(index) = app.find(&name) else { return unknown_metric(&app, &name) };
    let key = app.metrics[index].key;
    let (pages, first) = match Pages::open(&app, key).await {
        Ok(opened) => opened,
        Err(e) => {
            log_error!("{name}: export failed: {e}");
            return json(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "the reports could not be read"}));
        }
    };
    let compacted = first.compacted;
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
            page = match pages.next(&shared, last).await {
                Ok(next) => next,
                Err(e) => {
                    log_error!("{}: export failed: {e}", shared.metrics[index].spec.name);
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
    // What the file no longer holds: reports compacted by retention.
    out.insert(COMPACTED_HEADER, HeaderValue::from(compacted));
    out.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// Where an export's pages come from: the database writer, up to the
/// newest row when the export began (SQLite: row ids are in commit order,
/// so those rows are one snapshot) and with the compacted count it began
/// with, or on PostgreSQL the export's own snapshot.
pub(super) enum Pages {
    Writer { key: i64, upto: i64, compacted: u64 },
    Snapshot(Snapshot),
}

impl Pages {
    /// Opens a metric's export: its pages and the first of them.
    pub(super) async fn open(app: &App, key: i64) -> Result<(Pages, Page), String> {
        match &app.exporter {
            None => {
                let first = writer_page(app, key, 0, None).await?;
                Ok((Pages::Writer { key, upto: first.upto, compacted: first.compacted }, first))
            }
            Some(exporter) => {
                let (snapshot, rejected, compacted) = exporter.snapshot(key).await?;
                let rows = snapshot.page(0, EXPORT_PAGE).await?;
                Ok((Pages::Snapshot(snapshot), Page { rows, upto: i64::MAX, rejected: Some(rejected), compacted }))
            }
        }
    }

    /// The page after row `after`.
    pub(super) async fn next(&self, app: &App, after: i64) -> Result<Page, String> {
        match self {
            Pages::Writer { key, upto, compacted } => writer_page(app, *key, after, Some((*upto, *compacted))).await,
            Pages::Snapshot(snapshot) => {
                Ok(Page { rows: snapshot.page(after, EXPORT_PAGE).await?, upto: i64::MAX, rejected: None, compacted: 0 })
            }
        }
    }
}

/// The stored reports of metric `key` after row `after`, [`EXPORT_PAGE`]
/// at most, read by the database writer: up to the newest stored, or, for
/// the next page of an export (`previous`), up to the row its first page
/// fixed, and an error if retention compacted reports since (the export
/// would lack some: it is cut, not passed off as complete).
async fn writer_page(app: &App, key: i64, after: i64, previous: Option<(i64, u64)>) -> Result<writer::Page, String> {
    let (reply, page) = tokio::sync::oneshot::channel();
    if !app.writer.send(Job::Export { key, after, upto: previous.map(|p| p.0), limit: EXPORT_PAGE, reply }) {
        return Err("the database writer stopped".into());
    }
    let page = page.await.map_err(|_| "the database writer stopped".to_string())??;
    match previous {
        Some((_, compacted)) if page.compacted != compacted => Err("retention compacted reports during the export".into()),
        _ => Ok(page),
    }
}

/// A response body fed by a channel; an `Err` aborts the response.
pub(super) struct Lines(pub(super) tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>);

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
