//! The server side: streaming, validating, mergeable aggregation and
//! estimates with honest error bars.

pub(crate) mod frequency;
mod kernels;
pub(crate) mod numeric;
pub(crate) mod post;
pub(crate) mod tally;

pub use frequency::{FrequencyAggregator, FrequencyEstimate, ValueEstimate};
pub use numeric::{MeanEstimate, NumericAggregator, NumericEstimate};
pub use tally::{RejectionCounts, Z95};

pub use post::{norm_sub, project_onto_simplex, PostProcessing};
