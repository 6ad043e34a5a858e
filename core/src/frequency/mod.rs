//! Frequency oracles: a categorical value is randomized on the client, and
//! its distribution is estimated from many reports on the server.
//!
//! Every protocol here is *pure* (Wang et al., USENIX Security 2017): a
//! report `y` supports a set of values, the true value is supported with
//! probability `p*` and any other value with probability `q* < p*`. One
//! [`FrequencyOracle`] holds a protocol's parameters, and both the client
//! ([`FrequencyOracle::randomize`](crate::Randomizer::randomize)) and the aggregator
//! (`localdp::FrequencyAggregator`) are made from it, so the two sides cannot
//! disagree about ε, `p*` or `q*`.
//!
//! The estimator of a value's count and its exact variance are
//!
//! ```text
//! ĉ_v = (S_v − n q*) / (p* − q*)
//! Var[ĉ_v] = n q*(1−q*)/(p*−q*)² + c_v (1 − p* − q*)/(p* − q*)
//! ```
//!
//! where `S_v` counts the reports that support `v`. `p*` and `q*` are the
//! *realized* probabilities of the integer-threshold coins, so the estimator is
//! exactly unbiased for the channel that actually runs.

pub(crate) mod channel;
mod dbitflip;
#[doc(hidden)]
pub mod groups;
pub(crate) mod grr;
pub(crate) mod hadamard;
mod hadamard_rr;
pub(crate) mod local_hashing;
mod longitudinal;
pub(crate) mod oracle;
mod subset;
mod unary;

pub use dbitflip::DBitFlip;
pub use grr::GeneralizedRandomizedResponse;
pub use hadamard::HadamardResponse;
pub use hadamard_rr::HadamardRandomizedResponse;
pub use local_hashing::LocalHashing;
pub use subset::SubsetSelection;
pub use unary::UnaryEncoding;
pub use crate::protocol::FrequencyProtocol;
#[cfg(feature = "aggregate")]
pub use channel::{Kernel, MemoChain};
pub use channel::{ChannelOutputs, Likelihood};
pub use oracle::{FrequencyConfig, FrequencyOracle, MAX_EPSILON, MIN_EPSILON};
