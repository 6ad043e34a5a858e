//! The shuffler (`localdp shuffle`) between clients and the collector, both
//! the real binary: a batch id stored once, the collector's rules for bad
//! input, a SIGKILL under load that loses no acknowledged report and
//! forwards none twice, a batch sent again after its acknowledgement stored
//! once, and a batch the collector will not take that holds up no other
//! metric. (The forwarded order is tested where it is drawn: `form`'s unit
//! test in src/shuffle.rs, with a seeded generator.)

use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;
mod pg;
mod serving;

use pg::Cluster;
use serving::*;

/// A GRR metric over a million values: a report may carry any of them
/// (a client's value is randomized before it is sent; the collector cannot
/// tell), so each test report carries its own, a marker to count it by.
const MARKS: &str = r#"{"protocol":"grr","epsilon":1.0,"domain":1000000}"#;

/// An OUE metric whose reports are long (a bit per value).
const WIDE: &str = r#"{"protocol":"oue","epsilon":1.0,"domain":2000}"#;

/// A reader's token (the collector's --token-file): it reads, and only reads.
const READER_TOKEN: &str = "reader-token-0123456789abcdef";
const READER: &str = "Bearer reader-token-0123456789abcdef";

/// The shuffler's token (the collector's --shuffler-token-file, the
/// shuffler's --token-file): the only kind that posts batches.
const SHUFFLER_TOKEN: &str = "shuffler-token-0123456789abcdef";
const SHUFFLER: &str = "Bearer shuffler-token-0123456789abcdef";
/// Its fingerprint: SHA-256("shuffler-token-0123456789abcdef") begins af476939.
const SHUFFLER_FINGERPRINT: &str = "af476939";

/// A scratch directory whose metrics file also holds "marks" and "wide",
/// with the token files "tokens" (readers) and "shufflers".
fn scratch(name: &str) -> Scratch {
    let scratch = Scratch::new(name);
    let colors = METRICS[0].1;
    scratch.file(
        "metrics.json",
        &format!(
            r#"[{{"name":"marks","config":{MARKS}}},{{"name":"colors","config":{colors}}},{{"name":"wide","config":{WIDE}}}]"#
        ),
    );
    scratch.file("wide.json", WIDE);
    scratch.file("tokens", &format!("{READER_TOKEN}\n"));
    scratch.file("shufflers", &format!("{SHUFFLER_TOKEN}\n"));
    scratch
}

/// `localdp serve` with the scratch's readers' and shuffler's tokens, and `extra`.
fn serve(scratch: &Scratch, extra: &[&str]) -> Server {
    let (tokens, shufflers) = (scratch.path("tokens"), scratch.path("shufflers"));
    let mut args = vec!["--token-file", tokens.to_str().unwrap(), "--shuffler-token-file", shufflers.to_str().unwrap()];
    args.extend(extra);
    Server::start(scratch, &args)
}

/// `localdp shuffle` in front of `collector`, with the scratch's shuffler token.
fn shuffle(scratch: &Scratch, collector: &Server, extra: &[&str]) -> Server {
    shuffle_on(scratch, collector, "shuffle.sqlite", extra)
}

/// [`shuffle`] on `db`: a file of the scratch directory, or a URL.
fn shuffle_on(scratch: &Scratch, collector: &Server, db: &str, extra: &[&str]) -> Server {
    try_shuffle_on(scratch, collector, db, extra).unwrap_or_else(|log| panic!("the shuffler did not start:\n{log}"))
}

fn try_shuffle_on(scratch: &Scratch, collector: &Server, db: &str, extra: &[&str]) -> Result<Server, String> {
    let shufflers = scratch.path("shufflers");
    let mut args = vec!["--token-file", shufflers.to_str().unwrap()];
    args.extend(extra);
    Server::try_start_shuffler(scratch, collector, db, &args)
}

/// Asserts that `server` logs `needle` (within 10 s).
fn logged(server: &Server, needle: &str) {
    let log = server.log_containing(needle);
    assert!(log.contains(needle), "{needle:?} not logged:\n{log}");
}

/// A read of the collector, with the reader's token.
fn read(collector: &Server, path: &str) -> Response {
    collector.request("GET", path, &[("Authorization", READER)], None)
}

/// The report of "marks" that carries `value`.
fn mark(value: u64) -> String {
    format!(r#"{{"version":1,"protocol":"grr","epsilon":1.0,"domain":"0ae51609dfe71da3","value":{value}}}"#)
}

/// The values of a metric's stored reports, in the collector's order.
fn stored_values(collector: &Server) -> Vec<u64> {
    collector
        .export("marks", &[("Authorization", READER)])
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["value"].as_u64().unwrap())
        .collect()
}

/// The metric's description (with counts).
fn described(collector: &Server, metric: &str) -> Value {
    let response = read(collector, &format!("/api/metrics/{metric}"));
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

/// Polls until `done` (at most 60 s), then asserts it.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Posts `body` to `metric` as the batch `id`, with the shuffler's token.
fn post_batch_to(collector: &Server, metric: &str, id: &str, body: &str) -> Response {
    let path = format!("/api/metrics/{metric}/reports");
    collector.request("POST", &path, &[("Localdp-Batch", id), ("Authorization", SHUFFLER)], Some(body.as_bytes()))
}

fn post_batch(collector: &Server, id: &str, body: &str) -> Response {
    post_batch_to(collector, "marks", id, body)
}

#[test]
fn a_batch_sent_twice_is_stored_and_counted_once() {
    let scratch = scratch("batch-id");
    let mut collector = serve(&scratch, &[]);
    // Before any batch: "shuffled" is null.
    assert_eq!(described(&collector, "marks")["shuffled"], Value::Null);
    let body = format!("[{}]", (0..50).map(mark).collect::<Vec<_>>().join(","));
    let first = post_batch(&collector, "0123456789abcdef0123456789abcdef", &body);
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(first.json()["accepted"], 50);
    let again = post_batch(&collector, "0123456789abcdef0123456789abcdef", &body);
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.json()["duplicate"], true);
    assert_eq!(again.json()["accepted"], 0);
    // A plain post (no id) is not a shuffled batch; it is counted as ever.
    assert_eq!(collector.post_reports("marks", &mark(50)).status, 200);
    // A batch id is per metric: the same id names another batch of another
    // metric.
    let colors = array(&reports(&scratch, "colors", 5, 1));
    let other = post_batch_to(&collector, "colors", "0123456789abcdef0123456789abcdef", &colors);
    assert_eq!((other.status, other.json()["accepted"].clone()), (200, json!(5)), "{}", other.text());
    // A bad id is refused whole.
    for bad in ["", "has space", "semi;colon", &"x".repeat(65)] {
        let refused = post_batch(&collector, bad, &mark(51));
        assert_eq!(refused.status, 400, "{bad:?}: {}", refused.text());
        assert!(refused.json()["error"].as_str().unwrap().contains("Localdp-Batch"));
    }
    let check = |collector: &Server| {
        assert_eq!(stored_values(collector), (0..=50).collect::<Vec<_>>());
        let metric = described(collector, "marks");
        assert_eq!(metric["n"], 51);
        let shuffled = &metric["shuffled"];
        assert_eq!((&shuffled["batches"], &shuffled["reports"], &shuffled["smallest_batch"]), (&json!(1), &json!(50), &json!(50)));
        let central = &shuffled["central"];
        assert_eq!(central["delta"], 1e-6);
        let epsilon = central["epsilon"].as_f64().unwrap();
        assert!(epsilon > 0.0 && epsilon <= 1.0, "{epsilon}");
        // Which shuffler token sent it, by its fingerprint, never the token.
        assert_eq!(shuffled["shufflers"], json!([{"fingerprint": SHUFFLER_FINGERPRINT, "batches": 1}]));
        assert!(!metric.to_string().contains(SHUFFLER_TOKEN), "{metric}");
        let note = shuffled["note"].as_str().unwrap();
        assert!(note.contains("only if the shuffler is run by someone other than the collector"), "{note}");
        assert!(note.contains("distinct honest users") && note.contains("--reports-per-minute"), "{note}");
        assert_eq!(described(collector, "colors")["shuffled"]["reports"], 5);
        assert_eq!(described(collector, "wide")["shuffled"], Value::Null);
    };
    check(&collector);
    // The id is on disk: after a restart the same batch is still a duplicate.
    collector.child.kill().unwrap();
    collector.wait(Duration::from_secs(10));
    let collector = serve(&scratch, &[]);
    check(&collector);
    let retry = post_batch(&collector, "0123456789abcdef0123456789abcdef", &body);
    assert_eq!(retry.json()["duplicate"], true);
    check(&collector);
}

