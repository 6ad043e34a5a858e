//! Open domains at scale: sketches that score any candidate string (CMS,
//! HCMS) and discovery of the most frequent strings that nobody listed in
//! advance (PEM, TreeHist, SFP, or `"heavy_hitters"`, which picks among them).
//!
//! ```
//! use localdp::{Aggregator, Metric, SimulationRng, PostProcessing};
//! let metric = Metric::from_json(r#"{"protocol":"pem","epsilon":4,"max_length":4,"top":3}"#).unwrap();
//! let mut aggregator = Aggregator::new(metric.clone());
//! let mut rng = SimulationRng::seed_from_u64(1); // simulation only
//! for i in 0..40_000 {
//!     aggregator.add(&metric.randomize_text(["/a", "/a", "/bc", "/xyz"][i % 4], &mut rng).unwrap()).unwrap();
//! }
//! let estimate = serde_json::to_value(aggregator.estimate(PostProcessing::None).unwrap()).unwrap();
//! assert_eq!(estimate["heavy_hitters"][0]["value"], "/a");
//! ```
//!
//! Each device reports once per value in one group (a sketch row or a
//! prefix level) drawn on the device and kept with memoization; the group is
//! independent of the value, so it costs no ε. The formulas are in the
//! submodules and in `docs/PROTOCOLS.md`.

#[doc(hidden)]
pub mod discovery;
#[doc(hidden)]
pub mod metric;
#[doc(hidden)]
pub mod sfp;
#[doc(hidden)]
pub mod sketch;

pub use crate::protocol::HeavyHitterProtocol;
pub use discovery::Discovery;
pub use metric::{HeavyHitterConfig, HeavyHitterMetric, SketchConfig, CHOOSE, MAX_CELLS, MAX_SFP_HASHES, MAX_TOP};
pub use sfp::Fragments;
pub use sketch::Sketch;
