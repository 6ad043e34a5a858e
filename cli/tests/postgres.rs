//! The collector on PostgreSQL (`--db postgres://…`), against a real
//! throwaway cluster per test (`tests/pg`): the same answers as on SQLite,
//! one answer from several collectors on one database, a batch id stored
//! once across them, a restart that reads states instead of reports, and
//! the faults: a SIGKILLed collector, the database restarted under load, and
//! URLs that cannot work.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;
mod pg;
mod serving;

use pg::Cluster;
use serving::*;

/// The shuffler's token file's one token.
const SHUFFLER_TOKEN: &str = "shuffler-token-0123456789abcdef";

/// Per metric of [`METRICS`]: seeded reports, and one that is rejected (a
/// wrong version).
fn workload(scratch: &Scratch, count: usize) -> Vec<(&'static str, Vec<String>)> {
    workload_of(scratch, METRICS, count)
}

fn workload_of(scratch: &Scratch, metrics: &[(&'static str, &str)], count: usize) -> Vec<(&'static str, Vec<String>)> {
    metrics
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            let mut lines = reports(scratch, name, count, 40 + i as u64);
            let wrong = edit(&lines[0], |o| {
                o.insert("version".into(), serde_json::json!(99));
            });
            lines.insert(1, wrong);
            (*name, lines)
        })
        .collect()
}

/// Posts every metric's lines in chunks of 25, chunk `i` to `servers[i % len]`.
fn post_all(servers: &[&Server], work: &[(&str, Vec<String>)]) {
    for (name, lines) in work {
        for (i, chunk) in lines.chunks(25).enumerate() {
            let response = servers[i % servers.len()].post_reports(name, &array(chunk));
            assert_eq!(response.status, 200, "{}", response.text());
        }
    }
}

fn start_on(scratch: &Scratch, db: &str) -> Server {
    Server::try_start_on(scratch, db, &[]).unwrap_or_else(|log| panic!("the collector did not start:\n{log}"))
}

/// Every metric's estimate of [`METRICS`] (both post-processings of the
/// frequency ones) from `server`.
fn estimates(server: &Server) -> Vec<String> {
    estimates_of(server, METRICS)
}

fn estimates_of(server: &Server, metrics: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    for (name, _) in metrics {
        let frequency = ["colors", "bits", "subset", "hashed"].contains(name);
        let posts: &[&str] = if frequency { &["none", "project"] } else { &["none"] };
        for post in posts {
            let response = server.estimate(name, post);
            assert_eq!(response.status, 200, "{}", response.text());
            out.push(response.text());
        }
    }
    out
}

#[test]
fn estimates_and_exports_are_the_same_bytes_on_sqlite_postgresql_and_two_collectors() {
    let cluster = Cluster::start("same");
    cluster.psql("postgres", "CREATE DATABASE pair");
    // A metric of every family.
    let every = [METRICS, FAMILIES].concat();
    let scratch = Scratch::with_metrics("pg-same", &every);
    let work = workload_of(&scratch, &every, 400);
    let estimates = |server: &Server| estimates_of(server, &every);
    let sqlite = Server::start(&scratch, &[]);
    let mut one = start_on(&scratch, &cluster.url("collector"));
    let (a, b) = (start_on(&scratch, &cluster.url("pair")), start_on(&scratch, &cluster.url("pair")));
    post_all(&[&sqlite], &work);
    post_all(&[&one], &work);
    post_all(&[&a, &b], &work);
    let expected = estimates(&sqlite);
    // The CLI's estimate of the same reports is the SQLite collector's.
    let (name, lines) = &work[0];
    assert_eq!(expected[0], cli_estimate(&scratch, name, lines, "none"));
    assert_eq!(estimates(&one), expected);
    // Each of two collectors counts the other's reports (the staleness
    // itself: a_post_acknowledged_by_one_collector_is_counted_by_another_within_the_stated_staleness).
    for server in [&a, &b] {
        assert!(Cluster::until(Duration::from_secs(10), || estimates(server) == expected), "{}", server.log());
    }
    // Exports: the same lines in the same order from one collector; from
    // two, the same lines (in the order they were committed).
    for (name, _) in &every {
        assert_eq!(one.export(name, &[]), sqlite.export(name, &[]));
        let mut pair = a.export(name, &[]);
        let mut alone = sqlite.export(name, &[]);
        pair.sort();
        alone.sort();
        assert_eq!(pair, alone);
        let parquet = |s: &Server| s.get(&format!("/api/metrics/{name}/reports.parquet")).body;
        assert_eq!(parquet(&one), parquet(&sqlite));
    }
    // A restart reads the collector's state: the same estimates, and no
    // report is read back.
    one.signal("KILL");
    one.wait(Duration::from_secs(10));
    let again = start_on(&scratch, &cluster.url("collector"));
    assert_eq!(estimates(&again), expected);
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.states"), every.len().to_string());
}

/// The staleness docs/collector.md states: an estimate from one collector
/// counts what another acknowledged more than about a second ago (each
/// collector reads the others' states every second, `REFRESH`).
const STALENESS: Duration = Duration::from_secs(1);
/// What a measurement adds to the staleness: after the one-second wait,
/// the refresher's read of the states and batch counts, then this test's
/// poll (every 50 ms) and its GET. Together they took at most 62 ms in 24
/// posts, beside the kill test's load on a 2-core machine with a load
/// average of 9: one second is 16 times that, and only a collector stalled
/// for a second would exceed it (it would then break the stated staleness).
const POLL_ALLOWANCE: Duration = Duration::from_secs(1);

#[test]
fn a_post_acknowledged_by_one_collector_is_counted_by_another_within_the_stated_staleness() {
    let cluster = Cluster::start("stale");
    let scratch = Scratch::new("pg-stale");
    let url = cluster.url("collector");
    let (a, b) = (start_on(&scratch, &url), start_on(&scratch, &url));
    let n = |server: &Server| server.get("/api/metrics/colors").json()["n"].clone();
    // Each post is made as soon as B counted the one before, just after B's
    // read: from the second on, each waits a whole refresh (the worst case).
    for (i, report) in reports(&scratch, "colors", 4, 8).iter().enumerate() {
        let response = a.post_reports("colors", &array(std::slice::from_ref(report)));
        let acknowledged = std::time::Instant::now();
        assert_eq!(response.status, 200, "{}", response.text());
        assert!(Cluster::until(Duration::from_secs(30), || n(&b) == i + 1), "never counted: {}", b.log());
        let took = acknowledged.elapsed();
        eprintln!("post {i}: counted by the other collector {took:?} after its acknowledgement");
        assert!(took <= STALENESS + POLL_ALLOWANCE, "post {i} counted {took:?} after its acknowledgement");
    }
}

