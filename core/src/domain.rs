//! The set of values a categorical metric can take.

use crate::error::{DomainKind, Error, Requirement, Result};
use crate::hash::{fingerprint, key64};
use crate::json::{Field, FromField};
use crate::text::text;

/// The largest supported domain (values or labels).
pub const MAX_DOMAIN: usize = 1 << 22;

/// Either the integers `0..d` or a list of distinct strings: a validated
/// domain. The only way to make one is [`Domain::new`], [`Domain::size`] or
/// [`Domain::labels`], which check `2 ≤ d ≤` [`MAX_DOMAIN`] and that labels
/// are distinct, so every `Domain` has at least two values.
///
/// In JSON: `1024` or `["chrome", "firefox", "safari"]`.
///
/// What a domain holds (its getters):
///
/// ```
/// use localdp::Domain;
/// let sized = Domain::size(4)?;
/// assert_eq!((sized.len(), sized.is_sized(), sized.is_empty(), sized.label_list()), (4, true, false, None));
/// assert_eq!((sized.index_of("3")?, sized.value_text(3)), (3, Some("3".to_string())));
/// assert!(sized.index_of("4").is_err() && sized.value_json(4).is_none());
/// let labels = Domain::labels(vec!["no".into(), "yes".into()])?;
/// assert_eq!(labels.label_list(), Some(&["no".to_string(), "yes".to_string()][..]));
/// assert_eq!((labels.value_json(1), labels.value_json(2)), (Some(serde_json::json!("yes")), None));
/// assert_eq!(sized.value_json(1), Some(serde_json::json!(1)));
/// // Local hashing hashes each value's text; reports carry the fingerprint.
/// assert_eq!(labels.keys(), [localdp::hash::key64(b"no"), localdp::hash::key64(b"yes")]);
/// assert_ne!(Domain::size(2)?.fingerprint(), labels.fingerprint());
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Domain {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    /// The integers `0..d`.
    Size(usize),
    /// Distinct strings; a value's index is its position in the list.
    Labels {
        /// The labels, in order.
        labels: Vec<String>,
        /// Each label's hash key ([`key64`]) and index, sorted by key and
        /// then label, for a binary search (no hash table: the wasm modules
        /// link none).
        sorted: Vec<(u64, usize)>,
    },
}

impl PartialEq for Domain {
    fn eq(&self, other: &Self) -> bool {
        match (&self.repr, &other.repr) {
            (Repr::Size(a), Repr::Size(b)) => a == b,
            (Repr::Labels { labels: a, .. }, Repr::Labels { labels: b, .. }) => a == b,
            _ => false,
        }
    }
}

impl Eq for Domain {}

impl Domain {
    /// Validates a domain from its config form.
    ///
    /// ```
    /// use localdp::{Domain, DomainSpec};
    /// assert_eq!(Domain::new(&DomainSpec::Size(8))?, Domain::size(8)?);
    /// assert_eq!(Domain::new(&DomainSpec::Labels(vec!["a".into(), "b".into()]))?.len(), 2);
    /// assert!(Domain::new(&DomainSpec::Size(1)).is_err()); // at least two values
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn new(spec: &DomainSpec) -> Result<Self> {
        match spec {
            DomainSpec::Size(n) => Domain::size(usize::try_from(*n).unwrap_or(usize::MAX)),
            DomainSpec::Labels(labels) => Domain::labels(labels.clone()),
        }
    }

