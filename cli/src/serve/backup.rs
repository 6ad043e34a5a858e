//! `localdp backup --db FILE OUT`: a consistent copy of a collector's
//! SQLite store, its reports, rejection counts and shuffled-batch records.
//!
//! A running collector holds its file under an exclusive lock, so no other
//! process can read it (`sqlite3 .backup` gets "database is locked"). It
//! therefore listens on a control socket next to the file, `FILE.control`
//! (a Unix socket, mode 0600, answering only its own user and root): asked
//! there, its database writer runs `VACUUM INTO` on its own connection
//! between two commits, so the copy holds every report acknowledged before
//! the request and no half of a commit, and the copy is streamed back over
//! the socket. With no collector running, the command opens the file itself.
//!
//! Either way the copy is written to a temporary file beside OUT, checked
//! (`PRAGMA quick_check`, and that it is a store), synced, and only then
//! linked to OUT, which must not exist: a failed backup leaves no OUT. A
//! backup interrupted by SIGINT or SIGTERM removes its temporary file; one
//! whose collector stays silent for `--timeout` gives up.

use super::store::{control_path, Store};
use crate::serve::logging::{log_error, log_info};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The one request the control socket takes.
const REQUEST: &str = "backup\n";

/// Said of a PostgreSQL store, which has its own tools.
pub const POSTGRES: &str = "a PostgreSQL store is backed up with pg_dump (localdp backup copies a SQLite store)";

/// `localdp backup --db FILE OUT --timeout SECONDS`.
pub fn run(db: &Path, out: &Path, timeout: Duration) -> Result<(), String> {
    if db.to_str().is_some_and(|d| d.contains("://")) {
        return Err(format!("--db: {POSTGRES}"));
    }
    if out.symlink_metadata().is_ok() {
        return Err(format!("{}: already exists; a backup never replaces a file", out.display()));
    }
    let partial = Partial::create(out)?;
    let through = match std::os::unix::net::UnixStream::connect(control_path(db)) {
        Ok(socket) => {
            receive(socket, &partial.path, timeout)?;
            "through the running collector"
        }
        // No collector listens (none runs, or one was killed and left its
        // socket): the file itself, if nothing holds it.
        Err(_) => {
            Store::existing(db)?.snapshot(&partial.path)?;
            "from the file (no collector was running)"
        }
    };
    let copied = Store::existing(&partial.path).and_then(|copy| copy.summary()).map_err(|e| format!("the copy: {e}"))?;
    let bytes = partial.finish(out)?;
    for (name, reports, rejected, batches) in &copied {
        eprintln!(
            "localdp backup: metric {name:?}: {reports} reports, {rejected} rejections counted, {batches} shuffled batches"
        );
    }
    let reports: u64 = copied.iter().map(|m| m.1).sum();
    eprintln!(
        "localdp backup: {} copied to {} {through}: {} metrics, {reports} reports, {bytes} bytes",
        db.display(),
        out.display(),
        copied.len()
    );
    Ok(())
}

/// Reads the collector's answer on `socket` into `to`, giving up when the
/// collector stays silent for `timeout` (a hung collector).
fn receive(mut socket: std::os::unix::net::UnixStream, to: &Path, timeout: Duration) -> Result<(), String> {
    let refused = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => format!(
            "the collector did not answer within {} s (--timeout) on its control socket; it may be hung, or its \
             copy may need longer; no backup was written",
            timeout.as_secs_f64()
        ),
        _ => format!("the collector's control socket: {e}"),
    };
    socket.set_read_timeout(Some(timeout)).and_then(|()| socket.set_write_timeout(Some(timeout))).map_err(refused)?;
    socket.write_all(REQUEST.as_bytes()).map_err(refused)?;
    let mut answer = BufReader::new(socket);
    let mut head = String::new();
    answer.read_line(&mut head).map_err(refused)?;
    let head: serde_json::Value =
        serde_json::from_str(&head).map_err(|_| "the collector's control socket gave no answer".to_string())?;
    if let Some(error) = head["error"].as_str() {
        return Err(format!("the collector could not copy its store: {error}"));
    }
    let size = head["bytes"].as_u64().ok_or("the collector's control socket gave no size")?;
    let mut file = std::fs::OpenOptions::new().write(true).open(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let got = std::io::copy(&mut answer.take(size), &mut file).map_err(refused)?;
    if got != size {
        return Err(format!("the collector sent {got} of the copy's {size} bytes; no backup was written"));
    }
    Ok(())
}

/// Creates `path`, empty and readable by its owner only (mode 0600), where
/// nothing is (not even a symbolic link): a store's copy holds its reports,
/// whatever the umask. `VACUUM INTO` writes into an empty file.
fn private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map(drop)
}

/// The temporary file beside OUT, removed unless it became OUT: when the
/// backup fails, and when SIGINT or SIGTERM ends it.
struct Partial {
    path: PathBuf,
}

impl Partial {
    fn create(out: &Path) -> Result<Partial, String> {
        let name = out.file_name().ok_or_else(|| format!("{}: not a file name", out.display()))?;
        let mut partial = std::ffi::OsString::from(".");
        partial.push(name);
        partial.push(format!(".partial-{}", std::process::id()));
        let path = out.with_file_name(partial);
        remove_on_signal(path.clone())?;
        private_file(&path).map_err(|e| format!("{}: cannot write there: {e}", out.display()))?;
        Ok(Partial { path })
    }

