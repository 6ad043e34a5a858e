//! RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014): a Bloom filter per
//! value, a permanent randomized response memoized per value, and an
//! instantaneous one on every report; decoded against a candidate list.
//!
//! * Client: the value's string is hashed by `h` functions of its cohort (one
//!   of `m`, drawn once per install) into a `k`-bit Bloom filter. The
//!   *permanent* response (PRR) replaces each bit by a fair coin with
//!   probability `f`, and is memoized per value; every report then sends each
//!   PRR bit 1 as 1 with probability `q` and 0 as 1 with probability `p` (the
//!   *instantaneous* response, IRR). All coins are exact integer thresholds,
//!   and `f`, `p`, `q` below are their realized values.
//! * ε: long-run (the PRR) `ε_∞ = 2h ln((1−f/2)/(f/2))`; one report
//!   `ε_1 = h ln(q*(1−p*)/(p*(1−q*)))` with `q* = f(p+q)/2 + (1−f)q`,
//!   `p* = f(p+q)/2 + (1−f)p`. Reports carry `ε_1` as their `epsilon`; the
//!   ledger charges `ε_∞` for each new value (repeats are free).
//! * Decoding: per cohort `j` and bit `i`, the unbiased count of reports
//!   whose Bloom bit is set, `t_ij = (c_ij − (p + fq/2 − fp/2) N_j) /
//!   ((1−f)(q−p))`. Non-negative least squares of `t` on the candidates'
//!   Bloom bits (each row weighted by its noise; Lawson and Hanson's active
//!   set, nalgebra's Cholesky) selects a support; the non-negative Lasso on
//!   it, its penalty chosen by Stein's unbiased risk estimate, gives the
//!   counts, and the candidates it fits above 0 are reported.
//!   The standard errors, the Bonferroni test over the candidates and the
//!   intervals are from least squares on every candidate (scaled by the
//!   residual variance), or on the support where that cannot be solved
//!   (more than 256 candidates, too few rows, filters that coincide). A
//!   candidate that passes the test gets the 95% interval given that it
//!   passed; the others' intervals start at 0.
//!
//! ```
//! use localdp::{Aggregator, Metric, SimulationRng, PostProcessing};
//! let config = r#"{"protocol":"rappor","bits":32,"hashes":2,"cohorts":8,"f":0.5,"p":0.5,"q":0.75,
//!                  "candidates":["a","b","c","d"]}"#;
//! let metric = Metric::from_json(config).unwrap();
//! let mut aggregator = Aggregator::new(metric.clone());
//! let mut rng = SimulationRng::seed_from_u64(1); // simulation only
//! for i in 0..20_000 {
//!     aggregator.add(&metric.randomize_text(["a", "a", "b", "x"][i % 4], &mut rng).unwrap()).unwrap();
//! }
//! let estimate = serde_json::to_value(aggregator.estimate(PostProcessing::None).unwrap()).unwrap();
//! assert_eq!(estimate["estimates"][0]["value"], "a");
//! ```

pub use localdp_core::rappor::*;

pub(crate) mod aggregator;
pub use aggregator::{CandidateEstimate, RapporAggregator, RapporEstimate};