    /// `0..d`, `2 ≤ d ≤` [`MAX_DOMAIN`].
    ///
    /// ```
    /// use localdp::domain::{Domain, MAX_DOMAIN};
    /// assert_eq!(Domain::size(MAX_DOMAIN)?.len(), MAX_DOMAIN);
    /// assert!(Domain::size(1).is_err() && Domain::size(MAX_DOMAIN + 1).is_err());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn size(d: usize) -> Result<Self> {
        if !(2..=MAX_DOMAIN).contains(&d) {
            return Err(Error::invalid(
                "domain",
                Requirement::IntegerRange { min: 2, max: MAX_DOMAIN as u64, found: d as u64 },
            ));
        }
        Ok(Domain { repr: Repr::Size(d) })
    }

    /// A list of at least two (at most [`MAX_DOMAIN`]) distinct labels.
    ///
    /// ```
    /// use localdp::Domain;
    /// let domain = Domain::labels(vec!["chrome".into(), "safari".into(), "firefox".into()])?;
    /// assert_eq!(domain.index_of("firefox")?, 2); // the config's order
    /// assert_eq!(domain.value_text(2).as_deref(), Some("firefox"));
    /// assert!(domain.index_of("lynx").is_err()); // the error does not repeat the value
    /// assert!(Domain::labels(vec!["a".into(), "a".into()]).is_err());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn labels(labels: Vec<String>) -> Result<Self> {
        if !(2..=MAX_DOMAIN).contains(&labels.len()) {
            return Err(Error::invalid("domain", Requirement::Length { min: 2, max: MAX_DOMAIN, found: labels.len() }));
        }
        let (sorted, repeated) = sorted_positions(&labels);
        if let Some(repeated) = repeated {
            return Err(Error::invalid("domain", Requirement::Distinct { repeated }));
        }
        Ok(Domain { repr: Repr::Labels { labels, sorted } })
    }

    /// The number of values `d`.
    ///
    /// See the example on [`Domain`].
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Size(d) => *d,
            Repr::Labels { labels, .. } => labels.len(),
        }
    }

    /// Never true: a domain has at least two values.
    ///
    /// See the example on [`Domain`].
    pub fn is_empty(&self) -> bool {
        false
    }

    /// True for the integers `0..d`, false for a list of labels.
    ///
    /// See the example on [`Domain`].
    pub fn is_sized(&self) -> bool {
        matches!(self.repr, Repr::Size(_))
    }

    /// The labels in index order, or `None` for the integers `0..d`.
    ///
    /// See the example on [`Domain`].
    pub fn label_list(&self) -> Option<&[String]> {
        match &self.repr {
            Repr::Size(_) => None,
            Repr::Labels { labels, .. } => Some(labels),
        }
    }

    /// The index of a value given as text (a decimal integer for a sized
    /// domain). The error does not repeat the value; it says when the value
    /// matches a label but for ASCII letter case, not which.
    ///
    /// See the example on [`Domain`].
    pub fn index_of(&self, value: &str) -> Result<usize> {
        match &self.repr {
            Repr::Size(d) => match value.parse::<usize>() {
                Ok(i) if i < *d => Ok(i),
                _ => Err(Error::ValueNotInDomain { domain: DomainKind::Size(*d) }),
            },
            Repr::Labels { labels, sorted } => {
                let key = key64(value.as_bytes());
                sorted
                    .binary_search_by(|&(k, i)| (k, labels[i].as_str()).cmp(&(key, value)))
                    .map(|at| sorted[at].1)
                    .map_err(|_| {
                        let case = labels.iter().any(|label| label.eq_ignore_ascii_case(value));
                        let n = labels.len();
                        Error::ValueNotInDomain { domain: if case { DomainKind::LabelsButCase(n) } else { DomainKind::Labels(n) } }
                    })
            }
        }
    }

    /// The value at `index` as JSON (a number or a label), or `None` if
    /// `index ≥ len()`.
    ///
    /// See the example on [`Domain`].
    #[cfg(feature = "serde")]
    pub fn value_json(&self, index: usize) -> Option<serde_json::Value> {
        match &self.repr {
            Repr::Size(d) => (index < *d).then(|| serde_json::Value::from(index)),
            Repr::Labels { labels, .. } => labels.get(index).map(|label| serde_json::Value::from(label.as_str())),
        }
    }

    /// The value at `index` as text (the form clients hash and CLIs print),
    /// or `None` if `index ≥ len()`.
    ///
    /// See the example on [`Domain`].
    pub fn value_text(&self, index: usize) -> Option<String> {
        match &self.repr {
            Repr::Size(d) => (index < *d).then(|| text!(index)),
            Repr::Labels { labels, .. } => labels.get(index).cloned(),
        }
    }

    /// The hash key of every value, in index order (for local hashing).
    ///
    /// See the example on [`Domain`].
    pub fn keys(&self) -> Vec<u64> {
        match &self.repr {
            Repr::Size(d) => (0..*d).map(|i| key64(text!(i).as_bytes())).collect(),
            Repr::Labels { labels, .. } => labels.iter().map(|label| key64(label.as_bytes())).collect(),
        }
    }

    /// A short fingerprint carried by every report, so that an aggregator can
    /// tell a report made for another domain.
    ///
    /// See the example on [`Domain`].
    pub fn fingerprint(&self) -> String {
        let mut canonical = Vec::new();
        match &self.repr {
            Repr::Size(d) => canonical.extend_from_slice(text!("size:", d).as_bytes()),
            Repr::Labels { labels, .. } => {
                canonical.extend_from_slice(b"labels");
                for label in labels {
                    canonical.extend_from_slice(&(label.len() as u64).to_le_bytes());
                    canonical.extend_from_slice(label.as_bytes());
                }
            }
        }
        fingerprint(&canonical)
    }
}