    /// Syncs the copy and links it to OUT (which must still not exist);
    /// its size.
    fn finish(self, out: &Path) -> Result<u64, String> {
        let at = |e: std::io::Error| format!("{}: {e}", out.display());
        let file = std::fs::File::open(&self.path).map_err(at)?;
        file.sync_all().map_err(at)?;
        let bytes = file.metadata().map_err(at)?.len();
        std::fs::hard_link(&self.path, out).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => format!("{}: created meanwhile; a backup never replaces a file", out.display()),
            _ => at(e),
        })?;
        if let Some(dir) = out.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p }) {
            std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(at)?;
        }
        Ok(bytes)
    }
}

/// From now on, SIGINT and SIGTERM remove `partial` and end the process
/// (exit 130 and 143, as the shell's default would): a signal that ended it
/// at once would leave the file behind. (A copy already linked to OUT is
/// complete: removing its temporary name keeps it.)
fn remove_on_signal(partial: PathBuf) -> Result<(), String> {
    use tokio::signal::unix::{signal, SignalKind};
    let failed = |e: std::io::Error| format!("cannot watch for SIGINT and SIGTERM: {e}");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().map_err(failed)?;
    let (mut interrupt, mut terminate) = runtime
        .block_on(async { Ok::<_, std::io::Error>((signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?)) })
        .map_err(failed)?;
    std::thread::spawn(move || {
        let (name, code) = runtime.block_on(async {
            tokio::select! {
                _ = interrupt.recv() => ("SIGINT", 130),
                _ = terminate.recv() => ("SIGTERM", 143),
            }
        });
        let _ = std::fs::remove_file(&partial);
        eprintln!("localdp backup: interrupted ({name}); its temporary file was removed; no backup was written");
        std::process::exit(code);
    });
    Ok(())
}

impl Drop for Partial {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The collector's side: binds `socket` now (removing what a dead
/// collector left), and gives the task that answers `localdp backup` there
/// (the collector's own user and root only) with a copy that its database
/// writer makes between two commits (`take`), until the process ends.
pub fn listen(
    socket: PathBuf,
    take: impl Fn(PathBuf) -> tokio::sync::oneshot::Receiver<Result<(), String>> + Send + Sync + 'static,
) -> Option<impl std::future::Future<Output = ()>> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // The collector holds its store's lock: a socket left there is a dead
    // collector's, and so are copies it was making (`answer`).
    let _ = std::fs::remove_file(&socket);
    let copy_prefix = format!("{}.copy-", socket.file_name().unwrap_or_default().to_string_lossy());
    if let Ok(entries) = std::fs::read_dir(socket.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))) {
        for entry in entries.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(&copy_prefix)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let listener = match tokio::net::UnixListener::bind(&socket) {
        Ok(listener) => listener,
        Err(e) => {
            log_error!(
                "localdp serve: no control socket (localdp backup cannot reach this collector): {}: {e}",
                socket.display()
            );
            return None;
        }
    };
    let owner = match std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::fs::metadata(&socket))
    {
        Ok(meta) => meta.uid(),
        Err(e) => {
            log_error!("localdp serve: no control socket: {}: {e}", socket.display());
            let _ = std::fs::remove_file(&socket);
            return None;
        }
    };
    let take = std::sync::Arc::new(take);
    let copies = std::sync::Arc::new(AtomicU64::new(0));
    Some(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of descriptors, say: try again in a moment, not in a spin.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            };
            if !stream.peer_cred().is_ok_and(|peer| peer.uid() == owner || peer.uid() == 0) {
                continue; // dropped unanswered
            }
            let (take, copies, socket) = (std::sync::Arc::clone(&take), std::sync::Arc::clone(&copies), socket.clone());
            tokio::spawn(async move {
                let n = copies.fetch_add(1, Ordering::Relaxed);
                let mut name = socket.as_os_str().to_owned();
                name.push(format!(".copy-{n}"));
                answer(stream, PathBuf::from(name), &*take).await;
            });
        }
    })
}

/// One request on the control socket: the copy made at `scratch` (removed
/// once open), its size on a JSON line, then its bytes; or `{"error"}`.
async fn answer(
    stream: tokio::net::UnixStream,
    scratch: PathBuf,
    take: &(impl Fn(PathBuf) -> tokio::sync::oneshot::Receiver<Result<(), String>> + Send + Sync),
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut stream = tokio::io::BufReader::new(stream);
    let mut request = String::new();
    if stream.read_line(&mut request).await.is_err() || request != REQUEST {
        let _ = stream.write_all(b"{\"error\":\"the control socket takes one request: backup\"}\n").await;
        return;
    }
    // The copy holds every report: made empty first, readable by the
    // collector's user only, and never through a file planted at its name.
    let made = match private_file(&scratch) {
        Ok(()) => take(scratch.clone()).await.unwrap_or_else(|_| Err("the database writer stopped".into())),
        Err(e) => Err(format!("{}: {e}", scratch.display())),
    };
    let file = made.and_then(|()| std::fs::File::open(&scratch).map_err(|e| e.to_string()));
    let _ = std::fs::remove_file(&scratch);
    let sent = match file {
        Ok(file) => {
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            let mut file = tokio::fs::File::from_std(file);
            match stream.write_all(format!("{{\"bytes\":{size}}}\n").as_bytes()).await {
                Ok(()) => tokio::io::copy(&mut file, &mut stream).await.map(|_| size),
                Err(e) => Err(e),
            }
        }
        Err(e) => {
            log_error!("localdp serve: backup failed: {e}");
            let _ = stream.write_all(format!("{}\n", serde_json::json!({ "error": e })).as_bytes()).await;
            return;
        }
    };
    match sent.and(stream.flush().await.map(|()| 0)) {
        Ok(_) => log_info!("localdp serve: a backup copy was sent on the control socket"),
        Err(e) => log_error!("localdp serve: a backup copy was not sent whole: {e}"),
    }
}

