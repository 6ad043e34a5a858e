//! A configured marginals metric ([`MarginalsMetric`]): its config, the
//! sets of attributes and their oracles, the device's side (an event object
//! to one report) and what the aggregator reads from it.

use crate::domain::{Domain, DomainSpec};
use crate::error::{Error, ExpectedValue, FieldProblem, Requirement, Result};
use crate::frequency::{channel::Likelihood, groups::OracleGroups, oracle::{FrequencyConfig, FrequencyOracle, MAX_EPSILON, MIN_EPSILON}};
use crate::hash::fingerprint;
use crate::json::{ConfigObject, Field};
use crate::randomizer::Randomizer;
use crate::metric::kind::{Family, Kind, Memo, parse_config, ValueKind};
use crate::names::{ProtocolFamily, Selection};
use crate::privacy::validate_epsilon;
use crate::protocol::{FrequencyProtocol, MarginalsProtocol};
use crate::{protocol::Protocol, report::{memo_report, Report}};
use crate::rng::{uniform_below, CryptoRng, RngCore};
use crate::text::text;
use std::any::Any;
use std::sync::Arc;

/// What a config names to let the library pick the mechanism.
pub const CHOOSE: &str = "marginals";

/// The fewest attributes.
pub const MIN_ATTRIBUTES: usize = 2;

/// The most attributes.
pub const MAX_ATTRIBUTES: usize = 16;

/// The `way` when a config names none.
pub const DEFAULT_WAY: u64 = 2;

/// The most cells all `way`-way marginals may hold together (the
/// aggregator keeps a count per cell; a unary report has a bit per cell of
/// its set).
pub const MAX_CELLS: u64 = 1 << 20;

impl MarginalsProtocol {
    /// The protocol `"marginals"` resolves to: the one whose variance of a
    /// cell's frequency is the least, a smaller report breaking ties
    /// (relative difference below 1e-9), as frequency's `auto` chooses.
    /// OUE's `4e^ε/(e^ε−1)²` is never above OLH's, whose `g` is rounded:
    /// OUE, but where `e^ε + 1` is an integer and the two tie.
    ///
    /// ```
    /// use localdp::MarginalsProtocol;
    /// assert_eq!(MarginalsProtocol::best(1.0), MarginalsProtocol::MarginalsOue);
    /// assert_eq!(MarginalsProtocol::best(3f64.ln()), MarginalsProtocol::MarginalsOlh); // g = 4 = e^ε + 1
    /// ```
    pub fn best(epsilon: f64) -> Self {
        let variance = |p: MarginalsProtocol| {
            let oracle = p.oracle(epsilon, 64).expect("a validated ε");
            (oracle.variance(0.0, 1), oracle.report_bits())
        };
        let ((oue, oue_bits), (olh, olh_bits)) = (variance(Self::MarginalsOue), variance(Self::MarginalsOlh));
        if olh < oue * (1.0 - 1e-9) || (olh <= oue * (1.0 + 1e-9) && olh_bits < oue_bits) {
            Self::MarginalsOlh
        } else {
            Self::MarginalsOue
        }
    }

    /// The frequency oracle a set of attributes reports through.
    fn oracle(self, epsilon: f64, cells: u64) -> Result<FrequencyOracle> {
        let protocol = match self {
            Self::MarginalsOue => FrequencyProtocol::Oue,
            Self::MarginalsOlh => FrequencyProtocol::Olh,
        };
        let config = FrequencyConfig {
            protocol: Selection::Fixed(protocol),
            epsilon,
            domain: DomainSpec::Size(cells),
            d: None,
            instantaneous_epsilon: None,
        };
        FrequencyOracle::new(&config)
    }
}

/// One attribute of an event, as a config names it: `{"name": "os",
/// "domain": 6}` or with `"domain": ["linux", …]`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AttributeSpec {
    /// The field of the event (unique, not empty).
    pub name: String,
    /// Its values.
    pub domain: DomainSpec,
}

impl AttributeSpec {
    fn read(config: &ConfigObject) -> Result<Self> {
        config.only(&["name", "domain"])?;
        Ok(AttributeSpec { name: config.read("name")?, domain: config.read("domain")? })
    }
}

