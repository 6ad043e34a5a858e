//! Running the collector: `/healthz`, `/metrics` as Prometheus text, the
//! report export, a stop that drains the requests in flight, and a SIGKILL
//! in the middle of sustained load from many keep-alive clients (group
//! commit must lose no acknowledged report and count none twice), and
//! estimates under load (cached, and computed a bounded few at once). The
//! real binary, over plain HTTP/1.1.

use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod common;
mod serving;

use serving::*;

#[test]
fn healthz_answers_ok_and_metrics_describe_the_process() {
    let scratch = Scratch::new("healthz");
    let server = Server::start(&scratch, &[]);
    let response = server.get("/healthz");
    assert_eq!(response.status, 200);
    assert_eq!(response.json(), json!({"status": "ok"}));
    assert_eq!(response.header("cache-control"), Some("no-store"));
    let text = server.get("/metrics").text();
    let (_, samples) = parse_prometheus(&text);
    assert_eq!(sample(&samples, "localdp_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), 1.0);
    let started = sample(&samples, "process_start_time_seconds", &[]);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    assert!(now - 120.0 < started && started <= now, "{started}");
    assert!(sample(&samples, "process_resident_memory_bytes", &[]) > 1e6);
    assert!(sample(&samples, "process_open_fds", &[]) >= 3.0);
    assert!(sample(&samples, "process_cpu_seconds_total", &[]) > 0.0);
    // The database holds its schema; the write-ahead log may be empty.
    assert!(sample(&samples, "localdp_database_bytes", &[("file", "database")]) > 0.0);
    assert!(sample(&samples, "localdp_database_bytes", &[("file", "wal")]) >= 0.0);
}

/// One sample line: name, labels, value.
type Sample = (String, BTreeMap<String, String>, f64);

/// Parses the Prometheus text exposition format (0.0.4) strictly: every
/// line is a `# HELP`, a `# TYPE` or a sample; names and label names are
/// valid, label values properly quoted and escaped, values floats; each
/// family is typed once, before its samples, and its samples are
/// contiguous; no series twice. Panics on the first violation.
fn parse_prometheus(text: &str) -> (HashMap<String, String>, Vec<Sample>) {
    fn is_name(s: &str, colon: bool) -> bool {
        let mut bytes = s.bytes();
        matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_' || (colon && b == b':'))
            && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || (colon && b == b':'))
    }
    fn value(s: &str) -> Option<f64> {
        match s {
            "+Inf" => Some(f64::INFINITY),
            "-Inf" => Some(f64::NEG_INFINITY),
            "NaN" => Some(f64::NAN),
            _ => s.parse().ok(),
        }
    }
    assert!(text.ends_with('\n'), "the exposition ends with a line feed");
    let mut types: HashMap<String, String> = HashMap::new();
    let mut helps: HashMap<String, String> = HashMap::new();
    let mut samples: Vec<Sample> = Vec::new();
    let mut finished: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("line {}: {line:?}", i + 1);
        assert!(!line.is_empty(), "{at}: empty line");
        if let Some(comment) = line.strip_prefix('#') {
            let mut parts = comment.trim_start().splitn(3, ' ');
            let keyword = parts.next().unwrap();
            let name = parts.next().unwrap_or_else(|| panic!("{at}: a comment without a name"));
            let rest = parts.next().unwrap_or_else(|| panic!("{at}: nothing after the name"));
            assert!(is_name(name, true), "{at}: bad metric name");
            match keyword {
                "HELP" => assert!(helps.insert(name.to_string(), rest.to_string()).is_none(), "{at}: second HELP"),
                "TYPE" => {
                    assert!(["counter", "gauge", "histogram", "summary", "untyped"].contains(&rest), "{at}: bad type");
                    assert!(types.insert(name.to_string(), rest.to_string()).is_none(), "{at}: second TYPE");
                    assert!(!finished.contains(&name.to_string()), "{at}: TYPE after its samples");
                }
                _ => panic!("{at}: a comment other than HELP or TYPE"),
            }
            continue;
        }
        // name{label="value",...} value
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => panic!("{at}: no value"),
        };
        assert!(is_name(name, true), "{at}: bad metric name");
        let mut labels = BTreeMap::new();
        let mut rest = rest;
        if let Some(inner) = rest.strip_prefix('{') {
            let mut pos = 0;
            while !inner[pos..].starts_with('}') {
                let eq = inner[pos..].find('=').unwrap_or_else(|| panic!("{at}: a label without '='")) + pos;
                let label = &inner[pos..eq];
                assert!(is_name(label, false), "{at}: bad label name {label:?}");
                assert!(inner[eq + 1..].starts_with('"'), "{at}: unquoted label value");
                let mut value = String::new();
                let mut end = None;
                let mut escaped = false;
                for (j, c) in inner[eq + 2..].char_indices() {
                    if escaped {
                        value.push(match c {
                            '\\' => '\\',
                            '"' => '"',
                            'n' => '\n',
                            other => panic!("{at}: bad escape \\{other}"),
                        });
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        end = Some(eq + 2 + j);
                        break;
                    } else {
                        value.push(c);
                    }
                }
                let end = end.unwrap_or_else(|| panic!("{at}: unterminated label value"));
                assert!(labels.insert(label.to_string(), value).is_none(), "{at}: label {label} twice");
                pos = end + 1;
                match inner[pos..].chars().next() {
                    Some(',') => pos += 1,
                    Some('}') => {}
                    _ => panic!("{at}: expected ',' or '}}' after a label"),
                }
            }
            rest = &inner[pos + 1..];
        }
        let mut fields = rest.strip_prefix(' ').unwrap_or_else(|| panic!("{at}: no space before the value")).split(' ');
        let number = value(fields.next().unwrap()).unwrap_or_else(|| panic!("{at}: the value is not a float"));
        if let Some(timestamp) = fields.next() {
            assert!(timestamp.parse::<i64>().is_ok(), "{at}: bad timestamp");
        }
        assert!(fields.next().is_none(), "{at}: trailing fields");
        // Its family: the name, or for a histogram's series the name without the suffix.
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix).filter(|f| types.get(*f).map(String::as_str) == Some("histogram")))
            .unwrap_or(name)
            .to_string();
        assert!(types.contains_key(&family), "{at}: no TYPE for {family}");
        if current.as_deref() != Some(&family) {
            assert!(!finished.contains(&family), "{at}: the samples of {family} are not together");
            if let Some(previous) = current.replace(family.clone()) {
                finished.push(previous);
            }
        }
        assert!(seen.insert((name.to_string(), labels.clone())), "{at}: the same series twice");
        samples.push((name.to_string(), labels, number));
    }
    for family in types.keys() {
        assert!(helps.contains_key(family), "{family} has no HELP");
    }
    (types, samples)
}

