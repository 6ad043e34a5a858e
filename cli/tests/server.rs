//! The collector (`localdp serve`) as a client sees it: the real binary on a
//! free local port, spoken to over plain HTTP/1.1. Accepting, rejecting by
//! every reason, refusing bodies that are not JSON or too large, unknown
//! metrics, estimates byte-identical to `localdp aggregate` on the same
//! reports, a killed and restarted server that lost nothing, concurrent
//! clients all counted, a changed config refused, and the static files.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
mod serving;

use common::cli::BIN;
use serving::*;

/// Every metric's estimate, as the server answers it.
fn all_estimates(server: &Server) -> Vec<String> {
    let mut out = Vec::new();
    for (metric, _) in METRICS {
        let posts: &[&str] = if *metric == "latency" { &["none"] } else { &["none", "norm-sub", "project"] };
        for post in posts {
            let response = server.estimate(metric, post);
            assert_eq!(response.status, 200, "{metric}: {}", response.text());
            out.push(response.text());
        }
    }
    out
}

/// The 600 valid reports `metric` is sent (seeded by its place in METRICS).
fn valid_reports(scratch: &Scratch, metric: &str) -> Vec<String> {
    let i = METRICS.iter().position(|(m, _)| *m == metric).unwrap();
    reports(scratch, metric, 600, 10 + i as u64)
}

/// The first of them: the report the bad ones are edited from.
fn valid_report(scratch: &Scratch, metric: &str) -> String {
    valid_reports(scratch, metric).swap_remove(0)
}

/// Sends valid reports the two ways a client may: the first alone, the rest
/// in arrays of 150. The answers, in that order.
fn send_valid(server: &Server, metric: &str, good: &[String]) -> Vec<Response> {
    let mut answers = vec![server.post_reports(metric, &good[0])];
    answers.extend(good[1..].chunks(150).map(|chunk| server.post_reports(metric, &array(chunk))));
    answers
}

/// A body for one metric and the report lines it carries (what `aggregate`
/// must be given to see the same).
struct Batch {
    metric: &'static str,
    lines: Vec<String>,
    body: String,
}

impl Batch {
    fn array(metric: &'static str, lines: Vec<String>) -> Batch {
        Batch { metric, body: array(&lines), lines }
    }

    fn send(&self, server: &Server) -> Response {
        server.post_reports(self.metric, &self.body)
    }
}

/// Two valid colors around one bad report of each kind a generic report can
/// be: malformed twice, a wrong version, another ε, a value outside the domain.
fn mixed_colors(colors: &str) -> Batch {
    Batch::array(
        "colors",
        vec![
            colors.to_string(),
            r#"{"hello":"world"}"#.to_string(),
            "5".to_string(),
            edit(colors, |r| {
                r.insert("version".into(), json!(2));
            }),
            edit(colors, |r| {
                r.insert("epsilon".into(), json!(0.5));
            }),
            edit(colors, |r| {
                r.insert("value".into(), json!(7));
            }),
            colors.to_string(),
        ],
    )
}

/// A valid bit vector, one too short and one too long.
fn wrong_length_bits(bits: &str) -> Batch {
    let bad_length = edit(bits, |r| {
        r.insert("bits".into(), json!("ff"));
    });
    let padded = edit(bits, |r| {
        r.insert("bits".into(), json!("ffff"));
    });
    Batch::array("bits", vec![bits.to_string(), bad_length, padded])
}

/// Only a subset of the wrong size (all 16 bits set).
fn oversized_subset(subset: &str) -> Batch {
    let too_many = edit(subset, |r| {
        r.insert("bits".into(), json!("ffff"));
    });
    Batch::array("subset", vec![too_many])
}

/// Only a hashed value outside the hash range.
fn out_of_range_hashed(hashed: &str) -> Batch {
    let outside = edit(hashed, |r| {
        r.insert("value".into(), json!(1u64 << 40));
    });
    Batch::array("hashed", vec![outside])
}

/// One colors report, alone (not in an array), sent to the latency metric.
fn colors_report_for_latency(colors: &str) -> Batch {
    Batch { metric: "latency", lines: vec![colors.to_string()], body: colors.to_string() }
}

/// Bodies that hold no reports: not JSON, cut short, empty, not a report or
/// an array, an empty array.
const NO_REPORTS: &[&str] = &["not json", "{\"version\":1,", "", "\"a string\"", "42", "[]", "null"];

