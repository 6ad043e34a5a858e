//! Key-value data: each user holds a map `{key: value, …}` (which
//! features they used, and for how long), randomized whole into one report
//! charged ε once; the estimate gives each key's frequency (the share of
//! users holding it) and the mean of its value. PCKV (Gu, Li, Cheng, Xiong,
//! Cao, USENIX Security 2020), after PrivKV (Ye et al., S&P 2019).
//!
//! ```
//! use localdp::{Aggregator, Estimate, Metric, PostProcessing, SimulationRng};
//! let metric = Metric::from_json(r#"{"protocol":"key_value","epsilon":4,"keys":["search","share","print"],"range":[0,60],"pad":2}"#).unwrap();
//! let mut aggregator = Aggregator::new(metric.clone());
//! let mut rng = SimulationRng::seed_from_u64(1); // simulation only
//! for i in 0..20_000 {
//!     let map = if i % 2 == 0 { r#"{"search": 30, "print": 5}"# } else { r#"{"search": 50}"# };
//!     aggregator.add(&metric.randomize_text(map, &mut rng).unwrap()).unwrap();
//! }
//! let Estimate::KeyValue(estimate) = aggregator.estimate(PostProcessing::None).unwrap() else { panic!() };
//! let search = &estimate.keys[0];
//! assert_eq!(search.key, "search");
//! assert!((search.frequency.estimate - 1.0).abs() < 0.1, "{:?}", search.frequency);
//! assert!((search.mean.estimate - 40.0).abs() < 5.0, "{:?}", search.mean);
//! ```
//!
//! A config `{"protocol": "key_value" | "pckv_grr" | "pckv_ue", "epsilon":
//! ε, "keys": ["a", "b", …] or K, "range": [lo, hi], "pad": ℓ}` (2 to
//! [`MAX_KEYS`] keys; with a count `K` the keys are `"0"`…`"K−1"`; ℓ from 1
//! to [`MAX_PAD`]). A device's map holds any of the keys (none, too), each
//! with a finite number; a key outside the config is refused with
//! [`crate::Error::ValueNotInDomain`] and a value that is not a number with
//! [`crate::ExpectedValue::FiniteNumber`], neither naming the key: which
//! keys a user holds is their data.
//!
//! **The report.** The map is padded to `ℓ` pairs with dummy keys
//! `K..K+ℓ` (value 0), one pair of the `max(|map|, ℓ)` is sampled
//! uniformly, its value mapped to `[−1, 1]` (clipped to the range) is
//! discretized to `±1` by an exact coin (`+1` with probability
//! `(1 + x)/2`), and the pair `(k, ±1)` is perturbed over the `d' = K + ℓ`
//! keys:
//!
//! * `pckv_grr`: randomized response on the joint domain: keep the key with
//!   `a = e^{ε1}/(e^{ε1} + d' − 1)` and its sign with `p = e^{ε2}/(e^{ε2} +
//!   1)`; else a uniform other key with a fair sign. One index `2k + [+1]`.
//! * `pckv_ue`: one ternary symbol per key: the sampled key's is non-zero
//!   with `a = 1/2` (sign kept with `p`), every other key's with `b =
//!   1/(e^{ε1} + 1)` (fair sign). `2d'` bits: non-zero, then sign.
//!
//! PCKV's tight composition makes a report
//! `max(ε2, ε1 + ln(2e^{ε2}/(e^{ε2} + 1)))`-LDP; the split used is the one
//! that spends it all on both: `ε2 = ε`, `ε1 = ln((e^ε + 1)/2)`.
//! `"key_value"` picks GRR or UE by the variance of the frequency estimate
//! ([`KeyValueProtocol::best`]).
//!
//! **Padding.** A user holding at most `ℓ` keys has each of them sampled
//! with probability exactly `1/ℓ`: the frequency estimate is unbiased and
//! the mean consistent. A user holding `s > ℓ` keys has each sampled with
//! `1/s`: the estimator, which assumes `1/ℓ`, counts such a user as
//! holding each of their keys with weight `ℓ/s`, so frequencies of keys held
//! by such users are biased low (by the share of those users times `1 −
//! ℓ/s`); the means stay consistent if a key's value does not depend on
//! how many keys its holder has. A larger `ℓ` removes this bias and costs
//! variance (`∝ ℓ²`); choose ℓ near a high quantile (e.g. the 90th) of
//! the number of keys a user holds, as PCKV recommends.
//!
//! Memoization keeps one permanent report per distinct map (its keys and
//! clipped values).

#[doc(hidden)]
pub mod metric;

pub use crate::protocol::KeyValueProtocol;
pub use metric::{KeyValueConfig, KeyValueMetric, PairChannel, CHOOSE, MAX_KEYS, MAX_PAD};
