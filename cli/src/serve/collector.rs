//! What the collector knows, apart from HTTP: its named metrics, the
//! running aggregate of each, and the rule for a batch of reports.
//!
//! **The batch rule.** A body is one report object or an array of them.
//! Every report in it is validated on its own: a valid one is stored and
//! counted; an invalid one is counted by reason in the metric's `rejected`
//! and never stored. A body that is not JSON, or JSON that is neither an
//! object nor an array, counts nothing (it is not a report).

use super::database::Database;
use super::store::{BatchGroup, Store};
use super::fold::{add_counts, fold};
use crate::serve::logging::{log_error, log_warn};
use localdp::{
    Aggregator, Error, FrequencyOracle, Metric, NumericMetric, PostProcessing, RapporMetric, Rejection,
    RejectionCounts, Report,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// How many rejected reports a response describes one by one.
pub const DESCRIBED_REJECTIONS: usize = 10;

/// One entry of the metrics file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSpec {
    /// Names the metric in URLs: 1–64 of `A-Z a-z 0-9 _ -`.
    pub name: String,
    /// A human title (the demo's question).
    #[serde(default)]
    pub title: Option<String>,
    /// The unit of a numeric metric's values, for display (e.g. `"ms"`).
    #[serde(default)]
    pub unit: Option<String>,
    /// The same object as the CLI's `--config`, kept verbatim.
    pub config: Box<RawValue>,
}

/// What a missing metrics file is told.
const METRICS_HINT: &str = concat!(
    r#"--metrics FILE names the metrics to collect (default: WWW/metrics.json, from --www): "#,
    r#"a JSON array of {"name", "config"}, each config what `localdp aggregate --config` takes, e.g."#,
    "\n",
    r#"  [{"name": "browser", "config": {"protocol": "auto", "epsilon": 1.0, "domain": ["Chrome", "Safari", "Other"]}},"#,
    "\n",
    r#"   {"name": "load_time", "unit": "ms", "config": {"protocol": "distribution", "epsilon": 1.0, "range": [0, 5000], "bins": 32}}]"#,
);

/// Reads a metrics file: a JSON array of `{"name", "title", "unit", "config"}`
/// (`title` and `unit` optional).
pub fn read_metrics_file(path: &Path) -> Result<Vec<MetricSpec>, String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => at(&format!("{e}\n{METRICS_HINT}")),
        _ => at(&e),
    })?;
    let specs: Vec<MetricSpec> = serde_json::from_str(&text)
        .map_err(|e| at(&format!("expected an array of {{\"name\", \"title\", \"unit\", \"config\"}}: {e}")))?;
    if specs.is_empty() {
        return Err(at(&"no metrics"));
    }
    for (i, spec) in specs.iter().enumerate() {
        if !valid_name(&spec.name) {
            return Err(at(&format!("metric {:?}: a name is 1 to 64 letters, digits, '_' or '-'", spec.name)));
        }
        if specs[..i].iter().any(|s| s.name == spec.name) {
            return Err(at(&format!("metric {:?} is named twice", spec.name)));
        }
    }
    Ok(specs)
}

/// A metric's name (and a shuffled batch's id): 1 to 64 of
/// `A-Z a-z 0-9 _ -`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A metric being collected.
pub struct Collected {
    /// As configured.
    pub spec: MetricSpec,
    /// The parsed config (shared with the validations off the async workers).
    pub metric: Arc<Metric>,
    /// Its key in the database.
    pub key: i64,
    /// Reports compacted into its stored state (retention, `--keep`), no
    /// longer in the database one by one.
    pub compacted: std::sync::atomic::AtomicU64,
    /// Everything this collector accepted and rejected so far (and on
    /// disk): on SQLite, the accepted reports added one by one, the
    /// rejection counts restored from the database at start and added to per
    /// batch; on PostgreSQL, its aggregate state as last committed. The one
    /// place they are counted.
    totals: Mutex<Aggregator>,
    /// On PostgreSQL, the other collectors' states, merged, as read last
    /// (every `postgres::REFRESH`); `None` on SQLite. Locked after `totals`.
    others: Mutex<Option<Aggregator>>,
    /// The last estimate computed per post-processing, with the accepted
    /// and rejected counts it covers: while they are unchanged (nothing new
    /// was committed; they only grow) it is the estimate.
    estimates: Mutex<Vec<Computed>>,
    /// The shuffled batches stored so far.
    batches: Mutex<BatchCounts>,
    /// The central ε of the smallest batch, for the size it was computed
    /// for (it can take seconds: computed once per smallest size).
    central: Mutex<Option<(u64, Option<f64>)>>,
}

