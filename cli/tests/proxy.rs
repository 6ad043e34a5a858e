//! The deployment recipe of examples/deploy/, run: Debian's nginx with
//! `localdp.nginx.conf` and a throwaway certificate, in front of the
//! collector started with `localdp.service`'s command line, all on
//! loopback; requests go through TLS with curl. nginx comes from
//! `scripts/setup.sh` (`need_nginx`, which scripts/test.sh runs first).

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
mod serving;

use serving::{Scratch, Server};

const NAME: &str = "metrics.example.com";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `text` with `from` replaced by `to`, which must be in it (the recipe
/// and this test must not drift apart silently).
fn replace(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "examples/deploy/ no longer holds {from:?}");
    text.replace(from, to)
}

/// A port free now.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port()
}

/// The collector, started as localdp.service starts it (its files in the
/// scratch directory, a free port), with `extra` options.
fn collector(scratch: &Scratch, extra: &[&str]) -> Server {
    let unit = std::fs::read_to_string(repository().join("examples/deploy/localdp.service")).unwrap();
    let command = unit
        .replace("\\\n", " ")
        .lines()
        .find_map(|line| line.strip_prefix("ExecStart=").map(str::to_string))
        .expect("an ExecStart line");
    let dir = scratch.0.to_str().unwrap();
    let mut command = replace(&command, "/usr/local/bin/localdp ", "");
    command = replace(&command, "--port 8080", "--port 0");
    command = replace(&command, "/var/lib/localdp", dir);
    command = replace(&command, "/etc/localdp", dir);
    command = replace(&command, "/usr/local/share/localdp/www", repository().join("www").to_str().unwrap());
    command = replace(&command, "/usr/local/share/localdp/pkg", repository().join("dist/web").to_str().unwrap());
    std::fs::copy(repository().join("www/metrics.json"), scratch.path("metrics.json")).unwrap();
    scratch.file("tokens.txt", "reader-token-0123456789abcdef0123\n");
    scratch.file("origins.txt", "https://app.example.com\n");
    let mut args: Vec<&str> = command.split_whitespace().collect();
    args.extend(extra);
    Server::launch(scratch, &args, None).unwrap_or_else(|log| panic!("the collector did not start:\n{log}"))
}

