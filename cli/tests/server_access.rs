//! Who may use the collector, and how much: bearer tokens on everything that
//! reads counts (`--token-file`), cross-origin pages (`--allow-origin`), and
//! the per-source limits (`--requests-per-minute`, `--reports-per-minute`,
//! `--trust-proxy`). The real binary, over plain HTTP/1.1.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

mod common;
mod serving;

use serving::*;

const TOKEN: &str = "7c1f0e5a9b2d4c6e8f0a1b3c5d7e9f01";
const OTHER_TOKEN: &str = "second-reader-token-0123456789";

/// A server with two tokens (and a comment line in their file).
fn with_tokens(name: &str) -> (Server, Scratch) {
    let scratch = Scratch::new(name);
    let tokens = scratch.file("tokens.txt", &format!("# dashboards\n{TOKEN}\n\n  {OTHER_TOKEN}  \n"));
    let server = Server::start(&scratch, &["--token-file", tokens.to_str().unwrap()]);
    (server, scratch)
}

/// Every endpoint that reads counts or reports.
const PROTECTED: &[&str] = &[
    "/api/metrics",
    "/api/metrics/colors/estimate",
    "/api/metrics/colors/estimate?post=project",
    "/api/metrics/colors/export",
    "/api/metrics/colors/reports.parquet",
    "/metrics",
    // Auth comes first: an unknown name is not revealed (its 404 lists the metrics).
    "/api/metrics/nope/estimate",
];

#[test]
fn without_a_token_reading_is_401_with_a_json_error() {
    let (server, _scratch) = with_tokens("token-missing");
    for path in PROTECTED {
        let response = server.get(path);
        assert_eq!(response.status, 401, "{path}: {}", response.text());
        assert_eq!(response.json(), json!({"error": "this endpoint needs Authorization: Bearer <token>"}), "{path}");
        assert_eq!(response.header("www-authenticate"), Some("Bearer realm=\"localdp\""), "{path}");
    }
}

#[test]
fn a_wrong_token_or_scheme_is_401_invalid_token() {
    let (server, _scratch) = with_tokens("token-wrong");
    let near_misses = [
        format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]),
        format!("Bearer {TOKEN}0"),
        format!("Bearer {}", TOKEN.to_uppercase()),
        format!("Basic {TOKEN}"),
        TOKEN.to_string(),
        "Bearer # dashboards".to_string(),
        "Bearer".to_string(),
    ];
    for path in PROTECTED {
        for value in &near_misses {
            let response = server.request("GET", path, &[("Authorization", value)], None);
            assert_eq!(response.status, 401, "{path} with {value:?}");
            assert_eq!(response.json()["error"], json!("the token is not valid"));
            assert!(response.header("www-authenticate").unwrap().contains("error=\"invalid_token\""));
        }
    }
}

#[test]
fn either_token_reads_and_posting_stays_open() {
    let (server, scratch) = with_tokens("token-ok");
    let lines = reports(&scratch, "colors", 30, 1);
    // No token needed to post.
    let response = server.post_reports("colors", &array(&lines));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["accepted"], json!(30));
    for token in [TOKEN, OTHER_TOKEN] {
        let bearer = format!("Bearer {token}");
        let auth = [("Authorization", bearer.as_str())];
        let list = server.request("GET", "/api/metrics", &auth, None);
        assert_eq!(list.status, 200);
        assert_eq!(list.json()["metrics"][0]["n"], json!(30));
        let estimate = server.request("GET", "/api/metrics/colors/estimate?post=none", &auth, None);
        assert_eq!(estimate.text(), cli_estimate(&scratch, "colors", &lines, "none"));
        assert_eq!(server.export("colors", &auth), lines);
        assert_eq!(server.request("GET", "/metrics", &auth, None).status, 200);
        // The scheme is case-insensitive (RFC 7235).
        let lower = format!("bearer {token}");
        assert_eq!(server.request("GET", "/api/metrics/colors", &[("Authorization", &lower)], None).status, 200);
        let unknown = server.request("GET", "/api/metrics/nope", &auth, None);
        assert_eq!(unknown.status, 404);
    }
    // Health and the demo's files need nothing.
    assert_eq!(server.get("/healthz").status, 200);
    assert_eq!(server.get("/healthz").json(), json!({"status": "ok"}));
    // The log never holds a token.
    assert!(!server.log().contains(TOKEN) && !server.log().contains(OTHER_TOKEN));
}