crate::config::read_by_hand!(AttributeSpec, AttributeSpec::read);

/// A marginals metric's configuration: `{"protocol": "marginals",
/// "epsilon": 2, "way": 2, "attributes": [{"name": "browser", "domain":
/// ["Chrome", "Firefox"]}, {"name": "os", "domain": 6}]}`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct MarginalsConfig {
    /// `marginals_oue`, `marginals_olh` or `marginals`.
    pub protocol: String,
    /// ε of one report (one event).
    pub epsilon: f64,
    /// The marginals' order: 1 to the number of attributes (default 2).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub way: Option<u64>,
    /// 2 to 16 attributes.
    pub attributes: Vec<AttributeSpec>,
}

impl MarginalsConfig {
    /// Reads a config object, refusing keys it does not know.
    pub(crate) fn read(config: &ConfigObject) -> Result<Self> {
        config.only_config(&["protocol", "epsilon", "way", "attributes"])?;
        Ok(MarginalsConfig {
            protocol: config.read("protocol")?,
            epsilon: config.read("epsilon")?,
            way: config.read_optional("way")?,
            attributes: config.read("attributes")?,
        })
    }
}

crate::config::read_by_hand!(MarginalsConfig, MarginalsConfig::read);

/// An attribute, validated.
#[derive(Debug, Clone)]
#[doc(hidden)]
pub struct Attribute {
    pub(super) name: String,
    pub(super) domain: Domain,
}

/// What the aggregation side (`localdp`) reads of it.
#[doc(hidden)]
impl Attribute {
    /// The `name` field.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The `domain` field.
    pub fn domain(&self) -> &Domain {
        &self.domain
    }
}

/// A configured marginals metric: the client's randomizer and the
/// aggregator's parameters.
///
/// Each device draws one of the `C(k, way)` sets of `way` attributes,
/// uniformly and independently of its event, and reports the event's cell
/// of that set's joint domain through the set's oracle (OUE or OLH over the
/// product of the set's domains), at the full ε.
///
/// ```
/// use localdp::{MarginalsMetric, MarginalsProtocol, SimulationRng};
/// let metric = MarginalsMetric::from_json(r#"{"protocol":"marginals","epsilon":2,"attributes":[
///     {"name":"browser","domain":["Chrome","Firefox","Safari"]},{"name":"os","domain":4},{"name":"mobile","domain":2}]}"#)?;
/// assert_eq!((metric.protocol(), metric.epsilon(), metric.way()), (MarginalsProtocol::MarginalsOue, 2.0, 2));
/// assert_eq!(metric.attribute_names(), ["browser", "os", "mobile"]);
/// assert_eq!(metric.sets(), [vec![0, 1], vec![0, 2], vec![1, 2]]); // every pair
/// assert_eq!(metric.cells(0), 12); // 3 browsers × 4 systems
/// let event = metric.event_of(r#"{"os":"3","browser":"Safari","mobile":1}"#)?; // digits or a number
/// assert_eq!((event.clone(), metric.cell_of(0, &event)), (vec![2, 3, 1], Some(11)));
/// let mut rng = SimulationRng::seed_from_u64(1); // simulation only
/// let report = metric.randomize_event(&event, 2, &mut rng)?;
/// metric.validate(&report)?;
/// assert!(metric.randomize_event(&[2, 4, 1], 0, &mut rng).is_err() && metric.cell_of(0, &[2, 3]).is_none()); // os 4; too short
/// assert!(!metric.fingerprint().is_empty());
/// assert!(metric.event_of(r#"{"os":3,"browser":"Safari"}"#).is_err()); // "mobile" is missing
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct MarginalsMetric {
    pub(super) protocol: MarginalsProtocol,
    pub(super) epsilon: f64,
    pub(super) way: usize,
    pub(super) attributes: Vec<Attribute>,
    /// Each set's attributes, increasing, in lexicographic order.
    pub(super) sets: Vec<Vec<usize>>,
    /// Each set's oracle.
    pub(super) groups: OracleGroups,
    pub(super) fingerprint: String,
}

/// What the aggregation side (`localdp`) reads of it.
#[doc(hidden)]
impl MarginalsMetric {
    /// The `attributes` field.
    pub fn attributes(&self) -> &[Attribute] {
        &self.attributes
    }
    /// The `groups` field.
    pub fn groups(&self) -> &OracleGroups {
        &self.groups
    }
}

