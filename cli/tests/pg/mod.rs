//! A throwaway PostgreSQL cluster for a test: Debian's `postgresql`
//! binaries (`scripts/setup.sh` installs them), `initdb` in a scratch
//! folder as an unprivileged user (`postgres` when the tests run as root,
//! else the current user), listening on a free loopback port and a Unix
//! socket in that folder. Dropped: stopped (`immediate`) and removed.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The user and password every cluster has (scram-sha-256 over TCP).
pub const USER: &str = "localdp";
pub const PASSWORD: &str = "s3cret-Pw-9";

pub struct Cluster {
    pub dir: PathBuf,
    pub port: u16,
    bin: PathBuf,
}

/// The newest installed PostgreSQL's binaries.
fn bin() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (scripts/setup.sh: apt-get install postgresql)")
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| bin.join("initdb").exists())
        .collect();
    found.sort();
    found.pop().expect("a /usr/lib/postgresql/N/bin/initdb").1
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { geteuid() == 0 }
}

extern "C" {
    fn geteuid() -> u32;
}

impl Cluster {
    /// Makes and starts a cluster with one database, `collector`.
    pub fn start(name: &str) -> Cluster {
        let dir = std::env::temp_dir().join(format!("localdp-pg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pw"), PASSWORD).unwrap();
        let mut cluster = Cluster { dir, port: 0, bin: bin() };
        if root() {
            let owned = Command::new("chown").args(["-R", "postgres:postgres"]).arg(&cluster.dir).status().unwrap();
            assert!(owned.success());
        }
        let data = cluster.dir.join("data");
        cluster.run("initdb", &[
            "-D", data.to_str().unwrap(), "-U", USER, "--pwfile", cluster.dir.join("pw").to_str().unwrap(),
            "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C",
        ]);
        // A free port: bound, then let go; taken meanwhile (by a test
        // starting beside this one), another.
        for attempt in 1.. {
            cluster.port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let started = cluster.command("pg_ctl").args(cluster.start_args()).current_dir(&cluster.dir).output().unwrap();
            if started.status.success() {
                break;
            }
            assert!(attempt < 5, "pg_ctl start failed 5 times: {}", std::fs::read_to_string(cluster.dir.join("log")).unwrap_or_default());
        }
        cluster.psql("postgres", "CREATE DATABASE collector");
        cluster
    }

    fn start_args(&self) -> Vec<String> {
        let data = self.dir.join("data").display().to_string();
        let options = format!("-p {} -k {} -c listen_addresses=127.0.0.1", self.port, self.dir.display());
        let log = self.dir.join("log").display().to_string();
        vec!["-D".into(), data, "-o".into(), options, "-l".into(), log, "-w".into(), "start".into()]
    }