/// A server sent everything the tests above send one rule at a time, in one
/// order: every metric's valid reports, then every bad batch, then bodies
/// without reports. (The answers are checked by those tests, not here.)
struct Collected {
    // Declared first, dropped first: the server is killed before its
    // directory is removed.
    server: Server,
    scratch: Scratch,
    /// Everything sent in JSON bodies, per metric: what `aggregate` must see.
    sent: Vec<(&'static str, Vec<String>)>,
}

fn collect_everything(name: &str) -> Collected {
    let scratch = Scratch::new(name);
    let server = Server::start(&scratch, &[]);
    let mut sent: Vec<(&'static str, Vec<String>)> =
        METRICS.iter().map(|(metric, _)| (*metric, valid_reports(&scratch, metric))).collect();
    for (metric, good) in &sent {
        send_valid(&server, metric, good);
    }
    let valid = |metric: &str| sent.iter().find(|(m, _)| *m == metric).unwrap().1[0].clone();
    let bad = [
        mixed_colors(&valid("colors")),
        wrong_length_bits(&valid("bits")),
        oversized_subset(&valid("subset")),
        out_of_range_hashed(&valid("hashed")),
        colors_report_for_latency(&valid("colors")),
    ];
    for batch in bad {
        batch.send(&server);
        sent.iter_mut().find(|(m, _)| *m == batch.metric).unwrap().1.extend(batch.lines);
    }
    for body in NO_REPORTS {
        server.post_reports("colors", body);
    }
    Collected { server, scratch, sent }
}

#[test]
fn accepts_valid_reports_alone_and_in_arrays() {
    let scratch = Scratch::new("accept");
    let server = Server::start(&scratch, &[]);
    for (metric, _) in METRICS {
        let good = valid_reports(&scratch, metric);
        let answers = send_valid(&server, metric, &good);
        // One report alone, then arrays.
        let alone = &answers[0];
        assert_eq!(alone.status, 200, "{}", alone.text());
        assert_eq!(alone.json(), json!({"accepted": 1, "rejected": rejected(&[])}));
        for (chunk, response) in good[1..].chunks(150).zip(&answers[1..]) {
            assert_eq!(response.status, 200);
            assert_eq!(response.json()["accepted"], json!(chunk.len()));
        }
    }
}

#[test]
fn a_mixed_batch_stores_the_valid_and_counts_each_bad_report_by_reason() {
    let scratch = Scratch::new("mixed");
    let server = Server::start(&scratch, &[]);
    let response = mixed_colors(&valid_report(&scratch, "colors")).send(&server);
    assert_eq!(response.status, 200);
    let answer = response.json();
    assert_eq!(answer["accepted"], json!(2));
    assert_eq!(
        answer["rejected"],
        rejected(&[("malformed", 2), ("unsupported_version", 1), ("config_mismatch", 1), ("out_of_range", 1)])
    );
    let described: Vec<(u64, &str)> = answer["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["index"].as_u64().unwrap(), e["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        described,
        [(1, "malformed"), (2, "malformed"), (3, "unsupported_version"), (4, "config_mismatch"), (5, "out_of_range")]
    );
    assert!(answer.get("error").is_none());
}

/// A sender's report that carries a user's data (a field named after it, a
/// value where a number belongs) is refused by its place and a fixed
/// description: the answer, the log and the database repeat none of it.
#[test]
fn a_malformed_report_is_refused_without_repeating_its_fields_or_values() {
    const FIELD: &str = "user_email_QzxWvjK";
    const VALUE: &str = "alice.qzvj@example.org";
    let scratch = Scratch::new("malformed-private");
    let mut server = Server::start(&scratch, &[]);
    let colors = valid_report(&scratch, "colors");
    let body = array(&[
        colors.clone(),
        edit(&colors, |r| {
            r.insert(FIELD.into(), json!(VALUE));
        }),
        edit(&colors, |r| {
            r.insert("epsilon".into(), json!(VALUE));
        }),
        edit(&colors, |r| {
            r.insert("value".into(), json!({ FIELD: VALUE }));
        }),
        format!("{VALUE:?}"),
    ]);
    let response = server.post_reports("colors", &body);
    assert_eq!(response.status, 200, "{}", response.text());
    let answer = response.json();
    assert_eq!(answer["accepted"], json!(1));
    let described: Vec<(u64, &str, &str)> = answer["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["index"].as_u64().unwrap(), e["reason"].as_str().unwrap(), e["message"].as_str().unwrap()))
        .collect();
    let unknown = "not a report: an unknown field";
    let mistyped = "not a report: a missing or mistyped field";
    let not_object = "not a report: a report is a JSON object (of UTF-8 text)";
    assert_eq!(
        described,
        [(1, "malformed", unknown), (2, "malformed", mistyped), (3, "malformed", mistyped), (4, "malformed", not_object)]
    );
    server.signal("TERM");
    assert!(server.wait(Duration::from_secs(10)).expect("stops").success());
    let log = server.log_containing("stopped");
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(&scratch.0).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_str().unwrap().starts_with("reports.sqlite") {
            stored.extend(std::fs::read(path).unwrap());
        }
    }
    let stored = String::from_utf8_lossy(&stored);
    for (what, text) in [("answer", response.text().as_str()), ("log", &log), ("database", &stored)] {
        for secret in ["QzxWvjK", "qzvj", "example.org"] {
            assert!(!text.contains(secret), "the {what} repeats {secret:?}: {text}");
        }
    }
}

#[test]
fn counts_bit_vectors_of_the_wrong_length_as_bad_length() {
    let scratch = Scratch::new("bad-length");
    let server = Server::start(&scratch, &[]);
    let response = wrong_length_bits(&valid_report(&scratch, "bits")).send(&server);
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["rejected"], rejected(&[("bad_length", 2)]));
}

#[test]
fn refuses_a_batch_without_a_valid_report_but_counts_its_rejections() {
    let scratch = Scratch::new("all-bad");
    let server = Server::start(&scratch, &[]);
    // A subset of the wrong size: a 400, nothing stored, the rejection still counted.
    let response = oversized_subset(&valid_report(&scratch, "subset")).send(&server);
    assert_eq!(response.status, 400);
    let answer = response.json();
    assert_eq!(answer["accepted"], json!(0));
    assert_eq!(answer["rejected"], rejected(&[("bad_subset_size", 1)]));
    assert!(answer["error"].as_str().unwrap().contains("no report"));

    // A hashed value outside the range.
    let response = out_of_range_hashed(&valid_report(&scratch, "hashed")).send(&server);
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["rejected"], rejected(&[("out_of_range", 1)]));