/// Every increasing `way`-subset of `0..k`, in lexicographic order.
fn subsets(k: usize, way: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut current: Vec<usize> = (0..way).collect();
    loop {
        out.push(current.clone());
        // The last position that can still move right.
        let Some(i) = (0..way).rev().find(|&i| current[i] < k - way + i) else { return out };
        current[i] += 1;
        for j in i + 1..way {
            current[j] = current[j - 1] + 1;
        }
    }
}

impl MarginalsMetric {
    /// Validates the configuration.
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn new(config: &MarginalsConfig) -> Result<Self> {
        let protocol = match config.protocol.as_str() {
            CHOOSE => None,
            name => Some(name.parse::<MarginalsProtocol>().map_err(|e| Error::malformed_key("protocol", text!(e)))?),
        };
        let epsilon = validate_epsilon(config.epsilon)?;
        if !(MIN_EPSILON..=MAX_EPSILON).contains(&epsilon) {
            let metric = Some("marginals");
            return Err(Error::invalid("epsilon", Requirement::Range { min: MIN_EPSILON, max: MAX_EPSILON, found: epsilon, metric }));
        }
        let k = config.attributes.len();
        if !(MIN_ATTRIBUTES..=MAX_ATTRIBUTES).contains(&k) {
            return Err(Error::invalid("attributes", Requirement::Length { min: MIN_ATTRIBUTES, max: MAX_ATTRIBUTES, found: k }));
        }
        let names: Vec<String> = config.attributes.iter().map(|a| a.name.clone()).collect();
        if names.iter().any(String::is_empty) {
            return Err(Error::invalid("attribute names", Requirement::NonEmpty));
        }
        if let Some(repeated) = crate::domain::first_repeat(&names) {
            return Err(Error::invalid("attribute names", Requirement::Distinct { repeated }));
        }
        let attributes = config
            .attributes
            .iter()
            .map(|a| Ok(Attribute { name: a.name.clone(), domain: Domain::new(&a.domain)? }))
            .collect::<Result<Vec<_>>>()?;
        let way = config.way.unwrap_or(DEFAULT_WAY);
        if !(1..=k as u64).contains(&way) {
            return Err(Error::invalid("way", Requirement::IntegerRange { min: 1, max: k as u64, found: way }));
        }
        let way = way as usize;
        let sets = subsets(k, way);
        // Saturating: the bound is checked before anything is allocated.
        let cells = |set: &[usize]| set.iter().fold(1u64, |c, &a| c.saturating_mul(attributes[a].domain.len() as u64));
        let total = sets.iter().fold(0u64, |t, set| t.saturating_add(cells(set)));
        if total > MAX_CELLS {
            return Err(Error::invalid("cells", Requirement::IntegerRange { min: 2, max: MAX_CELLS, found: total }));
        }
        let protocol = protocol.unwrap_or_else(|| MarginalsProtocol::best(epsilon));
        let oracles = sets.iter().map(|set| protocol.oracle(epsilon, cells(set))).collect::<Result<Vec<_>>>()?;
        let mut canonical = text!("marginals:", protocol.name(), ":", way).into_bytes();
        for a in &attributes {
            canonical.extend_from_slice(&(a.name.len() as u64).to_le_bytes());
            canonical.extend_from_slice(a.name.as_bytes());
            canonical.extend_from_slice(a.domain.fingerprint().as_bytes());
        }
        let fingerprint = fingerprint(&canonical);
        let groups = OracleGroups::new(oracles, "the set of attributes");
        Ok(MarginalsMetric { protocol, epsilon, way, attributes, sets, groups, fingerprint })
    }

    /// Parses and validates a JSON config.
    ///
    /// ```
    /// use localdp::MarginalsMetric;
    /// let metric = MarginalsMetric::from_json(r#"{"protocol":"marginals_olh","epsilon":1,"way":3,
    ///     "attributes":[{"name":"a","domain":2},{"name":"b","domain":3},{"name":"c","domain":4}]}"#)?;
    /// assert_eq!((metric.sets().len(), metric.cells(0)), (1, 24));
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self> {
        Self::new(&MarginalsConfig::read(&parse_config(text)?)?)
    }

