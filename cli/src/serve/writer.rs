//! Group commit: one thread owns the database and stores what the request
//! handlers queue.
//!
//! It takes the first queued batch, then every batch queued behind it (up
//! to [`MAX_GROUP_REQUESTS`] requests or [`MAX_GROUP_REPORTS`] reports),
//! stores them all in one transaction, and only after that commit (synced
//! to disk) adds them to the running aggregates and answers each request.
//! Batches that arrive during a commit wait for it and form the next group.
//! So under load one fsync serves many requests, and alone a request waits
//! for exactly one commit, as it did when each had its own transaction.
//! Durability is unchanged: an answered batch is on disk; a batch whose
//! group fails is answered with an error and counted nowhere.
//!
//! The thread also reads pages of stored reports for exports, between
//! commits (an exclusive-locked SQLite file has one connection).

use crate::serve::logging::{log_error, log_info};
use super::collector::Collected;
use super::database::Database;
use super::logging;
use crate::serve::postgres::{Item, Unstored};
use super::store::BatchId;
use super::telemetry::Telemetry;
use localdp::{RejectionCounts, Report};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;
use tokio::sync::oneshot;

/// Requests stored by one commit at most.
pub const MAX_GROUP_REQUESTS: usize = 4096;
/// Reports (accepted ones plus one per batch) stored by one commit at most,
/// so that a commit stays short.
pub const MAX_GROUP_REPORTS: usize = 100_000;

/// A validated batch to store.
pub struct Append {
    /// Index into the metrics.
    pub metric: usize,
    /// Accepted reports, canonical JSON.
    pub reports: Vec<String>,
    /// The same, parsed (added to the running aggregate after the commit).
    pub parsed: Vec<Report>,
    pub rejected: RejectionCounts,
    /// A shuffled batch's id and shuffler: stored once, however often it
    /// is sent.
    pub batch: Option<BatchId>,
    /// `Ok(true)` once committed and counted, `Ok(false)` if its batch id
    /// was stored before (nothing of it is stored or counted again); `Err`
    /// if nothing of it was, and why.
    pub reply: oneshot::Sender<Result<bool, Unstored>>,
}

/// A page of a metric's stored reports.
pub struct Page {
    pub rows: Vec<(i64, String)>,
    /// The last row id the export covers.
    pub upto: i64,
    /// On the first page (`upto: None` asked), the metric's rejection
    /// counts, read with `upto`: what was rejected by the time the reports
    /// up to it were stored.
    pub rejected: Option<RejectionCounts>,
    /// The metric's reports compacted (retention) by now: counted in the
    /// estimate, no longer exported.
    pub compacted: u64,
}

pub enum Job {
    Append(Append),
    /// Reports with row ids in `(after, upto]`; `upto: None` is "up to the
    /// newest now" (the first page fixes it).
    Export { key: i64, after: i64, upto: Option<i64>, limit: usize, reply: oneshot::Sender<Result<Page, String>> },
    /// A copy of the whole store at `to` (`localdp backup`), made between
    /// two commits: it holds every batch answered before.
    Backup { to: std::path::PathBuf, reply: oneshot::Sender<Result<(), String>> },
    /// Retention: compact every metric's reports that arrived before
    /// today − `days` (`--keep`).
    Compact { days: i64 },
    /// Store what is queued, then stop.
    Stop,
}

/// The handle the server keeps.
pub struct Writer {
    queue: mpsc::Sender<Job>,
    thread: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    pub fn start(store: Database, metrics: Arc<Vec<Collected>>, telemetry: Arc<Telemetry>) -> std::io::Result<Writer> {
        let (queue, jobs) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("localdp-writer".into())
            .spawn(move || run(store, &metrics, &telemetry, &jobs))?;
        Ok(Writer { queue, thread: std::sync::Mutex::new(Some(thread)) })
    }

    /// Queues a job; `false` if the writer is gone.
    pub fn send(&self, job: Job) -> bool {
        self.queue.send(job).is_ok()
    }

    /// Whether the thread is still running.
    pub fn alive(&self) -> bool {
        self.thread.lock().expect("no panics while holding the lock").as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stores everything queued, then joins the thread.
    pub fn stop(&self) {
        let _ = self.queue.send(Job::Stop);
        if let Some(thread) = self.thread.lock().expect("no panics while holding the lock").take() {
            let _ = thread.join();
        }
    }
}

fn run(mut store: Database, metrics: &[Collected], telemetry: &Telemetry, jobs: &mpsc::Receiver<Job>) {
    let mut stopping = false;
    let mut tally = Tally::new(metrics.len());
    loop {
        // The first job: wait for it (once stopping, only take what is
        // queued), writing the commits' line when it is due meanwhile.
        let first = if stopping {
            jobs.try_recv().ok()
        } else {
            match jobs.recv_timeout(tally.due_in()) {
                Ok(job) => Some(job),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    tally.write(metrics, false);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => None,
            }
        };
        let Some(first) = first else {
            tally.write(metrics, true);
            return;
        };
        let mut group: Vec<Append> = Vec::new();
        let mut reports = 0;
        let mut next = Some(first);
        while let Some(job) = next {
            match job {
                Job::Append(append) => {
                    reports += append.reports.len() + 1;
                    group.push(append);
                }
                Job::Export { key, after, upto, limit, reply } => {
                    let rejected = upto.is_none().then(|| store.rejections(key)).transpose();
                    let compacted = store.compacted_reports(key);
                    let page = upto.map_or_else(|| store.last_report(key), Ok).and_then(|upto| {
                        Ok(Page { rows: store.page(key, after, upto, limit)?, upto, rejected: rejected?, compacted: compacted? })
                    });
                    let _ = reply.send(page);
                }
                Job::Backup { to, reply } => {
                    let _ = reply.send(store.snapshot(&to));
                }
                Job::Compact { days } => compact(&mut store, metrics, days),
                Job::Stop => stopping = true,
            }
            if group.len() >= MAX_GROUP_REQUESTS || reports >= MAX_GROUP_REPORTS {
                break;
            }
            next = jobs.try_recv().ok();
        }
        if !group.is_empty() {
            commit(&mut store, metrics, telemetry, group, &mut tally);
            tally.write(metrics, false);
        }
    }
}

/// What was committed per metric since its last log line: accepted,
/// rejected, requests. A metric's line is written at most once per
/// [`logging::EVERY`] (at once after a quiet spell, else when the interval
/// is over), so a busy collector writes a few lines, not one per commit.
struct Tally {
    counts: Vec<(usize, u64, usize)>,
    written: Instant,
}

impl Tally {
    fn new(metrics: usize) -> Tally {
        Tally { counts: vec![(0, 0, 0); metrics], written: Instant::now() - logging::EVERY }
    }