/// Group commit on PostgreSQL: while a group's INSERT waits (here on a
/// table lock), the posts that arrive are held, and then stored by one
/// transaction, not one each.
#[test]
fn posts_that_arrive_during_a_commit_are_stored_by_one_transaction() {
    let cluster = Cluster::start("group");
    let scratch = Scratch::new("pg-group");
    let server = start_on(&scratch, &cluster.url("collector"));
    let lines = reports(&scratch, "colors", 17, 6);
    let post = |i: usize| server.post_reports("colors", &array(&lines[i..=i])).status;
    let in_flight = || {
        let text = server.get("/metrics").text();
        text.lines().find_map(|l| l.strip_prefix("localdp_requests_in_flight ").map(str::to_string)).unwrap()
    };
    let mut lock = cluster.session("collector");
    lock.run("BEGIN; LOCK TABLE localdp.reports IN SHARE MODE;");
    let waiting = "SELECT count(*) FROM pg_locks WHERE relation = 'localdp.reports'::regclass AND NOT granted";
    let answers = std::thread::scope(|s| {
        let first = s.spawn(|| post(0));
        assert!(Cluster::until(Duration::from_secs(10), || cluster.psql("collector", waiting) == "1"), "the first post's INSERT waits");
        let rest: Vec<_> = (1..17).map(|i| s.spawn(move || post(i))).collect();
        // All 17 posts are being answered (and this poll).
        assert!(Cluster::until(Duration::from_secs(10), || in_flight() == "18"), "in flight: {}", in_flight());
        assert_eq!(cluster.psql("collector", waiting), "1", "still one INSERT waiting");
        lock.run("COMMIT;");
        std::iter::once(first).chain(rest).map(|poster| poster.join().unwrap()).collect::<Vec<_>>()
    });
    assert!(answers.iter().all(|status| *status == 200), "{answers:?}");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "17");
    // The first post's transaction, and one for the 16 that arrived during it.
    let commits = cluster.psql("collector", "SELECT count(DISTINCT xmin::text) FROM localdp.reports");
    assert_eq!(commits, "2", "17 reports stored by {commits} transactions");
}

#[test]
fn the_schema_is_versioned_and_kept_in_its_own_schema() {
    let cluster = Cluster::start("schema");
    let scratch = Scratch::new("pg-schema");
    drop(start_on(&scratch, &cluster.url("collector")));
    assert_eq!(cluster.psql("collector", "SELECT string_agg(version::text, ' ' ORDER BY version) FROM localdp.migrations"), "1 2 3 4");
    let tables = cluster.psql(
        "collector",
        "SELECT string_agg(table_schema || '.' || table_name, ' ' ORDER BY table_name) FROM information_schema.tables \
         WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
    );
    assert_eq!(tables, "localdp.batch_counts localdp.batches localdp.compacted localdp.imports localdp.metrics localdp.migrations localdp.rejections localdp.reports localdp.states");
    // A database migrated further than this build knows is refused.
    cluster.psql("collector", "INSERT INTO localdp.migrations (version) VALUES (5)");
    let log = Server::try_start_on(&scratch, &cluster.url("collector"), &[]).err().expect("refused");
    assert!(log.contains("made by a newer localdp (schema localdp at migration 5, this build knows 4)"), "{log}");
}

#[test]
fn a_batch_id_is_stored_once_across_collectors() {
    let cluster = Cluster::start("batch");
    let scratch = Scratch::new("pg-batch");
    let shufflers = scratch.file("shufflers", &format!("{SHUFFLER_TOKEN}\n"));
    let args = ["--shuffler-token-file", shufflers.to_str().unwrap()];
    let url = cluster.url("collector");
    let start = || Server::try_start_on(&scratch, &url, &args).unwrap_or_else(|log| panic!("{log}"));
    let (a, b) = (start(), start());
    let lines = reports(&scratch, "colors", 30, 7);
    let body = array(&lines);
    let auth = format!("Bearer {SHUFFLER_TOKEN}");
    let send = |server: &Server| {
        server.request("POST", "/api/metrics/colors/reports", &[("Localdp-Batch", "b-1"), ("Authorization", &auth)], Some(body.as_bytes()))
    };
    let first = send(&a);
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(first.json()["accepted"], 30);
    let again = send(&b);
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.json()["duplicate"], true);
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "30");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.batches"), "1");
    // Both count it, and its batch, once (B reads them with A's state).
    for server in [&a, &b] {
        assert!(Cluster::until(Duration::from_secs(10), || {
            let metric = server.get("/api/metrics/colors").json();
            metric["n"] == 30 && metric["shuffled"]["batches"] == 1
        }));
    }
}

#[test]
fn a_url_without_its_password_takes_it_from_pgpassword() {
    let cluster = Cluster::start("pgpassword");
    let scratch = Scratch::new("pg-pgpassword");
    // `localdp serve` with PGPASSWORD set to `password`: its first line on
    // stdout (its address, once connected), or its stderr if it exits.
    let serve = |url: &str, password: &str| -> Result<String, String> {
        let metrics = scratch.path("metrics.json");
        let mut child = std::process::Command::new(common::cli::BIN)
            .args(["serve", "--port", "0", "--db", url, "--metrics", metrics.to_str().unwrap()])
            .env("PGPASSWORD", password)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut first).unwrap();
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        if first.is_empty() { Err(String::from_utf8_lossy(&output.stderr).into_owned()) } else { Ok(first) }
    };
    let bare = format!("postgres://{}@127.0.0.1:{}/collector", pg::USER, cluster.port);
    let started = serve(&bare, pg::PASSWORD).expect("started with the password from PGPASSWORD");
    assert!(started.starts_with("http://127.0.0.1:"), "{started}");
    let wrong = serve(&bare, "not-the-password").err().expect("refused");
    assert!(wrong.contains("refused user \"localdp\" (wrong password or no such user)"), "{wrong}");
    assert!(!wrong.contains("not-the-password"), "{wrong}");
    let none = serve(&bare, "").err().expect("refused");
    assert!(none.contains("the server asks for a password, and neither the URL nor PGPASSWORD gives one"), "{none}");
    // The URL's own password comes first, as with libpq.
    serve(&cluster.url("collector"), "not-the-password").expect("started with the URL's password");
}