/// Shuffled batches stored: how many, their reports, the smallest, and
/// how many each shuffler token sent.
#[derive(Debug, Default, Clone)]
struct BatchCounts {
    batches: u64,
    reports: u64,
    smallest: u64,
    /// Per shuffler token, by fingerprint.
    senders: Vec<Shuffler>,
}

impl BatchCounts {
    /// The counts of these batches (per shuffler, as stored).
    fn of(groups: Vec<BatchGroup>) -> BatchCounts {
        let mut counts = BatchCounts::default();
        for (fingerprint, batches, reports, smallest) in groups {
            counts.smallest = if counts.batches == 0 { smallest } else { counts.smallest.min(smallest) };
            counts.batches += batches;
            counts.reports += reports;
            counts.senders.push(Shuffler { fingerprint, batches });
        }
        counts.senders.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
        counts
    }

    fn add(&mut self, size: u64, shuffler: &str) {
        self.smallest = if self.batches == 0 { size } else { self.smallest.min(size) };
        self.batches += 1;
        self.reports += size;
        match self.senders.binary_search_by(|s| s.fingerprint.as_str().cmp(shuffler)) {
            Ok(at) => self.senders[at].batches += 1,
            Err(at) => self.senders.insert(at, Shuffler { fingerprint: shuffler.to_string(), batches: 1 }),
        }
    }
}

/// The shuffler token that sent batches, by its fingerprint (never the
/// token).
#[derive(Debug, Clone, Serialize)]
pub struct Shuffler {
    /// The token's fingerprint: the first 8 hex digits of its SHA-256.
    pub fingerprint: String,
    /// The batches it sent that are counted.
    pub batches: u64,
}

/// What a metric's description says of its shuffled batches.
#[derive(Debug, Serialize)]
pub struct Shuffled {
    /// Batches stored (each once, however often it was sent).
    pub batches: u64,
    /// Accepted reports in them.
    pub reports: u64,
    /// The fewest accepted reports in one batch.
    pub smallest_batch: u64,
    /// Shuffle amplification (`localdp::accounting::shuffle`) of the metric's
    /// ε for the smallest batch; `None` where the method does not apply.
    pub central: Option<Central>,
    /// Which shuffler tokens sent the batches counted, by fingerprint.
    pub shufflers: Vec<Shuffler>,
    /// [`SHUFFLED_NOTE`]: the conditions in words.
    pub note: &'static str,
}

/// A central (ε, δ) guarantee.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Central {
    /// An upper bound on the central ε.
    pub epsilon: f64,
    /// The δ it holds at (`--central-delta`).
    pub delta: f64,
}

/// The words beside every central ε.
pub const SHUFFLED_NOTE: &str = "The central (epsilon, delta) is what shuffling gives each report of the smallest \
     batch received, and every larger one. It holds only if the shuffler is run by someone other than the \
     collector (whoever runs both sees who sent each report), and only for reports that reached the collector \
     through it; reports posted directly are protected by their local epsilon alone. It also assumes the other \
     reports of a batch come from distinct honest users: a sender that fills a batch with its own reports leaves \
     the others in it less protected, down to their local epsilon alone, which is why the shuffler should limit \
     reports per sender (--reports-per-minute).";

/// An estimate's text, and what it was computed from.
struct Computed {
    post: PostProcessing,
    n: u64,
    rejected: RejectionCounts,
    text: Arc<str>,
}

/// A validated batch, not yet stored.
pub struct Batch {
    /// Accepted reports, as canonical JSON (what is stored).
    pub reports: Vec<String>,
    /// The same reports, parsed: added to the running aggregate after the
    /// commit (work in proportion to the reports, not to the domain).
    pub parsed: Vec<Report>,
    /// Rejected reports by reason.
    pub rejected: RejectionCounts,
    /// The first few rejected reports: index in the batch, reason, why.
    pub described: Vec<(usize, Rejection, String)>,
}

/// A body that holds no reports.
#[derive(Debug)]
pub enum BodyError {
    /// Not JSON (or not UTF-8).
    NotJson(String),
    /// JSON, but neither an object nor an array.
    NotReports,
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // serde_json names a line and column, never the input.
            BodyError::NotJson(e) => write!(f, "the body is not JSON: {e}"),
            BodyError::NotReports => f.write_str("the body must be a report object or an array of reports"),
        }
    }
}

