//! The planner: "what ε, and what error will I get with my number of
//! users?", answered from each mechanism's closed-form variance before a
//! single report is collected.
//!
//! Every estimate here has a variance of the form `V/n`: `V` is the
//! variance one report adds (of a frequency, a mean, or the CDF at a
//! quantile), for a stated population, and `n` the number of reports. The
//! planner evaluates `V` for every protocol the config's family allows
//! (the config with only its `"protocol"` changed), and from it
//!
//! * the standard error `√(V/n)` and the 95% half-width `1.96·√(V/n)`;
//! * the users needed for a target half-width `E`: `⌈V·(1.96/E)²⌉`;
//! * the ε needed at `n` users: the smallest ε (bisection over
//!   `[0.01, 30]`, 48 steps, the upper end kept) whose half-width is at most
//!   `E`;
//! * [`min_users`]: the users below which the estimate does not mean
//!   anything yet (the rule is in its doc comment).
//!
//! The population behind each `V` (PROTOCOLS.md gives the formulas):
//!
//! | family | error | population |
//! |---|---|---|
//! | frequency | a value's frequency | the value held by `1/d` of the users (§1.1) |
//! | numeric | the mean | every user at the value of largest variance (§3) |
//! | distribution | the CDF at p50 and at p95 (rank error) | spread evenly over the range; hierarchical only (§13.2) |
//! | heavy hitters, CMS/HCMS | a candidate's frequency | a candidate nobody holds (§12.1) |
//! | heavy hitters, PEM/TreeHist | a found value's frequency | held by nobody, `max_length` bytes long: estimated on the held-out half of the last level (§12.2) |
//! | heavy hitters, SFP | a found value's frequency | held by nobody, on the whole-value sketch, half the reports (§12.3) |
//! | RAPPOR | a candidate's frequency | held by nobody, its bits set by no other value, decoded alone (§2) |
//! | key-value | a key's frequency; a key's mean (the range's units) | a key held by nobody; a key held by every user, at the middle of the range (§16.3) |
//!
//! A distribution's quantile error is given in rank: a p50 with rank
//! standard error `s` lies between the true `p(50 − 196·s)` and
//! `p(50 + 196·s)` 95% of the time; in the value's units it depends on the
//! density, which only the data know. Square Wave's EMS smoothing has no
//! closed form: its errors are `null` (its coverage and widths are measured
//! in PROTOCOLS.md §13.3, narrower than the tree's up to 10⁵ reports).
//!
//! `bytes` is the mean length of the JSON report as `localdp randomize`
//! writes it (the wire form the collector takes; a browser's
//! `JSON.stringify` writes an integral ε without `.0`, two bytes less) over
//! 32 reports drawn with a fixed seed. The costs are
//! counts per report from each protocol's definition, not timings: coins
//! (exact integer-threshold draws) and hashes on the device, counters
//! touched and hashes computed by the aggregator (local hashing evaluates
//! every domain value's hash for every report; PEM and TreeHist
//! `2·top·2^s` prefixes).
//!
//! ```
//! use localdp::plan::{plan, PlanRequest};
//! let config = serde_json::json!({"protocol": "auto", "epsilon": 1, "domain": 4});
//! let plan = plan(&config, &PlanRequest { users: 10_000, target_error: Some(0.01) }).unwrap();
//! let chosen = plan.protocols.iter().find(|p| p.auto).unwrap();
//! assert_eq!(chosen.protocol, "grr");
//! assert!(chosen.errors[0].half_width.unwrap() < 0.03);
//! ```

