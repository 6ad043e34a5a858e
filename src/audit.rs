//! A black-box privacy auditor: a statistical lower bound on the ε a
//! randomizer actually provides, from its reports alone.
//!
//! The randomizer is run `samples` times on each of two neighbouring inputs
//! (for a frequency metric the first and the last value of the domain, where
//! off-by-one mistakes show; for a numeric one the two ends of every range;
//! for a key-value metric two maps of `min(K, ℓ)` keys, at the range's two
//! ends, which padding does not dilute). Each report is reduced to *events*
//! by the public decoding alone: the exact output, and for frequency,
//! key-value and hierarchical metrics the level of the likelihood ratio
//! between the two inputs under the claimed channel (its top level is the
//! likeliest event on which they differ by the whole realized ε: for OLH
//! "the reported bucket is the first input's hash and not the second's",
//! for unary encodings "the first's bit set and the second's clear"), or
//! `output index ≥ c` for every threshold `c` of every attribute (numeric
//! metrics). The first half of the samples
//! chooses the *witness*, the event whose probability differs most between
//! the two inputs (in either direction); the second half, independent of
//! that choice, measures it. With Clopper–Pearson intervals at the requested
//! confidence (split between the two probabilities),
//!
//! ```text
//! ε ≥ ln( P̲[witness | x] / P̄[witness | x'] )
//! ```
//!
//! holds with at least that confidence for the randomizer that ran. A correct
//! mechanism keeps the bound below its claimed ε; the bound above the claim
//! is proof of a privacy bug (at that confidence).
//!
//! Following Jagielski, Ullman, Oprea (NeurIPS 2020) and Ding et al.,
//! "Detecting violations of differential privacy" (CCS 2018).

use localdp_core::json::quoted;
use localdp_core::metric::Metric;
use localdp_core::report::{Payload, Report};
use localdp_core::rng::RngCore;
use localdp_core::text::text;
use serde::Serialize;
use std::collections::HashMap;

/// What `localdp audit` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditResult {
    /// The claimed ε.
    pub epsilon: f64,
    /// The ε the metric's exact channel realizes
    /// ([`Metric::realized_epsilon`]): what a perfect auditor would find in
    /// a correct randomizer. Below `epsilon`, the config pays for budget
    /// its channel does not use ([`unused_budget`]).
    pub realized_epsilon: f64,
    /// The lower bound on the realized ε (0 when no event separates the inputs).
    pub epsilon_lower_bound: f64,
    /// The confidence of the bound.
    pub confidence: f64,
    /// Reports drawn per input.
    pub samples: u64,
    /// The witness event and the inputs it separates.
    pub witness: String,
}

/// What an operator is told when a config pays for more ε than its
/// channel realizes (`localdp audit` and `localdp plan` print it); `None`
/// when the channel spends what it is charged (to 1e-9 of it).
///
/// ```
/// use localdp::{audit::unused_budget, Metric};
/// let padded = Metric::from_json(r#"{"protocol":"pckv_grr","epsilon":1,"keys":8,"range":[0,1],"pad":3}"#)?;
/// let note = unused_budget(padded.long_run_epsilon(), padded.realized_epsilon()).unwrap();
/// assert!(note.starts_with("the channel realizes ε 0.45 of the 1.0 each report is charged"));
/// let grr = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#)?;
/// assert_eq!(unused_budget(grr.long_run_epsilon(), grr.realized_epsilon()), None);
/// # Ok::<(), localdp::Error>(())
/// ```
pub fn unused_budget(epsilon: f64, realized: f64) -> Option<String> {
    (realized < epsilon * (1.0 - 1e-9)).then(|| {
        let two = |x: f64| localdp_core::privacy::number_text((x * 100.0).round() / 100.0);
        text!(
            "the channel realizes ε ",
            two(realized),
            " of the ",
            two(epsilon),
            " each report is charged: ",
            two(epsilon - realized),
            " is privacy budget the config pays for and does not use"
        )
    })
}

impl AuditResult {
    /// True when the bound proves the claimed ε wrong.
    ///
    /// See the examples on [`audit`] and [`audit_with`].
    pub fn violated(&self) -> bool {
        self.epsilon_lower_bound > self.epsilon
    }
}