#[test]
fn a_url_that_cannot_work_is_refused_at_start_saying_why_and_never_the_password() {
    let cluster = Cluster::start("urls");
    let scratch = Scratch::new("pg-urls");
    let refused = |url: &str| Server::try_start_on(&scratch, url, &[]).err().expect("refused at start");
    let wrong = refused(&format!("postgres://{}:not-the-password@127.0.0.1:{}/collector", pg::USER, cluster.port));
    assert!(wrong.contains("refused user \"localdp\" (wrong password or no such user)"), "{wrong}");
    // With the server's own words.
    assert!(wrong.contains("password authentication failed for user \"localdp\""), "{wrong}");
    assert!(!wrong.contains("not-the-password"), "{wrong}");
    let missing = refused(&cluster.url("nosuchdb"));
    assert!(missing.contains("the database \"nosuchdb\" does not exist"), "{missing}");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let unreachable = refused(&format!("postgres://{}:{}@127.0.0.1:{closed}/collector", pg::USER, pg::PASSWORD));
    assert!(unreachable.contains("cannot reach the server"), "{unreachable}");
    let tls = refused(&format!("{}?sslmode=require", cluster.url("collector")));
    // TLS asked of a server without it.
    assert!(tls.contains("error performing TLS handshake: server does not support TLS"), "{tls}");
    let malformed = refused(&format!("postgres://{}:{}@127.0.0.1:not-a-port/collector", pg::USER, pg::PASSWORD));
    assert!(malformed.contains("--db: not a PostgreSQL URL: invalid connection string"), "{malformed}");
    // A typo of the scheme is not taken for a SQLite file's path (whose error named it, password and all).
    let typo = refused(&format!("postgress://{}:{}@127.0.0.1:{}/collector", pg::USER, pg::PASSWORD, cluster.port));
    assert!(typo.contains("--db: a URL must be postgres://"), "{typo}");
    for log in [&missing, &unreachable, &tls, &malformed, &typo] {
        assert!(!log.contains(pg::PASSWORD), "{log}");
    }
}

/// Keeps posting `body` (`per` reports of "colors") to `server` on one
/// keep-alive connection until `stop` (or the connection fails); counts the
/// reports of the 200s in `acked` and returns every status seen with its
/// Retry-After.
fn load(server: std::net::SocketAddr, (body, per): (Arc<String>, usize), stop: Arc<AtomicBool>, acked: Arc<AtomicUsize>) -> std::thread::JoinHandle<Vec<(u16, Option<String>)>> {
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let Ok(mut connection) = Connection::open(server) else { return seen };
        while !stop.load(Ordering::SeqCst) {
            let Ok(response) = connection.request("POST", "/api/metrics/colors/reports", body.as_bytes()) else { break };
            if response.status == 200 {
                acked.fetch_add(per, Ordering::SeqCst);
            }
            seen.push((response.status, response.header("retry-after").map(str::to_string)));
        }
        seen
    })
}

#[test]
fn two_collectors_under_load_one_killed_lose_nothing_acknowledged_and_store_nothing_twice() {
    let cluster = Cluster::start("kill");
    let scratch = Scratch::new("pg-kill");
    let url = cluster.url("collector");
    let (mut a, b) = (start_on(&scratch, &url), start_on(&scratch, &url));
    // Bodies of 500 reports: a group's transaction is mostly inserts, so
    // the kill lands in one (a build that answered before the commit would
    // lose what it answered).
    let body = (Arc::new(array(&reports(&scratch, "colors", 500, 3))), 500);
    let stop = Arc::new(AtomicBool::new(false));
    let (acked_a, acked_b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut threads = Vec::new();
    for _ in 0..4 {
        threads.push(load(a.address, (Arc::clone(&body.0), body.1), Arc::clone(&stop), Arc::clone(&acked_a)));
        threads.push(load(b.address, (Arc::clone(&body.0), body.1), Arc::clone(&stop), Arc::clone(&acked_b)));
    }
    assert!(Cluster::until(Duration::from_secs(30), || acked_a.load(Ordering::SeqCst) >= 20_000));
    a.signal("KILL");
    a.wait(Duration::from_secs(10)).expect("killed");
    let killed_at = acked_a.load(Ordering::SeqCst);
    assert!(Cluster::until(Duration::from_secs(30), || acked_b.load(Ordering::SeqCst) >= killed_at + 20_000));
    stop.store(true, Ordering::SeqCst);
    for thread in threads {
        thread.join().unwrap();
    }
    // Every acknowledged report is stored once; a post that A took but
    // never answered may be stored too (it was committed, the answer lost).
    let (acked_a, acked_b) = (acked_a.load(Ordering::SeqCst), acked_b.load(Ordering::SeqCst));
    assert_eq!(acked_a, killed_at);
    let stored: usize = cluster.psql("collector", "SELECT count(*) FROM localdp.reports").parse().unwrap();
    assert!(stored >= acked_a + acked_b, "stored {stored}, acknowledged {acked_a} + {acked_b}");
    assert!(stored <= acked_a + acked_b + 4 * 500, "stored {stored}: at most the 4 posts in flight at A unanswered");
    // The states count exactly what is stored: B's estimate, once it has
    // read A's last state, counts every stored report.
    assert!(Cluster::until(Duration::from_secs(10), || b.get("/api/metrics/colors").json()["n"] == stored));
}

#[test]
fn the_database_restarted_under_load_is_503_with_retry_after_and_the_collector_recovers() {
    let cluster = Cluster::start("restart");
    let scratch = Scratch::new("pg-restart");
    let server = start_on(&scratch, &cluster.url("collector"));
    let body = (Arc::new(reports(&scratch, "colors", 1, 5).remove(0)), 1);
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..3).map(|_| load(server.address, (Arc::clone(&body.0), 1), Arc::clone(&stop), Arc::clone(&acked))).collect();
    assert!(Cluster::until(Duration::from_secs(30), || acked.load(Ordering::SeqCst) >= 200));
    cluster.restart(Duration::from_secs(2));
    let after = acked.load(Ordering::SeqCst);
    // It recovers by itself: posts are stored again.
    assert!(Cluster::until(Duration::from_secs(30), || acked.load(Ordering::SeqCst) >= after + 200), "{}", server.log());
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<(u16, Option<String>)> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    // The outage was answered 503 with Retry-After, and nothing else failed.
    let refused: Vec<_> = seen.iter().filter(|(status, _)| *status != 200).collect();
    assert!(!refused.is_empty(), "the outage was seen");
    assert!(refused.iter().all(|(status, retry)| *status == 503 && retry.as_deref() == Some("1")), "{refused:?}");
    // Every 200 was committed; a commit cut off by the crash may have
    // been stored unanswered (at most one per client).
    let acked = acked.load(Ordering::SeqCst);
    let stored: usize = cluster.psql("collector", "SELECT count(*) FROM localdp.reports").parse().unwrap();
    assert!((acked..=acked + 3).contains(&stored), "stored {stored}, acknowledged {acked}\n{}", server.log());
    // And the estimate counts what is stored (the state, read back).
    assert_eq!(server.get("/api/metrics/colors").json()["n"], stored);
}