#[test]
fn with_tokens_an_unknown_metric_is_a_404_that_names_no_metric() {
    let (server, scratch) = with_tokens("token-unknown");
    let line = reports(&scratch, "colors", 1, 9).remove(0);
    // Posting needs no token: its 404 must not list what a token guards.
    let response = server.post_reports("nope", &line);
    assert_eq!(response.status, 404, "{}", response.text());
    assert_eq!(response.json(), json!({"error": "no such metric"}));
    let bearer = format!("Bearer {TOKEN}");
    for path in ["/api/metrics/nope", "/api/metrics/nope/estimate", "/api/metrics/nope/export"] {
        let response = server.request("GET", path, &[("Authorization", &bearer)], None);
        assert_eq!((response.status, response.json()), (404, json!({"error": "no such metric"})), "{path}");
    }
    // Without tokens the 404 lists the metrics, as before.
    let scratch = Scratch::new("token-unknown-open");
    let open = Server::start(&scratch, &[]);
    let names: Vec<&str> = METRICS.iter().map(|(name, _)| *name).collect();
    assert_eq!(open.post_reports("nope", &line).json()["metrics"], json!(names));
}

#[test]
fn a_metric_config_is_public_and_its_counts_need_a_token() {
    let (server, scratch) = with_tokens("token-config");
    let lines = reports(&scratch, "colors", 3, 2);
    assert_eq!(server.post_reports("colors", &array(&lines)).status, 200);
    let bearer = format!("Bearer {TOKEN}");
    let full = server.request("GET", "/api/metrics/colors", &[("Authorization", &bearer)], None);
    assert_eq!(full.status, 200, "{}", full.text());
    let mut public = full.json();
    assert_eq!(public.as_object_mut().unwrap().remove("n"), Some(json!(3)));
    assert!(public.as_object_mut().unwrap().remove("rejected").is_some());
    let limited = public.as_object_mut().unwrap().remove("limited");
    assert_eq!(limited, Some(json!({"requests": 0, "reports": 0, "reports_carried": 0})));
    assert!(public.as_object_mut().unwrap().remove("min_users").is_some_and(|m| m.as_u64().unwrap() > 3));
    // No shuffled batch received yet (the shuffler's batches, with a token only).
    assert_eq!(public.as_object_mut().unwrap().remove("shuffled"), Some(Value::Null));
    for key in ["name", "title", "unit", "kind", "protocol", "epsilon", "config"] {
        assert!(public.get(key).is_some(), "{key}");
    }
    // Without a valid token: the config, without the counts.
    for headers in [&[][..], &[("Authorization", "Bearer not-a-token-0123456789")][..]] {
        let response = server.request("GET", "/api/metrics/colors", headers, None);
        assert_eq!(response.status, 200, "{headers:?}: {}", response.text());
        assert_eq!(response.json(), public, "{headers:?}");
        let unknown = server.request("GET", "/api/metrics/nope", headers, None);
        assert_eq!((unknown.status, unknown.json()), (404, json!({"error": "no such metric"})), "{headers:?}");
    }
}

#[test]
fn a_token_file_without_tokens_is_refused_at_start() {
    let scratch = Scratch::new("token-empty");
    let tokens = scratch.file("tokens.txt", "# nobody yet\n\n");
    let log = Server::try_start(&scratch, &["--token-file", tokens.to_str().unwrap()]).err().expect("must not start");
    assert!(log.contains("no token in it"), "{log}");
    let missing = scratch.path("missing.txt");
    let log = Server::try_start(&scratch, &["--token-file", missing.to_str().unwrap()]).err().expect("must not start");
    assert!(log.contains("--token-file"), "{log}");
}

const APP: &str = "http://app.example:5173";
const EVIL: &str = "http://evil.example";