/// The events a report belongs to, by the public decoding only: its exact
/// output, and what the metric's family adds (the level of the likelihood
/// ratio between the neighbours for frequency metrics and RAPPOR,
/// thresholds `output ≥ c` for numeric ones).
///
/// ```
/// use localdp::{audit, Metric, SimulationRng};
/// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":3}"#)?;
/// let report = metric.randomize_text("1", &mut SimulationRng::seed_from_u64(1))?; // simulation only
/// let events = audit::events(&metric, &report);
/// assert!(events[0].starts_with("output ")); // the exact output, then the family's events
/// assert_eq!(events[1..], metric.events(&report)[..]);
/// # Ok::<(), localdp::Error>(())
/// ```
pub fn events(metric: &Metric, report: &Report) -> Vec<String> {
    events_of(metric, report).iter().map(|e| e.text(metric)).collect()
}

/// An event a report belongs to; the exact output is kept as the payload
/// itself (written out only for the witness: writing every report's JSON
/// took three quarters of an audit's time).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Event {
    Output(Payload),
    Named(String),
}

impl Event {
    fn text(&self, metric: &Metric) -> String {
        match self {
            Event::Output(payload) => text!("output ", payload_text(metric, payload)),
            Event::Named(name) => name.clone(),
        }
    }
}

fn events_of(metric: &Metric, report: &Report) -> Vec<Event> {
    let mut out = vec![Event::Output(report.payload.clone())];
    out.extend(metric.events(report).into_iter().map(Event::Named));
    out
}

/// The payload's JSON fields (in a report of `metric`, without its envelope).
fn payload_text(metric: &Metric, payload: &Payload) -> String {
    let mut value = localdp_core::metric::envelope(metric.kind(), payload.clone()).to_json_value();
    if let Some(map) = value.as_object_mut() {
        for envelope in ["version", "protocol", "epsilon", "domain"] {
            map.remove(envelope);
        }
    }
    serde_json::to_string(&value).unwrap_or_default()
}

/// Audits the metric's own randomizer (the production code path). For
/// RAPPOR it audits the permanent response, whose claim is `ε_∞` (the
/// instantaneous step is post-processing of it).
///
/// ```
/// use localdp::{audit::audit, Metric, SimulationRng};
/// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#)?;
/// let mut rng = SimulationRng::seed_from_u64(11); // simulation only
/// let result = audit(&metric, 20_000, 0.95, &mut rng);
/// assert_eq!((result.epsilon, result.samples, result.confidence), (1.0, 20_000, 0.95));
/// assert!(!result.violated()); // GRR keeps its claim
/// assert!(result.epsilon_lower_bound <= 1.0);
/// # Ok::<(), localdp::Error>(())
/// ```
pub fn audit<R: RngCore>(metric: &Metric, samples: u64, confidence: f64, rng: &mut R) -> AuditResult {
    let inputs = metric.neighbours();
    let kind = metric.kind();
    let mut randomize = |which: usize, rng: &mut dyn RngCore| {
        kind.audit_sample(&inputs[which], rng).expect("the neighbours are valid values")
    };
    audit_with(metric, metric.long_run_epsilon(), samples, confidence, &mut randomize, rng)
}

