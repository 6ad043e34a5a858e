//! # localdp
//!
//! Telemetry under **local differential privacy**: each value is randomized
//! on the user's own device before it is sent, and an aggregator debiases the
//! collected reports into histograms with honest error bars. Nobody, the
//! collector included, sees a raw value.
//!
//! * [`FrequencyOracle`]: a configured protocol (GRR, SUE, OUE, BLH, OLH,
//!   Hadamard response (HR), Hadamard randomized response (HRR), subset
//!   selection, dBitFlip, or `auto`, which picks among all but dBitFlip); its
//!   [`randomize`](FrequencyOracle::randomize) is the client.
//! * [`FrequencyAggregator`]: validates, counts and merges reports and returns
//!   a [`FrequencyEstimate`].
//! * [`NumericMetric`]: the mean of a bounded number (Duchi, Laplace,
//!   Piecewise, Hybrid, 1BitMean, or `auto`), every report on a public grid;
//!   [`NumericAggregator`] returns a [`NumericEstimate`].
//! * [`RapporMetric`]: strings from an open domain (RAPPOR);
//!   [`RapporAggregator`] decodes the reports against candidate strings.
//! * [`HeavyHitterMetric`]: open domains at scale: count-mean sketches (CMS,
//!   HCMS) that score any candidate, and discovery of the most frequent
//!   strings without a dictionary (PEM, TreeHist); [`HeavyHitterAggregator`].
//! * [`DistributionMetric`]: the whole distribution of a bounded number
//!   (Square Wave, hierarchical histograms): [`DistributionAggregator`]
//!   returns a histogram, quantiles and the mean with 95% intervals.
//! * [`KeyValueMetric`]: a user's whole key-value map (which features,
//!   and how long) in one report charged ε once (PCKV);
//!   [`KeyValueAggregator`] returns each key's frequency and mean.
//! * [`Metric`], [`Aggregator`], [`Estimate`]: any kind behind one config
//!   format, as the CLI and the JavaScript package use them.
//! * [`SecureRng`] is the only source a client should use;
//!   [`SimulationRng`] is seeded, for tests and simulation only.
//!
//! Every mechanism implements the trait pair [`Randomizer`] (the device)
//! and [`Aggregate`] (the server: add, merge, estimate, and a byte state,
//! [`state`], that merges exactly across machines).
//!
//! The formulas are those of `docs/PROTOCOLS.md`; every mechanism's realized
//! channel can be enumerated with [`FrequencyOracle::likelihood`].

#![deny(missing_docs)]
// Without the `aggregate` feature (the browser client's wasm module) the
// server side (aggregate/, mechanism.rs, state.rs, columnar.rs, the
// families' aggregators, the auditor) is not compiled; what the device
// files keep for it (the channel enumerations the auditor reads, a few
// decoding helpers) is unused there, and the linker drops it.
#![cfg_attr(not(feature = "aggregate"), allow(dead_code, unused_imports))]

#[cfg(not(any(
    feature = "frequency",
    feature = "numeric",
    feature = "rappor",
    feature = "heavy",
    feature = "distribution",
    feature = "key_value",
    feature = "marginals"
)))]
compile_error!("localdp needs at least one family's feature (the default `aggregate` has them all; a client: `--features numeric`)");

pub mod accounting;
#[cfg(feature = "aggregate")]
pub mod aggregate;
#[cfg(feature = "aggregate")]
pub mod audit;
pub mod client;
#[cfg(feature = "aggregate")]
pub mod columnar;
mod config;
#[cfg(feature = "distribution")]
pub mod distribution;
pub mod domain;
pub mod error;
#[cfg(any(feature = "frequency", feature = "heavy", feature = "distribution", feature = "marginals"))]
pub mod frequency;
pub mod hash;
#[cfg(feature = "heavy")]
pub mod heavy;
mod json;
#[cfg(feature = "key_value")]
pub mod key_value;
#[cfg(feature = "marginals")]
pub mod marginals;
#[cfg(feature = "aggregate")]
pub mod mechanism;
pub mod metric;
mod names;
mod number;
#[cfg(any(feature = "numeric", feature = "distribution", feature = "key_value"))]
pub mod numeric;
#[cfg(feature = "aggregate")]
pub mod plan;
pub mod privacy;
mod protocol;
mod randomizer;
#[cfg(any(feature = "rappor", feature = "heavy"))]
pub mod rappor;
pub mod report;
pub mod rng;
mod settings;
#[cfg(feature = "aggregate")]
pub mod simulate;
#[cfg(feature = "aggregate")]
pub mod state;
mod text;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub mod wasm;

#[cfg(feature = "aggregate")]
pub use aggregate::{
    FrequencyAggregator, FrequencyEstimate, MeanEstimate, NumericAggregator, NumericEstimate, PostProcessing,
    RejectionCounts, ValueEstimate,
};
#[cfg(feature = "distribution")]
pub use distribution::{DistributionConfig, DistributionMetric};
pub use domain::{Domain, DomainSpec};
pub use error::{DomainKind, Error, ExpectedValue, FieldProblem, MergeConflict, Rejection, Requirement, Result};
#[cfg(feature = "key_value")]
pub use key_value::{KeyValueConfig, KeyValueMetric};
#[cfg(feature = "marginals")]
pub use marginals::{MarginalsConfig, MarginalsMetric};
#[cfg(feature = "heavy")]
pub use heavy::{HeavyHitterConfig, HeavyHitterMetric};
#[cfg(any(feature = "frequency", feature = "heavy", feature = "distribution", feature = "marginals"))]
pub use frequency::{FrequencyConfig, FrequencyOracle, Likelihood};
#[cfg(feature = "aggregate")]
pub use mechanism::Aggregate;
pub use randomizer::Randomizer;
#[cfg(feature = "aggregate")]
pub use metric::{Aggregator, Estimate};
#[cfg(feature = "aggregate")]
pub use {
    distribution::{DistributionAggregator, DistributionEstimate},
    heavy::{HeavyHitterAggregator, HeavyHitterEstimate},
    key_value::{KeyValueAggregator, KeyValueEstimate},
    marginals::{MarginalsAggregator, MarginalsEstimate},
};
pub use metric::Metric;
pub use names::{ProtocolFamily, Selection, UnknownProtocol};
#[cfg(any(feature = "numeric", feature = "distribution", feature = "key_value"))]
pub use numeric::{NumericConfig, NumericMetric, RangeSpec};
#[cfg(feature = "aggregate")]
pub use rappor::RapporAggregator;
#[cfg(any(feature = "rappor", feature = "heavy"))]
pub use rappor::{RapporConfig, RapporMetric};
pub use protocol::{
    DistributionProtocol, FrequencyProtocol, HeavyHitterProtocol, KeyValueProtocol, MarginalsProtocol, NumericProtocol,
    OpenDomainProtocol,
};
pub use report::{Payload, Protocol, Report};
pub use rng::{SecureRng, SimulationRng};
pub use error::StateError;

/// The Rust blocks of the guides in `docs/` run as doctests; the blocks in
/// other languages are run by `tests/js/docs.test.mjs`, which also checks
/// that every page holding a Rust block is included here.
#[cfg(doctest)]
#[doc = include_str!("../docs/frequencies.md")]
pub struct FrequenciesGuide;