    /// The resolved protocol.
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn protocol(&self) -> MarginalsProtocol {
        self.protocol
    }

    /// ε of one report.
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The marginals' order.
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn way(&self) -> usize {
        self.way
    }

    /// The fingerprint reports carry.
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The attributes' names, in config order.
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn attribute_names(&self) -> Vec<&str> {
        self.attributes.iter().map(|a| a.name.as_str()).collect()
    }

    /// The domain of attribute `a` (config order).
    #[cfg_attr(feature = "aggregate", doc = "", doc = "See the example on [`MarginalsMetric::likelihood`].")]
    pub fn domain(&self, a: usize) -> &Domain {
        &self.attributes[a].domain
    }

    /// The sets of attributes a device draws one of (each increasing, in
    /// lexicographic order).
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn sets(&self) -> &[Vec<usize>] {
        &self.sets
    }

    /// The frequency oracle of set `set`.
    #[cfg_attr(feature = "aggregate", doc = "", doc = "See the example on [`MarginalsMetric::likelihood`].")]
    pub fn oracle(&self, set: usize) -> &FrequencyOracle {
        &self.groups.oracles()[set]
    }

    /// The cells of set `set`: the product of its attributes' domains.
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn cells(&self, set: usize) -> usize {
        self.oracle(set).domain().len()
    }

    /// An event's cell in set `set`: its values' indices in mixed radix,
    /// the set's first attribute the most significant; `None` if `event`
    /// is not one of this metric (a value per attribute, each in its
    /// domain) or `set` is not one of its sets.
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn cell_of(&self, set: usize, event: &[usize]) -> Option<usize> {
        (set < self.sets.len() && self.is_event(event)).then(|| self.cell(set, event))
    }

    /// True for a value index per attribute, each in its domain.
    fn is_event(&self, event: &[usize]) -> bool {
        event.len() == self.attributes.len() && event.iter().zip(&self.attributes).all(|(&v, a)| v < a.domain.len())
    }

    /// [`Self::cell_of`] of an event known to be one.
    fn cell(&self, set: usize, event: &[usize]) -> usize {
        self.sets[set].iter().fold(0, |cell, &a| cell * self.attributes[a].domain.len() + event[a])
    }

    /// The values' indices of cell `cell` of set `set` (the inverse of
    /// [`Self::cell_of`] on the set's attributes).
    #[doc(hidden)]
    pub fn values_of(&self, set: usize, mut cell: usize) -> Vec<usize> {
        let mut values = vec![0; self.sets[set].len()];
        for (i, &a) in self.sets[set].iter().enumerate().rev() {
            let d = self.attributes[a].domain.len();
            values[i] = cell % d;
            cell /= d;
        }
        values
    }