use crate::aggregate::tally::Z95;
use localdp_core::distribution::{DistributionMetric, DistributionProtocol};
use localdp_core::error::{Error, Requirement, Result};
use localdp_core::frequency::{FrequencyOracle, FrequencyProtocol};
use localdp_core::heavy::{HeavyHitterMetric, HeavyHitterProtocol};
use crate::key_value::aggregator::pckv_estimate;
use localdp_core::key_value::{KeyValueMetric, KeyValueProtocol};
use localdp_core::json::ConfigObject;
use localdp_core::marginals::{MarginalsMetric, MarginalsProtocol};
use localdp_core::metric::Metric;
use localdp_core::names::ProtocolFamily;
use localdp_core::numeric::{NumericMetric, NumericProtocol};
use localdp_core::rappor::RapporMetric;
use localdp_core::rng::SimulationRng;
use serde::Serialize;
use serde_json::Value;

/// The 95% half-width, in shares (of the users, or of the range for a
/// mean), at which an estimate starts to mean something ([`min_users`]).
pub const MEANINGFUL_HALF_WIDTH: f64 = 0.05;

/// The ε the planner searches within (the families' accepted range).
const EPSILON_RANGE: [f64; 2] = [0.01, 30.0];

/// The users at which [`min_users`] and the distribution's `V` are taken
/// (the tree's level sampling makes its `n·Var` depend on `n` a little).
const REFERENCE_USERS: f64 = 1e6;

/// The number of users below which `metric`'s estimate does not mean
/// anything yet: the smallest `n` at which the 95% half-width of its first
/// error (see [`plan`]) is at most [`MEANINGFUL_HALF_WIDTH`] = 0.05 — five
/// percentage points of a frequency or a CDF rank, or 5% of the range for a
/// mean. Below it, a frequency of 0.10 cannot be told from 0 or from 0.20.
///
/// The rule is the same for every family because each error is a share.
/// It is a floor, not a target: a frequency of 1% needs a half-width well
/// under 0.01. Square Wave (no closed form) takes the hierarchical tree's
/// number at the same ε and bins, an upper bound: Square Wave's intervals
/// are the narrower up to 10⁵ reports (PROTOCOLS.md §13.3).
///
/// It never panics: a metric the planner has no model of (none today:
/// every family has one) gets `u64::MAX`, "never", as does an error out of
/// reach.
///
/// ```
/// use localdp::{plan::min_users, Metric};
/// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#).unwrap();
/// // GRR at ε = 1 over 4 values: n·Var ≈ 1.89 at f = 1/4, so 1.96·√(1.89/n) ≤ 0.05 from n ≈ 2,900.
/// assert!((2_800..3_000).contains(&min_users(&metric)));
/// ```
pub fn min_users(metric: &Metric) -> u64 {
    let Some(model) = Model::of(metric) else { return u64::MAX };
    let (variance, scale) = match (model.errors.first().and_then(|e| e.variance), &model.fallback) {
        (Some(v), _) => (v, model.scale),
        (None, Some(fallback)) => (fallback.errors[0].variance.unwrap_or(f64::INFINITY), fallback.scale),
        (None, None) => (f64::INFINITY, model.scale),
    };
    users_for(variance, MEANINGFUL_HALF_WIDTH * scale)
}

/// What to plan for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanRequest {
    /// The users (one report each).
    pub users: u64,
    /// A target 95% half-width, in the first error's units.
    pub target_error: Option<f64>,
}

/// The planner's answer for one config.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The family (`"frequency"`, `"numeric"`, `"distribution"`,
    /// `"heavy-hitter"`, `"rappor"`).
    pub family: &'static str,
    /// The users planned for.
    pub users: u64,
    /// The config's ε of one report.
    pub epsilon: f64,
    /// What all reports of one value spend in the long run (RAPPOR's `ε_∞`,
    /// a memoized frequency metric's `epsilon` above an instantaneous ε;
    /// otherwise `epsilon`).
    pub long_run_epsilon: f64,
    /// The ε the configured protocol's channel realizes
    /// ([`Metric::realized_epsilon`]); below `long_run_epsilon`, the config
    /// pays for budget it does not use ([`crate::audit::unused_budget`]).
    pub realized_epsilon: f64,
    /// The target 95% half-width, if one was given.
    pub target_error: Option<f64>,
    /// The protocol the config resolves to.
    pub configured: String,
    /// The protocol the family's automatic choice resolves to (`None` when
    /// the family has none, or it cannot take this config).
    pub auto: Option<String>,
    /// The rule behind `min_users`.
    pub rule: &'static str,
    /// One row per protocol the family allows for this config (that the
    /// planner has a model of: all of them today).
    pub protocols: Vec<ProtocolPlan>,
}