fn preflight(server: &Server, path: &str, origin: &str, method: &str, headers: &str) -> Response {
    let mut sent = vec![("Origin", origin), ("Access-Control-Request-Method", method)];
    if !headers.is_empty() {
        sent.push(("Access-Control-Request-Headers", headers));
    }
    server.request("OPTIONS", path, &sent, None)
}

fn n(server: &Server, metric: &str) -> u64 {
    server.estimate(metric, "none").json()["n"].as_u64().unwrap()
}

#[test]
fn a_listed_origin_passes_the_preflight_and_gets_cors_headers() {
    let scratch = Scratch::new("cors-listed");
    let server = Server::start(&scratch, &["--allow-origin", APP, "--allow-origin", "https://other.example"]);
    let reports_path = "/api/metrics/colors/reports";

    // The preflight of a JSON post.
    let response = preflight(&server, reports_path, APP, "POST", "content-type");
    assert_eq!(response.status, 204, "{}", response.text());
    assert_eq!(response.header("access-control-allow-origin"), Some(APP));
    assert_eq!(response.header("access-control-allow-methods"), Some("POST"));
    assert_eq!(response.header("access-control-allow-headers"), Some("content-type"));
    assert_eq!(response.header("access-control-max-age"), Some("7200"));
    assert_eq!(response.header("vary"), Some("Origin"));
    // Origins compare case-insensitively (the flag's case does not matter).
    assert_eq!(preflight(&server, reports_path, "HTTP://APP.EXAMPLE:5173", "POST", "").status, 204);

    // The post itself, text/plain as a beacon sends it: counted, readable.
    let lines = reports(&scratch, "colors", 3, 2);
    let response = server.request(
        "POST",
        reports_path,
        &[("Origin", APP), ("Content-Type", "text/plain;charset=UTF-8")],
        Some(array(&lines).as_bytes()),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["accepted"], json!(3));
    assert_eq!(response.header("access-control-allow-origin"), Some(APP));
    assert_eq!(response.header("access-control-expose-headers"), Some("retry-after"));
    assert_eq!(response.header("vary"), Some("Origin"));

    // Errors are readable too (a page can see why).
    let response = server.request("POST", reports_path, &[("Origin", APP)], Some(b"not json"));
    assert_eq!(response.status, 400);
    assert_eq!(response.header("access-control-allow-origin"), Some(APP));

    // A listed origin may read (a dashboard elsewhere), with the token header.
    let response = preflight(&server, "/api/metrics/colors/estimate", APP, "GET", "authorization");
    assert_eq!(response.status, 204);
    assert_eq!(response.header("access-control-allow-methods"), Some("GET"));
    assert_eq!(response.header("access-control-allow-headers"), Some("authorization"));
    let response = server.request("GET", "/api/metrics/colors/estimate", &[("Origin", APP)], None);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), Some(APP));
    assert_eq!(n(&server, "colors"), 3);
}

