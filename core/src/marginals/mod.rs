//! Joint histograms (marginals) of events with several fields: every
//! `way`-way marginal and each field's own histogram, from one report per
//! event.
//!
//! ```
//! use localdp::{Aggregator, Estimate, Metric, PostProcessing, SimulationRng};
//! let metric = Metric::from_json(r#"{"protocol":"marginals","epsilon":2,"way":2,"attributes":[
//!     {"name":"browser","domain":["Chrome","Firefox"]},{"name":"os","domain":3},{"name":"mobile","domain":2}]}"#)?;
//! let mut aggregator = Aggregator::new(metric.clone());
//! let mut rng = SimulationRng::seed_from_u64(1); // simulation only
//! for i in 0..20_000 {
//!     let event = format!(r#"{{"browser":"{}","os":{},"mobile":{}}}"#, ["Chrome", "Firefox"][i % 2], i % 3, i % 2);
//!     aggregator.add(&metric.randomize_text(&event, &mut rng)?)?;
//! }
//! let Estimate::Marginals(estimate) = aggregator.estimate(PostProcessing::Project)? else { unreachable!() };
//! let browser_mobile = &estimate.marginals[1];
//! assert_eq!(browser_mobile.attributes, ["browser", "mobile"]);
//! // Chrome is always on desktop (mobile 0) here: the cell holds about half the events.
//! assert!((browser_mobile.cells[0].frequency - 0.5).abs() < 0.05);
//! assert!(browser_mobile.cells[1].frequency.abs() < 0.05); // Chrome, mobile 1
//! # Ok::<(), localdp::Error>(())
//! ```
//!
//! A config `{"protocol": "marginals" | "marginals_oue" | "marginals_olh",
//! "epsilon": ε, "way": w, "attributes": [{"name", "domain"}, …]}` (2 to 16
//! attributes with distinct, non-empty names; each domain labels or a size
//! as a frequency metric's; `w` from 1 to the number of attributes, default
//! 2; all `w`-way marginals together at most [`MAX_CELLS`] cells). A value
//! is an event object holding every attribute, nothing else.
//!
//! Each device draws one of the `C(k, w)` sets of `w` attributes uniformly
//! (independently of its event) and reports its event's cell of that set's
//! joint domain through a frequency oracle at the full ε, so an event costs
//! ε once however many fields it has (Cormode, Kulkarni, Srivastava, SIGMOD
//! 2018, and Zhang et al.'s CALM, CCS 2018, sample the marginal so):
//!
//! * `marginals_oue`: OUE over the set's cells (a bit per cell).
//! * `marginals_olh`: OLH (a 32-bit seed and a bucket).
//! * `marginals` picks the one whose cell variance is the least
//!   ([`MarginalsProtocol::best`]): OUE at almost every ε.
//!
//! Memoization draws the set once per install and keeps one permanent
//! report per cell of it.

#[doc(hidden)]
pub mod metric;

pub use crate::protocol::MarginalsProtocol;
pub use metric::{AttributeSpec, MarginalsConfig, MarginalsMetric, CHOOSE, DEFAULT_WAY, MAX_ATTRIBUTES, MAX_CELLS, MIN_ATTRIBUTES};
