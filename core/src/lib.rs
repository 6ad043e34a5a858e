//! # localdp-core
//!
//! The device side of [localdp](https://docs.rs/localdp): what a browser,
//! an app or a command line runs before anything leaves the device. Every
//! family's config type and validation, its randomizer with the channel
//! constants both sides read, the versioned report, memoized responses and
//! the per-device ε ledger ([`client`]).
//!
//! The aggregation side (estimates, state bytes, the auditor) is the
//! `localdp` crate above this one, which re-exports everything here; a Rust
//! user depends on `localdp`. This crate has no serde, no JSON library and
//! no linear algebra: configs are read field by field through
//! [`ConfigObject`](json) (this crate's own parser natively, JS objects in
//! the wasm build) and reports and states are written by hand, so the
//! browser's client module is built from this crate alone.
//!
//! Each family is a cargo feature (all on by default).

#![deny(missing_docs)]
// The internal modules the aggregation side reads (`#[doc(hidden)]`)
// document their private neighbours for a reader of the code.
#![allow(rustdoc::private_intra_doc_links)]
// Without `aggregate` (the browser's client module) what the device files
// keep for the aggregation side is unused, and the linker drops it.
#![cfg_attr(not(feature = "aggregate"), allow(dead_code, unused_imports))]

#[cfg(not(any(
    feature = "grr",
    feature = "numeric",
    feature = "rappor",
    feature = "heavy",
    feature = "distribution",
    feature = "key_value",
    feature = "marginals"
)))]
compile_error!("localdp-core needs at least one family's feature (the default has them all; a client: `--features numeric`, or `grr`)");

pub mod accounting;
#[doc(hidden)]
pub mod bytes;
pub mod client;
#[doc(hidden)]
pub mod config;
#[cfg(feature = "distribution")]
pub mod distribution;
pub mod domain;
pub mod error;
#[cfg(any(feature = "grr", feature = "oracles"))]
pub mod frequency;
pub mod hash;
#[cfg(feature = "heavy")]
pub mod heavy;
#[cfg(all(target_arch = "wasm32", target_os = "unknown", not(js)))]
#[doc(hidden)]
pub mod host;
#[cfg(js)]
#[doc(hidden)]
pub mod js;
#[doc(hidden)]
pub mod json;
#[cfg(feature = "key_value")]
pub mod key_value;
#[cfg(feature = "marginals")]
pub mod marginals;
pub mod metric;
#[doc(hidden)]
pub mod names;
#[doc(hidden)]
pub mod number;
#[cfg(any(feature = "numeric", feature = "distribution", feature = "key_value"))]
pub mod numeric;
pub mod privacy;
#[doc(hidden)]
pub mod protocol;
#[doc(hidden)]
pub mod randomizer;
#[cfg(any(feature = "rappor", feature = "heavy"))]
pub mod rappor;
pub mod report;
pub mod rng;
#[doc(hidden)]
pub mod settings;
#[doc(hidden)]
pub mod text;

#[cfg(feature = "distribution")]
pub use distribution::{DistributionConfig, DistributionMetric};
pub use domain::{Domain, DomainSpec};
pub use error::{DomainKind, Error, ExpectedValue, FieldProblem, MergeConflict, Rejection, Requirement, Result, StateError};
#[cfg(any(feature = "grr", feature = "oracles"))]
pub use frequency::{FrequencyConfig, FrequencyOracle, Likelihood};
#[cfg(feature = "heavy")]
pub use heavy::{HeavyHitterConfig, HeavyHitterMetric};
#[cfg(feature = "key_value")]
pub use key_value::{KeyValueConfig, KeyValueMetric};
#[cfg(feature = "marginals")]
pub use marginals::{MarginalsConfig, MarginalsMetric};
pub use metric::Metric;
pub use names::{ProtocolFamily, Selection, UnknownProtocol};
#[cfg(any(feature = "numeric", feature = "distribution", feature = "key_value"))]
pub use numeric::{NumericConfig, NumericMetric, RangeSpec};
pub use protocol::{
    DistributionProtocol, FrequencyProtocol, HeavyHitterProtocol, KeyValueProtocol, MarginalsProtocol, NumericProtocol,
    OpenDomainProtocol,
};
pub use randomizer::Randomizer;
#[cfg(any(feature = "rappor", feature = "heavy"))]
pub use rappor::{RapporConfig, RapporMetric};
pub use report::{Payload, Protocol, Report};
pub use rng::{SecureRng, SimulationRng};