#[test]
fn other_origins_are_refused_and_count_nothing() {
    let scratch = Scratch::new("cors-refused");
    let server = Server::start(&scratch, &["--allow-origin", APP]);
    let reports_path = "/api/metrics/colors/reports";
    let lines = reports(&scratch, "colors", 4, 3);
    assert_eq!(server.post_reports("colors", &array(&lines[..1])).status, 200);

    // Preflights: another origin, another method, another header, a path that is not an API.
    for (origin, method, headers) in
        [(EVIL, "POST", "content-type"), (APP, "PUT", ""), (APP, "POST", "content-type, x-custom"), ("null", "POST", "")]
    {
        let response = preflight(&server, reports_path, origin, method, headers);
        assert_eq!(response.status, 403, "{origin} {method} {headers}");
        assert!(response.header("access-control-allow-origin").is_none());
        assert!(response.json()["error"].as_str().unwrap().contains("--allow-origin"));
    }
    assert_eq!(preflight(&server, "/", APP, "GET", "").status, 403);

    // A beacon from another origin: refused before its body is read, nothing counted.
    let response = server.request(
        "POST",
        reports_path,
        &[("Origin", EVIL), ("Content-Type", "text/plain")],
        Some(array(&lines[1..]).as_bytes()),
    );
    assert_eq!(response.status, 403, "{}", response.text());
    // The refusal is readable by the page, which can show why.
    assert_eq!(response.header("access-control-allow-origin"), Some(EVIL));
    assert_eq!(response.header("vary"), Some("Origin"));
    assert!(response.json()["error"].as_str().unwrap().contains("--allow-origin ORIGIN"));
    assert_eq!(n(&server, "colors"), 1);
    assert_eq!(server.estimate("colors", "none").json()["rejected"], rejected(&[]));
    // A beacon never shows its answer: the log says how many were refused,
    // at 1, 2, 4, … (counts only, no origin).
    let refused = "report posts refused for their page's origin (not in --allow-origin) so far: ";
    assert!(server.log_containing(&format!("{refused}1;")).contains(&format!("{refused}1;")));
    for _ in 0..3 {
        let response = server.request("POST", reports_path, &[("Origin", EVIL)], Some(lines[1].as_bytes()));
        assert_eq!(response.status, 403);
    }
    let log = server.log_containing(&format!("{refused}4;"));
    assert!(log.contains(&format!("{refused}2;")) && log.contains(&format!("{refused}4;")), "{log}");
    assert!(!log.contains(&format!("{refused}3;")) && !log.contains(EVIL), "{log}");

    // Not cross-origin: no Origin (a server-side sender), or the collector's
    // own page (its Origin is the Host it was asked at).
    assert_eq!(server.post_reports("colors", &lines[1]).status, 200);
    let own = format!("http://{}", server.address);
    let response = server.request("POST", reports_path, &[("Origin", &own)], Some(lines[2].as_bytes()));
    assert_eq!(response.status, 200, "{}", response.text());
    assert!(response.header("access-control-allow-origin").is_none());
    assert_eq!(n(&server, "colors"), 3);

    // Reading from another origin: answered, but without CORS headers the
    // browser keeps it from the page.
    let response = server.request("GET", "/api/metrics/colors/estimate", &[("Origin", EVIL)], None);
    assert_eq!(response.status, 200);
    assert!(response.header("access-control-allow-origin").is_none());
}

#[test]
fn a_star_lets_any_origin_post_and_none_read() {
    let scratch = Scratch::new("cors-star");
    let server = Server::start(&scratch, &["--allow-origin", "*"]);
    let reports_path = "/api/metrics/bits/reports";
    let response = preflight(&server, reports_path, EVIL, "POST", "content-type");
    assert_eq!(response.status, 204);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    let lines = reports(&scratch, "bits", 2, 4);
    let response = server.request("POST", reports_path, &[("Origin", EVIL)], Some(array(&lines).as_bytes()));
    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    // Reading is for listed origins only.
    assert_eq!(preflight(&server, "/api/metrics/bits/estimate", EVIL, "GET", "authorization").status, 403);
    let response = server.request("GET", "/api/metrics/bits/estimate", &[("Origin", EVIL)], None);
    assert!(response.header("access-control-allow-origin").is_none());
    assert_eq!(n(&server, "bits"), 2);
}

#[test]
fn without_allow_origin_only_pages_of_other_origins_are_refused() {
    let scratch = Scratch::new("cors-off");
    let server = Server::start(&scratch, &[]);
    let reports_path = "/api/metrics/colors/reports";
    let lines = reports(&scratch, "colors", 4, 5);
    // A page elsewhere could not read the answer, so it would not know its
    // report was counted: refused, readably, and nothing counted.
    let response = preflight(&server, reports_path, APP, "POST", "content-type");
    assert_eq!(response.status, 403);
    assert!(response.header("access-control-allow-origin").is_none());
    let response = server.request("POST", reports_path, &[("Origin", EVIL)], Some(lines[0].as_bytes()));
    assert_eq!(response.status, 403, "{}", response.text());
    assert_eq!(response.header("access-control-allow-origin"), Some(EVIL));
    assert!(response.json()["error"].as_str().unwrap().contains("nothing was counted"));
    assert_eq!(n(&server, "colors"), 0);
    // As before: no Origin (the CLI, a server), the collector's own page
    // (by Host, or by Sec-Fetch-Site behind a proxy that rewrites Host).
    assert_eq!(server.post_reports("colors", &lines[1]).status, 200);
    let own = format!("http://{}", server.address);
    for sent in [vec![("Origin", own.as_str())], vec![("Origin", "https://collector.example"), ("Sec-Fetch-Site", "same-origin")]] {
        let response = server.request("POST", reports_path, &sent, Some(lines[2].as_bytes()));
        assert_eq!(response.status, 200, "{}", response.text());
        assert!(response.header("access-control-allow-origin").is_none());
    }
    // And a browser extension, with CORS headers: one without host
    // permissions for the collector reads its answer only through them (it
    // would send a post whose answer it cannot read again), and may preflight.
    let extension = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";
    let response = server.request("POST", reports_path, &[("Origin", extension)], Some(lines[3].as_bytes()));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    assert_eq!(preflight(&server, reports_path, extension, "POST", "content-type").status, 204);
    assert_eq!(n(&server, "colors"), 4);
}

