//! Any metric behind one config format: what the CLI, the collector and the
//! JavaScript package use.
//!
//! A config is parsed by the family that claims its `"protocol"` (the list
//! `FAMILIES`); the family builds a typed mechanism, and from here on
//! everything goes through two object-safe traits, `Kind` (the client
//! side and the metric's identity) and `DynAggregate` (the server side),
//! so that no code outside a family's own module matches on the family.
//!
//! What a family implements (`Kind`) and the list of families ([`Metric`])
//! are the device side's, `localdp-core`'s, re-exported here;
//! `aggregator.rs` ([`Aggregator`], [`Estimate`]) sits above the families'
//! aggregators, with `lines.rs` (JSON Lines) on top.

mod aggregator;
mod lines;

pub use aggregator::{Aggregator, Estimate};
pub use localdp_core::metric::*;