/// The planner's numbers for one protocol.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolPlan {
    /// The protocol's name.
    pub protocol: String,
    /// True for the protocol the automatic choice picks.
    pub auto: bool,
    /// True for the protocol the config resolves to.
    pub configured: bool,
    /// The errors at the planned users; the first is the one targets and
    /// `min_users` refer to.
    pub errors: Vec<ErrorPlan>,
    /// Mean bytes of a JSON report.
    pub bytes: f64,
    /// Work per report, counted.
    pub cost: Cost,
    /// [`min_users`] for this protocol.
    pub min_users: u64,
    /// Users needed for the target half-width at the config's ε.
    pub users_needed: Option<u64>,
    /// The smallest ε that reaches the target half-width at the planned
    /// users (`None` if even ε = 30 does not, or there is no target).
    pub epsilon_needed: Option<f64>,
}

/// One expected error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorPlan {
    /// What is estimated, and for which population.
    pub quantity: &'static str,
    /// The expected standard error (`None`: no closed form).
    pub std_error: Option<f64>,
    /// `1.96 ×` the standard error.
    pub half_width: Option<f64>,
}

/// Work per report, counted from the protocol's definition (not timed).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cost {
    /// Exact random draws on the device (coins and uniform integers).
    pub client_coins: f64,
    /// Hashes on the device.
    pub client_hashes: f64,
    /// Counters the aggregator adds to (expected).
    pub aggregation_counters: f64,
    /// Hashes the aggregator computes.
    pub aggregation_hashes: f64,
}

const RULE: &str = "min_users: the users at which the 95% half-width of the first error is at most 0.05 \
(of the users, or of the range for a mean)";

/// Plans a config (a JSON object, as `Metric::from_value` takes it): every
/// protocol its family allows at the config's ε, with errors at
/// `request.users`, and with a target the users and the ε it needs.
///
/// ```
/// use localdp::plan::{plan, PlanRequest};
/// let config = serde_json::json!({"protocol": "auto", "epsilon": 2, "range": [0, 100]});
/// let plan = plan(&config, &PlanRequest { users: 1_000, target_error: Some(2.0) }).unwrap();
/// let row = plan.protocols.iter().find(|p| p.configured).unwrap();
/// assert!(row.users_needed.unwrap() > 1_000 && row.epsilon_needed.unwrap() > 2.0);
/// ```
pub fn plan(config: &Value, request: &PlanRequest) -> Result<Plan> {
    plan_object(&localdp_core::metric::config_object(config)?, request)
}