#[test]
fn a_bad_origin_flag_is_refused_at_start() {
    let scratch = Scratch::new("cors-bad-flag");
    for bad in ["app.example", "https://app.example/", "https://app.example/path"] {
        let log = Server::try_start(&scratch, &["--allow-origin", bad]).err().expect("must not start");
        assert!(log.contains("--allow-origin"), "{log}");
    }
}

#[test]
fn a_request_naming_another_host_is_421_and_counts_nothing() {
    // DNS rebinding: a page on evil.example whose name now resolves to the
    // collector sends its own origin and its own name as Host.
    let scratch = Scratch::new("host-rebound");
    let server = Server::start(&scratch, &["--allow-origin", APP]);
    let lines = reports(&scratch, "colors", 3, 10);
    let rebound = [("Origin", EVIL), ("Host", "evil.example")];
    let response = server.request("POST", "/api/metrics/colors/reports", &rebound, Some(array(&lines).as_bytes()));
    assert_eq!(response.status, 421, "{}", response.text());
    assert!(response.json()["error"].as_str().unwrap().contains("--host NAME"));
    // Nor can it read what a loopback collector without tokens serves.
    let port = server.address.port();
    let named = format!("evil.example:{port}");
    for path in ["/api/metrics", "/api/metrics/colors/estimate", "/api/metrics/colors/export", "/metrics", "/healthz"] {
        assert_eq!(server.request("GET", path, &[("Host", &named)], None).status, 421, "{path}");
    }
    assert_eq!(n(&server, "colors"), 0);

    // Bound to loopback: its address, localhost and [::1] (with or without
    // the port) are its own names, and their pages its own origin.
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}"), "LocalHost".into()] {
        let own = format!("http://{host}");
        let headers = [("Host", host.as_str()), ("Origin", own.as_str())];
        let response = server.request("POST", "/api/metrics/colors/reports", &headers, Some(lines[0].as_bytes()));
        assert_eq!(response.status, 200, "{host}: {}", response.text());
    }
    assert_eq!(n(&server, "colors"), 4);
    drop(server);

    // --host: the name a proxy forwards.
    let server = Server::start(&scratch, &["--allow-origin", APP, "--host", "collector.example"]);
    let headers = [("Host", "collector.example"), ("Origin", "https://collector.example")];
    let response = server.request("POST", "/api/metrics/colors/reports", &headers, Some(lines[1].as_bytes()));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(server.request("GET", "/api/metrics/colors", &[("Host", "Collector.Example:443")], None).status, 200);
    assert_eq!(server.request("GET", "/api/metrics/colors", &[("Host", "other.example")], None).status, 421);
    for bad in ["collector.example:443", "https://collector.example"] {
        let log = Server::try_start(&scratch, &["--host", bad]).err().expect("must not start");
        assert!(log.contains("--host"), "{log}");
    }
}