    // Nothing stored, each rejection kept.
    for (metric, reason) in [("subset", "bad_subset_size"), ("hashed", "out_of_range")] {
        let response = server.estimate(metric, "none");
        assert_eq!(response.status, 409, "{metric}: {}", response.text());
        let answer = response.json();
        assert_eq!(answer["n"], json!(0), "{metric}");
        assert_eq!(answer["rejected"], rejected(&[(reason, 1)]), "{metric}");
    }
}

#[test]
fn refuses_a_report_made_for_another_config_with_a_json_error() {
    let scratch = Scratch::new("other-config");
    let server = Server::start(&scratch, &[]);
    // One report made for another config (colors, sent to latency): a 400 with a JSON error.
    let response = colors_report_for_latency(&valid_report(&scratch, "colors")).send(&server);
    assert_eq!(response.status, 400);
    let answer = response.json();
    assert_eq!(answer["rejected"], rejected(&[("config_mismatch", 1)]));
    assert_eq!(answer["errors"][0]["reason"], json!("config_mismatch"));
}

#[test]
fn refuses_bodies_that_hold_no_reports_and_counts_nothing() {
    let scratch = Scratch::new("no-reports");
    let server = Server::start(&scratch, &[]);
    for body in NO_REPORTS {
        let response = server.post_reports("colors", body);
        assert_eq!(response.status, 400, "{body:?}: {}", response.text());
        assert!(response.json()["error"].is_string(), "{body:?}");
    }
    let response = server.estimate("colors", "none");
    assert_eq!(response.status, 409, "{}", response.text());
    let answer = response.json();
    assert_eq!(answer["n"], json!(0));
    assert_eq!(answer["rejected"], rejected(&[]));
}