/// Checks one report against the metric's config: the check the
/// aggregator's `add` makes, without an aggregator (whose state is the
/// size of the domain). `None` for a kind of metric this server does not
/// know, which is then checked by a scratch aggregator.
fn check(metric: &Metric, report: &Report) -> Option<Result<(), Error>> {
    if let Some(oracle) = metric.mechanism::<FrequencyOracle>() {
        Some(oracle.validate(report))
    } else if let Some(numeric) = metric.mechanism::<NumericMetric>() {
        Some(numeric.validate(report))
    } else {
        metric.mechanism::<RapporMetric>().map(|rappor| rappor.validate(report))
    }
}

/// One report's text, parsed and checked against `metric`: the check of
/// every report taken (a post, `localdp import`). `scratch` is the
/// aggregator that checks a kind of metric [`check`] does not know, kept
/// from one report to the next.
pub fn accept(metric: &Metric, text: &str, scratch: &mut Option<Aggregator>) -> Result<Report, Error> {
    let report = Report::from_json(text)?;
    check(metric, &report)
        .unwrap_or_else(|| scratch.get_or_insert_with(|| Aggregator::new(metric.clone())).add(&report))
        .map(|()| report)
}

/// Validates every report of a body for `metric` (see the module's batch
/// rule).
pub fn validate(metric: &Metric, body: &[u8]) -> Result<Batch, BodyError> {
    let raw: &RawValue = serde_json::from_slice(body).map_err(|e| BodyError::NotJson(e.to_string()))?;
    let items: Vec<&RawValue> = match raw.get().trim_start().as_bytes().first() {
        Some(b'[') => serde_json::from_str(raw.get()).map_err(|e| BodyError::NotJson(e.to_string()))?,
        Some(b'{') => vec![raw],
        _ => return Err(BodyError::NotReports),
    };
    let mut batch = Batch {
        reports: Vec::with_capacity(items.len()),
        parsed: Vec::with_capacity(items.len()),
        rejected: RejectionCounts::default(),
        described: Vec::new(),
    };
    let mut scratch = None;
    for (index, item) in items.into_iter().enumerate() {
        match accept(metric, item.get(), &mut scratch) {
            Ok(report) => {
                batch.reports.push(report.to_json());
                batch.parsed.push(report);
            }
            Err(e) => {
                let (reason, detail) = match e {
                    Error::Rejected { reason, detail } => (reason, detail),
                    other => (Rejection::Malformed, other.to_string()),
                };
                batch.rejected.count(reason);
                if batch.described.len() < DESCRIBED_REJECTIONS {
                    batch.described.push((index, reason, detail));
                }
            }
        }
    }
    Ok(batch)
}

/// Accepted reports and rejections of this collector's aggregate and the
/// others' (if any), together.
fn merged_counts(totals: &Aggregator, others: Option<&Aggregator>, name: &str) -> (u64, RejectionCounts) {
    let (mut n, mut rejected) = (totals.n(), *totals.rejected());
    if let Some(others) = others {
        n += others.n();
        add_counts(&mut rejected, others.rejected(), name);
    }
    (n, rejected)
}

/// A metric's aggregate, every report a SQLite store holds added again, with
/// its rejections; fails if a stored report no longer validates under the
/// config (the collector's start, `localdp store copy`).
pub fn replay(name: &str, metric: &Metric, key: i64, store: &Store) -> Result<Aggregator, String> {
    // Retention's compacted state first (the reports it counts are gone).
    let mut aggregator = match store.compacted(key)? {
        Some((state, _)) => Aggregator::from_bytes(metric.clone(), &state)
            .map_err(|e| format!("metric {name:?}: its compacted state does not read under its config: {e}"))?,
        None => Aggregator::new(metric.clone()),
    };
    let mut stale = RejectionCounts::default();
    let mut first = None;
    store.replay(key, |report| {
        if let Err(e) = aggregator.add_json(report) {
            if let Error::Rejected { reason, .. } = &e {
                stale.count(*reason);
            }
            first.get_or_insert(e.to_string());
        }
    })?;
    if let Some(first) = first {
        return Err(format!(
            "metric {:?}: {} stored reports do not validate under its config (first: {first}); the config \
             changed since they were stored: restore it, rename the metric, or use another --db",
            name,
            stale.total().max(1)
        ));
    }
    aggregator.restore_rejected(store.rejections(key)?);
    Ok(aggregator)
}