    /// An event object's JSON text as each attribute's value index, in
    /// config order. Every attribute must be given, and nothing else: a
    /// label for a domain of labels, an integer (or its digits) for a sized
    /// one. An error names a field of the config, never a value nor a key
    /// of the event (an event's keys are the user's data too).
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn event_of(&self, text: &str) -> Result<Vec<usize>> {
        let object = crate::json::parse_object(text).ok_or(Error::InvalidValue { expected: ExpectedValue::Object })?;
        let mut event: Vec<Option<usize>> = vec![None; self.attributes.len()];
        for (name, field) in object.fields() {
            let a = self.attributes.iter().position(|a| a.name == name);
            let a = a.ok_or(Error::InvalidValue { expected: ExpectedValue::KnownFields { count: self.attributes.len() } })?;
            let invalid = |problem| Error::InvalidField { field: self.attributes[a].name.clone(), problem };
            let domain = &self.attributes[a].domain;
            let index = match field {
                Field::Number(_, whole) if domain.is_sized() => whole.and_then(|n| usize::try_from(n).ok()).filter(|&i| i < domain.len()),
                Field::Text(digits) if domain.is_sized() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
                    domain.index_of(&digits).ok()
                }
                _ if domain.is_sized() => return Err(invalid(FieldProblem::NotANumber)),
                Field::Text(label) => domain.index_of(&label).ok(),
                _ => None,
            };
            event[a] = Some(index.ok_or_else(|| invalid(FieldProblem::NotInDomain))?);
        }
        event
            .iter()
            .zip(&self.attributes)
            .map(|(v, a)| v.ok_or_else(|| Error::InvalidField { field: a.name.clone(), problem: FieldProblem::Missing }))
            .collect()
    }

    /// A report of an event (its values' indices, [`Self::event_of`]) from
    /// a device that drew set `set` (taken modulo the number of sets); an
    /// error if `event` is not one of this metric's. For simulation and
    /// tests: the ε holds only when `set` is drawn uniformly and
    /// independently of the event, as [`crate::Randomizer::randomize`] does;
    /// a set chosen from the event reveals it.
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn randomize_event(&self, event: &[usize], set: usize, rng: &mut dyn RngCore) -> Result<Report> {
        if !self.is_event(event) {
            return Err(Error::InvalidValue { expected: ExpectedValue::Object });
        }
        let set = set % self.sets.len();
        Ok(crate::metric::kind::envelope(self, self.groups.randomize(set, self.cell(set, event), rng)))
    }

    fn randomize_value(&self, text: &str, rng: &mut dyn RngCore) -> Result<Report> {
        let event = self.event_of(text)?;
        let set = uniform_below(rng, self.sets.len() as u64) as usize;
        self.randomize_event(&event, set, rng)
    }

    /// Checks a report against this configuration.
    ///
    /// See the example on [`MarginalsMetric`].
    pub fn validate(&self, report: &Report) -> Result<()> {
        crate::report::check_envelope(report, Protocol::Marginals(self.protocol), self.epsilon, &self.fingerprint)?;
        self.groups.validate(&report.payload).map(drop)
    }

    /// `P[report | event]` of the realized channel (the set's `1/C(k, way)`
    /// times its oracle's probability for the event's cell); 0 for a report
    /// this configuration refuses.
    ///
    /// With [`MarginalsMetric::channel_outputs`], an exact check:
    ///
    /// ```
    /// use localdp::{MarginalsMetric, SimulationRng};
    /// let metric = MarginalsMetric::from_json(r#"{"protocol":"marginals_oue","epsilon":1,
    ///     "attributes":[{"name":"a","domain":2},{"name":"b","domain":["x","y"]}]}"#)?;
    /// assert_eq!((metric.domain(1).len(), metric.oracle(0).domain().len()), (2, 4));
    /// let outputs = metric.channel_outputs(&mut SimulationRng::seed_from_u64(1)); // simulation only
    /// let total: f64 = outputs.iter().map(|r| metric.likelihood(&[1, 0], r).probability()).sum();
    /// assert!((total - 1.0).abs() < 1e-12); // every output of the one pair's 4 cells
    /// # Ok::<(), localdp::Error>(())
    /// ```
    #[cfg(feature = "aggregate")]
    pub fn likelihood(&self, event: &[usize], report: &Report) -> Likelihood {
        if !self.is_event(event) || self.validate(report).is_err() {
            return Likelihood::new(0.0);
        }
        self.groups.likelihood(|set| self.cell(set, event), &report.payload)
    }

    /// Reports that exercise every set's channel (all of a unary set's
    /// outputs up to 16 cells; sampled seeds for OLH).
    #[cfg_attr(feature = "aggregate", doc = "", doc = "See the example on [`MarginalsMetric::likelihood`].")]
    #[cfg(feature = "aggregate")]
    pub fn channel_outputs(&self, rng: &mut dyn RngCore) -> Vec<Report> {
        self.groups.channel_outputs(rng).into_iter().map(|payload| crate::metric::kind::envelope(self, payload)).collect()
    }

    /// An event as JSON text, from its values' indices.
    #[cfg(feature = "aggregate")]
    fn event_json(&self, event: &[usize]) -> String {
        let object: serde_json::Map<String, serde_json::Value> =
            self.attributes.iter().zip(event).map(|(a, &v)| (a.name.clone(), a.domain.value_json(v).unwrap_or_default())).collect();
        serde_json::to_string(&object).unwrap_or_default()
    }
}

impl Randomizer for MarginalsMetric {
    /// An event object's JSON text (`{"browser": "Chrome", "os": 3}`).
    type Value = str;