    /// One of the cluster's programs, run as its owner.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        }
    }

    /// Runs one of the cluster's programs as its owner; panics with its
    /// output if it fails.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let output = self.command(program).args(args).current_dir(&self.dir).output().unwrap();
        assert!(
            output.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// Stops the server at once (as a crash would) and starts it again on
    /// its port after `down`.
    pub fn restart(&self, down: Duration) {
        let data = self.dir.join("data");
        self.run("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
        std::thread::sleep(down);
        let args = self.start_args();
        self.run("pg_ctl", &args.iter().map(String::as_str).collect::<Vec<_>>());
    }

    /// Sends `signal` (`STOP`, `CONT`) to every process of the server: a
    /// stopped server keeps its connections open and answers nothing, as
    /// one behind a network partition does.
    pub fn signal_all(&self, signal: &str) {
        let pids = std::fs::read_to_string(self.dir.join("data").join("postmaster.pid")).unwrap();
        let postmaster = pids.lines().next().unwrap().trim().to_string();
        let signal = format!("-{signal}");
        for (program, args) in [("kill", [signal.as_str(), &postmaster].as_slice()), ("pkill", &[&signal, "-P", &postmaster])] {
            let status = Command::new(program).args(args).status().unwrap();
            assert!(status.success(), "{program} {args:?}: {status}");
        }
    }

    /// Runs SQL over the Unix socket; its output (unaligned, tuples only).
    pub fn psql(&self, database: &str, sql: &str) -> String {
        let port = self.port.to_string();
        let output = self.run("psql", &[
            "-h", self.dir.to_str().unwrap(), "-p", &port, "-U", USER, "-d", database, "-X", "-A", "-t", "-v",
            "ON_ERROR_STOP=1", "-c", sql,
        ]);
        String::from_utf8(output.stdout).unwrap().trim_end().to_string()
    }

    /// An interactive `psql` on a database over the Unix socket: a
    /// transaction can be left open across the test's steps.
    pub fn session(&self, database: &str) -> Session {
        let port = self.port.to_string();
        let mut child = self
            .command("psql")
            .args(["-h", self.dir.to_str().unwrap(), "-p", &port, "-U", USER, "-d", database, "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"])
            .current_dir(&self.dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Session { child, stdout }
    }

    /// Turns TLS on, with a certificate for 127.0.0.1 from a throwaway
    /// CA; that CA's certificate, and another CA's (which signed nothing
    /// here).
    pub fn enable_tls(&self) -> (PathBuf, PathBuf) {
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl").args(args).current_dir(&self.dir).output().unwrap();
            assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        for ca in ["ca", "other-ca"] {
            let (key, crt, subject) = (format!("{ca}.key"), format!("{ca}.crt"), format!("/CN=localdp test {ca}"));
            openssl(&["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &crt, "-subj", &subject, "-days", "1"]);
        }
        std::fs::write(self.dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
        openssl(&["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"]);
        openssl(&[
            "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt",
            "-days", "1", "-extfile", "san.ext",
        ]);
        if root() {
            let owned = Command::new("chown").args(["postgres:postgres", "server.key", "server.crt"]).current_dir(&self.dir).status().unwrap();
            assert!(owned.success());
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.dir.join("server.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        let (crt, key) = (self.dir.join("server.crt"), self.dir.join("server.key"));
        self.psql("postgres", &format!("ALTER SYSTEM SET ssl_cert_file = '{}'", crt.display()));
        self.psql("postgres", &format!("ALTER SYSTEM SET ssl_key_file = '{}'", key.display()));
        self.psql("postgres", "ALTER SYSTEM SET ssl = on");
        self.psql("postgres", "SELECT pg_reload_conf()");
        (self.dir.join("ca.crt"), self.dir.join("other-ca.crt"))
    }

    /// The URL of a database of this cluster, over TCP with the password.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{database}", self.port)
    }

    /// Waits until `check` holds, for up to `limit`.
    pub fn until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if check() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        check()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self.command("pg_ctl").args(["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A TCP proxy in front of `cluster` on a free port (returned): for each
/// client connection, its number (from 0) and a new connection to the
/// server go to `each`.
fn proxy(cluster: &Cluster, each: impl Fn(usize, std::net::TcpStream, std::net::TcpStream) + Send + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream = cluster.port;
    std::thread::spawn(move || {
        for (n, client) in listener.incoming().enumerate() {
            let Ok(client) = client else { return };
            let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else { continue };
            each(n, client, server);
        }
    });
    port
}

/// A TCP proxy in front of a cluster that, once armed, forwards the next
/// `COMMIT` a client sends and then cuts that client's connection: the
/// server commits, and its answer is lost (a network failure between
/// COMMIT and its answer).
pub struct CommitCutter {
    pub port: u16,
    armed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl CommitCutter {
    pub fn start(cluster: &Cluster) -> CommitCutter {
        use std::net::Shutdown;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let armed = Arc::new(AtomicBool::new(false));
        let arming = Arc::clone(&armed);
        let port = proxy(cluster, move |_, mut client, mut server| {
            let (mut answers, mut to_client) = (server.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut answers, &mut to_client);
            });
            let armed = Arc::clone(&arming);
            std::thread::spawn(move || {
                let commit = |kind, body: &[u8]| kind == b'Q' && body.starts_with(b"COMMIT") && armed.swap(false, Ordering::SeqCst);
                if relay(&mut client, &mut server, commit) {
                    let _ = client.shutdown(Shutdown::Both);
                    // The server reads the COMMIT before it sees the end.
                    std::thread::sleep(Duration::from_millis(200));
                }
                let _ = server.shutdown(Shutdown::Both);
            });
        });
        CommitCutter { port, armed }
    }

    /// Cuts the connection of the next COMMIT.
    pub fn arm(&self) {
        self.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the armed cut happened.
    pub fn cut(&self) -> bool {
        !self.armed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The URL of a database of the cluster, through this proxy.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{database}", self.port)
    }
}

/// Forwards a client's messages to the server one at a time: the startup
/// message (length first, no type byte), then messages of a type byte and
/// a length that counts itself. `last` sees each message's type and body
/// before it is forwarded; the relay stops after the one it says is the
/// last (`true`), or when either side ends (`false`).
fn relay(client: &mut std::net::TcpStream, server: &mut std::net::TcpStream, mut last: impl FnMut(u8, &[u8]) -> bool) -> bool {
    use std::io::{Read, Write};
    let mut length = [0u8; 4];
    if client.read_exact(&mut length).is_err() {
        return false;
    }
    let mut startup = vec![0; u32::from_be_bytes(length) as usize - 4];
    if client.read_exact(&mut startup).is_err() || server.write_all(&length).is_err() || server.write_all(&startup).is_err() {
        return false;
    }
    let mut head = [0u8; 5];
    while client.read_exact(&mut head).is_ok() {
        let mut body = vec![0; u32::from_be_bytes(head[1..].try_into().unwrap()) as usize - 4];
        if client.read_exact(&mut body).is_err() {
            return false;
        }
        let stop = last(head[0], &body);
        if server.write_all(&head).is_err() || server.write_all(&body).is_err() {
            return false;
        }
        if stop {
            return true;
        }
    }
    false
}

/// A TCP proxy in front of a cluster that, once armed, lets the next
/// `pg_try_advisory_lock` a client asks reach the server and drops the
/// answer, and every answer after it on that connection, whose client's
/// side stays open: the server grants the lock, and the client never hears
/// it (it gives up waiting; when it closes, the server's side closes too).
pub struct LockAnswerDropper {
    pub port: u16,
    armed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl LockAnswerDropper {
    pub fn start(cluster: &Cluster) -> LockAnswerDropper {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let armed = Arc::new(AtomicBool::new(false));
        let arming = Arc::clone(&armed);
        let port = proxy(cluster, move |_, mut client, mut server| {
            let dropping = Arc::new(AtomicBool::new(false));
            let (answers, to_client) = (server.try_clone().unwrap(), client.try_clone().unwrap());
            let muted = Some(Arc::clone(&dropping));
            std::thread::spawn(move || pipe(answers, to_client, muted));
            let armed = Arc::clone(&arming);
            std::thread::spawn(move || {
                // The statement is prepared (Parse, answered), then bound
                // and run (Bind): answers are dropped from that Bind on.
                let mut asked = false;
                relay(&mut client, &mut server, |kind, body| {
                    if kind == b'P' {
                        asked = armed.load(Ordering::SeqCst) && body.windows(20).any(|w| w == b"pg_try_advisory_lock");
                    }
                    if kind == b'B' && asked && armed.swap(false, Ordering::SeqCst) {
                        dropping.store(true, Ordering::SeqCst);
                    }
                    false
                });
                let _ = server.shutdown(std::net::Shutdown::Both);
            });
        });
        LockAnswerDropper { port, armed }
    }

    /// Drops the answer of the next `pg_try_advisory_lock` on.
    pub fn arm(&self) {
        self.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the armed drop happened.
    pub fn dropped(&self) -> bool {
        !self.armed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The URL of a database of the cluster, through this proxy.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{database}", self.port)
    }
}

/// An interactive `psql` (`Cluster::session`); ended with its stdin.
pub struct Session {
    child: std::process::Child,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Session {
    /// Runs SQL and waits until psql has run it.
    pub fn run(&mut self, sql: &str) {
        use std::io::{BufRead, Write};
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{sql}\n\\echo ran").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        while line.trim_end() != "ran" {
            line.clear();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "psql ended before it ran {sql:?}");
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// A TCP proxy in front of a cluster whose first connection can be muted:
/// from then on nothing passes on it either way, and the client's side of
/// it stays open. The client cannot tell when the server ends that
/// connection's session (as behind a NAT, a proxy or a pooler that keeps
/// its clients' connections while the server's go).
pub struct Muter {
    pub port: u16,
    muted: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Muter {
    pub fn start(cluster: &Cluster) -> Muter {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let muted = Arc::new(AtomicBool::new(false));
        let muting = Arc::clone(&muted);
        let port = proxy(cluster, move |n, client, server| {
            let muted = (n == 0).then(|| Arc::clone(&muting));
            for (from, to) in [(client.try_clone().unwrap(), server.try_clone().unwrap()), (server, client)] {
                let muted = muted.clone();
                std::thread::spawn(move || pipe(from, to, muted));
            }
        });
        Muter { port, muted }
    }

    /// Mutes the first connection.
    pub fn mute(&self) {
        self.muted.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The URL of a database of the cluster, through this proxy.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{database}", self.port)
    }
}

/// Copies `from` to `to` until `from` ends, then ends `to`; once `muted`,
/// drops what it reads and leaves `to` open.
fn pipe(mut from: std::net::TcpStream, mut to: std::net::TcpStream, muted: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>) {
    use std::io::{Read, Write};
    let muted = || muted.as_ref().is_some_and(|m| m.load(std::sync::atomic::Ordering::SeqCst));
    let mut buffer = [0u8; 16384];
    while let Ok(n @ 1..) = from.read(&mut buffer) {
        if !muted() && to.write_all(&buffer[..n]).is_err() {
            break;
        }
    }
    if !muted() {
        let _ = to.shutdown(std::net::Shutdown::Both);
    }
}
