//! Any metric behind one config format: what the CLI, the collector and the
//! JavaScript package use.
//!
//! A config is parsed by the family that claims its `"protocol"` (the list
//! `FAMILIES`); the family builds a typed mechanism, and from here on
//! everything goes through two object-safe traits, `Kind` (the client
//! side and the metric's identity) and `DynAggregate` (the server side),
//! so that no code outside a family's own module matches on the family.
//!
//! `kind.rs` holds what a family implements and sits below the families;
//! `registry.rs` (the list and [`Metric`]) above them. The server side's
//! `Aggregator` and `Estimate` are the `localdp` crate's.

#[doc(hidden)]
pub mod kind;
#[doc(hidden)]
pub mod registry;

#[cfg(feature = "serde")]
#[doc(hidden)]
pub use kind::config_object;
#[doc(hidden)]
pub use kind::{envelope, id_of, parse_config, Family, Kind, Memo};
pub use kind::{parse_numbers, ValueKind};
pub use registry::Metric;