/// [`plan`] of a config object (the wasm build's are JS objects).
#[doc(hidden)]
pub fn plan_object(config: &ConfigObject, request: &PlanRequest) -> Result<Plan> {
    if request.users == 0 {
        return Err(Error::invalid("users", Requirement::IntegerRange { min: 1, max: u64::MAX, found: 0 }));
    }
    if let Some(e) = request.target_error {
        if !(e.is_finite() && e > 0.0) {
            return Err(Error::invalid("target_error", Requirement::Positive { found: e }));
        }
    }
    let metric = Metric::from_config(config.clone())?;
    let family = metric.family();
    let auto = auto_name(family).and_then(|name| variant(config, name, None)).map(|m| m.protocol().name().to_string());
    let configured = metric.protocol().name().to_string();
    let mut protocols = Vec::new();
    for &name in protocol_names(family) {
        let Some(candidate) = variant(config, name, None) else { continue };
        let (Some(model), Some(cost)) = (Model::of(&candidate), cost(&candidate)) else { continue };
        let n = request.users as f64;
        let errors = model
            .errors
            .iter()
            .map(|e| {
                let std_error = e.variance.map(|v| (v / n).sqrt());
                ErrorPlan { quantity: e.quantity, std_error, half_width: std_error.map(|s| Z95 * s) }
            })
            .collect();
        let (users_needed, epsilon_needed) = match (request.target_error, model.errors[0].variance) {
            (Some(target), Some(v)) => (Some(users_for(v, target)), epsilon_for(config, name, family, target, n)),
            _ => (None, None),
        };
        protocols.push(ProtocolPlan {
            protocol: name.to_string(),
            auto: auto.as_deref() == Some(name),
            configured: configured == name,
            errors,
            bytes: mean_report_bytes(&candidate),
            cost,
            min_users: min_users(&candidate),
            users_needed,
            epsilon_needed,
        });
    }
    Ok(Plan {
        family,
        users: request.users,
        epsilon: metric.epsilon(),
        long_run_epsilon: metric.long_run_epsilon(),
        realized_epsilon: metric.realized_epsilon(),
        target_error: request.target_error,
        configured,
        auto,
        rule: RULE,
        protocols,
    })
}

/// The config with `"protocol"` (and `"epsilon"`, if given) replaced, as a
/// metric; `None` if the family refuses it.
fn variant(config: &ConfigObject, protocol: &str, epsilon: Option<f64>) -> Option<Metric> {
    let mut config = config.clone();
    config.set_text("protocol", protocol);
    if let Some(epsilon) = epsilon {
        config.set_number("epsilon", epsilon);
    }
    Metric::from_config(config).ok()
}

/// `⌈V·(1.96/E)²⌉`, at least 1 (`u64::MAX` if out of reach).
fn users_for(variance: f64, half_width: f64) -> u64 {
    let n = (variance * (Z95 / half_width).powi(2)).ceil();
    if n.is_finite() && n < u64::MAX as f64 {
        (n as u64).max(1)
    } else {
        u64::MAX
    }
}

/// The smallest ε in [`EPSILON_RANGE`] at which protocol `name`'s first
/// half-width at `n` users is at most `target` (bisection; the upper end).
/// RAPPOR's ε follows from `f`, `p`, `q` and `h`: `None`.
fn epsilon_for(config: &ConfigObject, name: &str, family: &str, target: f64, n: f64) -> Option<f64> {
    if family == "rappor" {
        return None;
    }
    let half_width = |epsilon: f64| {
        let model = Model::of(&variant(config, name, Some(epsilon))?)?;
        model.errors[0].variance.map(|v| Z95 * (v / n).sqrt())
    };
    let [mut lo, mut hi] = EPSILON_RANGE;
    if half_width(hi)? > target {
        return None;
    }
    if half_width(lo)? <= target {
        return Some(lo);
    }
    for _ in 0..48 {
        let mid = 0.5 * (lo + hi);
        match half_width(mid) {
            Some(h) if h <= target => hi = mid,
            _ => lo = mid,
        }
    }
    Some(hi)
}

/// The protocols of a family, by its name.
fn protocol_names(family: &str) -> &'static [&'static str] {
    match family {
        "frequency" => FrequencyProtocol::NAMES,
        "numeric" => NumericProtocol::NAMES,
        "distribution" => DistributionProtocol::NAMES,
        "heavy-hitter" => HeavyHitterProtocol::NAMES,
        "key_value" => KeyValueProtocol::NAMES,
        "marginals" => MarginalsProtocol::NAMES,
        _ => &["rappor"],
    }
}

