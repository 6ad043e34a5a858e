//! Retention (`--keep DAYS`): reports that arrived before the cut-off are
//! compacted into their metric's stored state; estimates stay the same
//! byte for byte, across restarts, and the rows are gone. The days are put
//! in the past by editing the store's day marks, the only clock it keeps.

use std::path::Path;
use std::time::Duration;

mod common;
mod serving;

use serving::*;

const BAD: &str = r#"{"not":"a report"}"#;

/// Stops the collector cleanly (SIGTERM).
fn stop(mut server: Server) {
    server.signal("TERM");
    assert!(server.wait(Duration::from_secs(30)).is_some_and(|s| s.success()), "{}", server.log());
}

fn rows(db: &Path) -> i64 {
    rusqlite::Connection::open(db).unwrap().query_row("SELECT count(*) FROM reports", [], |r| r.get(0)).unwrap()
}

#[test]
fn compacted_reports_leave_every_estimate_unchanged_and_their_rows_gone() {
    let scratch = Scratch::new("retention");
    let db = scratch.path("reports.sqlite");
    let (old, new): (Vec<_>, Vec<_>) = METRICS.iter().map(|(m, _)| (reports(&scratch, m, 300, 1), reports(&scratch, m, 100, 2))).unzip();
    // Day one: the old reports.
    let server = Server::start(&scratch, &["--keep", "30"]);
    for ((name, _), lines) in METRICS.iter().zip(&old) {
        let body = array(&lines.iter().cloned().chain([BAD.to_string()]).collect::<Vec<_>>());
        assert_eq!(server.post_reports(name, &body).status, 200);
    }
    stop(server);
    // Forty days pass.
    rusqlite::Connection::open(&db).unwrap().execute("UPDATE days SET day = day - 40", []).unwrap();
    // Today: new reports, with retention off, so no day is marked for them:
    // a start with it on counts them as arrived that day, not on the last
    // day marked (forty days ago).
    let server = Server::start(&scratch, &[]);
    for ((name, _), lines) in METRICS.iter().zip(&new) {
        assert_eq!(server.post_reports(name, &array(lines)).status, 200);
    }
    let before: Vec<String> = METRICS.iter().map(|(name, _)| server.estimate(name, "none").text()).collect();
    stop(server);
    assert_eq!(rows(&db), 400 * METRICS.len() as i64);

    // --keep 30: the old reports are compacted at start.
    let server = Server::start(&scratch, &["--keep", "30"]);
    let log = server.log_containing("latency: retention");
    for (name, _) in METRICS {
        assert!(log.contains(&format!("{name}: retention: 300 reports older than 30 days compacted")), "{log}");
    }
    stop(server);
    assert_eq!(rows(&db), 100 * METRICS.len() as i64, "the compacted rows are gone");
    // A start reads the compacted state and the remaining reports: the same
    // estimates, byte for byte, with retention on or off.
    for keep in [&["--keep", "30"][..], &[]] {
        let server = Server::start(&scratch, keep);
        for (i, (name, _)) in METRICS.iter().enumerate() {
            assert_eq!(server.estimate(name, "none").text(), before[i], "{name} {keep:?}");
            // And the estimate of every report, old and new, as aggregate makes it.
            let all: Vec<String> = old[i].iter().chain(&new[i]).cloned().chain([BAD.to_string()]).collect();
            assert_eq!(before[i], cli_estimate(&scratch, name, &all, "none"), "{name}");
            // The export says what it no longer holds.
            let export = server.get(&format!("/api/metrics/{name}/export"));
            assert_eq!(export.header("localdp-compacted"), Some("300"), "{name}");
            assert_eq!(export.text().lines().collect::<Vec<_>>(), new[i].iter().map(String::as_str).collect::<Vec<_>>());
        }
        let metrics = server.get("/metrics").text();
        assert!(metrics.contains("localdp_reports_compacted{metric=\"colors\"} 300"), "{metrics}");
        stop(server);
    }
}
