//! `localdp backup --db FILE OUT`: a copy of a running collector's store,
//! taken under load through its control socket, restores to the same
//! reports, rejection counts, shuffled-batch records and estimates; with no
//! collector it copies the file; its errors leave no OUT behind.

use serde_json::Value;
use std::collections::HashMap;
use std::process::Output;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod common;
mod serving;

use common::cli::BIN;
use serving::*;

/// A line every metric rejects (malformed).
const BAD: &str = r#"{"not":"a report"}"#;

const SHUFFLER: &str = "a-shuffler-token-of-enough-length-0123456789";

fn backup(db: &std::path::Path, out: &std::path::Path) -> Output {
    std::process::Command::new(BIN).args(["backup", "--db"]).arg(db).arg(out).output().unwrap()
}

/// Each metric's `n`, `rejected` and `shuffled`, as `/api/metrics` lists them.
/// A file's permission bits.
fn private(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().mode() & 0o777
}

fn counts(server: &Server) -> HashMap<String, (Value, Value, Value)> {
    let list = server.get("/api/metrics").json();
    list["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap().to_string(), (m["n"].clone(), m["rejected"].clone(), m["shuffled"].clone())))
        .collect()
}

/// The files in the scratch directory (a failed backup must add none).
fn files(scratch: &Scratch) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(&scratch.0).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_backup_under_load_restores_every_report_acknowledged_before_it_and_the_same_estimates() {
    let scratch = Scratch::new("backup-load");
    let shufflers = scratch.file("shufflers", &format!("{SHUFFLER}\n"));
    let args = ["--shuffler-token-file", shufflers.to_str().unwrap()];
    let server = Server::start(&scratch, &args);
    // Before the load: a report of every metric, one rejected report, and
    // a shuffled batch, all of which the copy must hold.
    for (name, _) in METRICS {
        let mut lines = reports(&scratch, name, 40, 3);
        lines.push(BAD.to_string());
        assert_eq!(server.post_reports(name, &array(&lines)).status, 200);
    }
    let batch = array(&reports(&scratch, "colors", 30, 4));
    let headers = [("Localdp-Batch", "b-1"), ("Authorization", &format!("Bearer {SHUFFLER}") as &str)];
    let post_batch = |server: &Server| server.request("POST", "/api/metrics/colors/reports", &headers, Some(batch.as_bytes()));
    assert_eq!(post_batch(&server).status, 200);

    // The load: keep-alive clients post to two metrics until told to stop.
    let loaded = ["hashed", "latency"];
    let pools: Vec<Vec<String>> = loaded.iter().map(|m| reports(&scratch, m, 6_000, 5)).collect();
    let acknowledged: Vec<AtomicUsize> = loaded.iter().map(|_| AtomicUsize::new(0)).collect();
    let stop = AtomicBool::new(false);
    let out = scratch.path("copy.sqlite");
    let (before, after, said) = std::thread::scope(|scope| {
        for client in 0..4 {
            let (pools, acknowledged, stop, address) = (&pools, &acknowledged, &stop, server.address);
            scope.spawn(move || {
                let mut connection = Connection::open(address).unwrap();
                for round in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let m = (client + round) % loaded.len();
                    let at = (round * 16 + client * 1_000) % (pools[m].len() - 16);
                    let path = format!("/api/metrics/{}/reports", loaded[m]);
                    let response = connection.request("POST", &path, array(&pools[m][at..at + 16]).as_bytes()).unwrap();
                    assert_eq!(response.status, 200, "{}", response.text());
                    acknowledged[m].fetch_add(16, Ordering::SeqCst);
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while acknowledged.iter().any(|a| a.load(Ordering::SeqCst) < 2_000) {
            assert!(Instant::now() < deadline, "the load never reached 2,000 reports a metric");
            std::thread::sleep(Duration::from_millis(1));
        }
        let before: Vec<usize> = acknowledged.iter().map(|a| a.load(Ordering::SeqCst)).collect();
        let made = backup(&scratch.path("reports.sqlite"), &out);
        let after: Vec<usize> = acknowledged.iter().map(|a| a.load(Ordering::SeqCst)).collect();
        // The load goes on after the copy, which must not see it.
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::SeqCst);
        let said = String::from_utf8(made.stderr).unwrap();
        assert!(made.status.success(), "{said}");
        // The copy holds every report: its owner's only, whatever the umask.
        assert_eq!(private(&out), 0o600);
        (before, after, said)
    });
    assert!(said.contains("through the running collector"), "{said}");
    let original = counts(&server);
    let restored = Server::try_start_on(&scratch, out.to_str().unwrap(), &args).unwrap_or_else(|log| panic!("{log}"));
    let copied = counts(&restored);
    for (name, _) in METRICS {
        let (full, copy) = (server.export(name, &[]), restored.export(name, &[]));
        // The copy is the original as it was at one commit: a prefix of it.
        assert_eq!(copy[..], full[..copy.len()], "{name}: the copy is not a prefix of the original");
        assert_eq!(copied[*name].0, Value::from(copy.len()), "{name}");
        assert!(said.contains(&format!("metric \"{name}\": {} reports, 1 rejections counted", copy.len())), "{name}: {said}");
        // Its estimate is the one over exactly its reports (the
        // original's at that commit), byte for byte.
        let estimate = restored.estimate(name, "none");
        assert_eq!(estimate.status, 200, "{}", estimate.text());
        let lines: Vec<String> = copy.iter().cloned().chain([BAD.to_string()]).collect();
        assert_eq!(estimate.text(), cli_estimate(&scratch, name, &lines, "none"), "{name}");
        match loaded.iter().position(|m| m == name) {
            // Every report acknowledged before the backup began, and none
            // acknowledged after it returned... plus what was in flight.
            Some(m) => {
                let copy_loaded = copy.len() - 40;
                assert!(copy_loaded >= before[m], "{name}: {copy_loaded} copied < {} acknowledged before", before[m]);
                assert!(copy_loaded <= after[m] + 4 * 16, "{name}: {copy_loaded} copied > {} by the end", after[m]);
                assert!(full.len() > copy.len(), "{name}: the load went on after the copy");
            }
            // Rejections and the shuffled-batch record, as in the original.
            None => assert_eq!(copied[*name], original[*name], "{name}"),
        }
    }
    assert_eq!(copied["colors"].2["batches"], 1, "{:?}", copied["colors"]);
    // The batch record is kept: the same batch sent to the copy is a duplicate.
    let again = post_batch(&restored);
    assert_eq!(again.json()["duplicate"], true, "{}", again.text());
}

#[test]
fn a_backup_without_a_collector_copies_the_file_and_refuses_clearly() {
    let scratch = Scratch::new("backup-errors");
    let db = scratch.path("reports.sqlite");
    let server = Server::start(&scratch, &[]);
    let lines = reports(&scratch, "colors", 50, 9);
    assert_eq!(server.post_reports("colors", &array(&lines)).status, 200);
    let estimate = server.estimate("colors", "none").text();
    // SIGKILL: the WAL is not checkpointed and the control socket is left.
    server.signal("KILL");
    drop(server);
    assert!(scratch.path("reports.sqlite.control").exists());
    let made = backup(&db, &scratch.path("copy.sqlite"));
    let said = String::from_utf8_lossy(&made.stderr);
    assert!(made.status.success(), "{said}");
    assert!(said.contains("from the file (no collector was running)"), "{said}");
    assert_eq!(private(&scratch.path("copy.sqlite")), 0o600);
    let restored = Server::try_start_on(&scratch, scratch.path("copy.sqlite").to_str().unwrap(), &[]).unwrap();
    assert_eq!(restored.estimate("colors", "none").text(), estimate);
    drop(restored);
    // A copy a killed collector was making is removed at the next start.
    let stale = scratch.file("reports.sqlite.control.copy-3", "reports");
    drop(Server::start(&scratch, &[]));
    assert!(!stale.exists());

    let before = files(&scratch);
    let refused = |db: &std::path::Path, out: &std::path::Path, why: &str| {
        let made = backup(db, out);
        let said = String::from_utf8_lossy(&made.stderr);
        assert!(!made.status.success(), "{said}");
        assert!(said.contains(why), "{why}: {said}");
        assert_eq!(files(&scratch), before, "{why}: a failed backup left a file");
    };
    refused(&db, &scratch.path("copy.sqlite"), "copy.sqlite: already exists; a backup never replaces a file");
    refused(&db, &scratch.path("missing/copy.sqlite"), "missing/copy.sqlite: cannot write there");
    refused(&scratch.path("metrics.json"), &scratch.path("new.sqlite"), "metrics.json: not a localdp store (not a SQLite database)");
    refused(&scratch.path("nothing.sqlite"), &scratch.path("new.sqlite"), "nothing.sqlite: cannot open it (no such file?)");
    refused(std::path::Path::new("postgres://u@h/db"), &scratch.path("new.sqlite"), "pg_dump");
    // A SQLite file that is no collector's store.
    let other = scratch.path("other.sqlite");
    rusqlite::Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
    let before_other = files(&scratch);
    let made = backup(&other, &scratch.path("new.sqlite"));
    assert!(!made.status.success());
    assert!(String::from_utf8_lossy(&made.stderr).contains("not a localdp store (a SQLite database without its tables)"));
    assert_eq!(files(&scratch), before_other);
}

#[test]
fn the_control_socket_answers_the_collectors_user_only() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let scratch = Scratch::new("backup-user");
    let server = Server::start(&scratch, &[]);
    assert_eq!(server.post_reports("colors", &array(&reports(&scratch, "colors", 10, 2))).status, 200);
    let socket = scratch.path("reports.sqlite.control");
    assert_eq!(private(&socket), 0o600);
    // Another user (as root, which the tests run as here, "nobody").
    if std::fs::metadata(&scratch.0).unwrap().uid() != 0 {
        eprintln!("not root: the other-user half is not run");
        return;
    }
    let drop_box = scratch.path("drop");
    std::fs::create_dir(&drop_box).unwrap();
    std::fs::set_permissions(&drop_box, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = drop_box.join("copy.sqlite");
    let made = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN, "backup", "--db"])
        .arg(scratch.path("reports.sqlite"))
        .arg(&out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&made.stderr);
    assert!(!made.status.success(), "another user got a copy: {said}");
    assert!(std::fs::read_dir(&drop_box).unwrap().next().is_none(), "{said}");
    // The collector's own user (root) gets it.
    assert!(backup(&scratch.path("reports.sqlite"), &out).status.success());
}

/// Something listening on a store's control socket that never answers (a
/// hung collector): the socket takes the request and says nothing.
fn hung_collector(scratch: &Scratch) -> std::os::unix::net::UnixListener {
    std::os::unix::net::UnixListener::bind(scratch.path("reports.sqlite.control")).unwrap()
}

#[test]
fn a_backup_from_a_hung_collector_times_out_and_leaves_nothing() {
    let scratch = Scratch::new("backup-hung");
    let _hung = hung_collector(&scratch);
    let before = files(&scratch);
    let started = Instant::now();
    let out = std::process::Command::new(BIN)
        .args(["backup", "--timeout", "1", "--db"])
        .arg(scratch.path("reports.sqlite"))
        .arg(scratch.path("copy.sqlite"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("did not answer within 1 s (--timeout"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert_eq!(files(&scratch), before, "a timed-out backup leaves no file");
}

#[test]
fn an_interrupted_backup_leaves_no_partial_copy() {
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let scratch = Scratch::new(&format!("backup-{signal}"));
        let _hung = hung_collector(&scratch);
        let before = files(&scratch);
        let child = std::process::Command::new(BIN)
            .args(["backup", "--db"])
            .arg(scratch.path("reports.sqlite"))
            .arg(scratch.path("copy.sqlite"))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The partial copy is made once the signals are taken care of.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !files(&scratch).iter().any(|f| f.starts_with(".copy.sqlite.partial-")) {
            assert!(Instant::now() < deadline, "no partial copy appeared: {:?}", files(&scratch));
            std::thread::sleep(Duration::from_millis(10));
        }
        let sent = std::process::Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status();
        assert!(sent.unwrap().success());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "SIG{signal}: {stderr}");
        assert!(stderr.contains(&format!("interrupted (SIG{signal})")), "{stderr}");
        assert_eq!(files(&scratch), before, "SIG{signal} left a file behind");
    }
}