/// What a family's config names to let the library choose.
fn auto_name(family: &str) -> Option<&'static str> {
    match family {
        "frequency" | "numeric" => Some("auto"),
        "distribution" => Some(localdp_core::distribution::CHOOSE),
        "heavy-hitter" => Some(localdp_core::heavy::CHOOSE),
        "key_value" => Some(localdp_core::key_value::CHOOSE),
        "marginals" => Some(localdp_core::marginals::CHOOSE),
        _ => None,
    }
}

/// One error's per-report variance `V` (`Var = V/n`).
struct ErrorModel {
    quantity: &'static str,
    variance: Option<f64>,
}

/// A metric's errors, the unit its shares are of, and (Square Wave) the
/// model `min_users` falls back on.
struct Model {
    errors: Vec<ErrorModel>,
    /// What a share of 1 is in the first error's units (the range for a mean).
    scale: f64,
    fallback: Option<Box<Model>>,
}

impl Model {
    /// `None` for a mechanism the planner has no model of.
    fn of(metric: &Metric) -> Option<Model> {
        let error = |quantity, variance| ErrorModel { quantity, variance: Some(variance) };
        let shares = |errors| Model { errors, scale: 1.0, fallback: None };
        if let Some(oracle) = metric.mechanism::<FrequencyOracle>() {
            let d = oracle.domain().len() as f64;
            return Some(shares(vec![error("frequency of a value held by 1/d of the users", oracle.variance(1.0 / d, 1))]));
        }
        if let Some(numeric) = metric.mechanism::<NumericMetric>() {
            let [lo, hi] = numeric.ranges()[0];
            let half = 0.5 * (hi - lo);
            let variance = numeric.worst_case_variance() * half * half;
            return Some(Model { errors: vec![error("mean, at the value of largest variance", variance)], scale: hi - lo, fallback: None });
        }
        if let Some(distribution) = metric.mechanism::<DistributionMetric>() {
            return Some(distribution_model(distribution));
        }
        if let Some(key_value) = metric.mechanism::<KeyValueMetric>() {
            // One report's variance: PCKV's closed forms at n = 1.
            let (_, frequency_se, _, _) = pckv_estimate(key_value, key_value.expected_shares(0.0, 0.0), 1);
            let (_, _, _, mean_se) = pckv_estimate(key_value, key_value.expected_shares(1.0, 0.0), 1);
            let [lo, hi] = key_value.range();
            let mean_variance = (mean_se * 0.5 * (hi - lo)).powi(2);
            return Some(shares(vec![
                error("frequency of a key nobody holds", frequency_se * frequency_se),
                error("mean of a key every user holds, at the middle of the range", mean_variance),
            ]));
        }
        if let Some(marginals) = metric.mechanism::<MarginalsMetric>() {
            // A set's reports are 1/m of all: its cells' variance is m times its oracle's.
            let variance = marginals.sets().len() as f64 * marginals.oracle(0).variance(0.0, 1);
            return Some(shares(vec![error("frequency of a cell of a marginal, held by nobody", variance)]));
        }
        if let Some(heavy) = metric.mechanism::<HeavyHitterMetric>() {
            let (quantity, variance) = if let Some(sketch) = heavy.sketch() {
                ("frequency of a candidate nobody holds", sketch.count_variance(1.0, 0.0))
            } else if let Some(discovery) = heavy.discovery() {
                let held_out = 2.0 * f64::from(discovery.levels());
                ("frequency of a found value of max_length bytes, held by nobody", discovery.count_variance(1.0, 0.0) * held_out)
            } else {
                let sketch = heavy.fragments()?.sketch();
                ("frequency of a found value, held by nobody", sketch.count_variance(1.0, 0.0) * 2.0)
            };
            return Some(shares(vec![error(quantity, variance)]));
        }
        let rappor = metric.mechanism::<RapporMetric>()?;
        Some(shares(vec![error("frequency of a candidate nobody holds, decoded alone", rappor.frequency_variance(0.0))]))
    }
}