/// The refusal counts `/metrics` shows for a metric (requests refused by
/// the request limit, by the report limit, and the reports those carried),
/// which its description with counts shows as `"limited"`.
fn limited(server: &Server, metric: &str) -> (u64, u64, u64) {
    let text = server.get("/metrics").text();
    let value = |series: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    let counts = (
        value(&format!("localdp_requests_limited_total{{metric=\"{metric}\",limit=\"requests\"}}")),
        value(&format!("localdp_requests_limited_total{{metric=\"{metric}\",limit=\"reports\"}}")),
        value(&format!("localdp_reports_rejected_total{{metric=\"{metric}\",reason=\"rate_limited\"}}")),
    );
    let described = json!({"requests": counts.0, "reports": counts.1, "reports_carried": counts.2});
    assert_eq!(server.get(&format!("/api/metrics/{metric}")).json()["limited"], described);
    let listed = server.get("/api/metrics").json();
    let entry = listed["metrics"].as_array().unwrap().iter().find(|m| m["name"] == json!(metric)).unwrap().clone();
    assert_eq!(entry["limited"], described);
    counts
}

/// A run of a rate-limit test that took longer than one token's refill, so
/// that a refusal it expected may rightly not have come.
struct Slow;

/// Runs a rate-limit test on a fresh server until one run is fast enough
/// to judge (a loaded machine may be slower than a token's refill); on a
/// machine too slow three times over, says so and judges nothing.
fn judged(name: &str, mut run: impl FnMut() -> Result<(), Slow>) {
    for _ in 0..3 {
        if run().is_ok() {
            return;
        }
    }
    eprintln!("{name}: every run outlasted a token's refill; the limits were not judged on this machine");
}

/// The expected refusal, or `Slow` if it did not come and `window` (one
/// token's refill) has passed since `started` (before the first token was
/// taken), which may explain it.
fn refused(response: &Response, started: Instant, window: Duration) -> Result<(), Slow> {
    if response.status != 429 && started.elapsed() >= window {
        return Err(Slow);
    }
    assert_eq!(response.status, 429, "{}", response.text());
    Ok(())
}

/// `Retry-After` for a bucket `short` tokens short when `started` was taken,
/// one token per `window`: between the wait then, less the time passed
/// since, and the wait then (whole seconds, at least 1).
fn assert_retry(response: &Response, short: f64, started: Instant, window: Duration) -> u64 {
    let retry: u64 = response.header("retry-after").unwrap().parse().unwrap();
    let most = (short * window.as_secs_f64()).ceil() as u64;
    let least = ((short * window.as_secs_f64() - started.elapsed().as_secs_f64()).ceil() as u64).max(1);
    assert!((least..=most).contains(&retry), "Retry-After {retry}, expected {least}..={most}");
    retry
}

#[test]
fn past_the_report_limit_a_request_is_429_and_counts_nothing() {
    judged("past_the_report_limit", || {
        let scratch = Scratch::new("limit-reports");
        // 10 per minute: one more every 6 s.
        let window = Duration::from_secs(6);
        let server = Server::start(&scratch, &["--reports-per-minute", "10"]);
        let good = reports(&scratch, "colors", 40, 6);
        let bad = r#"{"hello":"world"}"#.to_string();

        // 5 valid + 1 invalid: 6 of the 10 (an invalid report is posted too).
        let mut first = good[..5].to_vec();
        first.push(bad.clone());
        let started = Instant::now();
        let response = server.post_reports("colors", &array(&first));
        assert_eq!(response.status, 200);
        let before = server.estimate("colors", "none").text();

        // 5 more do not fit in the 4 left: refused whole.
        let response = server.post_reports("colors", &array(&good[5..10]));
        refused(&response, started, window)?;
        let retry = assert_retry(&response, 1.0, started, window);
        let answer = response.json();
        assert_eq!(answer["limit"], json!("reports"));
        assert_eq!(answer["per_minute"], json!(10));
        assert_eq!(answer["retry_after"], json!(retry));
        assert!(answer["error"].as_str().unwrap().contains("nothing of this request was counted"));
        // Nothing of it counted: not its reports, not a rejection, not a row.
        assert_eq!(server.estimate("colors", "none").text(), before);
        assert_eq!(server.estimate("colors", "none").json()["rejected"], rejected(&[("malformed", 1)]));
        assert_eq!(server.export("colors", &[]), good[..5]);

        // The 4 that are left still fit; then even one is refused.
        assert_eq!(server.post_reports("colors", &array(&good[10..14])).status, 200);
        refused(&server.post_reports("colors", &good[14]), started, window)?;
        // More than the limit can never fit: 413, not a retry (whatever the time).
        let response = server.post_reports("colors", &array(&good[15..26]));
        assert_eq!(response.status, 413);
        assert_eq!(response.json()["max_reports"], json!(10));
        assert!(response.header("retry-after").is_none());

        let expected: Vec<String> = good[..5].iter().chain(&good[10..14]).cloned().collect();
        assert_eq!(server.export("colors", &[]), expected);
        let mut sent = expected.clone();
        sent.push(bad);
        assert_eq!(server.estimate("colors", "none").text(), cli_estimate(&scratch, "colors", &sent, "none"));
        // Counted per metric: 3 requests and their 5 + 1 + 11 reports, for colors only.
        assert_eq!(limited(&server, "colors"), (0, 3, 17));
        assert_eq!(limited(&server, "bits"), (0, 0, 0));
        Ok(())
    });
}