/// nginx with localdp.nginx.conf (a throwaway certificate, a free port,
/// the collector's port), killed on drop.
struct Nginx {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Nginx {
    fn start(scratch: &Scratch, upstream: u16) -> Nginx {
        let nginx = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("nginx is not installed: `. scripts/setup.sh && need_nginx` installs Debian's nginx-light");
        let dir = scratch.path("nginx");
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let made = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", &format!("/CN={NAME}")])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(made.success());
        let site = std::fs::read_to_string(repository().join("examples/deploy/localdp.nginx.conf")).unwrap();
        let port = free_port();
        // Loopback only, on free ports; IPv6 may be missing here.
        let site: String = site.lines().filter(|l| !l.contains("listen [::]")).map(|l| format!("{l}\n")).collect();
        let mut site = replace(&site, "listen 80;", &format!("listen 127.0.0.1:{};", free_port()));
        site = replace(&site, "listen 443 ssl;", &format!("listen 127.0.0.1:{port} ssl;"));
        site = replace(&site, "server 127.0.0.1:8080;", &format!("server 127.0.0.1:{upstream};"));
        site = replace(&site, "/etc/letsencrypt/live/metrics.example.com/fullchain.pem", cert.to_str().unwrap());
        site = replace(&site, "/etc/letsencrypt/live/metrics.example.com/privkey.pem", key.to_str().unwrap());
        let d = dir.to_str().unwrap();
        // Its temporary files are written by the worker processes (`nobody`
        // when started as root).
        for temp in ["body", "proxy"] {
            std::fs::create_dir_all(dir.join(temp)).unwrap();
            std::fs::set_permissions(dir.join(temp), std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
        }
        let conf = format!(
            "pid {d}/nginx.pid;\nerror_log {d}/error.log;\nworker_processes 1;\nevents {{ worker_connections 256; }}\n\
             http {{\n  access_log {d}/access.log;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
             fastcgi_temp_path {d}/proxy;\n  uwsgi_temp_path {d}/proxy;\n  scgi_temp_path {d}/proxy;\n{site}}}\n"
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let child = Command::new(nginx)
            .args(["-e", &format!("{d}/error.log"), "-p", d, "-c", &format!("{d}/nginx.conf"), "-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut nginx = Nginx { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if let Some(status) = nginx.child.try_wait().unwrap() {
                panic!("nginx exited ({status}):\n{}", nginx.error_log());
            }
            assert!(Instant::now() < deadline, "nginx did not listen:\n{}", nginx.error_log());
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }

    fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    /// One request through TLS, as `curl` sends it to `https://{host}:PORT{path}`
    /// (`host` resolving to loopback), with `headers` and a `body`.
    fn request(&self, host: &str, method: &str, path: &str, headers: &[&str], body: Option<&[u8]>) -> Answer {
        let mut curl = Command::new("curl");
        curl.args(["-sS", "-k", "-i", "--http1.1", "-X", method, "--resolve", &format!("{host}:{}:127.0.0.1", self.port)]);
        for header in headers {
            curl.args(["-H", header]);
        }
        let body_file = self.dir.join("body.bin");
        if let Some(body) = body {
            std::fs::write(&body_file, body).unwrap();
            curl.args(["-H", "Content-Type: application/json", "-H", "Expect:", "--data-binary"]);
            curl.arg(format!("@{}", body_file.display()));
        }
        let out = curl.arg(format!("https://{host}:{}{path}", self.port)).output().unwrap();
        assert!(out.status.success(), "curl: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        Answer { status, head: head.to_string(), body: body.to_string() }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().filter_map(|l| l.split_once(':')).find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
    }

    fn json(&self) -> serde_json::Value {
        assert_eq!(self.header("content-type"), Some("application/json"), "{self:?}");
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// `count` reports of the demo's `browser` metric.
fn browser_reports(scratch: &Scratch, count: usize) -> String {
    let metrics: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(scratch.path("metrics.json")).unwrap()).unwrap();
    let config = metrics.as_array().unwrap().iter().find(|m| m["name"] == "browser").unwrap()["config"].to_string();
    let config = scratch.file("browser.json", &config);
    let values = "Chrome\nSafari\nFirefox\n".repeat(count.div_ceil(3));
    let values: String = values.lines().take(count).map(|v| format!("{v}\n")).collect();
    let lines = common::cli::stdout(&["randomize", "--config", config.to_str().unwrap(), "--seed", "7"], &values);
    format!("[{}]", lines.lines().collect::<Vec<_>>().join(","))
}

#[test]
fn the_recipe_works_through_nginx() {
    let scratch = Scratch::new("proxy-recipe");
    let server = collector(&scratch, &[]);
    let nginx = Nginx::start(&scratch, server.address.port());
    let origin = format!("https://{NAME}:{}", nginx.port);

    // A name the collector does not answer to (a rebinding page, a
    // misrouted virtual host): 421, not the collector's pages.
    let foreign = nginx.request("evil.example", "GET", "/", &[], None);
    assert_eq!(foreign.status, 421, "{foreign:?}");

    // The demo page, and a post from it (Origin is the page's own; no
    // Sec-Fetch-Site, as older browsers send): counted.
    let page = nginx.request(NAME, "GET", "/", &[], None);
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.header("content-type").unwrap().starts_with("text/html"));
    let post = nginx.request(NAME, "POST", "/api/metrics/browser/reports", &[&format!("Origin: {origin}")], Some(browser_reports(&scratch, 1).as_bytes()));
    assert_eq!(post.status, 200, "{post:?}");
    assert_eq!(post.json()["accepted"], 1);

    // A body over client_max_body_size (= --max-body): refused by nginx,
    // in the collector's words.
    let huge = vec![b' '; (1 << 20) + 1];
    let refused = nginx.request(NAME, "POST", "/api/metrics/browser/reports", &[], Some(&huge));
    assert_eq!(refused.status, 413, "{refused:?}");
    assert_eq!(refused.json()["max_body"], 1 << 20);

    // Readers' endpoints need the token.
    assert_eq!(nginx.request(NAME, "GET", "/api/metrics", &[], None).status, 401);
    let listed = nginx.request(NAME, "GET", "/api/metrics", &["Authorization: Bearer reader-token-0123456789abcdef0123"], None);
    assert_eq!(listed.status, 200, "{listed:?}");

    // --reports-per-minute 600 per client address, taken from the address
    // nginx appends: a client that writes its own X-Forwarded-For is still
    // itself, and is answered 429 with Retry-After once over the limit. The
    // demo's post took 1 of the 600: 590 more fit, and 100 after them would
    // need 9 s of refill (10 a second).
    let full = nginx.request(NAME, "POST", "/api/metrics/browser/reports", &[], Some(browser_reports(&scratch, 590).as_bytes()));
    assert_eq!(full.status, 200, "{full:?}");
    let limited = nginx.request(
        NAME,
        "POST",
        "/api/metrics/browser/reports",
        &["X-Forwarded-For: 203.0.113.9"],
        Some(browser_reports(&scratch, 100).as_bytes()),
    );
    assert_eq!(limited.status, 429, "{limited:?}");
    let retry: u64 = limited.header("retry-after").expect("Retry-After").parse().unwrap();
    assert!((1..=60).contains(&retry), "{limited:?}");
    assert_eq!(limited.json()["limit"], "reports");
    // nginx said nothing of the collector (its own 413 is logged).
    assert!(!nginx.error_log().contains("upstream"), "{}", nginx.error_log());
}

/// A collector whose --max-body is below nginx's client_max_body_size (an
/// operator lowered one and not the other): nginx sends the whole body and
/// the collector refuses it. It must read the body before it answers, or
/// nginx, still writing, fails with EPIPE and answers 502 (5 of 9 tries
/// before the collector drained).
#[test]
fn an_oversized_body_is_413_through_nginx_never_502() {
    let scratch = Scratch::new("proxy-oversized");
    let server = collector(&scratch, &["--max-body", "65536"]);
    let nginx = Nginx::start(&scratch, server.address.port());
    let body = vec![b' '; 900 << 10];
    let statuses: Vec<u16> =
        (0..12).map(|_| nginx.request(NAME, "POST", "/api/metrics/browser/reports", &[], Some(&body)).status).collect();
    assert!(statuses.iter().all(|&s| s == 413), "statuses {statuses:?}\n{}", nginx.error_log());
    let last = nginx.request(NAME, "POST", "/api/metrics/browser/reports", &[], Some(&body));
    assert_eq!(last.json()["max_body"], 65536);
}