/// The CDF's variance at p50 and p95 for a population spread evenly over
/// the range (the tree), or no closed form (Square Wave, with the tree as
/// `min_users`' fallback).
fn distribution_model(metric: &DistributionMetric) -> Model {
    const QUANTITIES: [(&str, f64); 2] =
        [("p50, in rank (CDF), population spread evenly", 0.5), ("p95, in rank (CDF), population spread evenly", 0.95)];
    let Some(tree) = metric.hierarchy() else {
        let errors = QUANTITIES.iter().map(|&(quantity, _)| ErrorModel { quantity, variance: None }).collect();
        let config = localdp_core::distribution::DistributionConfig {
            protocol: DistributionProtocol::Hierarchical.name().to_string(),
            epsilon: metric.epsilon(),
            range: metric.range(),
            bins: Some(metric.bins()),
        };
        let fallback = DistributionMetric::new(&config).ok().map(|m| Box::new(distribution_model(&m)));
        return Model { errors, scale: 1.0, fallback };
    };
    let bins = metric.bins();
    let shares = vec![1.0 / bins as f64; bins as usize];
    let errors = QUANTITIES
        .iter()
        .map(|&(quantity, q)| {
            let edge = ((q * bins as f64).round() as usize).clamp(1, bins as usize - 1);
            let variance = tree.cdf_variance(REFERENCE_USERS, &shares, edge) * REFERENCE_USERS;
            ErrorModel { quantity, variance: Some(variance) }
        })
        .collect();
    Model { errors, scale: 1.0, fallback: None }
}

/// A value every metric of the family accepts, as text.
fn sample_value(metric: &Metric) -> String {
    if let Some(oracle) = metric.mechanism::<FrequencyOracle>() {
        return oracle.domain().value_text(0).unwrap_or_default();
    }
    if let Some(numeric) = metric.mechanism::<NumericMetric>() {
        let mid: Vec<String> = numeric.ranges().iter().map(|[lo, hi]| localdp_core::privacy::number_text(0.5 * (lo + hi))).collect();
        return mid.join(",");
    }
    if let Some(distribution) = metric.mechanism::<DistributionMetric>() {
        let [lo, hi] = distribution.range();
        return localdp_core::privacy::number_text(0.5 * (lo + hi));
    }
    if metric.mechanism::<KeyValueMetric>().is_some() {
        return "{}".to_string(); // every report of a configuration has one size
    }
    if metric.mechanism::<MarginalsMetric>().is_some() {
        // Every attribute's first value.
        let [first, _] = metric.neighbours();
        return first;
    }
    "/home".to_string()
}

/// Mean bytes of 32 JSON reports of a sample value as `localdp randomize`
/// writes them, drawn with a fixed seed (simulation only: nothing here is
/// sent).
fn mean_report_bytes(metric: &Metric) -> f64 {
    const REPORTS: usize = 32;
    let value = sample_value(metric);
    let mut rng = SimulationRng::seed_from_u64(29);
    let total: usize = (0..REPORTS)
        .filter_map(|_| metric.randomize_text(&value, &mut rng).ok())
        .map(|r| r.to_json().len())
        .sum();
    total as f64 / REPORTS as f64
}