/// A server that stops answering without closing its connections (SIGSTOP,
/// as behind a network partition): a post is answered 503 with
/// Retry-After once the group's transaction times out (10 s; the test
/// allows 40), not when TCP gives up, and posts are stored again once the
/// server answers.
#[test]
fn a_database_that_stops_answering_is_503_within_the_timeout_and_the_collector_recovers() {
    let cluster = Cluster::start("silent");
    let scratch = Scratch::new("pg-silent");
    let server = start_on(&scratch, &cluster.url("collector"));
    let body = reports(&scratch, "colors", 1, 5).remove(0);
    let post = || server.post("/api/metrics/colors/reports", body.as_bytes());
    assert_eq!(post().status, 200);
    cluster.signal_all("STOP");
    let started = std::time::Instant::now();
    let answer = post();
    let waited = started.elapsed();
    cluster.signal_all("CONT");
    assert_eq!(answer.status, 503, "{}", answer.text());
    assert_eq!(answer.header("retry-after"), Some("1"));
    assert!(waited < Duration::from_secs(40), "answered after {waited:?}");
    assert!(Cluster::until(Duration::from_secs(30), || post().status == 200), "{}", server.log());
}

/// Once the schema is migrated, a collector's role needs no CREATE, only
/// read and write on the schema `localdp` (docs/collector.md).
#[test]
fn a_role_without_create_starts_once_the_schema_exists() {
    let cluster = Cluster::start("roles");
    let scratch = Scratch::new("pg-roles");
    let mut first = start_on(&scratch, &cluster.url("collector"));
    first.signal("TERM");
    first.wait(Duration::from_secs(30)).expect("stopped");
    cluster.psql(
        "collector",
        "CREATE ROLE writer LOGIN PASSWORD 'w-Pw-1'; REVOKE CREATE ON DATABASE collector FROM PUBLIC; \
         REVOKE CREATE ON SCHEMA public FROM PUBLIC; GRANT USAGE ON SCHEMA localdp TO writer; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA localdp TO writer; \
         GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA localdp TO writer;",
    );
    let second = start_on(&scratch, &format!("postgres://writer:w-Pw-1@127.0.0.1:{}/collector", cluster.port));
    let body = reports(&scratch, "colors", 1, 5).remove(0);
    assert_eq!(second.post("/api/metrics/colors/reports", body.as_bytes()).status, 200);
}

/// `/metrics` on PostgreSQL shows no database size: it is the server's to
/// tell, and a file size of the URL would be a false 0.
#[test]
fn metrics_on_postgresql_show_no_database_file_size() {
    let cluster = Cluster::start("metrics");
    let scratch = Scratch::new("pg-metrics");
    let server = start_on(&scratch, &cluster.url("collector"));
    let text = server.get("/metrics").text();
    assert!(text.contains("localdp_build_info"), "{text}");
    assert!(!text.contains("localdp_database_bytes"), "{text}");
}

/// A SQLite store (`reports.sqlite`) of the workload of `count` reports
/// per metric; what `read` reads of its collector before it is stopped.
fn sqlite_store<T>(scratch: &Scratch, count: usize, read: impl FnOnce(&Server) -> T) -> T {
    let mut sqlite = Server::start(scratch, &[]);
    post_all(&[&sqlite], &workload(scratch, count));
    let read = read(&sqlite);
    sqlite.signal("TERM");
    sqlite.wait(Duration::from_secs(30)).expect("stopped");
    read
}

/// `localdp store copy --from FILE --to URL`.
fn store_copy(from: &std::path::Path, to: &str) -> std::process::Command {
    let mut command = std::process::Command::new(common::cli::BIN);
    command.args(["store", "copy", "--from", from.to_str().unwrap(), "--to", to]);
    command
}

#[test]
fn store_copy_moves_a_sqlite_store_once_and_says_what_it_moved() {
    let cluster = Cluster::start("copy");
    let scratch = Scratch::new("pg-copy");
    let (expected, exported) = sqlite_store(&scratch, 200, |sqlite| {
        let exported: Vec<Vec<String>> = METRICS.iter().map(|(name, _)| sqlite.export(name, &[])).collect();
        (estimates(sqlite), exported)
    });
    let copy = || store_copy(&scratch.path("reports.sqlite"), &cluster.url("collector")).output().unwrap();
    let first = copy();
    let said = String::from_utf8_lossy(&first.stderr).to_string();
    assert!(first.status.success(), "{said}");
    assert!(said.contains("metric \"colors\": 200 reports, 1 rejections counted"), "{said}");
    assert!(said.contains("5 metrics, 1000 reports moved from"), "{said}");
    assert!(!said.contains(pg::PASSWORD), "{said}");
    // Run again: refused, nothing stored twice.
    let again = copy();
    let refused = String::from_utf8_lossy(&again.stderr).to_string();
    assert!(!again.status.success());
    assert!(refused.contains("already holds reports") && refused.contains("nothing was copied"), "{refused}");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "1000");
    // A collector on the copy answers as the SQLite one did.
    let copied = start_on(&scratch, &cluster.url("collector"));
    assert_eq!(estimates(&copied), expected);
    for ((name, _), lines) in METRICS.iter().zip(&exported) {
        assert_eq!(&copied.export(name, &[]), lines);
    }
}

/// `localdp import --db FILE --metrics METRICS.json --metric NAME EXPORT`.
fn import(scratch: &Scratch, db: &str, metric: &str, export: &std::path::Path) -> (bool, String) {
    let metrics = scratch.path("metrics.json");
    let out = std::process::Command::new(common::cli::BIN)
        .args(["import", "--db", db, "--metrics", metrics.to_str().unwrap(), "--metric", metric])
        .arg(export)
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).to_string())
}

