//! Whole distributions of a bounded number: a histogram, quantiles with
//! honest intervals, and the mean, from one report per value.
//!
//! ```
//! use localdp::{Aggregator, Estimate, Metric, PostProcessing, SimulationRng};
//! let metric = Metric::from_json(r#"{"protocol":"square_wave","epsilon":2,"range":[0,1000],"bins":32}"#).unwrap();
//! let mut aggregator = Aggregator::new(metric.clone());
//! let mut rng = SimulationRng::seed_from_u64(1); // simulation only
//! for i in 0..20_000 {
//!     aggregator.add(&metric.randomize_text(&format!("{}", 200 + i % 400), &mut rng).unwrap()).unwrap();
//! }
//! let Estimate::Distribution(estimate) = aggregator.estimate(PostProcessing::None).unwrap() else { panic!() };
//! let median = &estimate.quantiles[0];
//! assert_eq!(median.q, 0.5);
//! assert!((median.value - 400.0).abs() < 60.0, "{}", median.value);
//! ```
//!
//! A config `{"protocol": "square_wave" | "hierarchical" | "distribution",
//! "epsilon": ε, "range": [lo, hi], "bins": B}` (B from 2 to 4096, default
//! 64) cuts the range into `B` equal bins. A value is clipped to the range
//! (as for means: whatever the device holds, only a number in the range is
//! randomized) and located on a public grid: its bin, `⌊B(x − lo)/(hi −
//! lo)⌋` (the top edge in the last bin), or for Square Wave its place on a
//! finer grid of `G = B·⌈1024/B⌉` steps, whose every `G/B` make a bin; that
//! is what the report randomizes, with exact integer coins, so the estimate
//! is the distribution of the bins, without bias from rounding. Two
//! mechanisms:
//!
//! * `square_wave` ([`SquareWave`]): one cell of the widened range, near the
//!   value with probability ratio `e^ε`; EMS reconstruction.
//! * `hierarchical` ([`Hierarchy`]): a node of one level of a 4-ary tree,
//!   through a frequency oracle; consistent least-squares estimate.
//! * `distribution` picks between them: Square Wave at every ε and size
//!   measured (`bench/distributions.py`, docs/distributions.md): it spends every report on
//!   the whole range, where the tree spreads them over its levels.
//!
//! Memoization keeps one permanent report per input of the grid (and, for
//! the tree, the level drawn once per install): a memo per value of the grid.

#[doc(hidden)]
pub mod hierarchical;
#[doc(hidden)]
pub mod metric;
#[doc(hidden)]
pub mod square_wave;

pub use hierarchical::{Hierarchy, Level, BRANCHING};
pub use square_wave::SquareWave;
pub use crate::protocol::DistributionProtocol;
pub use metric::{DistributionConfig, DistributionMetric, CHOOSE, DEFAULT_BINS, MAX_BINS};
