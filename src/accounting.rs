//! Privacy accounting: the central (ε, δ) of many ε-LDP reports of one user
//! ([`compose`], which the device's ledger also charges by when a budget
//! has a δ; `localdp-core`'s), and, for the analyst, of `n` users'
//! reports after a shuffler (`shuffle`). Both are upper bounds that are
//! never below the truth: every rounding, truncation and float error is
//! taken in the direction of a larger δ, and ε is the least one whose
//! over-estimated δ meets the target. The formulas are in
//! `docs/PROTOCOLS.md`.

mod shuffle;

pub use localdp_core::accounting::*;
pub use shuffle::{shuffle, shuffle_randomized_response, Amplification, MAX_CLONES};