/// Each metric's Parquet export of a SQLite collector (which carries its
/// rejection counts), imported into PostgreSQL while a collector runs
/// there: that collector counts it within its refresh, a collector started
/// afterwards answers as the SQLite one did, byte for byte, and a file
/// imported again stores nothing.
#[test]
fn an_export_imported_into_postgresql_is_counted_by_running_collectors_once() {
    let cluster = Cluster::start("import");
    let scratch = Scratch::new("pg-import");
    let (expected, exported, files) = sqlite_store(&scratch, 200, |sqlite| {
        let mut files = Vec::new();
        for (name, _) in METRICS {
            let response = sqlite.get(&format!("/api/metrics/{name}/reports.parquet"));
            assert_eq!(response.status, 200);
            let file = scratch.path(&format!("{name}.parquet"));
            std::fs::write(&file, &response.body).unwrap();
            files.push(file);
        }
        let exported: Vec<Vec<String>> = METRICS.iter().map(|(name, _)| sqlite.export(name, &[])).collect();
        (estimates(sqlite), exported, files)
    });
    let url = cluster.url("collector");
    let running = start_on(&scratch, &url);
    assert_eq!(running.estimate("colors", "none").status, 409, "no report yet");
    for ((name, _), file) in METRICS.iter().zip(&files) {
        let (ok, said) = import(&scratch, &url, name, file);
        assert!(ok, "{said}");
        assert!(said.contains(&format!("into metric \"{name}\" of postgres://")) && said.contains(": 200 reports, 1 rejections counted"), "{said}");
        assert!(!said.contains(pg::PASSWORD), "{said}");
    }
    // The running collector reads the import's slot state as it reads the
    // other collectors' (within the stated staleness, STALENESS).
    let imported = std::time::Instant::now();
    let counted = || METRICS.iter().all(|(name, _)| running.estimate(name, "none").status == 200) && estimates(&running) == expected;
    assert!(Cluster::until(Duration::from_secs(10), counted), "{}", running.log());
    eprintln!("the running collector counted the import after {:?}", imported.elapsed());
    // The same file again: nothing stored.
    let (ok, said) = import(&scratch, &url, "colors", &files[0]);
    assert!(ok && said.contains("was imported into metric \"colors\" before") && said.contains("nothing stored"), "{said}");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "1000");
    assert_eq!(cluster.psql("collector", "SELECT count(*), sum(reports) FROM localdp.imports"), "5|1000");
    // A file with a report of another metric at its end, after more
    // reports than one statement sends: refused whole, nothing stored.
    let states = cluster.psql("collector", "SELECT md5(string_agg(state::text, ',' ORDER BY metric, slot)) FROM localdp.states");
    let mut lines: Vec<String> = std::iter::repeat_n(exported[0].iter().cloned(), 60).flatten().collect();
    lines.push(exported[1][0].clone());
    let bad = scratch.file("bad.jsonl", &(lines.join("\n") + "\n"));
    let (ok, said) = import(&scratch, &url, "colors", &bad);
    assert!(!ok && said.contains("line 12001: rejected (config_mismatch)") && said.contains("nothing was imported"), "{said}");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "1000");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.imports"), "5");
    assert_eq!(cluster.psql("collector", "SELECT md5(string_agg(state::text, ',' ORDER BY metric, slot)) FROM localdp.states"), states);
    // A collector started now reads the states: the SQLite collector's
    // estimates and exports.
    let fresh = start_on(&scratch, &url);
    assert_eq!(estimates(&fresh), expected);
    assert_eq!(estimates(&running), expected);
    for ((name, _), lines) in METRICS.iter().zip(&exported) {
        assert_eq!(&fresh.export(name, &[]), lines);
    }
}

/// A copy that would change the config of a metric a running collector
/// folds by is refused while that collector runs, though the metric holds
/// nothing yet, and copies nothing.
#[test]
fn store_copy_is_refused_while_a_collector_runs_another_config_of_a_metric() {
    let cluster = Cluster::start("copy-config");
    let other = Scratch::new("pg-copy-config-other");
    other.file(
        "metrics.json",
        r#"[{"name":"colors","config":{"protocol":"grr","epsilon":2.0,"domain":["red","green","blue","cyan","magenta"]}}]"#,
    );
    let running = start_on(&other, &cluster.url("collector"));
    let scratch = Scratch::new("pg-copy-config");
    sqlite_store(&scratch, 20, |_| ());
    let copy = || store_copy(&scratch.path("reports.sqlite"), &cluster.url("collector")).output().unwrap();
    let refused = copy();
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("metric \"colors\": 1 collector(s) run on") && said.contains("nothing was copied"), "{said}");
    assert!(!said.contains(pg::PASSWORD), "{said}");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "0");
    // Once it is stopped, the copy goes through.
    drop(running);
    let copied = copy();
    assert!(copied.status.success(), "{}", String::from_utf8_lossy(&copied.stderr));
}

/// A SQLite store compacted by retention (`--keep`) no longer holds the
/// compacted reports; its state counts them. The copy carries the state
/// and the count: the collectors on PostgreSQL answer as the SQLite one
/// did, and exports say what they no longer hold.
#[test]
fn store_copy_carries_a_store_compacted_by_retention() {
    let cluster = Cluster::start("copy-compacted");
    let scratch = Scratch::new("pg-copy-compacted");
    let stop = |mut server: Server| {
        server.signal("TERM");
        server.wait(Duration::from_secs(30)).expect("stopped");
    };
    let server = Server::start(&scratch, &["--keep", "30"]);
    post_all(&[&server], &workload(&scratch, 20));
    stop(server);
    rusqlite::Connection::open(scratch.path("reports.sqlite")).unwrap().execute("UPDATE days SET day = day - 40", []).unwrap();
    // Compacted at this start (the last metric's line closes it); then
    // newer reports, kept.
    let compacting = Server::start(&scratch, &["--keep", "30"]);
    let log = compacting.log_containing("latency: retention");
    assert!(log.contains("latency: retention: 20 reports older than 30 days compacted"), "{log}");
    post_all(&[&compacting], &workload(&scratch, 10));
    let expected = estimates(&compacting);
    let exported: Vec<Vec<String>> = METRICS.iter().map(|(name, _)| compacting.export(name, &[])).collect();
    stop(compacting);
    let copied = store_copy(&scratch.path("reports.sqlite"), &cluster.url("collector")).output().unwrap();
    let said = String::from_utf8_lossy(&copied.stderr).to_string();
    assert!(copied.status.success(), "{said}");
    assert!(said.contains("metric \"colors\": 10 reports, 2 rejections counted"), "{said}");
    let on_postgres = start_on(&scratch, &cluster.url("collector"));
    assert_eq!(estimates(&on_postgres), expected);
    for ((name, _), lines) in METRICS.iter().zip(&exported) {
        let export = on_postgres.get(&format!("/api/metrics/{name}/export"));
        assert_eq!(export.header("localdp-compacted"), Some("20"), "{name}");
        assert_eq!(&export.text().lines().map(str::to_string).collect::<Vec<_>>(), lines, "{name}");
    }
}


