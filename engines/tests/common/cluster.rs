//! A Ballista cluster on loopback: one `localdp-scheduler` and executors
//! (`localdp-executor`), each a process of its own, killed when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

/// How long a process may take to come up.
const STARTUP: Duration = Duration::from_secs(120);

/// A child process, killed (and reaped) when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The running cluster.
pub struct Cluster {
    /// The scheduler's port.
    pub port: u16,
    // Executors first: they are dropped (killed) before the scheduler.
    _executors: Vec<Process>,
    _scheduler: Process,
}

/// A port free at the time of asking.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("a loopback port").local_addr().expect("an address").port()
}

/// Starts `binary` with `args`, its output in `log`.
fn spawn(binary: &str, args: &[String], log: &Path) -> Process {
    let out = std::fs::File::create(log).expect("a log file");
    let child = Command::new(binary)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::from(out.try_clone().expect("a log file")))
        .stderr(Stdio::from(out))
        .spawn()
        .expect("the binary starts");
    Process(child)
}

/// Polls `ready` until it holds, failing after [`STARTUP`] or if the process
/// exits (its log is in the message).
fn wait_for(process: &mut Process, log: &Path, what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + STARTUP;
    while !ready() {
        if let Ok(Some(status)) = process.0.try_wait() {
            panic!("{what} exited ({status}): {}", std::fs::read_to_string(log).unwrap_or_default());
        }
        assert!(Instant::now() < deadline, "{what} not ready in {STARTUP:?}: {}", std::fs::read_to_string(log).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether `GET path` on loopback `port` answers 200.
fn http_ok(port: u16, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") && &head[9..12] == b"200"
}

impl Cluster {
    /// Starts a scheduler and `executors` executors of `vcores` each, their
    /// logs and work files in `dir`, and waits until every executor has
    /// registered with the scheduler.
    pub fn start(dir: &Path, executors: usize, vcores: usize) -> Cluster {
        let port = free_port();
        let log = dir.join("scheduler.log");
        let args = ["--bind-host", "127.0.0.1", "--external-host", "127.0.0.1", "--bind-port", &port.to_string()];
        let mut scheduler = spawn(env!("CARGO_BIN_EXE_localdp-scheduler"), &args.map(String::from), &log);
        wait_for(&mut scheduler, &log, "the scheduler", || TcpStream::connect(("127.0.0.1", port)).is_ok());
        let executors = (0..executors)
            .map(|i| {
                let work = dir.join(format!("executor-{i}"));
                std::fs::create_dir_all(&work).expect("a work directory");
                let health = free_port();
                let args = [
                    "--bind-host".to_string(),
                    "127.0.0.1".into(),
                    "--external-host".into(),
                    "127.0.0.1".into(),
                    "--bind-port".into(),
                    free_port().to_string(),
                    "--bind-grpc-port".into(),
                    free_port().to_string(),
                    "--bind-health-port".into(),
                    health.to_string(),
                    "--scheduler-host".into(),
                    "127.0.0.1".into(),
                    "--scheduler-port".into(),
                    port.to_string(),
                    "--vcores".into(),
                    vcores.to_string(),
                    "--work-dir".into(),
                    work.to_str().expect("a UTF-8 path").into(),
                ];
                let log = dir.join(format!("executor-{i}.log"));
                let mut executor = spawn(env!("CARGO_BIN_EXE_localdp-executor"), &args, &log);
                wait_for(&mut executor, &log, "an executor", || http_ok(health, "/readyz"));
                executor
            })
            .collect();
        Cluster { port, _executors: executors, _scheduler: scheduler }
    }

    /// A client session of the cluster, with `ldp_estimate` (its plans name
    /// the function; the scheduler and executors resolve it).
    pub async fn session(&self, target_partitions: usize) -> SessionContext {
        let config = SessionConfig::new_with_ballista().with_target_partitions(target_partitions);
        let state = SessionStateBuilder::new().with_default_features().with_config(config).build();
        let ctx = SessionContext::remote_with_state(&format!("df://127.0.0.1:{}", self.port), state)
            .await
            .expect("a session of the cluster");
        localdp_datafusion::register(&ctx);
        ctx
    }
}