impl Collected {
    /// The metric's running aggregate and batch counts, rebuilt from the
    /// database (on PostgreSQL, read from the collectors' states). Fails if
    /// a stored report (or state) no longer validates under the config.
    pub fn rebuild(spec: MetricSpec, metric: Metric, key: i64, store: &Database) -> Result<Collected, String> {
        let (aggregator, others) = match store {
            Database::Sqlite(store) => (replay(&spec.name, &metric, key, store)?, None),
            Database::Postgres(store) => {
                let (own, others) = store.states(key, &metric)?;
                (own, Some(others))
            }
        };
        let (groups, unsigned) = store.batch_sizes(key)?;
        let batches = BatchCounts::of(groups);
        if unsigned > 0 {
            log_warn!(
                "localdp serve: metric {:?}: {unsigned} shuffled batches stored before shuffler tokens \
                 (--shuffler-token-file) are not counted as shuffled: any token holder could post them \
                 (their reports are counted, as reports posted directly)",
                spec.name
            );
        }
        Ok(Collected {
            spec,
            metric: Arc::new(metric),
            key,
            compacted: store.compacted_reports(key)?.into(),
            totals: Mutex::new(aggregator),
            others: Mutex::new(others),
            estimates: Mutex::new(Vec::new()),
            batches: Mutex::new(batches),
            central: Mutex::new(None),
        })
    }

    /// Adds a stored batch (its validated reports and its rejections) to
    /// the running aggregate: `O(reports)` under the lock.
    pub fn absorb(&self, reports: &[Report], rejected: &RejectionCounts) {
        fold(&mut self.totals.lock().expect("no panics while holding the lock"), reports, rejected, &self.spec.name);
    }

    /// This collector's aggregate as committed (PostgreSQL: the state the
    /// transaction wrote), in place of the one before.
    pub fn replace(&self, state: Aggregator) {
        *self.totals.lock().expect("no panics while holding the lock") = state;
    }

    /// The other collectors' states, merged, and every collector's stored
    /// batches, as read now (PostgreSQL).
    pub fn set_others(&self, others: Aggregator, batches: Vec<BatchGroup>) {
        {
            let _totals = self.totals.lock().expect("no panics while holding the lock");
            *self.others.lock().expect("no panics while holding the lock") = Some(others);
        }
        *self.batches.lock().expect("no panics while holding the lock") = BatchCounts::of(batches);
    }

    /// Counts a shuffled batch of `size` accepted reports from the shuffler
    /// token `shuffler` (its fingerprint), once stored (SQLite; on
    /// PostgreSQL the batches are read with the other collectors' states).
    pub fn count_batch(&self, size: u64, shuffler: &str) {
        self.batches.lock().expect("no panics while holding the lock").add(size, shuffler);
    }

    /// The shuffled batches so far, with the central (ε, `delta`) of the
    /// smallest; `None` before the first. Computing the central ε of a new
    /// smallest size can take seconds: call it off the async workers.
    pub fn shuffled(&self, delta: f64) -> Option<Shuffled> {
        let counts = self.batches.lock().expect("no panics while holding the lock").clone();
        if counts.batches == 0 {
            return None;
        }
        let mut central = self.central.lock().expect("no panics while holding the lock");
        let epsilon = match *central {
            Some((size, epsilon)) if size == counts.smallest => epsilon,
            _ => {
                let epsilon = localdp::accounting::shuffle(self.metric.epsilon(), counts.smallest, delta).ok().map(|a| a.epsilon);
                *central = Some((counts.smallest, epsilon));
                epsilon
            }
        };
        Some(Shuffled {
            batches: counts.batches,
            reports: counts.reports,
            smallest_batch: counts.smallest,
            central: epsilon.map(|epsilon| Central { epsilon, delta }),
            shufflers: counts.senders,
            note: SHUFFLED_NOTE,
        })
    }

    /// Accepted reports and rejections so far, read together.
    pub fn counts(&self) -> (u64, RejectionCounts) {
        let totals = self.totals.lock().expect("no panics while holding the lock");
        let others = self.others.lock().expect("no panics while holding the lock");
        merged_counts(&totals, others.as_ref(), &self.spec.name)
    }

    /// Accepted reports so far.
    pub fn n(&self) -> u64 {
        self.counts().0
    }

    /// Rejected reports so far, by reason.
    pub fn rejected(&self) -> RejectionCounts {
        self.counts().1
    }

    /// The estimate's text if the one computed last still holds.
    pub fn cached(&self, post: PostProcessing) -> Option<Arc<str>> {
        self.lookup(self.counts(), post)
    }

    fn lookup(&self, (n, rejected): (u64, RejectionCounts), post: PostProcessing) -> Option<Arc<str>> {
        let estimates = self.estimates.lock().expect("no panics while holding the lock");
        estimates.iter().find(|c| c.post == post && c.n == n && c.rejected == rejected).map(|c| Arc::clone(&c.text))
    }