/// Retention on PostgreSQL (`--keep DAYS`): two collectors starting
/// together delete the reports that arrived before the cut-off once
/// between them; every estimate stays the same bytes (the slots' states
/// count the reports), also after a restart, and exports say what they no
/// longer hold. Reports stored without `--keep` carry no day, and are kept.
#[test]
fn retention_compacts_old_reports_once_and_leaves_every_estimate_unchanged() {
    let cluster = Cluster::start("keep");
    let scratch = Scratch::new("pg-keep");
    let url = cluster.url("collector");
    let keeping = || Server::try_start_on(&scratch, &url, &["--keep", "30"]).unwrap_or_else(|log| panic!("{log}"));
    let stop = |mut server: Server| {
        server.signal("TERM");
        assert!(server.wait(Duration::from_secs(30)).is_some_and(|s| s.success()), "{}", server.log());
    };
    let first = keeping();
    post_all(&[&first], &workload(&scratch, 100));
    stop(first);
    // Forty days pass; then reports are stored with retention off.
    cluster.psql("collector", "UPDATE localdp.reports SET day = day - 40");
    let plain = start_on(&scratch, &url);
    let new = workload(&scratch, 50);
    post_all(&[&plain], &new);
    let before = estimates(&plain);
    let exported: Vec<Vec<String>> = METRICS.iter().map(|(name, _)| plain.export(name, &[])).collect();
    stop(plain);
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "750");
    let (a, b) = (keeping(), keeping());
    let compacted = || cluster.psql("collector", "SELECT count(*), (SELECT sum(reports) FROM localdp.compacted) FROM localdp.reports") == "250|500";
    assert!(Cluster::until(Duration::from_secs(10), compacted), "{}\n{}", a.log(), b.log());
    for server in [&a, &b] {
        assert_eq!(estimates(server), before);
    }
    for (name, _) in METRICS {
        let logged: u64 = [&a, &b]
            .iter()
            .flat_map(|s| s.log().lines().map(str::to_string).collect::<Vec<_>>())
            .filter_map(|line| line.split(&format!("{name}: retention: ")).nth(1)?.split(' ').next()?.parse::<u64>().ok())
            .sum();
        assert_eq!(logged, 100, "{name}");
    }
    drop((a, b));
    let again = start_on(&scratch, &url);
    assert_eq!(estimates(&again), before);
    for ((name, _), lines) in METRICS.iter().zip(&exported) {
        let export = again.get(&format!("/api/metrics/{name}/export"));
        assert_eq!(export.header("localdp-compacted"), Some("100"), "{name}");
        assert_eq!(export.text().lines().map(str::to_string).collect::<Vec<_>>(), lines[100..].to_vec(), "{name}");
    }
    let metrics = again.get("/metrics").text();
    assert!(metrics.contains("localdp_reports_compacted{metric=\"colors\"} 100"), "{metrics}");
}

/// A client that stops reading an export holds its snapshot open for at
/// most the export's idle limit (30 s): then the server ends the
/// transaction (which held back VACUUM on the whole cluster).
#[test]
fn a_stalled_export_client_holds_its_snapshot_for_30_seconds_at_most() {
    use std::io::Write;
    let cluster = Cluster::start("stalled");
    let scratch = Scratch::new("pg-stalled");
    let server = start_on(&scratch, &cluster.url("collector"));
    // 200,000 stored reports (18 MB): more than the socket buffers hold.
    let report = reports(&scratch, "colors", 1, 5).remove(0);
    cluster.psql(
        "collector",
        &format!("INSERT INTO localdp.reports (metric, report) SELECT id, '{report}' FROM localdp.metrics, generate_series(1, 200000) WHERE name = 'colors'"),
    );
    let mut stalled = std::net::TcpStream::connect(server.address).unwrap();
    write!(stalled, "GET /api/metrics/colors/export HTTP/1.1\r\nHost: {}\r\n\r\n", server.address).unwrap();
    // Idle in its transaction for `for_at_least`: waiting for the client
    // (between two pages it is idle only for moments).
    let idle = |for_at_least: &str| {
        cluster.psql(
            "collector",
            &format!(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'localdp serve' \
                 AND state = 'idle in transaction' AND state_change <= now() - interval '{for_at_least}'"
            ),
        )
    };
    assert!(Cluster::until(Duration::from_secs(20), || idle("2 s") == "1"), "the export never waited for its client");
    let waited = std::time::Instant::now();
    assert!(Cluster::until(Duration::from_secs(60), || idle("0 s") == "0"), "the snapshot is still open");
    // 30 s after the last page it read, less the 2 s above.
    assert!(waited.elapsed() < Duration::from_secs(40), "{:?}", waited.elapsed());
    drop(stalled);
}

/// A shuffler killed after a collector acknowledged its batch, but before
/// it dropped the batch from its outbox, sends it again at its next start,
/// here to the other collector on the database: stored once.
#[test]
fn a_batch_sent_again_after_a_shuffler_crash_is_stored_once_across_collectors() {
    let cluster = Cluster::start("resend");
    let scratch = Scratch::new("pg-resend");
    let shufflers = scratch.file("shufflers", &format!("{SHUFFLER_TOKEN}\n"));
    let args = ["--shuffler-token-file", shufflers.to_str().unwrap()];
    let url = cluster.url("collector");
    let start = || Server::try_start_on(&scratch, &url, &args).unwrap_or_else(|log| panic!("{log}"));
    let (a, b) = (start(), start());
    let body = array(&reports(&scratch, "colors", 3, 11));
    let auth = format!("Bearer {SHUFFLER_TOKEN}");
    let headers = [("Localdp-Batch", "acknowledged"), ("Authorization", auth.as_str())];
    let first = a.request("POST", "/api/metrics/colors/reports", &headers, Some(body.as_bytes()));
    assert_eq!(first.status, 200, "{}", first.text());
    // The shuffler's file, made by a first start, then the batch put back in
    // its outbox as a kill after the acknowledgement leaves it.
    let token = ["--token-file", shufflers.to_str().unwrap(), "--batch", "5"];
    drop(Server::start_shuffler(&scratch, &b, "shuffle.sqlite", &token));
    let file = rusqlite::Connection::open(scratch.path("shuffle.sqlite")).unwrap();
    file.execute("INSERT INTO outbox (id, metric, size, body) VALUES ('acknowledged', 'colors', 3, ?1)", [&body]).unwrap();
    drop(file);
    let shuffler = Server::start_shuffler(&scratch, &b, "shuffle.sqlite", &token);
    let sent = shuffler.log_containing("colors: forwarded a shuffled batch of 3 reports");
    assert!(sent.contains("colors: forwarded a shuffled batch of 3 reports"), "{sent}");
    let duplicate = b.log_containing("sent again; stored once");
    assert!(duplicate.contains("colors: a shuffled batch of 3 reports was sent again; stored once"), "{duplicate}");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "3");
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.batches"), "1");
}

