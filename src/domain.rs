//! The set of values a categorical metric can take.

use crate::error::{DomainKind, Error, Requirement, Result};
use crate::hash::key64;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::HashMap;

/// The largest supported domain (values or labels).
pub const MAX_DOMAIN: usize = 1 << 22;

/// Either the integers `0..d` or a list of distinct strings: a validated
/// domain. The only way to make one is [`Domain::new`], [`Domain::size`] or
/// [`Domain::labels`], which check `2 ≤ d ≤` [`MAX_DOMAIN`] and that labels
/// are distinct, so every `Domain` has at least two values.
///
/// In JSON: `1024` or `["chrome", "firefox", "safari"]`.
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
        /// Label → index.
        index: HashMap<String, usize>,
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
    pub fn new(spec: &DomainSpec) -> Result<Self> {
        match spec {
            DomainSpec::Size(n) => Domain::size(usize::try_from(*n).unwrap_or(usize::MAX)),
            DomainSpec::Labels(labels) => Domain::labels(labels.clone()),
        }
    }

    /// `0..d`, `2 ≤ d ≤` [`MAX_DOMAIN`].
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
    pub fn labels(labels: Vec<String>) -> Result<Self> {
        if !(2..=MAX_DOMAIN).contains(&labels.len()) {
            return Err(Error::invalid("domain", Requirement::Length { min: 2, max: MAX_DOMAIN, found: labels.len() }));
        }
        let mut index = HashMap::with_capacity(labels.len());
        for (i, label) in labels.iter().enumerate() {
            if index.insert(label.clone(), i).is_some() {
                return Err(Error::invalid("domain", Requirement::Distinct { repeated: i }));
            }
        }
        Ok(Domain { repr: Repr::Labels { labels, index } })
    }

    /// The number of values `d`.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Size(d) => *d,
            Repr::Labels { labels, .. } => labels.len(),
        }
    }

    /// Never true: a domain has at least two values.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// True for the integers `0..d`, false for a list of labels.
    pub fn is_sized(&self) -> bool {
        matches!(self.repr, Repr::Size(_))
    }

    /// The labels in index order, or `None` for the integers `0..d`.
    pub fn label_list(&self) -> Option<&[String]> {
        match &self.repr {
            Repr::Size(_) => None,
            Repr::Labels { labels, .. } => Some(labels),
        }
    }

    /// The index of a value given as text (a decimal integer for a sized
    /// domain). The error does not repeat the value.
    pub fn index_of(&self, value: &str) -> Result<usize> {
        match &self.repr {
            Repr::Size(d) => match value.parse::<usize>() {
                Ok(i) if i < *d => Ok(i),
                _ => Err(Error::ValueNotInDomain { domain: DomainKind::Size(*d) }),
            },
            Repr::Labels { index, labels } => index
                .get(value)
                .copied()
                .ok_or(Error::ValueNotInDomain { domain: DomainKind::Labels(labels.len()) }),
        }
    }

    /// The value at `index` as JSON: a number or a label.
    ///
    /// # Panics
    ///
    /// For a list of labels, if `index ≥ len()`.
    pub fn value_json(&self, index: usize) -> serde_json::Value {
        match &self.repr {
            Repr::Size(_) => serde_json::Value::from(index),
            Repr::Labels { labels, .. } => serde_json::Value::from(labels[index].as_str()),
        }
    }

    /// The value at `index` as text: the form clients hash and CLIs print.
    ///
    /// # Panics
    ///
    /// For a list of labels, if `index ≥ len()`.
    pub fn value_text(&self, index: usize) -> String {
        match &self.repr {
            Repr::Size(_) => index.to_string(),
            Repr::Labels { labels, .. } => labels[index].clone(),
        }
    }

    /// The hash key of every value, in index order (for local hashing).
    pub fn keys(&self) -> Vec<u64> {
        (0..self.len()).map(|i| key64(self.value_text(i).as_bytes())).collect()
    }

    /// A short fingerprint carried by every report, so that an aggregator can
    /// tell a report made for another domain.
    pub fn fingerprint(&self) -> String {
        let mut canonical = Vec::new();
        match &self.repr {
            Repr::Size(d) => canonical.extend_from_slice(format!("size:{d}").as_bytes()),
            Repr::Labels { labels, .. } => {
                canonical.extend_from_slice(b"labels");
                for label in labels {
                    canonical.extend_from_slice(&(label.len() as u64).to_le_bytes());
                    canonical.extend_from_slice(label.as_bytes());
                }
            }
        }
        format!("{:016x}", key64(&canonical))
    }
}

/// A domain as written in a config: `1024` or `["a", "b", …]`. Only its
/// shape is checked when it is parsed; [`Domain::new`] checks its values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum DomainSpec {
    /// The integers `0..d`.
    Size(u64),
    /// Distinct labels.
    Labels(Vec<String>),
}

impl<'de> Deserialize<'de> for DomainSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Size(u64),
            Labels(Vec<String>),
        }
        match Raw::deserialize(d) {
            Ok(Raw::Size(n)) => Ok(DomainSpec::Size(n)),
            Ok(Raw::Labels(labels)) => Ok(DomainSpec::Labels(labels)),
            Err(_) => Err(serde::de::Error::custom(
                "domain is missing, or is neither a size (a whole number) nor a list of strings",
            )),
        }
    }
}