/// Checks every histogram: cumulative buckets in increasing `le`, ending
/// with `+Inf` equal to `_count`, and a `_sum`.
fn check_histograms(types: &HashMap<String, String>, samples: &[Sample]) {
    for (family, _) in types.iter().filter(|(_, t)| t.as_str() == "histogram") {
        let mut groups: BTreeMap<BTreeMap<String, String>, Vec<(f64, f64)>> = BTreeMap::new();
        for (name, labels, value) in samples {
            if *name == format!("{family}_bucket") {
                let mut rest = labels.clone();
                let le = rest.remove("le").unwrap_or_else(|| panic!("{family}: a bucket without le"));
                let le = if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap() };
                groups.entry(rest).or_default().push((le, *value));
            }
        }
        assert!(!groups.is_empty(), "{family}: no buckets");
        for (labels, buckets) in groups {
            assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "{family}{labels:?}: {buckets:?}");
            let (last_le, last) = *buckets.last().unwrap();
            assert_eq!(last_le, f64::INFINITY, "{family}{labels:?}: no +Inf bucket");
            let find = |suffix: &str| {
                samples
                    .iter()
                    .find(|(n, l, _)| *n == format!("{family}{suffix}") && *l == labels)
                    .unwrap_or_else(|| panic!("{family}{labels:?}: no {suffix}"))
                    .2
            };
            assert_eq!(find("_count"), last, "{family}{labels:?}");
            assert!(find("_sum") >= 0.0);
        }
    }
}

fn sample(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let wanted: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    samples
        .iter()
        .find(|(n, l, _)| n == name && *l == wanted)
        .unwrap_or_else(|| panic!("no {name}{labels:?}"))
        .2
}