/// Audits any randomizer against `claimed` ε, decoding its reports with
/// `metric`'s public rules: `randomize(0 or 1, rng)` must return a report for
/// the first or second neighbouring input. Tests use this to audit
/// deliberately broken randomizers.
///
/// ```
/// use localdp::audit::audit_with;
/// use localdp::report::Payload;
/// use localdp::{Metric, SimulationRng};
/// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#)?;
/// let mut rng = SimulationRng::seed_from_u64(4); // simulation only
/// let template = metric.randomize_text("0", &mut rng)?;
/// // A broken "randomizer" that sends the true value (0 or 3, the neighbours): its ε is infinite.
/// let mut leak = |which: usize, _: &mut dyn localdp::rng::RngCore| {
///     localdp::Report { payload: Payload::Index(3 * which as u64), ..template.clone() }
/// };
/// let result = audit_with(&metric, 1.0, 2_000, 0.95, &mut leak, &mut rng);
/// assert!(result.violated() && result.epsilon_lower_bound > 1.0);
/// # Ok::<(), localdp::Error>(())
/// ```
pub fn audit_with(
    metric: &Metric,
    claimed: f64,
    samples: u64,
    confidence: f64,
    randomize: &mut dyn FnMut(usize, &mut dyn RngCore) -> Report,
    rng: &mut dyn RngCore,
) -> AuditResult {
    let half = samples / 2;
    // Selection: event counts under each input on the first half.
    let mut counts: HashMap<Event, [u64; 2]> = HashMap::new();
    for which in 0..2 {
        for _ in 0..half {
            for event in events_of(metric, &randomize(which, rng)) {
                counts.entry(event).or_default()[which] += 1;
            }
        }
    }
    let alpha = 1.0 - confidence;
    // The candidate whose bound on the selection half is largest, either way.
    let mut best: Option<(f64, Event, usize)> = None;
    // Events seen a handful of times cannot bound anything (and outputs
    // with a 32-bit seed are nearly all unique): skip them.
    for (event, c) in counts.iter().filter(|(_, c)| c[0].max(c[1]) >= 10) {
        for (hi, lo) in [(0, 1), (1, 0)] {
            let bound = log_ratio_bound(c[hi], c[lo], half, alpha);
            if best.as_ref().is_none_or(|(b, _, _)| bound > *b) {
                best = Some((bound, event.clone(), hi));
            }
        }
    }
    let Some((_, witness, hi)) = best else {
        return AuditResult {
            epsilon: claimed,
            realized_epsilon: metric.realized_epsilon(),
            epsilon_lower_bound: 0.0,
            confidence,
            samples,
            witness: "none".into(),
        };
    };
    // Measurement on fresh samples.
    let rest = samples - half;
    let mut hits = [0u64; 2];
    for (which, hit) in hits.iter_mut().enumerate() {
        for _ in 0..rest {
            *hit += u64::from(events_of(metric, &randomize(which, rng)).contains(&witness));
        }
    }
    let bound = log_ratio_bound(hits[hi], hits[1 - hi], rest, alpha).max(0.0);
    let inputs = metric.neighbours();
    AuditResult {
        epsilon: claimed,
        realized_epsilon: metric.realized_epsilon(),
        epsilon_lower_bound: bound,
        confidence,
        samples,
        witness: text!(
            witness.text(metric),
            ": ",
            hits[hi],
            " of ",
            rest,
            " reports of input ",
            quoted(&inputs[hi]),
            ", ",
            hits[1 - hi],
            " of ",
            rest,
            " of input ",
            quoted(&inputs[1 - hi])
        ),
    }
}

/// `ln(P̲_hi / P̄_lo)` from `k_hi`, `k_lo` successes of `n` each, each bound
/// at confidence `1 − α/2`.
fn log_ratio_bound(k_hi: u64, k_lo: u64, n: u64, alpha: f64) -> f64 {
    let lower = clopper_pearson_lower(k_hi, n, alpha / 2.0);
    let upper = 1.0 - clopper_pearson_lower(n - k_lo, n, alpha / 2.0);
    if lower <= 0.0 {
        return f64::NEG_INFINITY;
    }
    (lower / upper).ln()
}

/// The Clopper–Pearson lower bound for `k` successes of `n`: the `p` with
/// `P[Bin(n, p) ≥ k] = α`, i.e. the `α` quantile of Beta(k, n−k+1).
///
/// ```
/// use localdp::audit::clopper_pearson_lower;
/// // 10 successes of 10: P[Bin(10, p) ≥ 10] = p^10 = 0.05.
/// assert!((clopper_pearson_lower(10, 10, 0.05) - 0.05f64.powf(0.1)).abs() < 1e-9);
/// assert_eq!(clopper_pearson_lower(0, 10, 0.05), 0.0);
/// ```
pub fn clopper_pearson_lower(k: u64, n: u64, alpha: f64) -> f64 {
    if k == 0 {
        return 0.0;
    }
    let (a, b) = (k as f64, (n - k + 1) as f64);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if regularized_beta(mid, a, b) < alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `I_x(a, b)`, the regularized incomplete beta function (continued
/// fraction, Numerical Recipes §6.4).
fn regularized_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = libm::lgamma(a + b) - libm::lgamma(a) - libm::lgamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(x, a, b) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(1.0 - x, b, a) / b
    }
}

fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    d = if d.abs() < TINY { TINY } else { d };
    d = 1.0 / d;
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        for aa in [m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))] {
            d = 1.0 + aa * d;
            d = if d.abs() < TINY { TINY } else { d };
            c = 1.0 + aa / c;
            c = if c.abs() < TINY { TINY } else { c };
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}