/// Each item's hash key ([`key64`]) and position, sorted by key and then
/// value (equal values in position order: integer comparisons but for the
/// keys' rare collisions), and the first position whose value repeats an
/// earlier one, if any.
fn sorted_positions(items: &[String]) -> (Vec<(u64, usize)>, Option<usize>) {
    let mut sorted: Vec<(u64, usize)> = items.iter().enumerate().map(|(i, item)| (key64(item.as_bytes()), i)).collect();
    sorted.sort_unstable_by(|&(k, a), &(l, b)| (k, &items[a], a).cmp(&(l, &items[b], b)));
    let repeated = sorted.windows(2).filter(|w| items[w[0].1] == items[w[1].1]).map(|w| w[1].1).min();
    (sorted, repeated)
}

/// The first position of `items` whose value repeats an earlier one, if any
/// (for configs' lists of distinct values).
pub(crate) fn first_repeat(items: &[String]) -> Option<usize> {
    sorted_positions(items).1
}

/// A domain as written in a config: `1024` or `["a", "b", …]`. Only its
/// shape is checked when it is parsed; [`Domain::new`] checks its values.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(untagged))]
#[non_exhaustive]
pub enum DomainSpec {
    /// The integers `0..d`.
    Size(u64),
    /// Distinct labels.
    Labels(Vec<String>),
}

/// What a config says of a domain that is neither shape.
const DOMAIN_SHAPE: &str = "domain is missing, or is neither a size (a whole number) nor a list of strings";

impl FromField for DomainSpec {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        let spec = match field {
            Field::List(_) => Vec::<String>::from_field(field).ok().map(DomainSpec::Labels),
            _ => field.as_u64().map(DomainSpec::Size),
        };
        spec.ok_or_else(|| DOMAIN_SHAPE.to_string())
    }
    fn missing(_: &str) -> String {
        DOMAIN_SHAPE.to_string()
    }
}

crate::config::read_by_hand!(DomainSpec);

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_label_in_another_case_is_said_to_be_one_without_saying_which() {
        let domain = Domain::labels(strings(&["Chrome", "Safari", "Firefox"])).unwrap();
        let error = domain.index_of("chrome").unwrap_err();
        assert_eq!(error, Error::ValueNotInDomain { domain: DomainKind::LabelsButCase(3) });
        assert_eq!(error.code(), 203);
        let message = error.to_string();
        assert!(message.contains("letter case") && !message.to_ascii_lowercase().contains("chrome"), "{message}");
        assert_eq!(domain.index_of("edge").unwrap_err(), Error::ValueNotInDomain { domain: DomainKind::Labels(3) });
        assert_eq!(domain.index_of("Chrome").unwrap(), 0);
    }

    #[test]
    fn the_first_repeat_is_the_earliest_position_that_repeats() {
        // "b" repeats at 4 and "a" at 3: the scan meets 3 first.
        assert_eq!(first_repeat(&strings(&["b", "a", "c", "a", "b"])), Some(3));
        assert_eq!(first_repeat(&strings(&["x", "x", "x"])), Some(1));
        assert_eq!(first_repeat(&strings(&["b", "a", "c"])), None);
    }

    #[test]
    fn labels_are_found_by_binary_search_in_any_order() {
        let labels = strings(&["safari", "chrome", "", "firefox", "chrome beta", "é"]);
        let domain = Domain::labels(labels.clone()).unwrap();
        for (i, label) in labels.iter().enumerate() {
            assert_eq!(domain.index_of(label).unwrap(), i, "{label}");
        }
        for absent in ["Chrome", "chrome ", "a", "zzz", "e"] {
            assert!(matches!(domain.index_of(absent), Err(Error::ValueNotInDomain { .. })), "{absent}");
        }
    }

    /// An index past the end is `None` for either kind of domain, never a
    /// panic (labels) or a number outside the domain (sizes).
    #[test]
    fn values_past_the_end_are_none() {
        let labels = Domain::labels(strings(&["a", "b", "c"])).unwrap();
        let sized = Domain::size(3).unwrap();
        for domain in [&labels, &sized] {
            assert!(domain.value_json(2).is_some() && domain.value_text(2).is_some());
            for index in [3, usize::MAX] {
                assert_eq!((domain.value_json(index), domain.value_text(index)), (None, None), "{index}");
            }
        }
        assert_eq!((labels.value_json(1), labels.value_text(1)), (Some("b".into()), Some("b".to_string())));
        assert_eq!((sized.value_json(1), sized.value_text(1)), (Some(1.into()), Some("1".to_string())));
    }
}