/// A COMMIT that reached the server but whose answer was lost (the
/// connection cut right after it) is asked about by its transaction id:
/// the post is answered 200, not 503, so the client does not send again
/// what is stored (it has no batch id to make a resend a duplicate).
#[test]
fn a_commit_whose_answer_is_lost_is_acknowledged_and_stored_once() {
    let cluster = Cluster::start("cut");
    let cutter = pg::CommitCutter::start(&cluster);
    let scratch = Scratch::new("pg-cut");
    let server = start_on(&scratch, &cutter.url("collector"));
    let body = array(&reports(&scratch, "colors", 50, 13));
    cutter.arm();
    // A client sends again after a 503, until it is answered 200.
    let mut answers = Vec::new();
    while answers.len() < 5 && answers.last() != Some(&200) {
        answers.push(server.post_reports("colors", &body).status);
    }
    assert!(cutter.cut(), "the COMMIT was cut");
    let stored = cluster.psql("collector", "SELECT count(*) FROM localdp.reports");
    assert_eq!(stored, "50", "answers {answers:?}\n{}", server.log());
    assert_eq!(answers, [200]);
    assert_eq!(server.get("/api/metrics/colors").json()["n"], 50);
}

/// Slots held by advisory locks, as `0 1 …`.
fn slots(cluster: &Cluster) -> String {
    cluster.psql(
        "collector",
        "SELECT coalesce(string_agg(objid::text, ' ' ORDER BY objid), '') FROM pg_locks \
         WHERE locktype = 'advisory' AND objsubid = 2 AND objid < 1024",
    )
}

/// A restarted database drops the collectors' slot locks with their
/// connections; each takes its slot again before it writes, so a collector
/// started afterwards takes a free slot, not one of theirs (two collectors
/// on one slot would each miss the other's part of the estimate).
#[test]
fn the_slots_are_taken_again_after_a_database_restart() {
    let cluster = Cluster::start("relock");
    let scratch = Scratch::new("pg-relock");
    let url = cluster.url("collector");
    let (a, b) = (start_on(&scratch, &url), start_on(&scratch, &url));
    assert_eq!(slots(&cluster), "0 1");
    cluster.restart(Duration::from_secs(1));
    let body = reports(&scratch, "colors", 1, 5).remove(0);
    for server in [&a, &b] {
        assert!(Cluster::until(Duration::from_secs(30), || server.post_reports("colors", &body).status == 200), "{}", server.log());
    }
    assert_eq!(slots(&cluster), "0 1");
    let c = start_on(&scratch, &url);
    assert!(c.log_containing("(collector slot 2)").contains("(collector slot 2)"), "{}", c.log());
    assert_eq!(slots(&cluster), "0 1 2");
}

/// A collector whose slot another took while the database restarted (before
/// it wrote again) stores nothing: its posts are 503, and its log says why.
#[test]
fn a_collector_whose_slot_was_taken_during_a_restart_stores_nothing() {
    let cluster = Cluster::start("taken");
    let scratch = Scratch::new("pg-taken");
    let url = cluster.url("collector");
    let first = start_on(&scratch, &url);
    cluster.restart(Duration::from_secs(1));
    let second = start_on(&scratch, &url);
    assert!(second.log_containing("(collector slot 0)").contains("(collector slot 0)"), "{}", second.log());
    let body = reports(&scratch, "colors", 1, 5).remove(0);
    let answer = first.post_reports("colors", &body);
    assert_eq!(answer.status, 503, "{}", answer.text());
    let log = first.log_containing("was taken by another collector");
    assert!(log.contains("collector slot 0 was taken by another collector"), "{log}");
    assert_eq!(second.post_reports("colors", &body).status, 200);
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "1");
}

/// A collector's slot lock can go without its connection noticing: here
/// its session is terminated (`pg_terminate_backend`) behind a proxy that
/// keeps the collector's side of that connection open and silent, and a
/// collector started then takes the same slot. The first must store
/// nothing: it asks its lock's session before each group, gets no answer,
/// and answers 503 (before, it stored: two collectors on one slot, each
/// missing the other's part of the estimate).
#[test]
fn a_collector_whose_slot_session_ended_unnoticed_stores_nothing_once_another_took_the_slot() {
    let cluster = Cluster::start("unnoticed");
    let proxy = pg::Muter::start(&cluster);
    let scratch = Scratch::new("pg-unnoticed");
    let first = start_on(&scratch, &proxy.url("collector"));
    let body = reports(&scratch, "colors", 1, 5).remove(0);
    assert_eq!(first.post_reports("colors", &body).status, 200);
    assert_eq!(slots(&cluster), "0");
    let holder = cluster.psql("collector", "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND objid = 0");
    proxy.mute();
    assert_eq!(cluster.psql("collector", &format!("SELECT pg_terminate_backend({holder})")), "t");
    assert!(Cluster::until(Duration::from_secs(10), || slots(&cluster).is_empty()), "the slot's session ended");
    let second = start_on(&scratch, &cluster.url("collector"));
    assert!(second.log_containing("(collector slot 0)").contains("(collector slot 0)"), "{}", second.log());
    let answer = first.post_reports("colors", &body);
    assert_eq!(answer.status, 503, "{}", answer.text());
    let log = first.log_containing("was taken by another collector");
    assert!(log.contains("collector slot 0 was taken by another collector"), "{log}");
    assert_eq!(second.post_reports("colors", &body).status, 200);
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "2");
}

