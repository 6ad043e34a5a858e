//! Privacy accounting on the device: the central (ε, δ) of many ε-LDP
//! reports of one user ([`compose`], which the ledger charges by when a
//! budget has a δ). The analyst's accountant for `n` users' reports after a
//! shuffler (`shuffle`) is the `localdp` crate's. Both are upper bounds that are
//! never below the truth: every rounding, truncation and float error is
//! taken in the direction of a larger δ, and ε is the least one whose
//! over-estimated δ meets the target. The formulas are in
//! `docs/PROTOCOLS.md`.

#[doc(hidden)]
pub mod bounds;
#[cfg(feature = "delta")]
#[doc(hidden)]
pub mod compose;

pub use bounds::MIN_DELTA;
#[cfg(feature = "delta")]
pub use compose::{compose, Composition, MAX_SUPPORT};