    /// The estimate over everything stored, as the text `localdp aggregate
    /// --format json` prints for the same reports (the accepted ones, and the
    /// rejected ones counted by reason): the cached one if it still holds,
    /// else computed and cached.
    ///
    /// The aggregate is copied out of the lock (`O(d)`), so a slow estimate
    /// (RAPPOR's regression) never holds up the batches being counted.
    pub fn estimate(&self, post: PostProcessing) -> Result<Arc<str>, (Error, u64, RejectionCounts)> {
        let aggregator = {
            let totals = self.totals.lock().expect("no panics while holding the lock");
            let others = self.others.lock().expect("no panics while holding the lock");
            if let Some(text) = self.lookup(merged_counts(&totals, others.as_ref(), &self.spec.name), post) {
                return Ok(text);
            }
            let mut aggregator = totals.clone();
            if let Some(others) = others.as_ref() {
                // The same config (the states were read for it): cannot fail.
                if let Err(e) = aggregator.merge(others) {
                    log_error!("{}: the other collectors' states are not counted: {e}", self.spec.name);
                }
            }
            aggregator
        };
        let (n, rejected) = (aggregator.n(), *aggregator.rejected());
        let estimate = aggregator.estimate(post).map_err(|e| (e, n, rejected))?;
        let mut text = serde_json::to_string_pretty(&estimate).expect("an estimate serializes");
        text.push('\n');
        let text: Arc<str> = text.into();
        let mut estimates = self.estimates.lock().expect("no panics while holding the lock");
        estimates.retain(|c| c.post != post);
        estimates.push(Computed { post, n, rejected, text: Arc::clone(&text) });
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use localdp::SimulationRng;

    #[test]
    fn the_example_a_missing_metrics_file_is_shown_is_a_valid_metrics_file() {
        let missing = std::env::temp_dir().join("localdp-no-such-dir/metrics.json");
        let error = read_metrics_file(&missing).unwrap_err();
        let example = error.split_once("e.g.\n").expect("an example").1;
        assert_eq!(example.lines().count(), 2, "{error}");
        let specs: Vec<MetricSpec> = serde_json::from_str(example).unwrap();
        assert_eq!(specs.len(), 2);
        for spec in specs {
            Metric::from_json(spec.config.get()).unwrap();
        }
    }

    #[test]
    fn an_estimate_is_computed_again_only_once_something_new_is_committed() {
        let config = r#"{"protocol":"grr","epsilon":1.0,"domain":["a","b","c"]}"#;
        let metric = Metric::from_json(config).unwrap();
        let spec = MetricSpec { name: "m".into(), title: None, unit: None, config: RawValue::from_string(config.into()).unwrap() };
        let collected = Collected {
            spec,
            totals: Mutex::new(Aggregator::new(metric.clone())),
            others: Mutex::default(),
            estimates: Mutex::new(Vec::new()),
            metric: Arc::new(metric),
            key: 0,
            compacted: Default::default(),
            batches: Mutex::default(),
            central: Mutex::default(),
        };
        let mut rng = SimulationRng::seed_from_u64(1);
        let reports: Vec<Report> = (0..4).map(|_| collected.metric.randomize_text("a", &mut rng).unwrap()).collect();
        assert!(matches!(collected.estimate(PostProcessing::None), Err((Error::NoReports, 0, _))));
        collected.absorb(&reports[..3], &RejectionCounts::default());
        assert!(collected.cached(PostProcessing::None).is_none());
        let first = collected.estimate(PostProcessing::None).unwrap();
        // The same text, not computed again, while nothing new is counted.
        assert!(Arc::ptr_eq(&collected.cached(PostProcessing::None).unwrap(), &first));
        assert!(Arc::ptr_eq(&collected.estimate(PostProcessing::None).unwrap(), &first));
        // Another post-processing is its own estimate.
        assert!(collected.cached(PostProcessing::Project).is_none());
        let projected = collected.estimate(PostProcessing::Project).unwrap();
        assert!(Arc::ptr_eq(&collected.cached(PostProcessing::None).unwrap(), &first));
        // A rejection alone changes the estimate's "rejected": computed again.
        let mut rejected = RejectionCounts::default();
        rejected.count(Rejection::Malformed);
        collected.absorb(&[], &rejected);
        assert!(collected.cached(PostProcessing::None).is_none());
        let second = collected.estimate(PostProcessing::None).unwrap();
        assert_ne!(second, first);
        assert!(collected.cached(PostProcessing::Project).is_none());
        // So does a report.
        collected.absorb(&reports[3..], &RejectionCounts::default());
        assert!(collected.cached(PostProcessing::None).is_none());
        let third = collected.estimate(PostProcessing::None).unwrap();
        assert!(third.contains("\"n\": 4"), "{third}");
        assert_ne!(projected, third);
    }
}