#[test]
fn metrics_parse_as_prometheus_text_and_count_what_happened() {
    let scratch = Scratch::new("prometheus");
    let server = Server::start(&scratch, &["--reports-per-minute", "100"]);
    let colors = reports(&scratch, "colors", 60, 11);
    // 60 accepted; a batch with 2 valid and a malformed and a mismatched one.
    assert_eq!(server.post_reports("colors", &array(&colors[..58])).status, 200);
    let mismatched = reports(&scratch, "bits", 1, 12).remove(0);
    let mixed = array(&[colors[58].clone(), "5".into(), mismatched, colors[59].clone()]);
    assert_eq!(server.post_reports("colors", &mixed).status, 200);
    // 40 more do not fit in the 38 left: 429, 40 rate-limited reports.
    assert_eq!(server.post_reports("colors", &array(&reports(&scratch, "colors", 40, 13))).status, 429);
    assert_eq!(server.post_reports("colors", "not json").status, 400);
    assert_eq!(server.get("/api/metrics/nope").status, 404);
    assert_eq!(server.estimate("colors", "none").status, 200);

    let response = server.get("/metrics");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    let (types, samples) = parse_prometheus(&response.text());
    check_histograms(&types, &samples);
    for (family, kind) in [
        ("localdp_reports_accepted_total", "counter"),
        ("localdp_reports_rejected_total", "counter"),
        ("localdp_requests_limited_total", "counter"),
        ("localdp_http_requests_total", "counter"),
        ("localdp_http_request_duration_seconds", "histogram"),
        ("localdp_commit_duration_seconds", "histogram"),
        ("localdp_commit_requests", "histogram"),
        ("localdp_requests_in_flight", "gauge"),
    ] {
        assert_eq!(types.get(family).map(String::as_str), Some(kind), "{family}");
    }
    // Per metric: accepted, every reason (zeros included), rate_limited.
    assert_eq!(sample(&samples, "localdp_reports_accepted_total", &[("metric", "colors")]), 60.0);
    assert_eq!(sample(&samples, "localdp_reports_accepted_total", &[("metric", "bits")]), 0.0);
    let rejected = |reason| sample(&samples, "localdp_reports_rejected_total", &[("metric", "colors"), ("reason", reason)]);
    assert_eq!(rejected("malformed"), 1.0);
    assert_eq!(rejected("config_mismatch"), 1.0);
    assert_eq!(rejected("out_of_range"), 0.0);
    assert_eq!(rejected("rate_limited"), 40.0);
    assert_eq!(sample(&samples, "localdp_requests_limited_total", &[("metric", "colors"), ("limit", "reports")]), 1.0);
    // Requests by route and status (this /metrics request is still in flight).
    let requests = |route, status| sample(&samples, "localdp_http_requests_total", &[("route", route), ("status", status)]);
    assert_eq!(requests("reports", "200"), 2.0);
    assert_eq!(requests("reports", "429"), 1.0);
    assert_eq!(requests("reports", "400"), 1.0);
    assert_eq!(requests("metrics", "404"), 1.0);
    assert_eq!(requests("estimate", "200"), 1.0);
    // Latency: the 5 report posts; each of the 2 stored ones in its own commit.
    assert_eq!(
        sample(&samples, "localdp_http_request_duration_seconds_count", &[("route", "reports")]),
        4.0
    );
    assert_eq!(sample(&samples, "localdp_commit_duration_seconds_count", &[]), 2.0);
    assert_eq!(sample(&samples, "localdp_commit_requests_sum", &[]), 2.0);
    assert!(sample(&samples, "localdp_requests_in_flight", &[]) >= 1.0);
    // The parser itself refuses what is not the format.
    for bad in ["x 1\n", "# TYPE x counter\nx{a=1} 1\n", "# TYPE x counter\n# HELP x h\nx one\n"] {
        assert!(std::panic::catch_unwind(|| parse_prometheus(bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn an_export_is_every_stored_report_in_order_as_aggregate_reads_them() {
    let scratch = Scratch::new("export");
    let server = Server::start(&scratch, &[]);
    assert!(server.export("hashed", &[]).is_empty());
    // More than one page (10,000 rows each).
    let lines = reports(&scratch, "hashed", 23_456, 21);
    for chunk in lines.chunks(5000) {
        assert_eq!(server.post_reports("hashed", &array(chunk)).status, 200);
    }
    let exported = server.export("hashed", &[]);
    assert_eq!(exported, lines);
    assert_eq!(
        server.estimate("hashed", "none").text(),
        cli_estimate(&scratch, "hashed", &exported, "none")
    );
    assert_eq!(server.get("/api/metrics/nope/export").status, 404);
}

/// Polls `/metrics` until `localdp_requests_in_flight` reaches `n` (the
/// poll itself is one).
fn wait_in_flight(server: &Server, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = server.get("/metrics").text();
        let now: usize =
            text.lines().find_map(|l| l.strip_prefix("localdp_requests_in_flight ")).unwrap().parse().unwrap();
        if now >= n {
            return;
        }
        assert!(Instant::now() < deadline, "never {n} requests in flight");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_stop_drains_the_requests_in_flight() {
    let scratch = Scratch::new("drain");
    let mut server = Server::start(&scratch, &[]);
    let lines = reports(&scratch, "colors", 10, 31);
    let body = array(&lines);
    // A request whose body is half sent when the signal comes.
    let mut slow = TcpStream::connect(server.address).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(slow, "POST /api/metrics/colors/reports HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n\r\n", server.address, body.len()).unwrap();
    let (first, second) = body.as_bytes().split_at(body.len() / 2);
    slow.write_all(first).unwrap();
    wait_in_flight(&server, 2);
    server.signal("TERM");
    // No new connection once stopping.
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(server.address).is_ok() {
        assert!(Instant::now() < deadline, "still accepting connections");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.wait(Duration::from_millis(300)).is_none(), "exited with a request in flight");
    // The rest of the body: answered, stored, and then the server exits.
    slow.write_all(second).unwrap();
    let response = read_response(&mut slow);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["accepted"], json!(10));
    let status = server.wait(Duration::from_secs(10)).expect("the server stops once drained");
    assert!(status.success());
    let log = server.log_containing("stopped");
    assert!(log.contains("stopping: 1 requests in flight, draining"), "{log}");
    assert!(log.contains("localdp serve: stopped"), "{log}");

    let server = Server::start(&scratch, &[]);
    assert_eq!(server.estimate("colors", "none").text(), cli_estimate(&scratch, "colors", &lines, "none"));
}

#[test]
fn a_second_signal_stops_at_once() {
    let scratch = Scratch::new("drain-twice");
    let mut server = Server::start(&scratch, &[]);
    let mut slow = TcpStream::connect(server.address).unwrap();
    write!(slow, "POST /api/metrics/colors/reports HTTP/1.1\r\nHost: {}\r\nContent-Length: 100\r\n\r\n[", server.address).unwrap();
    wait_in_flight(&server, 2);
    server.signal("TERM");
    assert!(server.wait(Duration::from_millis(300)).is_none());
    server.signal("INT");
    // Not a clean stop: a supervisor is told (exit status 1).
    let status = server.wait(Duration::from_secs(10)).expect("stops on the second signal");
    assert_eq!(status.code(), Some(1));
    let log = server.log_containing("stopped");
    assert!(log.contains("stopped now (a second signal): 1 requests in flight were not answered"), "{log}");
}

#[test]
fn readiness_turns_503_while_the_listener_still_takes_connections() {
    let scratch = Scratch::new("readiness");
    let mut server = Server::start(&scratch, &["--shutdown-delay", "2"]);
    for path in ["/readyz", "/livez", "/healthz"] {
        assert_eq!(server.get(path).json(), json!({"status": "ok"}), "{path}");
    }
    server.signal("TERM");
    let deadline = Instant::now() + Duration::from_secs(1);
    while server.get("/readyz").status != 503 {
        assert!(Instant::now() < deadline, "/readyz never turned 503");
    }
    // New connections are still taken and answered: a load balancer sees
    // the 503 (and a report sent meanwhile is counted).
    assert_eq!(server.get("/readyz").json(), json!({"status": "draining"}));
    assert_eq!(server.get("/healthz").status, 503);
    assert_eq!(server.get("/livez").json(), json!({"status": "ok"}));
    let lines = reports(&scratch, "colors", 3, 5);
    assert_eq!(server.post_reports("colors", &array(&lines)).json()["accepted"], json!(3));
    let status = server.wait(Duration::from_secs(10)).expect("stops after the delay");
    assert!(status.success());
    assert!(TcpStream::connect(server.address).is_err());
}

/// Runs `during` while 4 keep-alive clients post reports of `pool`
/// (metric `colors`) on connections that live across whatever it does;
/// fails if any post is answered other than 200, and returns how many were
/// posted.
fn under_load(server: &Server, pool: &[String], during: impl FnOnce()) -> usize {
    let stop = AtomicBool::new(false);
    let (posted, failed) = (AtomicUsize::new(0), Mutex::new(Vec::new()));
    /// Stops the clients however the scope ends (a failed assertion too).
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    std::thread::scope(|scope| {
        let _stop = Stop(&stop);
        for client in 0..4 {
            let (stop, posted, failed) = (&stop, &posted, &failed);
            scope.spawn(move || {
                let mut connection = Connection::open(server.address).unwrap();
                let mut i = client;
                while !stop.load(Ordering::Relaxed) {
                    match connection.request("POST", "/api/metrics/colors/reports", pool[i % pool.len()].as_bytes()) {
                        Ok(r) if r.status == 200 => {
                            posted.fetch_add(1, Ordering::Relaxed);
                        }
                        other => failed.lock().unwrap().push(format!("{other:?}")),
                    }
                    i += 4;
                }
            });
        }
        during();
    });
    assert!(failed.lock().unwrap().is_empty(), "{:?}", failed.lock().unwrap());
    let posted = posted.load(Ordering::Relaxed);
    assert!(posted > 0);
    posted
}

#[test]
fn sighup_reads_the_token_files_again_under_load_without_failing_a_request() {
    const OLD: &str = "old-reader-token-0123456789abcdef";
    const NEW: &str = "new-reader-token-0123456789abcdef";
    let scratch = Scratch::new("sighup");
    let tokens = scratch.file("tokens.txt", &format!("{OLD}\n"));
    let server = Server::start(&scratch, &["--token-file", tokens.to_str().unwrap()]);
    let pool = reports(&scratch, "colors", 50, 9);
    let reader = |token: &str| server.request("GET", "/api/metrics", &[("Authorization", &format!("Bearer {token}"))], None).status;
    let posted = under_load(&server, &pool, || {
        assert_eq!(reader(OLD), 200);
        assert_eq!(reader(NEW), 401);
        // Both tokens, then the new one alone.
        std::fs::write(&tokens, format!("{OLD}\n{NEW}\n")).unwrap();
        server.signal("HUP");
        server.log_containing("2 reader tokens");
        assert_eq!((reader(OLD), reader(NEW)), (200, 200));
        std::fs::write(&tokens, format!("{NEW}\n")).unwrap();
        server.signal("HUP");
        server.log_containing("token files read again: 1 reader tokens");
        assert_eq!((reader(OLD), reader(NEW)), (401, 200));
        // A file that does not read keeps the tokens.
        std::fs::write(&tokens, "# none\n").unwrap();
        server.signal("HUP");
        assert!(server.log_containing("the old tokens are kept").contains("no token in it"));
        assert_eq!(reader(NEW), 200);
    });
    let listed = server.request("GET", "/api/metrics/colors", &[("Authorization", &format!("Bearer {NEW}"))], None).json();
    assert_eq!(listed["n"], json!(posted));
    assert!(!server.log().contains(OLD) && !server.log().contains(NEW));
}

#[test]
fn sighup_reads_the_origin_file_again_under_load_without_failing_a_request() {
    const FLAG: &str = "https://flag.example";
    const ADDED: &str = "https://added.example";
    let scratch = Scratch::new("sighup-origins");
    let origins = scratch.file("origins.txt", "# none yet\n");
    let server = Server::start(&scratch, &["--allow-origin", FLAG, "--allow-origin-file", origins.to_str().unwrap()]);
    let pool = reports(&scratch, "colors", 50, 9);
    let page_posts = AtomicUsize::new(0);
    // A page of `origin` posts a report: its status and the origin CORS lets read the answer.
    let post_from = |origin: &str| {
        let r = server.request("POST", "/api/metrics/colors/reports", &[("Origin", origin)], Some(pool[0].as_bytes()));
        page_posts.fetch_add((r.status == 200) as usize, Ordering::Relaxed);
        (r.status, r.header("access-control-allow-origin").map(str::to_string))
    };
    let allowed = |origin: &str| (200, Some(origin.to_string()));
    let posted = under_load(&server, &pool, || {
        assert_eq!(post_from(ADDED).0, 403);
        assert_eq!(post_from(FLAG), allowed(FLAG));
        std::fs::write(&origins, format!("# the shop\n  {}  \n", ADDED.to_uppercase())).unwrap();
        server.signal("HUP");
        server.log_containing("origin file read again: 2 origins");
        assert_eq!((post_from(ADDED), post_from(FLAG)), (allowed(ADDED), allowed(FLAG)));
        // A file that does not read keeps the origins.
        std::fs::write(&origins, format!("{ADDED}/shop\n")).unwrap();
        server.signal("HUP");
        assert!(server.log_containing("the old origins are kept").contains("line 1: "));
        assert_eq!(post_from(ADDED), allowed(ADDED));
        // Taken out, it is refused again.
        std::fs::write(&origins, "").unwrap();
        server.signal("HUP");
        server.log_containing("origin file read again: 1 origins");
        assert_eq!(post_from(ADDED).0, 403);
    });
    let listed = server.get("/api/metrics/colors").json();
    assert_eq!(listed["n"], json!(posted + page_posts.load(Ordering::Relaxed)));
    assert!(!server.log().contains("added.example"), "{}", server.log());
}

#[test]
fn every_refusal_class_is_summed_up_in_the_log_at_a_bounded_rate() {
    let scratch = Scratch::new("refusal-log");
    let server = Server::start(&scratch, &["--max-body", "2000", "--requests-per-minute", "600"]);
    let line = &reports(&scratch, "colors", 1, 3)[0];
    let started = Instant::now();
    // What the client was answered, by status of 400 and above.
    let mut refused = BTreeMap::<u16, usize>::new();
    let mut connection = Connection::open(server.address).unwrap();
    for _ in 0..50 {
        let status = connection.request("POST", "/api/metrics/colors/reports", b"not json").unwrap().status;
        *refused.entry(status).or_default() += 1;
    }
    for _ in 0..3 {
        let status = server.post("/api/metrics/colors/reports", &[b' '; 4000]).status;
        *refused.entry(status).or_default() += 1;
    }
    // Past the request limit (600 a minute, refilled 10 a second).
    for _ in 0..5000 {
        let status = connection.request("POST", "/api/metrics/colors/reports", line.as_bytes()).unwrap().status;
        if status != 200 {
            *refused.entry(status).or_default() += 1;
        }
        if refused.get(&429) == Some(&3) {
            break;
        }
    }
    assert_eq!(refused.keys().copied().collect::<Vec<_>>(), [400, 413, 429], "{refused:?}");
    // The summary lines (one per interval at most) add up to them all.
    let logged = |log: &str| {
        let mut logged = BTreeMap::<u16, usize>::new();
        let mut lines = 0;
        for summary in log.lines().filter_map(|l| l.split_once("refused in the last 10 s: ")) {
            lines += 1;
            let counts = summary.1.split(" (").next().unwrap();
            for count in counts.split(", ") {
                let mut words = count.split(' ');
                let n: usize = words.next().unwrap().parse().unwrap();
                assert_eq!(words.next(), Some("×"), "{count}");
                *logged.entry(words.next().unwrap().parse().unwrap()).or_default() += n;
            }
        }
        (logged, lines)
    };
    // The summary comes within one interval: waiting thrice as long is a
    // bound for a loaded machine, not a sleep.
    let deadline = Instant::now() + Duration::from_secs(30);
    while logged(&server.log()).0 != refused {
        assert!(Instant::now() < deadline, "{refused:?}, logged {:?}:\n{}", logged(&server.log()).0, server.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    let lines = logged(&server.log()).1;
    assert!((1..=2 + started.elapsed().as_secs() as usize / 10).contains(&lines), "{lines} lines:\n{}", server.log());
    assert!(server.log().contains("3 × 413 Payload Too Large"), "{}", server.log());
}

#[test]
fn json_logs_sum_up_commits_and_refusals() {
    let scratch = Scratch::new("json-log");
    let server = Server::start(&scratch, &["--log-format", "json"]);
    let lines = reports(&scratch, "colors", 1, 3);
    let mut connection = Connection::open(server.address).unwrap();
    let started = Instant::now();
    for _ in 0..300 {
        assert_eq!(connection.request("POST", "/api/metrics/colors/reports", lines[0].as_bytes()).unwrap().status, 200);
        assert_eq!(connection.request("POST", "/api/metrics/colors/reports", b"not json").unwrap().status, 400);
    }
    let log = server.log_containing("\"colors: ");
    let mut commit_lines = 0;
    for line in log.lines() {
        let line: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        let ts = line["ts"].as_str().unwrap();
        assert!(ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{ts}");
        assert!(["info", "warn", "error"].contains(&line["level"].as_str().unwrap()), "{line}");
        commit_lines += line["msg"].as_str().unwrap().starts_with("colors: ") as usize;
    }
    // 300 commits (one client, one at a time): one line at once, then at
    // most one per 10 s; no line per commit, none per refusal.
    let most = 2 + started.elapsed().as_secs() as usize / 10;
    assert!((1..=most).contains(&commit_lines), "{commit_lines} lines:\n{log}");
    assert!(!log.contains("not JSON"), "{log}");
}

/// What the load clients sent and what was acknowledged, as multisets of
/// report lines.
#[derive(Default)]
struct Ledger {
    sent: Vec<String>,
    acknowledged: Vec<String>,
    /// Requests answered 200 (all accepted).
    answered: usize,
}

fn counts(lines: &[String]) -> HashMap<&str, usize> {
    let mut out = HashMap::new();
    for line in lines {
        *out.entry(line.as_str()).or_default() += 1;
    }
    out
}

/// Sends `pool` from `clients` keep-alive connections in batches of 1, 1,
/// 1, 4 and 16 reports until the pool runs out or the server goes away;
/// `kill` runs once `kill_after` reports are acknowledged.
fn load_until_killed(server: &Server, pool: &[String], clients: usize, kill_after: usize, kill: impl FnOnce()) -> Ledger {
    let ledger = Mutex::new(Ledger::default());
    let acknowledged = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let address = server.address;
    let per_client = pool.len() / clients;
    std::thread::scope(|scope| {
        for c in 0..clients {
            let mine = &pool[c * per_client..(c + 1) * per_client];
            let (ledger, acknowledged, stop) = (&ledger, &acknowledged, &stop);
            scope.spawn(move || {
                let Ok(mut connection) = Connection::open(address) else { return };
                let mut at = 0;
                for size in [1, 1, 1, 4, 16].into_iter().cycle() {
                    if at >= mine.len() || stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let batch = &mine[at..(at + size).min(mine.len())];
                    at += batch.len();
                    let body = if size == 1 { batch[0].clone() } else { array(batch) };
                    ledger.lock().unwrap().sent.extend_from_slice(batch);
                    match connection.request("POST", "/api/metrics/hashed/reports", body.as_bytes()) {
                        Ok(response) => {
                            assert_eq!(response.status, 200, "{}", response.text());
                            assert_eq!(response.json()["accepted"], json!(batch.len()));
                            let mut ledger = ledger.lock().unwrap();
                            ledger.acknowledged.extend_from_slice(batch);
                            ledger.answered += 1;
                            acknowledged.fetch_add(batch.len(), Ordering::SeqCst);
                        }
                        // Killed: this batch may or may not be stored.
                        Err(_) => break,
                    }
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while acknowledged.load(Ordering::SeqCst) < kill_after {
            assert!(Instant::now() < deadline, "the load never reached {kill_after} acknowledged reports");
            std::thread::sleep(Duration::from_millis(1));
        }
        kill();
        stop.store(true, Ordering::SeqCst);
    });
    ledger.into_inner().unwrap()
}

#[test]
fn a_server_killed_under_load_keeps_every_acknowledged_report_once() {
    let scratch = Scratch::new("kill-under-load");
    // Local-hashing reports carry a random seed, so lines rarely repeat; the
    // checks below compare multisets anyway.
    let pool = reports(&scratch, "hashed", 48_000, 41);
    let mut stored_before = 0;
    let mut all_sent: Vec<String> = Vec::new();
    let mut all_acknowledged: Vec<String> = Vec::new();
    for (round, range) in [(0, 0..24_000), (1, 24_000..48_000)] {
        let server = Server::start(&scratch, &[]);
        assert_eq!(server.export("hashed", &[]).len(), stored_before, "round {round}: what the last run stored");
        let pid = server.child.id();
        let ledger = load_until_killed(&server, &pool[range], 32, 10_000, || {
            // SIGKILL: no drain, no final commit.
            let killed = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
            assert!(killed.success());
        });
        drop(server);
        assert!(ledger.answered > 100, "round {round}: only {} requests answered", ledger.answered);
        // Killed mid-load: every client had a request unanswered.
        assert!(ledger.sent.len() < 24_000, "round {round}: the load ran out before the kill");
        assert!(ledger.acknowledged.len() < ledger.sent.len(), "round {round}: nothing was in flight");
        all_sent.extend(ledger.sent);
        all_acknowledged.extend(ledger.acknowledged);

        let server = Server::start(&scratch, &[]);
        let stored = server.export("hashed", &[]);
        let (stored_counts, sent, acknowledged) = (counts(&stored), counts(&all_sent), counts(&all_acknowledged));
        // Every acknowledged report is there…
        for (line, n) in &acknowledged {
            assert!(stored_counts.get(line).copied().unwrap_or(0) >= *n, "round {round}: an acknowledged report was lost");
        }
        // …and nothing is there more often than it was sent (no double counting).
        for (line, n) in &stored_counts {
            assert!(sent.get(line).copied().unwrap_or(0) >= *n, "round {round}: a report stored more often than sent");
        }
        assert!(stored.len() >= all_acknowledged.len() && stored.len() <= all_sent.len());
        // The estimate is `aggregate` over exactly the stored reports.
        let estimate = server.estimate("hashed", "none");
        assert_eq!(estimate.json()["n"], json!(stored.len()));
        assert_eq!(estimate.text(), cli_estimate(&scratch, "hashed", &stored, "none"), "round {round}");
        eprintln!(
            "round {round}: {} sent, {} acknowledged, {} stored",
            all_sent.len(),
            all_acknowledged.len(),
            stored.len()
        );
        stored_before = stored.len();
    }
}

#[test]
fn concurrent_keep_alive_clients_share_commits() {
    let scratch = Scratch::new("group-commit");
    let server = Server::start(&scratch, &[]);
    let pool = reports(&scratch, "hashed", 6400, 51);
    let ledger = load_until_killed(&server, &pool, 32, 6400, || {});
    assert_eq!(ledger.acknowledged.len(), 6400);
    let text = server.get("/metrics").text();
    let (_, samples) = parse_prometheus(&text);
    let commits = sample(&samples, "localdp_commit_requests_count", &[]);
    let requests = sample(&samples, "localdp_commit_requests_sum", &[]);
    assert_eq!(requests as usize, ledger.answered);
    // 32 clients waiting on fsyncs: commits hold several requests (on a
    // disk whose fsync takes time; at least some share one anywhere).
    assert!(commits < requests, "{requests} requests in {commits} commits");
    eprintln!("{requests} requests in {commits} commits");
    let lines = server.export("hashed", &[]);
    assert_eq!(counts(&lines), counts(&pool));
    assert_eq!(server.estimate("hashed", "none").text(), cli_estimate(&scratch, "hashed", &lines, "none"));
}

#[test]
fn a_batch_whose_commit_fails_is_answered_500_counts_nothing_and_costs_no_tokens() {
    let scratch = Scratch::new("commit-fails");
    // No file of the server's may pass 256 KiB: a batch of more is refused
    // by the file system (EFBIG) in the middle of its transaction.
    let server = Server::start_with_file_limit(&scratch, &["--reports-per-minute", "6000"], 256);
    let small = reports(&scratch, "bits", 1, 3);
    assert_eq!(server.post_reports("bits", &small[0]).status, 200);
    let big = array(&reports(&scratch, "bits", 4000, 4));
    assert!(big.len() > 300 << 10, "{} bytes", big.len());
    // Twice: without the refund of its 4000 report tokens, the second would
    // be 429 (8001 > 6000).
    for _ in 0..2 {
        let response = server.post_reports("bits", &big);
        assert_eq!(response.status, 500, "{}", response.text());
        assert!(response.text().contains("nothing of it was counted"), "{}", response.text());
    }
    assert!(server.log_containing("database error").contains("not counted"));
    // Counted nowhere: not in the estimate, not in the export.
    assert_eq!(server.estimate("bits", "none").text(), cli_estimate(&scratch, "bits", &small, "none"));
    assert_eq!(server.export("bits", &[]), small);
    assert_eq!(server.get("/healthz").status, 200);
}

/// A metric whose estimate takes a while (about a second): Square Wave's EM.
const SLOW: &str = r#"{"protocol":"square_wave","epsilon":1.0,"range":[0,1000],"bins":512}"#;
/// Reports of it the server holds.
const SLOW_REPORTS: usize = 2_000;
/// Estimate requests sent at once.
const AT_ONCE: usize = 64;
/// Estimate requests that may wait for one being computed (the server's own).
const WAITING: usize = 16;

/// `AT_ONCE` estimate requests sent together; their answers, and how long
/// after the first was sent the last one was.
fn estimates_at_once(server: &Server, path: &str) -> (Vec<Response>, Duration) {
    let start = std::sync::Barrier::new(AT_ONCE);
    let sent: Mutex<Vec<Instant>> = Mutex::new(Vec::new());
    let answers = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..AT_ONCE)
            .map(|_| {
                scope.spawn(|| {
                    let mut stream = TcpStream::connect(server.address).unwrap();
                    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                    let head = format!("GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", server.address);
                    start.wait();
                    stream.write_all(head.as_bytes()).unwrap();
                    sent.lock().unwrap().push(Instant::now());
                    read_response(&mut stream)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let sent = sent.into_inner().unwrap();
    (answers, *sent.iter().max().unwrap() - *sent.iter().min().unwrap())
}

#[test]
fn estimates_are_cached_and_computed_a_bounded_few_at_once() {
    let scratch = Scratch::new("estimates");
    scratch.file("metrics.json", &format!(r#"[{{"name":"slow","config":{SLOW}}}]"#));
    let config = scratch.file("slow.json", SLOW);
    let values: String = (0..SLOW_REPORTS).map(|i| format!("{}\n", (i * 37) % 1000)).collect();
    let lines: Vec<String> =
        cli(&["randomize", "--config", config.to_str().unwrap(), "--seed", "12"], &values).lines().map(str::to_string).collect();
    let server = Server::start(&scratch, &["--max-estimates", "1"]);
    let (last, first) = lines.split_last().unwrap();
    assert_eq!(server.post_reports("slow", &array(first)).status, 200);

    // A repeated estimate is the one computed first (nothing new came).
    let started = Instant::now();
    let fresh = server.estimate("slow", "none");
    let computing = started.elapsed();
    assert_eq!(fresh.status, 200, "{}", fresh.text());
    assert_eq!(fresh.text(), cli_estimate(&scratch, "slow", first, "none"));
    let started = Instant::now();
    let cached = server.estimate("slow", "none");
    let answering = started.elapsed();
    assert_eq!(cached.text(), fresh.text());
    eprintln!("{SLOW_REPORTS} reports: a fresh estimate took {computing:?}, a cached one {answering:?}");

    // One report more: computed again, one at a time (--max-estimates 1),
    // while 16 more requests wait their turn (and then find it cached).
    // Every other request that comes meanwhile is a 503.
    assert_eq!(server.post_reports("slow", last).status, 200);
    let expected = cli_estimate(&scratch, "slow", &lines, "none");
    let (answers, spread) = estimates_at_once(&server, "/api/metrics/slow/estimate");
    let mut busy = 0;
    for answer in &answers {
        if answer.status == 503 {
            busy += 1;
            assert_eq!(answer.header("retry-after"), Some("1"));
            assert_eq!(answer.json()["retry_after"], json!(1));
        } else {
            assert_eq!((answer.status, answer.text()), (200, expected.clone()));
        }
    }
    eprintln!("{AT_ONCE} estimate requests at once (sent within {spread:?}): {busy} answered 503");
    assert!(busy <= AT_ONCE - 1 - WAITING, "{busy} answered 503");
    // All were sent well within the time one estimate takes: the first to
    // come computes, and most of the others come meanwhile.
    if spread < computing / 2 {
        assert!(busy > 0, "{AT_ONCE} requests sent within {spread:?}, an estimate takes {computing:?}: no 503");
    } else {
        eprintln!("the requests took longer to send than an estimate to compute: the bound was not judged on this machine");
    }
    assert_eq!(server.estimate("slow", "none").text(), expected);
}