#[test]
fn past_the_request_limit_a_post_is_429_before_its_body_is_read() {
    judged("past_the_request_limit", || {
        let scratch = Scratch::new("limit-requests");
        // 3 per minute: one request back every 20 s.
        let window = Duration::from_secs(20);
        let server = Server::start(&scratch, &["--requests-per-minute", "3"]);
        let good = reports(&scratch, "bits", 5, 7);
        let started = Instant::now();
        for line in &good[..3] {
            assert_eq!(server.post_reports("bits", line).status, 200);
        }
        let response = server.post_reports("bits", &good[3]);
        refused(&response, started, window)?;
        assert_eq!(response.json()["limit"], json!("requests"));
        assert_retry(&response, 1.0, started, window);
        assert_eq!(n(&server, "bits"), 3);
        assert_eq!(limited(&server, "bits"), (1, 0, 0));
        // Reading is not limited.
        for _ in 0..5 {
            assert_eq!(server.estimate("bits", "none").status, 200);
        }
        Ok(())
    });
}

#[test]
fn behind_a_proxy_each_forwarded_address_has_its_own_budget() {
    judged("behind_a_proxy", || {
        let scratch = Scratch::new("limit-proxy");
        let good = reports(&scratch, "colors", 12, 8);
        let post = |server: &Server, forwarded: &str, line: &str| -> Response {
            server.request("POST", "/api/metrics/colors/reports", &[("X-Forwarded-For", forwarded)], Some(line.as_bytes()))
        };

        // 2 per minute: one request back every 30 s.
        let window = Duration::from_secs(30);
        let server = Server::start(&scratch, &["--requests-per-minute", "2", "--trust-proxy"]);
        let started = Instant::now();
        assert_eq!(post(&server, "203.0.113.1", &good[0]).status, 200);
        assert_eq!(post(&server, "203.0.113.1", &good[1]).status, 200);
        refused(&post(&server, "203.0.113.1", &good[2]), started, window)?;
        // Another client behind the same proxy.
        assert_eq!(post(&server, "203.0.113.2", &good[3]).status, 200);
        // What the client claims before the proxy's entry is not believed.
        refused(&post(&server, "198.51.100.9, 203.0.113.1", &good[4]), started, window)?;
        // One IPv6 host is its /64.
        assert_eq!(post(&server, "2001:db8:0:1::1", &good[5]).status, 200);
        assert_eq!(post(&server, "2001:db8:0:1::2", &good[6]).status, 200);
        refused(&post(&server, "2001:db8:0:1::3", &good[7]), started, window)?;
        drop(server);

        // Without --trust-proxy the header is ignored: every post is from 127.0.0.1.
        let server = Server::start(&scratch, &["--requests-per-minute", "2"]);
        let started = Instant::now();
        assert_eq!(post(&server, "203.0.113.1", &good[8]).status, 200);
        assert_eq!(post(&server, "203.0.113.2", &good[9]).status, 200);
        refused(&post(&server, "203.0.113.3", &good[10]), started, window)?;
        assert_eq!(server.estimate("colors", "none").json()["n"], json!(7));
        let _: Value = server.get("/api/metrics/colors").json();
        Ok(())
    });
}