/// Work per report, counted from the protocol's definition (PROTOCOLS.md);
/// `None` for a mechanism the planner has no model of.
fn cost(metric: &Metric) -> Option<Cost> {
    let cost = |client_coins: f64, client_hashes: f64, aggregation_counters: f64, aggregation_hashes: f64| Cost {
        client_coins,
        client_hashes,
        aggregation_counters,
        aggregation_hashes,
    };
    if let Some(oracle) = metric.mechanism::<FrequencyOracle>() {
        let d = oracle.domain().len() as f64;
        let (p, q) = oracle.support_probabilities();
        // The values a report supports, which a direct count touches.
        let supported = p + (d - 1.0) * q;
        return Some(match oracle.protocol() {
            FrequencyProtocol::Grr | FrequencyProtocol::Hr | FrequencyProtocol::Hrr => cost(2.0, 0.0, 1.0, 0.0),
            FrequencyProtocol::Blh | FrequencyProtocol::Olh => cost(3.0, 1.0, supported, d),
            // One coin per bit (SUE, OUE); the exclusion coin and k draws (SS);
            // a subset and a coin per sampled bucket (dBitFlip).
            FrequencyProtocol::Ss => cost(1.0 + supported.round(), 0.0, supported, 0.0),
            FrequencyProtocol::DBitFlip => {
                let sampled = oracle.report_bits() as f64 / (d.log2().ceil() + 1.0);
                cost(2.0 * sampled, 0.0, supported, 0.0)
            }
            _ => cost(d, 0.0, supported, 0.0),
        });
    }
    if metric.mechanism::<NumericMetric>().is_some() || metric.mechanism::<DistributionMetric>().is_some() {
        // Randomized rounding or the grid cell, then the channel's coin and
        // cell; the tree also draws its level.
        let level = metric.mechanism::<DistributionMetric>().map_or(0.0, |d| f64::from(u8::from(d.hierarchy().is_some())));
        return Some(cost(2.0 + level, 0.0, 1.0, 0.0));
    }
    if let Some(key_value) = metric.mechanism::<KeyValueMetric>() {
        // The sampled slot, the value's coin, then GRR's key coin (and another
        // key with a fair sign), or UE's coin per key and the own symbol's bit
        // and sign; the aggregator counts the real keys a report supports.
        let d = key_value.symbols() as f64;
        let channel = key_value.channel();
        let supported = (channel.a + (d - 1.0) * channel.b).min(key_value.keys().len() as f64);
        return Some(match key_value.protocol() {
            KeyValueProtocol::PckvGrr => cost(5.0, 0.0, 1.0, 0.0),
            _ => cost(d + 4.0, 0.0, supported, 0.0),
        });
    }
    if let Some(marginals) = metric.mechanism::<MarginalsMetric>() {
        // The set's draw, then the oracle over its cells (on average over the sets).
        let sets = marginals.sets().len();
        let d = (0..sets).map(|s| marginals.cells(s) as f64).sum::<f64>() / sets as f64;
        let (p, q) = marginals.oracle(0).support_probabilities();
        let supported = p + (d - 1.0) * q;
        return Some(match marginals.protocol() {
            MarginalsProtocol::MarginalsOue => cost(1.0 + d, 0.0, supported, 0.0),
            MarginalsProtocol::MarginalsOlh => cost(4.0, 1.0, supported, d),
        });
    }
    if let Some(heavy) = metric.mechanism::<HeavyHitterMetric>() {
        return match heavy.protocol() {
            HeavyHitterProtocol::Cms => {
                let m = heavy.sketch()?.width() as f64;
                Some(cost(1.0 + m, 1.0, m, 0.0))
            }
            HeavyHitterProtocol::Hcms => Some(cost(3.0, 1.0, 1.0, 0.0)),
            HeavyHitterProtocol::Sfp => Some(cost(4.0, 2.0, 1.0, 0.0)),
            HeavyHitterProtocol::Pem | HeavyHitterProtocol::TreeHist => {
                let discovery = heavy.discovery()?;
                let prefixes = 2.0 * discovery.top() as f64 * f64::from(1u32 << discovery.step());
                Some(cost(3.0, 1.0, 1.0, prefixes))
            }
        };
    }
    let rappor = metric.mechanism::<RapporMetric>()?;
    let (one, zero) = rappor.report_bit_probabilities();
    let (k, h) = (rappor.bits() as f64, rappor.hashes() as f64);
    // The cohort, then a PRR and an IRR coin per bit; the aggregator adds the set bits.
    Some(cost(1.0 + 2.0 * k, h, zero * k + (one - zero) * h, 0.0))
}