    fn randomize<R: CryptoRng + RngCore>(&self, value: &str, rng: &mut R) -> Result<Report> {
        self.randomize_value(value, rng)
    }
}

/// Marginals configs: `"protocol"` one of [`MarginalsProtocol`] or
/// `"marginals"`.
pub(crate) static FAMILY: Family = Family {
    claims: |protocol, _| protocol == CHOOSE || protocol.parse::<MarginalsProtocol>().is_ok(),
    build: |config, _| {
        let config = MarginalsConfig::read(&config)?;
        Ok(Arc::new(MarginalsMetric::new(&config)?))
    },
    protocols: || text!(MarginalsProtocol::names(), ", ", CHOOSE),
    shape: "attributes",
    label: "marginals",
};

impl Kind for MarginalsMetric {
    fn protocol(&self) -> Protocol {
        Protocol::Marginals(self.protocol)
    }
    fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn randomize_text(&self, text: &str, rng: &mut dyn RngCore) -> Result<Report> {
        self.randomize_value(text, rng)
    }
    fn family(&self) -> &'static str {
        "marginals"
    }
    fn value_kind(&self) -> ValueKind {
        ValueKind::Object
    }
    fn memo(&self) -> Option<&dyn Memo> {
        Some(self)
    }
    /// The set as `cohort`, and its oracle's fields.
    #[cfg(feature = "aggregate")]
    fn report_fields(&self) -> crate::report::ReportFields {
        self.groups.report_fields()
    }
    /// Every attribute's first value, and every attribute's last.
    #[cfg(feature = "aggregate")]
    fn neighbours(&self) -> [String; 2] {
        let last: Vec<usize> = self.attributes.iter().map(|a| a.domain.len() - 1).collect();
        [self.event_json(&vec![0; self.attributes.len()]), self.event_json(&last)]
    }
    /// The level of the likelihood ratio between the two neighbours (as
    /// for frequency metrics): its top level gathers, over every set, the
    /// reports that support one neighbour's cell and not the other's (OLH:
    /// the reported bucket is one's hash and not the other's).
    #[cfg(feature = "aggregate")]
    fn events(&self, report: &Report) -> Vec<String> {
        let last: Vec<usize> = self.attributes.iter().map(|a| a.domain.len() - 1).collect();
        let [first, last] = [vec![0; self.attributes.len()], last].map(|event| self.likelihood(&event, report));
        if first.is_zero() || last.is_zero() {
            return Vec::new();
        }
        vec![crate::metric::kind::likelihood_level(first.log_ratio(last))]
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Memoization draws the set once per install and keeps one permanent
/// report per cell of it: events that agree on the set's attributes share
/// a report (and a charge of the ledger), others get one each.
impl Memo for MarginalsMetric {
    fn draw(&self, rng: &mut dyn RngCore) -> Vec<u64> {
        vec![uniform_below(rng, self.sets.len() as u64)]
    }
    fn draws_valid(&self, draws: &[u64]) -> bool {
        matches!(draws, [set] if *set < self.sets.len() as u64)
    }
    fn key(&self, value: &str, draws: &[u64]) -> Result<String> {
        let set = draws.first().copied().unwrap_or(0) as usize;
        Ok(text!(self.cell(set % self.sets.len(), &self.event_of(value)?)))
    }
    fn permanent(&self, value: &str, draws: &[u64], rng: &mut dyn RngCore) -> Result<Vec<u8>> {
        let event = self.event_of(value)?;
        Ok(self.randomize_event(&event, draws.first().copied().unwrap_or(0) as usize, rng)?.to_memo())
    }
    fn report(&self, permanent: &[u8], _draws: &[u64], _rng: &mut dyn RngCore) -> Result<Report> {
        memo_report(permanent, Protocol::Marginals(self.protocol), self.epsilon, &self.fingerprint, |p| self.groups.validate(p).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::subsets;

    #[test]
    fn subsets_are_every_increasing_choice_in_order() {
        assert_eq!(subsets(4, 2), [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]);
        assert_eq!(subsets(3, 3), [[0, 1, 2]]);
        assert_eq!(subsets(3, 1), [[0], [1], [2]]);
        assert_eq!(subsets(16, 8).len(), 12_870);
    }
}
