//! The server side: streaming, validating, mergeable aggregation and
//! estimates with honest error bars.

mod frequency;
mod kernels;
mod numeric;
mod post;
mod tally;

pub use frequency::{FrequencyAggregator, FrequencyEstimate, ValueEstimate};
pub use numeric::{MeanEstimate, NumericAggregator, NumericEstimate};
pub(crate) use tally::{summed, Tally};
pub use tally::{RejectionCounts, Z95};

pub use post::{norm_sub, project_onto_simplex, PostProcessing};