#[test]
fn estimates_byte_identical_to_aggregate_for_every_post() {
    let Collected { server, scratch, sent } = collect_everything("estimates");
    // Byte for byte what `localdp aggregate` prints for the same lines (the
    // rejected ones included, bodies without reports adding nothing), every
    // post-processing.
    for (metric, lines) in &sent {
        let posts: &[&str] = if *metric == "latency" { &["none"] } else { &["none", "norm-sub", "project"] };
        for post in posts {
            let response = server.estimate(metric, post);
            assert_eq!(response.status, 200, "{metric} {post}: {}", response.text());
            assert_eq!(response.header("content-type"), Some("application/json"));
            let expected = cli_estimate(&scratch, metric, lines, post);
            assert_eq!(response.text(), expected, "{metric} --post {post}");
            assert_eq!(response.json(), serde_json::from_str::<Value>(&expected).unwrap());
        }
    }
}

#[test]
fn an_estimate_without_post_is_the_unbiased_one() {
    let Collected { server, .. } = collect_everything("no-post");
    assert_eq!(server.get("/api/metrics/colors/estimate").text(), server.estimate("colors", "none").text());
}

#[test]
fn lists_every_metric_with_its_config_protocol_and_counts() {
    let Collected { server, scratch, sent } = collect_everything("listing");
    // Names, configs verbatim, resolved protocols, counts.
    let list = server.get("/api/metrics").json();
    let listed = list["metrics"].as_array().unwrap();
    assert_eq!(listed.len(), METRICS.len());
    for ((name, config), entry) in METRICS.iter().zip(listed) {
        assert_eq!(entry["name"], json!(name));
        assert_eq!(entry["title"], json!(format!("The {name}")));
        assert_eq!(entry["config"], serde_json::from_str::<Value>(config).unwrap());
        let lines = &sent.iter().find(|(m, _)| m == name).unwrap().1;
        let estimate: Value = serde_json::from_str(&cli_estimate(&scratch, name, lines, "none")).unwrap();
        assert_eq!(entry["n"], estimate["n"]);
        assert_eq!(entry["rejected"], estimate["rejected"]);
        assert_eq!(entry["protocol"], estimate["protocol"]);
        // No per-source limits: nothing refused.
        assert_eq!(entry["limited"], json!({"requests": 0, "reports": 0, "reports_carried": 0}));
        // The planner's floor for the config, the same as the library's.
        let metric = localdp::Metric::from_json(config).unwrap();
        assert_eq!(entry["min_users"], json!(localdp::plan::min_users(&metric)));
    }
    assert_eq!(listed[4]["kind"], json!("numeric"));
    assert_eq!(listed[0]["kind"], json!("frequency"));
    assert_eq!(server.get("/api/metrics/bits").json(), listed[1].clone());
}