#[test]
fn a_collector_without_tokens_takes_no_batch() {
    let scratch = scratch("batch-no-tokens");
    let collector = Server::start(&scratch, &[]);
    let refused = collector.request("POST", "/api/metrics/marks/reports", &[("Localdp-Batch", "forged")], Some(mark(1).as_bytes()));
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert!(refused.json()["error"].as_str().unwrap().contains("--shuffler-token-file"), "{}", refused.text());
    let metric = collector.get("/api/metrics/marks").json();
    assert_eq!((&metric["n"], &metric["shuffled"]), (&json!(0), &Value::Null));
}

/// A reader's token reads, and only reads: a batch posted with it is
/// refused (403), and nothing of it is counted or stored (no report, no
/// rejection, no batch id), whether the collector takes batches or not. A
/// shuffler token reads nothing, and no token may be both.
#[test]
fn a_readers_token_posts_no_batch() {
    let scratch = scratch("batch-reader");
    let body = format!(r#"[{},{{"hello":1}}]"#, mark(1));
    let from_reader = |collector: &Server| {
        let headers = [("Localdp-Batch", "forged"), ("Authorization", READER)];
        collector.request("POST", "/api/metrics/marks/reports", &headers, Some(body.as_bytes()))
    };
    let nothing_counted = |collector: &Server| {
        let metric = described(collector, "marks");
        assert_eq!((&metric["n"], &metric["rejected"], &metric["shuffled"]), (&json!(0), &rejected(&[]), &Value::Null), "{metric}");
        assert!(stored_values(collector).is_empty());
    };
    // Readers' tokens alone: the collector takes no batch, a reader's neither.
    let tokens = scratch.path("tokens");
    let readers_only = Server::start(&scratch, &["--token-file", tokens.to_str().unwrap()]);
    let refused = from_reader(&readers_only);
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert!(refused.json()["error"].as_str().unwrap().contains("--shuffler-token-file"), "{}", refused.text());
    nothing_counted(&readers_only);
    drop(readers_only);
    // With shuffler tokens: the reader is still refused.
    let collector = serve(&scratch, &[]);
    let refused = from_reader(&collector);
    assert_eq!(refused.status, 403, "{}", refused.text());
    let error = refused.json()["error"].as_str().unwrap().to_string();
    assert!(error.contains("reader") && error.contains("--shuffler-token-file"), "{error}");
    nothing_counted(&collector);
    // Its batch id was not stored either: the shuffler's batch of that id is new.
    let sent = post_batch(&collector, "forged", &body);
    assert_eq!(sent.status, 200, "{}", sent.text());
    assert_eq!((&sent.json()["accepted"], &sent.json()["duplicate"]), (&json!(1), &Value::Null), "{}", sent.text());
    let metric = described(&collector, "marks");
    assert_eq!(metric["shuffled"]["shufflers"], json!([{"fingerprint": SHUFFLER_FINGERPRINT, "batches": 1}]), "{metric}");
    // A shuffler token reads nothing: no estimate, no counts.
    let estimate = collector.request("GET", "/api/metrics/marks/estimate", &[("Authorization", SHUFFLER)], None);
    assert_eq!(estimate.status, 401, "{}", estimate.text());
    let public = collector.request("GET", "/api/metrics/marks", &[("Authorization", SHUFFLER)], None).json();
    assert_eq!((&public["n"], &public["shuffled"]), (&Value::Null, &Value::Null), "{public}");
    drop(collector);
    // A token in both files is refused at start.
    let both = scratch.file("both", &format!("{SHUFFLER_TOKEN}\n{READER_TOKEN}\n"));
    let log = Server::try_start(&scratch, &["--token-file", tokens.to_str().unwrap(), "--shuffler-token-file", both.to_str().unwrap()])
        .err()
        .expect("must not start");
    assert!(log.contains("in both --token-file and --shuffler-token-file"), "{log}");
}

/// Batches stored by a collector of schema 2, when any token holder could
/// post one, are not counted as shuffled once it is upgraded; their reports
/// still are, as reports.
#[test]
fn batches_stored_before_shuffler_tokens_are_not_counted_as_shuffled() {
    let scratch = scratch("batch-schema-2");
    let collector = serve(&scratch, &[]);
    let body = format!("[{}]", (0..5).map(mark).collect::<Vec<_>>().join(","));
    assert_eq!(post_batch(&collector, "old", &body).status, 200);
    drop(collector);
    // The file as schema 2 left it: batches without a shuffler.
    let file = rusqlite::Connection::open(scratch.path("reports.sqlite")).unwrap();
    file.execute_batch("ALTER TABLE batches DROP COLUMN shuffler; PRAGMA user_version = 2;").unwrap();
    drop(file);
    let collector = serve(&scratch, &[]);
    logged(&collector, "1 shuffled batches stored before shuffler tokens (--shuffler-token-file) are not counted as shuffled");
    let metric = described(&collector, "marks");
    assert_eq!((&metric["n"], &metric["shuffled"]), (&json!(5), &Value::Null), "{metric}");
    // Its id is kept: sent again, it is a duplicate, and still not shuffled.
    assert_eq!(post_batch(&collector, "old", &body).json()["duplicate"], true);
    assert_eq!(post_batch(&collector, "new", &body).status, 200);
    assert_eq!(described(&collector, "marks")["shuffled"]["batches"], 1);
}

#[test]
fn a_batch_of_rejected_reports_is_stored_once_and_counts_as_no_batch() {
    let scratch = scratch("batch-rejected");
    let mut collector = serve(&scratch, &[]);
    let rejected = post_batch(&collector, "all-rejected", r#"[{"hello":1},{"hello":2}]"#);
    assert_eq!((rejected.status, rejected.json()["accepted"].clone()), (400, json!(0)), "{}", rejected.text());
    assert_eq!(described(&collector, "marks")["shuffled"], Value::Null);
    let again = post_batch(&collector, "all-rejected", r#"[{"hello":1},{"hello":2}]"#);
    assert_eq!(again.json()["duplicate"], true, "{}", again.text());
    let body = format!("[{}]", (0..50).map(mark).collect::<Vec<_>>().join(","));
    assert_eq!(post_batch(&collector, "real", &body).status, 200);
    let check = |collector: &Server| {
        let metric = described(collector, "marks");
        let shuffled = &metric["shuffled"];
        assert_eq!((&shuffled["batches"], &shuffled["smallest_batch"]), (&json!(1), &json!(50)), "{metric}");
        assert!(shuffled["central"]["epsilon"].as_f64().is_some(), "{metric}");
        assert_eq!(metric["rejected"]["malformed"], 2, "{metric}");
    };
    check(&collector);
    collector.child.kill().unwrap();
    collector.wait(Duration::from_secs(10));
    check(&serve(&scratch, &[]));
}

#[test]
fn a_collector_with_tokens_takes_batches_only_from_a_shuffler_token() {
    let scratch = scratch("batch-token");
    let collector = serve(&scratch, &[]);
    let n = || described(&collector, "marks")["n"].as_u64().unwrap();
    // A page may post reports, but not claim they came shuffled.
    let refused = collector.request("POST", "/api/metrics/marks/reports", &[("Localdp-Batch", "from-a-page")], Some(mark(1).as_bytes()));
    assert_eq!(refused.status, 401, "{}", refused.text());
    assert_eq!(n(), 0);
    let wrong = collector.request(
        "POST",
        "/api/metrics/marks/reports",
        &[("Localdp-Batch", "from-a-page"), ("Authorization", "Bearer not-the-token-0123456789")],
        Some(mark(1).as_bytes()),
    );
    assert_eq!(wrong.status, 401);
    assert_eq!(n(), 0);
    // The shuffler, given the shuffler token, forwards its batch.
    let shuffler = shuffle(&scratch, &collector, &["--batch", "2"]);
    assert_eq!(shuffler.post_reports("marks", &format!("[{},{}]", mark(1), mark(2))).status, 200);
    eventually("the batch", || n() == 2);
    assert_eq!(described(&collector, "marks")["shuffled"]["batches"], 1);
}

#[test]
fn the_central_epsilon_is_the_smallest_batchs() {
    let scratch = scratch("central");
    let collector = serve(&scratch, &["--central-delta", "1e-8"]);
    let body = |values: std::ops::Range<u64>| format!("[{}]", values.map(mark).collect::<Vec<_>>().join(","));
    assert_eq!(post_batch(&collector, "big", &body(0..2000)).status, 200);
    let big = described(&collector, "marks")["shuffled"]["central"]["epsilon"].as_f64().unwrap();
    assert_eq!(post_batch(&collector, "small", &body(2000..2100)).status, 200);
    let shuffled = described(&collector, "marks")["shuffled"].clone();
    assert_eq!((&shuffled["batches"], &shuffled["reports"], &shuffled["smallest_batch"]), (&json!(2), &json!(2100), &json!(100)));
    assert_eq!(shuffled["central"]["delta"], 1e-8);
    let small = shuffled["central"]["epsilon"].as_f64().unwrap();
    // Fewer reports to hide among: a larger ε.
    assert!(big < small && small <= 1.0, "{big} {small}");
    // The list (with counts) says the same.
    let listed = read(&collector, "/api/metrics").json();
    assert_eq!(listed["metrics"][0]["shuffled"], shuffled);
}

#[test]
fn the_shuffler_answers_as_the_collector_does_and_counts_nothing_twice() {
    let scratch = scratch("rules");
    let direct = serve(&scratch, &[]);
    let other = Scratch::new("rules-behind");
    other.file("metrics.json", &std::fs::read_to_string(scratch.path("metrics.json")).unwrap());
    other.file("tokens", &format!("{READER_TOKEN}\n"));
    other.file("shufflers", &format!("{SHUFFLER_TOKEN}\n"));
    let collector = serve(&other, &[]);
    let shuffler = shuffle(&other, &collector, &["--batch", "4", "--max-body", "4096"]);
    let bad_version = mark(7).replace(r#""version":1"#, r#""version":9"#);
    let bodies = [
        "not json".to_string(),
        "5".to_string(),
        "[]".to_string(),
        format!("[{},{{\"hello\":1}},{},{bad_version},{}]", mark(1), mark(2_000_000), mark(2)),
        format!("[{bad_version}]"),
        mark(3),
    ];
    for body in &bodies {
        let expected = direct.post_reports("marks", body);
        let got = shuffler.post_reports("marks", body);
        assert_eq!((got.status, got.json()), (expected.status, expected.json()), "{body}");
    }
    // Too large for the shuffler's --max-body: 413 before it is read.
    let large = format!("[{}]", (0..100).map(mark).collect::<Vec<_>>().join(","));
    assert_eq!(shuffler.post_reports("marks", &large).status, 413);
    // An unknown metric: 404 (the collector has none of that name).
    assert_eq!(shuffler.post_reports("nope", &mark(1)).status, 404);
    assert_eq!(shuffler.post_reports("../etc", &mark(1)).status, 404);
    // The valid reports (1, 2, 3) wait for a fourth; then one batch of four.
    assert_eq!(described(&collector, "marks")["n"], 0);
    assert_eq!(shuffler.post_reports("marks", &mark(4)).status, 200);
    eventually("the batch", || described(&collector, "marks")["n"] == 4);
    let mut values = stored_values(&collector);
    values.sort_unstable();
    assert_eq!(values, [1, 2, 3, 4]);
    let metric = described(&collector, "marks");
    // Rejections were answered by the shuffler and counted nowhere else.
    assert_eq!(metric["rejected"], rejected(&[]));
    assert_eq!(metric["shuffled"]["batches"], 1);
    assert_eq!(metric["shuffled"]["smallest_batch"], 4);
}

#[test]
fn max_wait_forwards_a_smaller_batch_of_at_least_min_batch() {
    let scratch = scratch("max-wait");
    let collector = serve(&scratch, &[]);
    let shuffler = shuffle(&scratch, &collector, &["--batch", "1000", "--max-wait", "1s", "--min-batch", "3"]);
    assert_eq!(shuffler.post_reports("marks", &format!("[{},{},{}]", mark(1), mark(2), mark(3))).status, 200);
    eventually("the batch after --max-wait", || described(&collector, "marks")["n"] == 3);
    assert_eq!(described(&collector, "marks")["shuffled"]["smallest_batch"], 3);
    // --max-wait needs --min-batch, and the floor is at most the batch.
    let out = common::cli::run(&["shuffle", "--forward", "http://127.0.0.1:1", "--batch", "10", "--max-wait", "5"], "");
    assert!(!out.status.success());
    let out = common::cli::run(
        &["shuffle", "--forward", "http://127.0.0.1:1", "--batch", "10", "--max-wait", "5", "--min-batch", "11", "--port", "0"],
        "",
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--min-batch 11 is larger than --batch 10"));
}

/// A batch the collector will not take (larger than its --max-body) is
/// parked, kept and logged, and another metric's batch still gets through;
/// a batch never holds more than --batch reports.
#[test]
fn a_batch_the_collector_refuses_holds_up_no_other_metric() {
    let scratch = scratch("stall");
    let collector = serve(&scratch, &["--max-body", "1500"]);
    let shuffler = shuffle(&scratch, &collector, &["--batch", "5"]);
    let config = scratch.path("wide.json");
    let wide = cli(&["randomize", "--config", config.to_str().unwrap(), "--seed", "3"], "1\n2\n3\n4\n5\n");
    let wide: Vec<String> = wide.lines().map(str::to_string).collect();
    assert!(array(&wide).len() > 1500, "a batch of 5 wide reports fits --max-body");
    assert_eq!(shuffler.post_reports("wide", &array(&wide)).status, 200);
    logged(&shuffler, "wide: a batch of 5 reports is parked (answered 413");
    // Eleven marks: two batches of five go, one waits for four more.
    assert_eq!(shuffler.post_reports("marks", &format!("[{}]", (0..11).map(mark).collect::<Vec<_>>().join(","))).status, 200);
    eventually("the marks' batches", || described(&collector, "marks")["n"] == 10);
    let metric = described(&collector, "marks");
    assert_eq!((&metric["shuffled"]["batches"], &metric["shuffled"]["smallest_batch"]), (&json!(2), &json!(5)), "{metric}");
    assert_eq!(described(&collector, "wide")["n"], 0);
    // Parked, not dropped: a restart sends it again (and parks it again).
    drop(shuffler);
    let again = shuffle(&scratch, &collector, &["--batch", "5"]);
    logged(&again, "(1 reports held, 1 batches to send again, 1 of them parked before)");
    logged(&again, "wide: a batch of 5 reports is parked (answered 413");
}

/// The path a SIGKILL reaches only by luck, made certain: a batch the
/// collector acknowledged is still in the outbox (killed before it was
/// dropped). The next start sends it again, the collector stores it once,
/// and the shuffler drops it.
#[test]
fn a_batch_acknowledged_before_a_crash_is_sent_again_and_stored_once() {
    acknowledged_before_a_crash("resend", "shuffle.sqlite", |scratch, body| {
        let file = rusqlite::Connection::open(scratch.path("shuffle.sqlite")).unwrap();
        file.execute("INSERT INTO outbox (id, metric, size, body) VALUES ('acknowledged', 'marks', 3, ?1)", [body]).unwrap();
    });
}

/// The same with the shuffler on PostgreSQL.
#[test]
fn a_batch_acknowledged_before_a_crash_is_sent_again_and_stored_once_on_postgresql() {
    let cluster = Cluster::start("shuffler-resend");
    acknowledged_before_a_crash("pg-resend", &cluster.url("collector"), |_, body| {
        let insert = format!("INSERT INTO localdp_shuffler.outbox (id, metric, size, body) VALUES ('acknowledged', 'marks', 3, '{body}')");
        cluster.psql("collector", &insert);
    });
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp_shuffler.outbox"), "0");
}

/// A shuffler on `db` whose outbox holds a batch the collector has
/// acknowledged (`plant` puts it there, as a kill after the
/// acknowledgement leaves it): its next start sends it again, stored once.
fn acknowledged_before_a_crash(name: &str, db: &str, plant: impl FnOnce(&Scratch, &str)) {
    let scratch = scratch(name);
    let collector = serve(&scratch, &[]);
    let body = format!("[{}]", (0..3).map(mark).collect::<Vec<_>>().join(","));
    assert_eq!(post_batch(&collector, "acknowledged", &body).status, 200);
    // The shuffler's tables, made by a first start.
    drop(shuffle_on(&scratch, &collector, db, &["--batch", "5"]));
    plant(&scratch, &body);
    let shuffler = shuffle_on(&scratch, &collector, db, &["--batch", "5"]);
    logged(&shuffler, "(0 reports held, 1 batches to send again, 0 of them parked before)");
    // Without --reports-per-minute, the start says what the figure assumes.
    logged(&shuffler, "no --reports-per-minute: one sender may fill a batch with its own reports");
    logged(&shuffler, "marks: forwarded a shuffled batch of 3 reports");
    logged(&collector, "marks: a shuffled batch of 3 reports was sent again; stored once");
    assert_eq!(stored_values(&collector), [0, 1, 2]);
    assert_eq!(described(&collector, "marks")["shuffled"]["batches"], 1);
}

/// Clients posting distinct marks, one to three a post, to whichever
/// shuffler is current; what was acknowledged (200) and what was sent
/// without an answer (the shuffler was killed under it).
struct Load {
    address: Arc<Mutex<SocketAddr>>,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<u64>>>,
    unanswered: Arc<Mutex<Vec<u64>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(address: SocketAddr, clients: u64) -> Load {
        let address = Arc::new(Mutex::new(address));
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let unanswered = Arc::new(Mutex::new(Vec::new()));
        let threads = (0..clients)
            .map(|client| {
                let (address, stop, acked, unanswered) =
                    (Arc::clone(&address), Arc::clone(&stop), Arc::clone(&acked), Arc::clone(&unanswered));
                std::thread::spawn(move || {
                    let mut next = client * 100_000;
                    let mut connection: Option<Connection> = None;
                    while !stop.load(Ordering::SeqCst) {
                        let values: Vec<u64> = (next..next + 1 + next % 3).collect();
                        next += values.len() as u64;
                        let body = format!("[{}]", values.iter().map(|v| mark(*v)).collect::<Vec<_>>().join(","));
                        let target = *address.lock().unwrap();
                        let answer = connection
                            .take()
                            .map_or_else(|| Connection::open(target), Ok)
                            .and_then(|mut c| c.request("POST", "/api/metrics/marks/reports", body.as_bytes()).map(|r| (c, r)));
                        match answer {
                            Ok((c, response)) if response.status == 200 => {
                                acked.lock().unwrap().extend(&values);
                                connection = Some(c);
                            }
                            Ok((_, response)) => panic!("a valid post answered {}: {}", response.status, response.text()),
                            Err(_) => {
                                // Killed under it: stored or not, unknown.
                                unanswered.lock().unwrap().extend(&values);
                                std::thread::sleep(Duration::from_millis(20));
                            }
                        }
                    }
                })
            })
            .collect();
        Load { address, stop, acked, unanswered, threads }
    }

    fn acked(&self) -> usize {
        self.acked.lock().unwrap().len()
    }

    fn stop(self) -> (Vec<u64>, Vec<u64>) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads {
            thread.join().unwrap();
        }
        let acked = self.acked.lock().unwrap().clone();
        let unanswered = self.unanswered.lock().unwrap().clone();
        (acked, unanswered)
    }
}

#[test]
fn a_killed_shuffler_loses_no_acknowledged_report_and_forwards_none_twice() {
    killed_under_load("kill", "shuffle.sqlite");
}

/// The same with the shuffler on PostgreSQL: a SIGKILL mid-batch frees its
/// lock with its connection, and the next start sends what was formed.
#[test]
fn a_killed_shuffler_on_postgresql_loses_no_acknowledged_report_and_forwards_none_twice() {
    let cluster = Cluster::start("shuffler-kill");
    killed_under_load("pg-kill", &cluster.url("collector"));
}

/// A shuffler on `db` killed (SIGKILL) twice under load from four clients,
/// each time restarted on the same tables: every acknowledged report is
/// stored once.
fn killed_under_load(name: &str, db: &str) {
    let scratch = scratch(name);
    let collector = serve(&scratch, &[]);
    // On PostgreSQL the server ends a killed shuffler's session, and its
    // lock with it, once it sees its connection close: a start before
    // then is refused, and tried again (as a service manager would).
    let start = |batch: &str| {
        let mut started = None;
        eventually("the shuffler starts", || match try_shuffle_on(&scratch, &collector, db, &["--batch", batch]) {
            Ok(shuffler) => started.replace(shuffler).is_none(),
            Err(log) if log.contains("another localdp shuffle runs on this database") => false,
            Err(log) => panic!("the shuffler did not start:\n{log}"),
        });
        started.unwrap()
    };
    let mut shuffler = start("40");
    let load = Load::start(shuffler.address, 4);
    // Killed twice under load (SIGKILL: no shutdown of any kind), each time
    // restarted on the same file.
    for round in 1..=2 {
        eventually("acknowledged reports", || load.acked() >= 400 * round);
        shuffler.child.kill().unwrap();
        shuffler.child.wait().unwrap();
        shuffler = start("40");
        *load.address.lock().unwrap() = shuffler.address;
    }
    eventually("acknowledged reports after the restarts", || load.acked() >= 1200);
    let (acked, unanswered) = load.stop();
    // Whatever is held is forwarded: a last start with batches of one.
    shuffler.child.kill().unwrap();
    shuffler.child.wait().unwrap();
    let last = start("1");
    let log = last.log_containing("batches to send again");
    let line = log.lines().find(|l| l.contains("batches to send again")).unwrap();
    let held: u64 = line.split('(').nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let resent: usize = line.split(", ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    // Batches of one: one per report held.
    let expected = resent + held as usize;
    eventually("the last batches", || last.log().matches("forwarded a shuffled batch").count() >= expected);

    let stored = stored_values(&collector);
    let mut times: HashMap<u64, u32> = HashMap::new();
    for value in &stored {
        *times.entry(*value).or_default() += 1;
    }
    let twice: Vec<_> = times.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "forwarded twice: {twice:?}");
    let lost: Vec<_> = acked.iter().filter(|v| !times.contains_key(v)).collect();
    assert!(lost.is_empty(), "{} acknowledged reports lost, e.g. {:?}", lost.len(), &lost[..lost.len().min(5)]);
    // Nothing else arrived: every stored report was acknowledged, or sent
    // when the shuffler was killed.
    assert!(stored.iter().all(|v| acked.contains(v) || unanswered.contains(v)));
    let metric = described(&collector, "marks");
    assert_eq!(metric["n"].as_u64().unwrap() as usize, stored.len());
    assert_eq!(metric["shuffled"]["reports"].as_u64().unwrap() as usize, stored.len());
    eprintln!(
        "kill test: {} acknowledged, {} unanswered, {} stored once, {} batches, {} sent again and stored once",
        acked.len(),
        unanswered.len(),
        stored.len(),
        metric["shuffled"]["batches"],
        collector.log().matches("was sent again; stored once").count()
    );
}

#[test]
fn a_shuffler_tokens_batches_have_their_own_limit_not_the_per_source_ones() {
    let scratch = scratch("batch-limits");
    let collector = serve(
        &scratch,
        &["--requests-per-minute", "2", "--reports-per-minute", "10", "--shuffler-reports-per-minute", "100"],
    );
    let batch = |n: u64| format!("[{}]", (0..n).map(mark).collect::<Vec<_>>().join(","));
    // A batch of 50 from the shuffler's one address: over the per-source
    // limit of 10 (a post of 50 never fits there), within the shuffler's.
    for id in ["b1", "b2"] {
        let stored = post_batch(&collector, id, &batch(50));
        assert_eq!(stored.status, 200, "{}", stored.text());
    }
    // Its own limit: 100 reports a minute, then 429 with Retry-After.
    let limited = post_batch(&collector, "b3", &batch(50));
    assert_eq!(limited.status, 429, "{}", limited.text());
    assert!(limited.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
    assert_eq!(limited.json()["per_minute"], json!(100));
    // The per-source limits still hold for posts without a shuffler token
    // (the same address): 10 reports a minute.
    let direct = collector.post_reports("marks", &batch(11));
    assert_eq!(direct.status, 413, "{}", direct.text());
    assert_eq!(collector.post_reports("marks", &batch(10)).status, 200);
    assert_eq!(described(&collector, "marks")["n"], json!(110));
}

#[test]
fn a_shuffler_in_front_of_the_production_limits_forwards_every_batch() {
    // The per-source limits of examples/deploy/localdp.service, which an
    // operator found refused 19 of 20 shuffled batches (the shuffler is one
    // address): 2,000 reports in 20 batches of 100 is 20 requests and more
    // than three times the 600 reports a minute one address may post.
    let scratch = scratch("production-limits");
    let collector = serve(&scratch, &["--requests-per-minute", "60", "--reports-per-minute", "600"]);
    let shuffler = shuffle(&scratch, &collector, &["--batch", "100"]);
    for post in 0..20 {
        let body = format!("[{}]", (post * 100..(post + 1) * 100).map(mark).collect::<Vec<_>>().join(","));
        assert_eq!(shuffler.post_reports("marks", &body).json()["accepted"], json!(100));
    }
    eventually("every batch", || described(&collector, "marks")["n"] == json!(2000));
    let mut values = stored_values(&collector);
    values.sort_unstable();
    assert_eq!(values, (0..2000).collect::<Vec<_>>());
    assert_eq!(described(&collector, "marks")["shuffled"]["batches"], json!(20));
    // Not one refusal on the way: no 429 was answered, so none was waited out.
    let metrics = read(&collector, "/metrics").text();
    assert!(!metrics.contains("status=\"429\""), "{metrics}");
}

#[test]
fn the_shuffler_waits_as_long_as_the_collectors_retry_after() {
    let scratch = scratch("retry-after");
    // 600 reports a minute for the shuffler's batches (10 a second): the
    // second batch of 310 is 20 reports short, Retry-After: 2.
    let collector = serve(&scratch, &["--shuffler-reports-per-minute", "600"]);
    let shuffler = shuffle(&scratch, &collector, &["--batch", "310"]);
    let body = format!("[{}]", (0..620).map(mark).collect::<Vec<_>>().join(","));
    assert_eq!(shuffler.post_reports("marks", &body).json()["accepted"], json!(620));
    eventually("both batches", || described(&collector, "marks")["n"] == json!(620));
    logged(&shuffler, "ms (the collector's Retry-After)");
    // One 429, not one per doubling pause (0.5 s, then 1 s: two more).
    let metrics = read(&collector, "/metrics").text();
    let refused = metrics.lines().find(|l| l.starts_with("localdp_http_requests_total{route=\"reports\",status=\"429\"}"));
    assert_eq!(refused, Some("localdp_http_requests_total{route=\"reports\",status=\"429\"} 1"), "{metrics}");
}

#[test]
fn the_shuffler_serves_metrics_of_what_it_holds_parks_and_fails_to_forward() {
    let scratch = scratch("shuffler-metrics");
    let collector = serve(&scratch, &[]);
    let shuffler = shuffle(&scratch, &collector, &["--batch", "3"]);
    let value = |text: &str, series: &str| -> f64 {
        let line = text.lines().find(|l| l.strip_prefix(series).is_some_and(|rest| rest.starts_with(' ')));
        line.unwrap_or_else(|| panic!("no {series} in\n{text}")).rsplit(' ').next().unwrap().parse().unwrap()
    };
    let body = format!("[{}]", (0..4).map(mark).collect::<Vec<_>>().join(","));
    assert_eq!(shuffler.post_reports("marks", &body).json()["accepted"], json!(4));
    eventually("a batch forwarded", || value(&shuffler.get("/metrics").text(), "localdp_shuffler_batches_forwarded_total") == 1.0);
    let text = shuffler.get("/metrics").text();
    assert_eq!(value(&text, "localdp_shuffler_reports_held{metric=\"marks\"}"), 1.0);
    assert_eq!(value(&text, "localdp_shuffler_batches_waiting"), 0.0);
    assert_eq!(value(&text, "localdp_shuffler_batches_parked"), 0.0);
    assert_eq!(value(&text, "localdp_shuffler_forward_errors_total"), 0.0);
    assert!(value(&text, "process_start_time_seconds") > 0.0);
    assert!(value(&text, "localdp_database_bytes{file=\"database\"}") > 0.0);
    // A collector that is gone: the batch waits, and each attempt is an error.
    drop(collector);
    let more = format!("[{}]", (4..6).map(mark).collect::<Vec<_>>().join(","));
    assert_eq!(shuffler.post_reports("marks", &more).json()["accepted"], json!(2));
    eventually("a failed attempt", || value(&shuffler.get("/metrics").text(), "localdp_shuffler_forward_errors_total") >= 1.0);
    let text = shuffler.get("/metrics").text();
    assert_eq!(value(&text, "localdp_shuffler_batches_waiting"), 1.0);
    assert!(!text.contains("localdp_shuffler_reports_held{"), "{text}");
}

#[test]
fn sighup_makes_the_shuffler_read_its_token_file_again() {
    const NEXT: &str = "next-shuffler-token-0123456789abcdef";
    let scratch = scratch("shuffler-hup");
    // The collector takes both tokens while the shuffler's is rotated.
    scratch.file("shufflers", &format!("{SHUFFLER_TOKEN}\n{NEXT}\n"));
    let collector = serve(&scratch, &[]);
    let own = scratch.file("own-token", &format!("{SHUFFLER_TOKEN}\n"));
    let shuffler = Server::start_shuffler(&scratch, &collector, "shuffle.sqlite", &["--token-file", own.to_str().unwrap(), "--batch", "2"]);
    let pair = |a: u64| format!("[{},{}]", mark(a), mark(a + 1));
    assert_eq!(shuffler.post_reports("marks", &pair(0)).json()["accepted"], json!(2));
    eventually("the first batch", || described(&collector, "marks")["n"] == json!(2));
    std::fs::write(&own, format!("{NEXT}\n")).unwrap();
    shuffler.signal("HUP");
    logged(&shuffler, "batches are sent with the shuffler token");
    eventually("the new token read", || shuffler.log().matches("batches are sent with the shuffler token").count() == 2);
    assert_eq!(shuffler.post_reports("marks", &pair(2)).json()["accepted"], json!(2));
    eventually("the second batch", || described(&collector, "marks")["n"] == json!(4));
    let senders = described(&collector, "marks")["shuffled"]["shufflers"].clone();
    let senders = senders.as_array().unwrap();
    assert_eq!(senders.len(), 2, "{senders:?}");
    assert!(senders.iter().all(|s| s["batches"] == json!(1)), "{senders:?}");
    assert!(senders.iter().any(|s| s["fingerprint"] == json!(SHUFFLER_FINGERPRINT)), "{senders:?}");
}

/// On PostgreSQL, a forwarded round leaves no held row and no outbox row,
/// nor a dead version of one (the round's `VACUUM`): autovacuum is off, so
/// only the shuffler's own vacuum can reclaim them.
#[test]
fn a_forwarded_round_on_postgresql_leaves_no_row_nor_a_dead_version_of_one() {
    let cluster = Cluster::start("shuffler-scrub");
    cluster.psql("postgres", "ALTER SYSTEM SET autovacuum = off");
    cluster.psql("postgres", "SELECT pg_reload_conf()");
    cluster.psql("collector", "CREATE EXTENSION pgstattuple");
    let scratch = scratch("pg-scrub");
    let collector = serve(&scratch, &[]);
    let shuffler = shuffle_on(&scratch, &collector, &cluster.url("collector"), &["--batch", "10"]);
    for posted in (0..30).collect::<Vec<u64>>().chunks(3) {
        let body = format!("[{}]", posted.iter().map(|v| mark(*v)).collect::<Vec<_>>().join(","));
        let response = shuffler.request("POST", "/api/metrics/marks/reports", &[], Some(body.as_bytes()));
        assert_eq!(response.status, 200, "{}", response.text());
    }
    eventually("30 reports stored", || stored_values(&collector).len() == 30);
    let rows = |table: &str| {
        cluster.psql("collector", &format!("SELECT tuple_count, dead_tuple_count FROM pgstattuple('localdp_shuffler.{table}')"))
    };
    eventually("no row left, dead or alive", || rows("pending") == "0|0" && rows("outbox") == "0|0");
    let mut stored = stored_values(&collector);
    stored.sort_unstable();
    assert_eq!(stored, (0..30).collect::<Vec<_>>());
}

/// One shuffler per database: a second is refused at start, naming why.
#[test]
fn a_second_shuffler_on_one_postgresql_database_is_refused() {
    let cluster = Cluster::start("shuffler-second");
    let scratch = scratch("pg-second");
    let collector = serve(&scratch, &[]);
    let url = cluster.url("collector");
    let _first = shuffle_on(&scratch, &collector, &url, &["--batch", "5"]);
    let second = try_shuffle_on(&scratch, &collector, &url, &["--batch", "5"]).err().expect("refused");
    assert!(second.contains("another localdp shuffle runs on this database"), "{second}");
    assert!(!second.contains(pg::PASSWORD), "{second}");
}

/// A shuffler's URL that cannot work is refused at start as a collector's
/// is: saying why, never with the password.
#[test]
fn a_shuffler_url_that_cannot_work_is_refused_saying_why_and_never_the_password() {
    let cluster = Cluster::start("shuffler-urls");
    let scratch = scratch("pg-shuffler-urls");
    let collector = serve(&scratch, &[]);
    let refused = |url: &str| try_shuffle_on(&scratch, &collector, url, &["--batch", "5"]).err().expect("refused at start");
    let wrong = refused(&format!("postgres://{}:not-the-password@127.0.0.1:{}/collector", pg::USER, cluster.port));
    assert!(wrong.contains("refused user \"localdp\" (wrong password or no such user)"), "{wrong}");
    assert!(!wrong.contains("not-the-password"), "{wrong}");
    let missing = refused(&cluster.url("nosuchdb").replace("postgres://", "postgresql://"));
    assert!(missing.contains("the database \"nosuchdb\" does not exist"), "{missing}");
    let typo = refused(&format!("postgress://{}:{}@127.0.0.1:{}/collector", pg::USER, pg::PASSWORD, cluster.port));
    assert!(typo.contains("--db: a URL must be postgres://"), "{typo}");
    for log in [&missing, &typo] {
        assert!(!log.contains(pg::PASSWORD), "{log}");
    }
}

/// A role that does not own the shuffler's tables could not VACUUM them
/// (PostgreSQL skips them with a warning): refused at start.
#[test]
fn a_shuffler_role_that_cannot_vacuum_its_tables_is_refused() {
    let cluster = Cluster::start("shuffler-owner");
    let scratch = scratch("pg-owner");
    let collector = serve(&scratch, &[]);
    drop(shuffle_on(&scratch, &collector, &cluster.url("collector"), &["--batch", "5"]));
    cluster.psql(
        "collector",
        "CREATE ROLE writer LOGIN PASSWORD 'writer-pw'; GRANT USAGE ON SCHEMA localdp_shuffler TO writer; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA localdp_shuffler TO writer; \
         GRANT SELECT ON localdp_shuffler.migrations TO writer",
    );
    let url = format!("postgres://writer:writer-pw@127.0.0.1:{}/collector", cluster.port);
    let refused = try_shuffle_on(&scratch, &collector, &url, &["--batch", "5"]).err().expect("refused at start");
    assert!(refused.contains("this role does not own the tables of schema localdp_shuffler"), "{refused}");
}

/// A restarted database frees the shuffler's lock with its connection: the
/// shuffler takes it again and goes on holding and forwarding. Posts while
/// it is down are answered 503 with Retry-After, as the collector's are.
#[test]
fn a_shuffler_on_a_restarted_postgresql_takes_its_lock_again_and_goes_on() {
    let cluster = Cluster::start("shuffler-restart");
    let scratch = scratch("pg-restart");
    let collector = serve(&scratch, &[]);
    let shuffler = shuffle_on(&scratch, &collector, &cluster.url("collector"), &["--batch", "2"]);
    let post = |value: u64| shuffler.request("POST", "/api/metrics/marks/reports", &[], Some(mark(value).as_bytes())).status;
    assert_eq!((post(0), post(1)), (200, 200));
    eventually("the first batch", || stored_values(&collector).len() == 2);
    // Posts through the outage (values from 100): each answered 200 is held.
    let stop = AtomicBool::new(false);
    let (seen, acked) = std::thread::scope(|s| {
        let poster = s.spawn(|| {
            let (mut seen, mut acked) = (Vec::new(), Vec::new());
            while !stop.load(Ordering::SeqCst) {
                let value = 100 + seen.len() as u64;
                let response = shuffler.request("POST", "/api/metrics/marks/reports", &[], Some(mark(value).as_bytes()));
                if response.status == 200 {
                    acked.push(value);
                }
                seen.push((response.status, response.header("retry-after").map(str::to_string)));
            }
            (seen, acked)
        });
        cluster.restart(Duration::from_millis(1500));
        stop.store(true, Ordering::SeqCst);
        poster.join().unwrap()
    });
    let refused: Vec<_> = seen.iter().filter(|(status, _)| *status != 200).collect();
    assert!(!refused.is_empty(), "the outage was seen");
    assert!(refused.iter().all(|(status, retry)| *status == 503 && retry.as_deref() == Some("1")), "{refused:?}");
    // A post may meet a connection the restart broke; none is lost once 200.
    let mut next = 2;
    eventually("posts after the restart", || {
        if post(next) == 200 {
            next += 1;
        }
        next == 6
    });
    // Batches of 2: one more post where an odd number is held. (A post
    // answered 503 as the server stopped may have committed all the same,
    // docs/shuffler.md: so the count is the table's, not the answers'.)
    let pending = || cluster.psql("collector", "SELECT count(*) FROM localdp_shuffler.pending").parse::<u64>().unwrap();
    if pending() % 2 == 1 {
        assert_eq!(post(99), 200);
    }
    eventually("the batches after the restart", || {
        pending() == 0 && cluster.psql("collector", "SELECT count(*) FROM localdp_shuffler.outbox") == "0"
    });
    // Every post answered 200 is stored, once; nothing else is, but a post
    // answered 503 that committed as the server stopped.
    let mut stored = stored_values(&collector);
    stored.sort_unstable();
    let mut once = stored.clone();
    once.dedup();
    assert_eq!(once, stored, "no report is stored twice");
    let must: Vec<u64> = (0..6).chain(acked).collect();
    assert!(must.iter().all(|v| stored.contains(v)), "every acknowledged post is stored: {must:?} in {stored:?}");
    let answered: Vec<u64> = (0..6).chain(100..100 + seen.len() as u64).chain([99]).collect();
    assert!(stored.iter().all(|v| answered.contains(v)), "nothing stored that was not posted: {stored:?}");
    let held = cluster.psql("collector", "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted");
    assert_eq!(held, "1", "the shuffler's lock is held again");
}

/// Group commit: the posts that arrive while a commit is under way are held
/// by one transaction, not one each. The first post's INSERT is held up by
/// a table lock (seen waiting in `pg_locks`) while 15 more are sent; once
/// the lock goes, all 17 reports (one before, the first, the 15) carry at
/// most 3 transaction ids (`xmin`): the one before, the first post's, and
/// that of the 15 queued behind it. With a transaction per post (the build
/// before this test) they carry 17. The 15 are sent before the test asks
/// `pg_locks` (a psql run, tens of ms) and releases the lock (another);
/// reading a post of one report and queueing it takes the shuffler well
/// under a millisecond.
#[test]
fn posts_that_arrive_during_a_commit_are_held_by_one_transaction_on_postgresql() {
    let cluster = Cluster::start("shuffler-group");
    let scratch = scratch("pg-group");
    let collector = serve(&scratch, &[]);
    let shuffler = shuffle_on(&scratch, &collector, &cluster.url("collector"), &["--batch", "1000"]);
    let post = |value: u64| shuffler.request("POST", "/api/metrics/marks/reports", &[], Some(mark(value).as_bytes())).status;
    // The metric is learnt from the collector at its first post.
    assert_eq!(post(0), 200);
    let mut lock = cluster.session("collector");
    lock.run("BEGIN; LOCK TABLE localdp_shuffler.pending IN SHARE MODE;");
    let waiting = "SELECT count(*) FROM pg_locks WHERE relation = 'localdp_shuffler.pending'::regclass AND NOT granted";
    let answers = std::thread::scope(|s| {
        let first = s.spawn(|| post(1));
        eventually("the first post's INSERT waits for the lock", || cluster.psql("collector", waiting) == "1");
        let rest: Vec<_> = (2..17).map(|value| s.spawn(move || post(value))).collect();
        assert_eq!(cluster.psql("collector", waiting), "1", "still one INSERT waiting");
        lock.run("COMMIT;");
        std::iter::once(first).chain(rest).map(|poster| poster.join().unwrap()).collect::<Vec<_>>()
    });
    assert!(answers.iter().all(|status| *status == 200), "{answers:?}");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp_shuffler.pending"), "17");
    let commits: u64 = cluster.psql("collector", "SELECT count(DISTINCT xmin::text) FROM localdp_shuffler.pending").parse().unwrap();
    assert!(commits <= 3, "17 reports held by {commits} transactions");
}

/// A shuffler's lock can go without its connection noticing: here its
/// session is terminated (`pg_terminate_backend`) behind a proxy that keeps
/// the shuffler's side of that connection open and silent. A second
/// shuffler then takes the database. The first, which still thinks it holds
/// the lock (`is_closed()` is false), must hold nothing: it asks its lock's
/// session before each write, gets no answer, and answers 503 (before, it
/// held the post: 200 while another shuffler ran on the database).
#[test]
fn a_shuffler_whose_lock_session_ended_unnoticed_holds_nothing_once_another_took_the_database() {
    let cluster = Cluster::start("shuffler-unnoticed");
    let proxy = pg::Muter::start(&cluster);
    let scratch = scratch("pg-unnoticed");
    let collector = serve(&scratch, &[]);
    let post = |shuffler: &Server, value: u64| {
        shuffler.request("POST", "/api/metrics/marks/reports", &[], Some(mark(value).as_bytes())).status
    };
    let first = shuffle_on(&scratch, &collector, &proxy.url("collector"), &["--batch", "1000"]);
    assert_eq!(post(&first, 0), 200);
    let locks = "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted";
    let holder = cluster.psql("collector", locks);
    proxy.mute();
    assert_eq!(cluster.psql("collector", &format!("SELECT pg_terminate_backend({holder})")), "t");
    eventually("the lock's session ended", || cluster.psql("collector", locks).is_empty());
    let second = shuffle_on(&scratch, &collector, &cluster.url("collector"), &["--batch", "1000"]);
    assert_eq!(post(&second, 1), 200);
    assert_eq!(post(&first, 2), 503);
    logged(&first, "another localdp shuffle took this database");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp_shuffler.pending"), "2");
}

/// A COMMIT that reached the server but whose answer was lost (the
/// connection cut right after it) is asked about by its transaction id, as
/// the collector's is: the post is answered 200 and its report held once.
/// (Before, it was answered 503, and the sender's resend held it twice.)
#[test]
fn a_hold_whose_commit_answer_is_lost_is_acknowledged_and_held_once() {
    let cluster = Cluster::start("shuffler-cut");
    let cutter = pg::CommitCutter::start(&cluster);
    let scratch = scratch("pg-cut");
    let collector = serve(&scratch, &[]);
    let shuffler = shuffle_on(&scratch, &collector, &cutter.url("collector"), &["--batch", "1000"]);
    let post = |value: u64| shuffler.request("POST", "/api/metrics/marks/reports", &[], Some(mark(value).as_bytes())).status;
    // The metric is learnt from the collector at its first post.
    assert_eq!(post(0), 200);
    cutter.arm();
    // A sender posts again after a 503, until it is answered 200.
    let mut answers = Vec::new();
    while answers.len() < 5 && answers.last() != Some(&200) {
        answers.push(post(1));
    }
    assert!(cutter.cut(), "the COMMIT was cut");
    let held = cluster.psql("collector", "SELECT count(*) FROM localdp_shuffler.pending");
    assert_eq!(held, "2", "answers {answers:?}\n{}", shuffler.log());
    assert_eq!(answers, [200]);
    logged(&shuffler, "a commit's answer was lost");
}

/// A lock taken again whose answer does not come within its 5 s (here the
/// server grants it and the answer is dropped) must not stay held by a
/// connection the shuffler no longer counts as its lock's: that connection
/// is closed, its session ends, and the lock is taken again at a later
/// write. (Before, it went back to the pool still holding the lock, and
/// every later write was refused, 503, as if another shuffler held it.)
#[test]
fn a_lock_retaken_too_late_is_not_left_held_by_a_pooled_connection() {
    let cluster = Cluster::start("shuffler-late-lock");
    let dropper = pg::LockAnswerDropper::start(&cluster);
    let scratch = scratch("pg-late-lock");
    let collector = serve(&scratch, &[]);
    let shuffler = shuffle_on(&scratch, &collector, &dropper.url("collector"), &["--batch", "1000"]);
    let post = |value: u64| shuffler.request("POST", "/api/metrics/marks/reports", &[], Some(mark(value).as_bytes())).status;
    assert_eq!(post(0), 200);
    // The lock's session ends; the next write takes the lock again, and
    // the answer of that is lost.
    let locks = "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted";
    let holder = cluster.psql("collector", locks);
    assert_eq!(cluster.psql("collector", &format!("SELECT pg_terminate_backend({holder})")), "t");
    dropper.arm();
    assert_eq!(post(1), 503);
    assert!(dropper.dropped(), "the lock's answer was dropped");
    logged(&shuffler, "no answer within 5 s");
    // The session that was granted the lock ends with its connection; a
    // later post takes the lock again and is held.
    let mut answers = Vec::new();
    eventually("a post held after the late lock", || {
        answers.push(post(2));
        answers.last() == Some(&200)
    });
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp_shuffler.pending"), "2");
    let holders = cluster.psql("collector", locks);
    assert_eq!(holders.lines().count(), 1, "one session holds the lock: {holders:?}");
}
