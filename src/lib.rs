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

// The device side is `localdp-core`, whose public modules are this
// crate's too. The aggregation side's files name the core's items by their
// `localdp_core::` paths, never through these re-exports.
pub use localdp_core::{client, domain, error, frequency, hash, numeric, privacy, report, rng};

pub mod accounting;
pub mod aggregate;
pub mod audit;
pub mod columnar;
pub mod distribution;
pub mod heavy;
pub mod key_value;
pub mod marginals;
pub mod mechanism;
pub mod metric;
pub mod plan;
pub mod rappor;
pub mod simulate;
pub mod state;

pub use aggregate::{
    FrequencyAggregator, FrequencyEstimate, MeanEstimate, NumericAggregator, NumericEstimate, PostProcessing,
    RejectionCounts, ValueEstimate,
};
pub use distribution::{DistributionAggregator, DistributionEstimate};
pub use heavy::{HeavyHitterAggregator, HeavyHitterEstimate};
pub use key_value::{KeyValueAggregator, KeyValueEstimate};
pub use localdp_core::{
    DistributionConfig, DistributionMetric, DistributionProtocol, Domain, DomainKind, DomainSpec, Error, ExpectedValue,
    FieldProblem, FrequencyConfig, FrequencyOracle, FrequencyProtocol, HeavyHitterConfig, HeavyHitterMetric,
    HeavyHitterProtocol, KeyValueConfig, KeyValueMetric, KeyValueProtocol, Likelihood, MarginalsConfig, MarginalsMetric,
    MarginalsProtocol, MergeConflict, Metric, NumericConfig, NumericMetric, NumericProtocol, OpenDomainProtocol, Payload,
    Protocol, ProtocolFamily, RangeSpec, RapporConfig, RapporMetric, Randomizer, Rejection, Report, Requirement, Result,
    SecureRng, Selection, SimulationRng, StateError, UnknownProtocol,
};
pub use marginals::{MarginalsAggregator, MarginalsEstimate};
pub use mechanism::Aggregate;
pub use metric::{Aggregator, Estimate};
pub use rappor::RapporAggregator;

/// The Rust blocks of the guides in `docs/` run as doctests; the blocks in
/// other languages are run by `tests/js/docs.test.mjs`, which also checks
/// that every page holding a Rust block is included here.
#[cfg(doctest)]
#[doc = include_str!("../docs/frequencies.md")]
pub struct FrequenciesGuide;