#[test]
fn logs_counts_never_a_report_or_a_payload() {
    let Collected { mut server, .. } = collect_everything("log");
    let listed = server.get("/api/metrics/colors").json();
    let rejected: u64 = listed["rejected"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
    // Commits are summed up (a line per metric per 10 s at most); a stop
    // writes what is left: the lines add up to the counts.
    server.signal("TERM");
    assert!(server.wait(Duration::from_secs(10)).expect("stops").success());
    let log = server.log_containing("stopped");
    let (mut accepted_logged, mut rejected_logged) = (0, 0);
    for line in log.lines().filter_map(|l| l.split_once(" INFO colors: ")) {
        let words: Vec<&str> = line.1.split(' ').collect();
        assert_eq!((words[1], words[3]), ("accepted,", "rejected"), "{line:?}");
        accepted_logged += words[0].parse::<u64>().unwrap();
        rejected_logged += words[2].parse::<u64>().unwrap();
    }
    assert_eq!((accepted_logged, rejected_logged), (listed["n"].as_u64().unwrap(), rejected), "{log}");
    for needle in ["\"bits\"", "\"seed\"", "\"value\"", "\"domain\"", "ffff", "hello"] {
        assert!(!log.contains(needle), "the log mentions {needle}: {log}");
    }
}

#[test]
fn refuses_oversized_bodies_before_parsing() {
    let scratch = Scratch::new("oversized");
    let server = Server::start(&scratch, &["--max-body", "4096"]);
    let good = reports(&scratch, "colors", 200, 3);

    // A declared length over the limit: refused from the head alone (the
    // body is never sent).
    let mut stream = TcpStream::connect(server.address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "POST /api/metrics/colors/reports HTTP/1.1\r\nHost: {}\r\nContent-Length: 5000000\r\n\r\n", server.address).unwrap();
    let response = read_response(&mut stream);
    assert_eq!(response.status, 413);
    assert_eq!(response.json()["max_body"], json!(4096));

    // Chunked, no declared length: refused once it passes the limit.
    let body = array(&good);
    assert!(body.len() > 4096);
    let mut stream = TcpStream::connect(server.address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "POST /api/metrics/colors/reports HTTP/1.1\r\nHost: {}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n", server.address).unwrap();
    // The server may answer and close as soon as the limit is passed: the
    // rest of the body then meets a closed connection.
    let mut sent = 0;
    for chunk in body.as_bytes().chunks(1000) {
        let written = write!(stream, "{:x}\r\n", chunk.len())
            .and_then(|()| stream.write_all(chunk))
            .and_then(|()| stream.write_all(b"\r\n"));
        if let Err(e) = written {
            assert!(sent > 4096, "the connection closed after {sent} bytes: {e}");
            break;
        }
        sent += chunk.len();
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let response = read_response(&mut stream);
    assert_eq!(response.status, 413);

    // With a length: also 413; and nothing of any of them was counted.
    assert_eq!(server.post_reports("colors", &body).status, 413);
    assert_eq!(server.estimate("colors", "none").status, 409);

    // A body of exactly the limit is read.
    let mut fits = array(&good[..10]);
    assert!(fits.len() < 4096);
    fits.push_str(&" ".repeat(4096 - fits.len()));
    let response = server.post_reports("colors", &fits);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["accepted"], json!(10));
}

#[test]
fn answers_json_errors_for_unknown_metrics_and_bad_requests() {
    let scratch = Scratch::new("errors");
    let server = Server::start(&scratch, &[]);
    for response in [
        server.post_reports("nope", "[]"),
        server.get("/api/metrics/nope/estimate"),
        server.get("/api/metrics/nope"),
    ] {
        assert_eq!(response.status, 404);
        let answer = response.json();
        assert!(answer["error"].as_str().unwrap().contains("nope"));
        assert_eq!(answer["metrics"], json!(["colors", "bits", "subset", "hashed", "latency"]));
    }
    assert_eq!(server.get("/api/nothing").status, 404);
    assert!(server.get("/api/nothing").json()["error"].is_string());

    // No reports yet: 409, with the counts.
    let response = server.estimate("colors", "none");
    assert_eq!(response.status, 409);
    assert_eq!(response.json()["n"], json!(0));

    let good = reports(&scratch, "latency", 20, 5);
    assert_eq!(server.post_reports("latency", &array(&good)).status, 200);
    for path in [
        "/api/metrics/latency/estimate?post=project",
        "/api/metrics/latency/estimate?post=bogus",
        "/api/metrics/latency/estimate?top=3",
    ] {
        let response = server.get(path);
        assert_eq!(response.status, 400, "{path}");
        assert!(response.json()["error"].is_string());
    }
    assert_eq!(server.get("/api/metrics/latency/reports").status, 405);
    assert_eq!(server.get("/api/metrics/latency/reports").json()["error"], json!("method not allowed"));
}

#[test]
fn unknown_routes_and_methods_answer_json() {
    let scratch = Scratch::new("unrouted");
    let server = Server::start(&scratch, &[]);
    let line = reports(&scratch, "colors", 1, 4).remove(0);
    let cases: [(&str, &str, u16, Option<&str>); 6] = [
        ("GET", "/api/metrics/colors/reports", 405, Some("POST")),
        ("DELETE", "/", 405, Some("GET,HEAD")),
        ("POST", "/index.html", 405, Some("GET,HEAD")),
        ("GET", "/missing.js", 404, None),
        // A URL joined with one slash too many: a JSON 404 that says so.
        ("POST", "//api/metrics/colors/reports", 404, None),
        ("GET", "//api/metrics", 404, None),
    ];
    for (method, path, status, allow) in cases {
        let response = server.request(method, path, &[], Some(line.as_bytes()));
        assert_eq!(response.status, status, "{method} {path}: {}", response.text());
        assert_eq!(response.header("content-type"), Some("application/json"), "{method} {path}");
        assert!(response.json()["error"].is_string(), "{method} {path}");
        assert_eq!(response.header("allow"), allow, "{method} {path}");
    }
    let doubled = server.request("POST", "//api/metrics/colors/reports", &[], Some(line.as_bytes()));
    assert!(doubled.json()["error"].as_str().unwrap().contains("//"));
    assert_eq!(server.estimate("colors", "none").status, 409, "nothing was counted");
}

#[test]
fn a_missing_metrics_file_says_what_metrics_is() {
    let scratch = Scratch::new("no-metrics");
    let www = scratch.path("www");
    std::fs::create_dir(&www).unwrap();
    let log = Server::try_start(&scratch, &["--www", www.to_str().unwrap()]).err().expect("must not start");
    assert!(log.contains("metrics.json: No such file or directory"), "{log}");
    assert!(log.contains("--metrics FILE names the metrics to collect"), "{log}");
    assert!(log.contains(r#"[{"name": "browser", "config": {"protocol": "auto""#), "{log}");
}

#[test]
fn a_killed_server_restarts_with_nothing_lost() {
    let scratch = Scratch::new("restart");
    let server = Server::start(&scratch, &[]);
    let mut sent: Vec<Vec<String>> = Vec::new();
    for (i, (metric, _)) in METRICS.iter().enumerate() {
        let mut lines = reports(&scratch, metric, 400, 100 + i as u64);
        lines.push(r#"{"not":"a report"}"#.to_string());
        for chunk in lines.chunks(90) {
            server.post_reports(metric, &array(chunk));
        }
        sent.push(lines);
    }
    let before = all_estimates(&server);
    drop(server); // SIGKILL: no clean shutdown, no final checkpoint

    let server = Server::start(&scratch, &[]);
    assert_eq!(all_estimates(&server), before);
    // And it goes on counting from there.
    for (i, (metric, _)) in METRICS.iter().enumerate() {
        let more = reports(&scratch, metric, 50, 200 + i as u64);
        assert_eq!(server.post_reports(metric, &array(&more)).json()["accepted"], json!(50));
        sent[i].extend(more);
        assert_eq!(server.estimate(metric, "none").text(), cli_estimate(&scratch, metric, &sent[i], "none"));
    }
    assert!(server.log().contains("colors: grr ε=1 n=400 rejected=1"), "{}", server.log());
}

#[test]
fn concurrent_clients_are_all_counted() {
    let scratch = Scratch::new("concurrent");
    let server = Server::start(&scratch, &[]);
    let lines = reports(&scratch, "hashed", 4000, 7);
    let address = server.address;
    std::thread::scope(|scope| {
        for client in lines.chunks(500) {
            scope.spawn(move || {
                for batch in client.chunks(25) {
                    let response = http(address, "POST", "/api/metrics/hashed/reports", Some(array(batch).as_bytes()));
                    assert_eq!(response.status, 200);
                    assert_eq!(response.json()["accepted"], json!(25));
                }
            });
        }
    });
    let estimate = server.estimate("hashed", "none");
    assert_eq!(estimate.json()["n"], json!(4000));
    // Arrival order does not matter: the same bytes as the CLI in file order.
    assert_eq!(estimate.text(), cli_estimate(&scratch, "hashed", &lines, "none"));
}

#[test]
fn refuses_a_changed_config_and_a_second_server() {
    let scratch = Scratch::new("changed");
    let server = Server::start(&scratch, &[]);
    assert_eq!(server.post_reports("colors", &array(&reports(&scratch, "colors", 10, 1))).status, 200);

    // One collector per database.
    let second = Server::try_start(&scratch, &[]).err().expect("a second server on the same database must fail");
    assert!(second.contains("in use"), "{second}");
    drop(server);

    // The stored reports were made under ε = 1: ε = 2 is another metric.
    let original = std::fs::read_to_string(scratch.path("metrics.json")).unwrap();
    scratch.file("metrics.json", &original.replace(r#""protocol":"grr","epsilon":1.0"#, r#""protocol":"grr","epsilon":2.0"#));
    let log = Server::try_start(&scratch, &[]).err().expect("a changed config must be refused");
    assert!(log.contains("metric \"colors\": its config changed"), "{log}");

    // A metric without reports may change; the original config still works.
    scratch.file("metrics.json", &original.replace(r#""protocol":"ss","epsilon":1.0"#, r#""protocol":"ss","epsilon":3.0"#));
    let server = Server::start(&scratch, &[]);
    assert_eq!(server.get("/api/metrics/subset").json()["epsilon"], json!(3.0));
    assert_eq!(server.estimate("colors", "none").json()["n"], json!(10));
}

/// Each path answers 200 with its content type, and nosniff.
fn assert_served(server: &Server, files: &[(&str, &str)]) {
    for (path, kind) in files {
        let response = server.get(path);
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(response.header("content-type"), Some(*kind), "{path}");
        assert_eq!(response.header("x-content-type-options"), Some("nosniff"), "{path}");
    }
}

#[test]
fn serves_the_demo_and_the_package_with_their_types() {
    let scratch = Scratch::new("static");
    let www = scratch.path("www");
    let pkg = scratch.path("pkg");
    std::fs::create_dir_all(www.join("css")).unwrap();
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::copy(scratch.path("metrics.json"), www.join("metrics.json")).unwrap();
    std::fs::write(www.join("index.html"), "<!doctype html><title>demo</title>").unwrap();
    std::fs::write(www.join("app.js"), "export {};").unwrap();
    std::fs::write(www.join("css/style.css"), "body{}").unwrap();
    std::fs::write(pkg.join("localdp.js"), "export default function init() {}").unwrap();
    std::fs::write(pkg.join("localdp_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(scratch.path("secret.txt"), "outside").unwrap();
    // --metrics defaults to WWW/metrics.json.
    let server = Server::start(&scratch, &["--www", www.to_str().unwrap(), "--pkg", pkg.to_str().unwrap()]);

    let page = server.get("/");
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    let policy = page.header("content-security-policy").unwrap();
    assert!(policy.contains("script-src 'self' 'wasm-unsafe-eval'") && policy.contains("connect-src 'self'"), "{policy}");
    assert_eq!(page.text(), "<!doctype html><title>demo</title>");
    assert_served(
        &server,
        &[
            ("/app.js", "text/javascript; charset=utf-8"),
            ("/css/style.css", "text/css; charset=utf-8"),
            ("/metrics.json", "application/json"),
            ("/pkg/localdp.js", "text/javascript; charset=utf-8"),
            ("/pkg/localdp_bg.wasm", "application/wasm"),
        ],
    );
    assert_eq!(server.get("/pkg/localdp_bg.wasm").body, b"\0asm\x01\0\0\0");
    for path in ["/../secret.txt", "/%2e%2e/secret.txt", "/css/../../secret.txt", "/.hidden", "/missing.js", "/pkg/"] {
        assert_eq!(server.get(path).status, 404, "{path}");
    }
    assert_eq!(server.get("/api/metrics").json()["metrics"].as_array().unwrap().len(), METRICS.len());
}

#[test]
fn assets_are_compressed_as_asked_hashed_ones_immutable_others_revalidated() {
    let scratch = Scratch::new("assets");
    let www = scratch.path("www");
    std::fs::create_dir_all(www.join("assets")).unwrap();
    let script: String = (0..400).map(|i| format!("export const value{i} = {i};\n")).collect();
    std::fs::write(www.join("app.js"), &script).unwrap();
    std::fs::write(www.join("assets/index-D4k9yZ1a.js"), &script).unwrap();
    let metrics = scratch.path("metrics.json");
    let server = Server::start(&scratch, &["--www", www.to_str().unwrap(), "--metrics", metrics.to_str().unwrap()]);
    let get = |path: &str, headers: &[(&str, &str)]| server.request("GET", path, headers, None);

    // Negotiated: brotli first, then gzip, else as it is; each decompresses to the file.
    let brotli = get("/app.js", &[("Accept-Encoding", "gzip, deflate, br")]);
    assert_eq!((brotli.status, brotli.header("content-encoding")), (200, Some("br")));
    let mut decoded = Vec::new();
    brotli::BrotliDecompress(&mut brotli.body.as_slice(), &mut decoded).unwrap();
    assert_eq!(decoded, script.as_bytes());
    assert!(brotli.body.len() * 5 < script.len(), "{} of {} bytes", brotli.body.len(), script.len());
    let gzip = get("/app.js", &[("Accept-Encoding", "gzip")]);
    assert_eq!(gzip.header("content-encoding"), Some("gzip"));
    let mut decoded = String::new();
    flate2::read::GzDecoder::new(gzip.body.as_slice()).read_to_string(&mut decoded).unwrap();
    assert_eq!(decoded, script);
    let plain = get("/app.js", &[]);
    assert_eq!((plain.header("content-encoding"), plain.text()), (None, script.clone()));
    for response in [&brotli, &gzip, &plain] {
        assert_eq!(response.header("vary"), Some("Accept-Encoding"));
        assert_eq!(response.header("content-type"), Some("text/javascript; charset=utf-8"));
    }

    // A plain name: revalidated by its ETag, one per representation.
    assert_eq!(plain.header("cache-control"), Some("no-cache"));
    let (tag, br_tag) = (plain.header("etag").unwrap(), brotli.header("etag").unwrap());
    assert_ne!(tag, br_tag);
    let again = get("/app.js", &[("If-None-Match", tag)]);
    assert_eq!((again.status, again.body.len(), again.header("etag")), (304, 0, Some(tag)));
    let again = get("/app.js", &[("If-None-Match", br_tag), ("Accept-Encoding", "br")]);
    assert_eq!(again.status, 304);
    std::fs::write(www.join("app.js"), "export {};").unwrap();
    let changed = get("/app.js", &[("If-None-Match", tag)]);
    assert_eq!((changed.status, changed.text().as_str()), (200, "export {};"));

    // A bundler's hashed name: cached for a year.
    let hashed = get("/assets/index-D4k9yZ1a.js", &[("Accept-Encoding", "br")]);
    assert_eq!(hashed.header("cache-control"), Some("public, max-age=31536000, immutable"));
}

#[test]
fn serves_the_built_in_dashboard_without_a_demo_under_a_strict_policy() {
    let scratch = Scratch::new("dashboard");
    let (no_demo, metrics) = (scratch.path("no-demo"), scratch.path("metrics.json"));
    let server = Server::start(&scratch, &["--www", no_demo.to_str().unwrap(), "--metrics", metrics.to_str().unwrap()]);
    assert_eq!(server.get("/").status, 404, "no demo");
    for path in ["/dashboard", "/dashboard/"] {
        let page = server.get(path);
        assert_eq!(page.status, 200, "{path}");
        assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
        let policy = page.header("content-security-policy").unwrap();
        assert!(policy.starts_with("default-src 'none'; script-src 'self';"), "{policy}");
        assert!(policy.contains("connect-src 'self'") && !policy.contains("unsafe"), "{policy}");
        assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
        assert!(page.text().contains(r#"<script type="module" src="/dashboard/dashboard.js"></script>"#));
    }
    assert_served(
        &server,
        &[
            ("/dashboard/dashboard.js", "text/javascript; charset=utf-8"),
            ("/dashboard/dashboard.css", "text/css; charset=utf-8"),
            ("/dashboard/base.css", "text/css; charset=utf-8"),
        ],
    );
    for path in ["/dashboard/missing.js", "/dashboard/../secret.txt", "/dashboard/index.html"] {
        let response = server.get(path);
        assert_eq!(response.status, 404, "{path}");
        assert!(response.json()["error"].is_string(), "{path}");
    }
    assert_eq!(server.request("POST", "/dashboard", &[], Some(b"x")).status, 405);
    let log = server.log_containing("/dashboard");
    assert!(log.contains(&format!("the operator's dashboard is http://{}/dashboard", server.address)), "{log}");
}

#[test]
fn prints_only_the_url_on_stdout() {
    let scratch = Scratch::new("stdout");
    let db = scratch.path("reports.sqlite");
    let mut child = Command::new(BIN)
        .args(["serve", "--port", "0", "--db", db.to_str().unwrap(), "--metrics"])
        .arg(scratch.path("metrics.json"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    stdout.read_line(&mut url).unwrap();
    // A base to join with `/api/…`: no trailing slash.
    let port = url.strip_prefix("http://127.0.0.1:").and_then(|rest| rest.strip_suffix('\n'));
    assert!(port.is_some_and(|p| p.parse::<u16>().is_ok()), "{url:?}");
    // SIGTERM: a clean stop, nothing more on stdout.
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(rest, "");
    assert!(Path::new(&db).exists());
}
