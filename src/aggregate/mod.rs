//! The server side: streaming, validating, mergeable aggregation and
//! estimates with honest error bars.

#[cfg(feature = "aggregate")]
mod frequency;
#[cfg(feature = "aggregate")]
mod kernels;
#[cfg(feature = "aggregate")]
mod numeric;
mod post;
mod tally;

#[cfg(feature = "aggregate")]
pub use frequency::{FrequencyAggregator, FrequencyEstimate, ValueEstimate};
#[cfg(feature = "aggregate")]
pub use numeric::{MeanEstimate, NumericAggregator, NumericEstimate};
pub(crate) use tally::{summed, Tally};
pub use tally::{RejectionCounts, Z95};

pub use post::{norm_sub, project_onto_simplex, PostProcessing};