    /// How long until the next line is due.
    fn due_in(&self) -> std::time::Duration {
        logging::EVERY.saturating_sub(self.written.elapsed()).max(std::time::Duration::from_millis(1))
    }

    /// Writes a line per metric with commits, if one is due (or `now`).
    fn write(&mut self, metrics: &[Collected], now: bool) {
        if !now && self.written.elapsed() < logging::EVERY || self.counts.iter().all(|c| c.2 == 0) {
            return;
        }
        let mut log = String::new();
        for (metric, (accepted, rejected, requests)) in metrics.iter().zip(&mut self.counts) {
            if *requests == 1 {
                log.push_str(&format!("{}: {accepted} accepted, {rejected} rejected\n", metric.spec.name));
            } else if *requests > 1 {
                log.push_str(&format!("{}: {accepted} accepted, {rejected} rejected ({requests} requests)\n", metric.spec.name));
            }
            *accepted = 0;
            *rejected = 0;
            *requests = 0;
        }
        logging::write(logging::Level::Info, &log);
        self.written = Instant::now();
    }
}

/// Stores a group in one transaction, then counts and answers it.
fn commit(store: &mut Database, metrics: &[Collected], telemetry: &Telemetry, group: Vec<Append>, tally: &mut Tally) {
    let started = Instant::now();
    let items: Vec<Item> = group
        .iter()
        .map(|a| {
            let m = &metrics[a.metric];
            Item {
                key: m.key,
                metric: &m.metric,
                name: &m.spec.name,
                reports: &a.reports,
                parsed: &a.parsed,
                rejected: &a.rejected,
                batch: a.batch.as_ref(),
            }
        })
        .collect();
    let stored = store.append_group(&items);
    drop(items);
    telemetry.commit.observe_duration(started.elapsed());
    telemetry.group.observe(group.len() as f64);
    let (stored, states) = match stored {
        Ok(stored) => stored,
        Err((why, e)) => {
            let reports: usize = group.iter().map(|a| a.reports.len() + a.rejected.total() as usize).sum();
            log_error!("database error, {} batches of {reports} reports not counted: {e}", group.len());
            for append in group {
                let _ = append.reply.send(Err(why));
            }
            return;
        }
    };
    // On PostgreSQL, this collector's states as committed replace its
    // aggregates (they count the group); on SQLite the group is added.
    let replaced = states.is_some();
    for (key, state) in states.into_iter().flatten() {
        if let Some(metric) = metrics.iter().find(|m| m.key == key) {
            metric.replace(state);
        }
    }
    for (append, &new) in group.iter().zip(&stored) {
        if !new {
            log_info!("{}: a shuffled batch of {} reports was sent again; stored once", metrics[append.metric].spec.name, append.reports.len());
            continue;
        }
        if !replaced {
            metrics[append.metric].absorb(&append.parsed, &append.rejected);
        }
        // A batch whose reports were all rejected hides no one: its id is
        // stored (a retry is a duplicate), but it is not counted. (On
        // PostgreSQL, every collector's batches are read with the states.)
        if let Some(batch) = append.batch.as_ref().filter(|_| !append.reports.is_empty() && !replaced) {
            metrics[append.metric].count_batch(append.reports.len() as u64, &batch.shuffler);
        }
        let t = &mut tally.counts[append.metric];
        t.0 += append.reports.len();
        t.1 += append.rejected.total();
        t.2 += 1;
    }
    // Counted: now the answers may go.
    for (append, new) in group.into_iter().zip(stored) {
        let _ = append.reply.send(Ok(new));
    }
}

/// Retention: each metric's reports that arrived more than `days` days ago
/// go into its stored state (its aggregate in memory already counts them).
pub fn compact(store: &mut Database, metrics: &[Collected], days: i64) {
    let cutoff = super::store::today() - days;
    for m in metrics {
        match store.compact(m.key, &m.metric, cutoff) {
            Ok(0) => {}
            Ok(n) => {
                let all = m.compacted.fetch_add(n, std::sync::atomic::Ordering::Relaxed) + n;
                log_info!(
                    "{}: retention: {n} reports older than {days} days compacted into its stored state ({all} in all); estimates unchanged",
                    m.spec.name
                );
            }
            Err(e) => log_error!("{}: retention: nothing compacted: {e}", m.spec.name),
        }
    }
}
