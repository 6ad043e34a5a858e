//! The collector's test harness: the real `localdp serve` binary on a free
//! local port in a scratch directory, spoken to over plain HTTP/1.1, and the
//! CLI that makes and aggregates the reports it is sent. Shared by
//! `server.rs`, `server_access.rs` and `server_operations.rs`.
#![allow(dead_code)]

use super::common;
use super::common::cli::BIN;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The metrics every test collects: one per kind of payload and rejection.
pub const METRICS: &[(&str, &str)] = &[
    ("colors", r#"{"protocol":"grr","epsilon":1.0,"domain":["red","green","blue","cyan","magenta"]}"#),
    ("bits", r#"{"protocol":"oue","epsilon":1.0,"domain":["a","b","c","d","e","f","g","h","i","j"]}"#),
    ("subset", r#"{"protocol":"ss","epsilon":1.0,"domain":16}"#),
    ("hashed", r#"{"protocol":"olh","epsilon":2.0,"domain":64}"#),
    ("latency", r#"{"protocol":"auto","epsilon":1.0,"range":[0,5000]}"#),
];

/// A metric of each other family (RAPPOR, heavy hitters, distribution,
/// key-value, marginals): with [`METRICS`], every family.
pub const FAMILIES: &[(&str, &str)] = &[
    ("sites", r#"{"protocol":"rappor","bits":64,"hashes":2,"cohorts":8,"candidates":["a","b","c"]}"#),
    ("pages", r#"{"protocol":"heavy_hitters","epsilon":4,"max_length":8,"top":5}"#),
    ("load", r#"{"protocol":"distribution","epsilon":1.0,"range":[0,5000],"bins":16}"#),
    ("usage", r#"{"protocol":"key_value","epsilon":4,"keys":["search","share","print"],"range":[0,60],"pad":2}"#),
    ("device", r#"{"protocol":"marginals","epsilon":2,"way":2,"attributes":[{"name":"browser","domain":["Chrome","Safari"]},{"name":"os","domain":3}]}"#),
];

pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A scratch directory with the metrics file of [`METRICS`].
    pub fn new(name: &str) -> Scratch {
        Scratch::with_metrics(name, METRICS)
    }

    /// A scratch directory with the metrics file of `metrics` (and each
    /// one's config, NAME.json).
    pub fn with_metrics(name: &str, metrics: &[(&str, &str)]) -> Scratch {
        let dir = std::env::temp_dir().join(format!("localdp-server-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let scratch = Scratch(dir);
        let entries: Vec<String> = metrics
            .iter()
            .map(|(name, config)| {
                scratch.file(&format!("{name}.json"), config);
                format!(r#"{{"name":"{name}","title":"The {name}","config":{config}}}"#)
            })
            .collect();
        scratch.file("metrics.json", &format!("[{}]", entries.join(",\n")));
        scratch
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, contents).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `localdp serve`; killed (SIGKILL, no clean shutdown) on drop.
pub struct Server {
    pub child: Child,
    pub address: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl Server {
    pub fn start(scratch: &Scratch, extra: &[&str]) -> Server {
        Server::try_start(scratch, extra).unwrap_or_else(|log| panic!("the server did not start:\n{log}"))
    }

    /// Starts the server; its stderr if it exits instead.
    pub fn try_start(scratch: &Scratch, extra: &[&str]) -> Result<Server, String> {
        Server::spawn(scratch, extra, None)
    }

    /// Starts the server with its files limited to `kib` KiB each
    /// (`RLIMIT_FSIZE`, with `SIGXFSZ` ignored so that a write past it fails
    /// with `EFBIG` instead of killing the process): a database that cannot
    /// grow, for the commit-failure path, with the release binary unchanged.
    pub fn start_with_file_limit(scratch: &Scratch, extra: &[&str], kib: u64) -> Server {
        Server::spawn(scratch, extra, Some(kib)).unwrap_or_else(|log| panic!("the server did not start:\n{log}"))
    }

    /// Starts `localdp shuffle --port 0 --forward (collector) --db FILE` in
    /// the scratch directory (or `--db URL`), with `extra` options.
    pub fn start_shuffler(scratch: &Scratch, collector: &Server, db: &str, extra: &[&str]) -> Server {
        Server::try_start_shuffler(scratch, collector, db, extra).unwrap_or_else(|log| panic!("the shuffler did not start:\n{log}"))
    }

    /// [`Server::start_shuffler`], or its stderr if it exits instead.
    pub fn try_start_shuffler(scratch: &Scratch, collector: &Server, db: &str, extra: &[&str]) -> Result<Server, String> {
        let url = format!("http://{}", collector.address);
        let db = if db.contains("://") { db.to_string() } else { scratch.path(db).to_str().unwrap().to_string() };
        let mut args: Vec<&str> = vec!["shuffle", "--port", "0", "--forward", &url, "--db", &db];
        args.extend(extra);
        Server::launch(scratch, &args, None)
    }

    /// Starts the server on the database `db` (a file or a URL).
    pub fn try_start_on(scratch: &Scratch, db: &str, extra: &[&str]) -> Result<Server, String> {
        Server::spawn_on(scratch, db, extra, None)
    }

    fn spawn(scratch: &Scratch, extra: &[&str], file_limit_kib: Option<u64>) -> Result<Server, String> {
        Server::spawn_on(scratch, scratch.path("reports.sqlite").to_str().unwrap(), extra, file_limit_kib)
    }

    fn spawn_on(scratch: &Scratch, db: &str, extra: &[&str], file_limit_kib: Option<u64>) -> Result<Server, String> {
        let metrics = scratch.path("metrics.json");
        let mut args: Vec<&str> = vec!["serve", "--port", "0", "--db", db];
        if !extra.contains(&"--www") {
            args.extend(["--metrics", metrics.to_str().unwrap()]);
        }
        args.extend(extra);
        Server::launch(scratch, &args, file_limit_kib)
    }

    /// Runs `localdp args` until it prints its URL; its stderr if it exits instead.
    pub fn launch(scratch: &Scratch, args: &[&str], file_limit_kib: Option<u64>) -> Result<Server, String> {
        let mut command = match file_limit_kib {
            None => Command::new(BIN),
            Some(kib) => {
                // bash's `ulimit -f` counts 1024-byte blocks; an ignored signal
                // stays ignored across exec.
                let mut shell = Command::new("bash");
                shell.args(["-c", &format!("trap '' XFSZ; ulimit -f {kib} && exec \"$0\" \"$@\""), BIN]);
                shell
            }
        };
        let mut child = command
            .args(args)
            .current_dir(&scratch.0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let sink = Arc::clone(&log);
        let reader = std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        if first.is_empty() {
            child.wait().unwrap();
            // The reader ends at the end of stderr: everything is in the log.
            reader.join().unwrap();
            return Err(log.lock().unwrap().clone());
        }
        let url = first.trim_end();
        let address = url.strip_prefix("http://").expect("http://HOST:PORT");
        Ok(Server { child, address: address.parse().unwrap(), log })
    }

    pub fn get(&self, path: &str) -> Response {
        http(self.address, "GET", path, None)
    }

    pub fn post(&self, path: &str, body: &[u8]) -> Response {
        http(self.address, "POST", path, Some(body))
    }

    pub fn post_reports(&self, metric: &str, body: &str) -> Response {
        self.post(&format!("/api/metrics/{metric}/reports"), body.as_bytes())
    }

    pub fn estimate(&self, metric: &str, post: &str) -> Response {
        self.get(&format!("/api/metrics/{metric}/estimate?post={post}"))
    }

    /// A request with extra headers.
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Response {
        http_with(self.address, method, path, headers, body)
    }

    /// The stored reports of `metric`, as exported (one line each).
    pub fn export(&self, metric: &str, headers: &[(&str, &str)]) -> Vec<String> {
        let response = self.request("GET", &format!("/api/metrics/{metric}/export"), headers, None);
        assert_eq!(response.status, 200, "{}", response.text());
        assert_eq!(response.header("content-type"), Some("application/x-ndjson"));
        response.text().lines().map(str::to_string).collect()
    }

    /// Sends a signal (`TERM`, `KILL`, …) to the server.
    pub fn signal(&self, name: &str) {
        let sent = Command::new("kill").args([&format!("-{name}"), &self.child.id().to_string()]).status().unwrap();
        assert!(sent.success());
    }

    /// Waits for the server to exit (at most `limit`); its exit status.
    pub fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The log once it holds `needle` (the server writes a line before it
    /// answers, but the thread reading it may lag a moment), or after 10 s.
    pub fn log_containing(&self, needle: &str) -> String {
        for _ in 0..200 {
            let log = self.log();
            if log.contains(needle) {
                return log;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.log()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    pub fn json(&self) -> Value {
        assert_eq!(self.header("content-type"), Some("application/json"), "{self:?}");
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// One HTTP/1.1 request on a fresh connection.
pub fn http(address: SocketAddr, method: &str, path: &str, body: Option<&[u8]>) -> Response {
    http_with(address, method, path, &[], body)
}

/// One HTTP/1.1 request with extra headers (a `Host` among them replaces
/// the server's address), on a fresh connection.
pub fn http_with(address: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Response {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let body = body.unwrap_or_default();
    let mut head = format!("{method} {path} HTTP/1.1\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {address}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    read_response(&mut stream)
}

/// A keep-alive HTTP/1.1 connection, one request at a time (what a
/// browser or the load check keeps open). Errors are returned, not
/// panicked on: the server may be killed under it.
pub struct Connection {
    stream: TcpStream,
    address: SocketAddr,
    buffer: Vec<u8>,
}

impl Connection {
    pub fn open(address: SocketAddr) -> std::io::Result<Connection> {
        let stream = TcpStream::connect(address)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        stream.set_nodelay(true)?;
        Ok(Connection { stream, address, buffer: Vec::new() })
    }

    /// Sends a request and reads its answer (which must have a Content-Length).
    pub fn request(&mut self, method: &str, path: &str, body: &[u8]) -> std::io::Result<Response> {
        let head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n\r\n", self.address, body.len());
        let mut message = head.into_bytes();
        message.extend_from_slice(body);
        self.stream.write_all(&message)?;
        loop {
            if let Some(end) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
                let mut lines = head.split("\r\n");
                let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok());
                let headers: Vec<(String, String)> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
                    .collect();
                let length = headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse::<usize>().ok());
                let (Some(status), Some(length)) = (status, length) else {
                    return Err(std::io::Error::other(format!("an answer without a status or a length: {head}")));
                };
                if self.buffer.len() >= end + 4 + length {
                    let body = self.buffer[end + 4..end + 4 + length].to_vec();
                    self.buffer.drain(..end + 4 + length);
                    return Ok(Response { status, headers, body });
                }
            }
            let mut chunk = [0u8; 16384];
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.buffer.extend_from_slice(&chunk[..n]);
        }
    }
}

pub fn read_response(stream: &mut TcpStream) -> Response {
    // To the end of the connection. A server that refuses a body before
    // reading all of it closes with unread data, which resets the
    // connection: what arrived before the reset is the answer.
    let mut raw = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !raw.is_empty() => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("reading the answer: {e}"),
        }
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete response head");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked")) {
        let mut decoded = Vec::new();
        let mut rest = &body[..];
        loop {
            let end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size = usize::from_str_radix(std::str::from_utf8(&rest[..end]).unwrap().trim(), 16).unwrap();
            if size == 0 {
                break;
            }
            decoded.extend_from_slice(&rest[end + 2..end + 2 + size]);
            rest = &rest[end + 4 + size..];
        }
        body = decoded;
    }
    Response { status, headers, body }
}

/// Runs the CLI; its stdout.
pub fn cli(args: &[&str], input: &str) -> String {
    common::cli::stdout(args, input)
}

/// `count` seeded reports of `metric` (values cycling through its domain or range).
pub fn reports(scratch: &Scratch, metric: &str, count: usize, seed: u64) -> Vec<String> {
    let values: Vec<String> = (0..count)
        .map(|i| match metric {
            "colors" => ["red", "green", "blue", "red", "red"][i % 5].to_string(),
            "bits" => ["a", "b", "a", "c", "j"][i % 5].to_string(),
            "subset" | "hashed" => ((i * i) % 16).to_string(),
            "latency" | "load" => format!("{}", (i * 37) % 5000),
            "sites" => ["a", "b", "a", "c"][i % 4].to_string(),
            "pages" => ["/home", "/a", "/home", "/cart"][i % 4].to_string(),
            "usage" => format!(r#"{{"search": {}, "share": 50}}"#, 10 + 20 * (i % 2)),
            "device" => format!(r#"{{"browser":"{}","os":{}}}"#, ["Chrome", "Safari"][i % 2], i % 3),
            _ => unreachable!(),
        })
        .collect();
    let config = scratch.path(&format!("{metric}.json"));
    let out = cli(&["randomize", "--config", config.to_str().unwrap(), "--seed", &seed.to_string()], &(values.join("\n") + "\n"));
    out.lines().map(str::to_string).collect()
}

/// The CLI's `aggregate --format json` of these JSON lines.
pub fn cli_estimate(scratch: &Scratch, metric: &str, lines: &[String], post: &str) -> String {
    let config = scratch.path(&format!("{metric}.json"));
    cli(&["aggregate", "--config", config.to_str().unwrap(), "--post", post], &(lines.join("\n") + "\n"))
}

pub fn array(reports: &[String]) -> String {
    format!("[{}]", reports.join(","))
}

pub fn edit(report: &str, change: impl FnOnce(&mut serde_json::Map<String, Value>)) -> String {
    let mut value: Value = serde_json::from_str(report).unwrap();
    change(value.as_object_mut().unwrap());
    value.to_string()
}

pub fn rejected(counts: &[(&str, u64)]) -> Value {
    let mut all = json!({"malformed": 0, "unsupported_version": 0, "config_mismatch": 0,
                         "out_of_range": 0, "bad_length": 0, "bad_subset_size": 0});
    for (reason, n) in counts {
        all[*reason] = json!(n);
    }
    all
}