/// Two collectors on one database with different configs of one metric
/// would fold reports of both into one estimate: the second is refused at
/// start, naming the metric.
#[test]
fn a_collector_with_another_config_of_a_running_metric_is_refused() {
    let cluster = Cluster::start("configs");
    let scratch = Scratch::new("pg-configs");
    let url = cluster.url("collector");
    let _first = start_on(&scratch, &url);
    let other = Scratch::new("pg-configs-other");
    other.file(
        "metrics.json",
        r#"[{"name":"colors","config":{"protocol":"grr","epsilon":2.0,"domain":["red","green","blue","cyan","magenta"]}}]"#,
    );
    let refused = Server::try_start_on(&other, &url, &[]).err().expect("refused at start");
    let expected = format!("metric \"colors\": another collector on postgres://localdp@127.0.0.1:{}/collector runs it with another config", cluster.port);
    assert!(refused.contains(&expected), "{refused}");
    assert!(!refused.contains(pg::PASSWORD), "{refused}");
    // The same config starts beside it.
    drop(start_on(&scratch, &url));
}

/// A release whose migration changes tables that running collectors of
/// the release before write is refused while they run (here a collector
/// whose schema is put back one migration stands for one of them).
#[test]
fn a_migration_waits_for_the_collectors_of_the_release_before_to_stop() {
    let cluster = Cluster::start("upgrade");
    let scratch = Scratch::new("pg-upgrade");
    let url = cluster.url("collector");
    let running = start_on(&scratch, &url);
    cluster.psql("collector", "DELETE FROM localdp.migrations WHERE version = 4");
    let refused = Server::try_start_on(&scratch, &url, &[]).err().expect("refused at start");
    assert!(refused.contains("schema localdp is at migration 3 and this build needs 4"), "{refused}");
    assert!(refused.contains("the 1 collector(s) running on this database"), "{refused}");
    drop(running);
    cluster.psql("collector", "INSERT INTO localdp.migrations (version) VALUES (4)");
    drop(start_on(&scratch, &url));
}

/// Two `store copy` runs at once into one database (here of two copies of
/// one store: a SQLite file is opened by one process at a time): one
/// copies, the other refuses, saying so, and copies nothing.
#[test]
fn two_store_copies_at_once_copy_once() {
    let cluster = Cluster::start("copies");
    let scratch = Scratch::new("pg-copies");
    sqlite_store(&scratch, 1000, |_| ());
    std::fs::copy(scratch.path("reports.sqlite"), scratch.path("again.sqlite")).unwrap();
    let copy = |file: &str| store_copy(&scratch.path(file), &cluster.url("collector")).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let (first, second) = (copy("reports.sqlite"), copy("again.sqlite"));
    let outputs = [first.wait_with_output().unwrap(), second.wait_with_output().unwrap()];
    let said: Vec<String> = outputs.iter().map(|o| String::from_utf8_lossy(&o.stderr).to_string()).collect();
    let copied = outputs.iter().filter(|o| o.status.success()).count();
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), "5000", "{said:?}");
    assert_eq!(copied, 1, "{said:?}");
    let refused = &said[outputs.iter().position(|o| !o.status.success()).unwrap()];
    assert!(refused.contains("nothing was copied"), "{refused}");
}

/// With several collectors, row ids are not in commit order: a transaction
/// that took its ids before another's commit may commit after it. An
/// export is one snapshot all the same: what was committed when it began,
/// nothing committed while it streams (here a transaction that holds ids
/// below the newest row, committed while the export is still reading pages).
#[test]
fn an_export_is_one_snapshot_though_row_ids_are_not_in_commit_order() {
    use std::io::{Read, Write};
    let cluster = Cluster::start("snapshot");
    let scratch = Scratch::new("pg-snapshot");
    let server = start_on(&scratch, &cluster.url("collector"));
    let line = reports(&scratch, "colors", 1, 9).remove(0);
    assert_eq!(server.post_reports("colors", &array(std::slice::from_ref(&line))).status, 200);
    // More pages than the socket buffers hold: the export is still reading
    // pages when the late transaction commits.
    let insert = |n: usize| format!("INSERT INTO localdp.reports (metric, report) SELECT id, '{line}' FROM localdp.metrics, generate_series(1, {n}) WHERE name = 'colors';");
    cluster.psql("collector", &insert(300_000));
    let mut late = cluster.session("collector");
    late.run(&format!("BEGIN; {}", insert(5)));
    assert_eq!(server.post_reports("colors", &array(std::slice::from_ref(&line))).status, 200);
    let committed = 300_002;
    // The answer's head comes once the first page is read.
    let mut export = std::net::TcpStream::connect(server.address).unwrap();
    write!(export, "GET /api/metrics/colors/export HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    while !received.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = export.read(&mut buffer).unwrap();
        assert!(n > 0, "no answer");
        received.extend_from_slice(&buffer[..n]);
    }
    late.run("COMMIT;");
    export.read_to_end(&mut received).unwrap();
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200"), "{}", &text[..200.min(text.len())]);
    assert_eq!(text.matches("\"version\"").count(), committed);
    assert_eq!(cluster.psql("collector", "SELECT count(*) FROM localdp.reports"), (committed + 5).to_string());
}

/// TLS as the URL asks for it: `sslmode=verify-full` with `sslrootcert`
/// connects encrypted, every connection; a server whose certificate does
/// not chain to that root is refused at start, saying why.
#[test]
fn tls_when_the_url_asks_for_it_verified_against_sslrootcert() {
    let cluster = Cluster::start("tls");
    let (ca, other) = cluster.enable_tls();
    let scratch = Scratch::new("pg-tls");
    let url = |mode: &str, root: &std::path::Path| format!("{}?sslmode={mode}&sslrootcert={}", cluster.url("collector"), root.display());
    let server = start_on(&scratch, &url("verify-full", &ca));
    let body = reports(&scratch, "colors", 1, 5).remove(0);
    assert_eq!(server.post("/api/metrics/colors/reports", body.as_bytes()).status, 200);
    let connections = |ssl: bool| {
        cluster.psql(
            "collector",
            &format!("SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE ssl = {ssl} AND application_name = 'localdp serve'"),
        )
    };
    assert_ne!(connections(true), "0");
    assert_eq!(connections(false), "0");
    let refused = Server::try_start_on(&scratch, &url("verify-full", &other), &[]).err().expect("refused at start");
    assert!(refused.contains("invalid peer certificate: UnknownIssuer"), "{refused}");
    assert!(!refused.contains(pg::PASSWORD), "{refused}");
}
