//! The client side of every mechanism (`localdp::mechanism` pairs it with
//! the server side, `Aggregate`).

use crate::error::Result;
use crate::report::Report;
use crate::rng::{CryptoRng, RngCore};

/// The client side: a value in, a randomized report out.
///
/// Production code passes a cryptographic generator ([`crate::SecureRng`]);
/// the bound is `CryptoRng`, so a fast non-cryptographic generator cannot be
/// passed by mistake. Seeded simulation uses [`crate::SimulationRng`], which
/// says what it is in its name.
pub trait Randomizer {
    /// What a device holds: `str` for a label, `[f64]` for numbers.
    type Value: ?Sized;

    /// Randomizes one value. Errors (a value outside the domain, a NaN)
    /// never contain the value.
    fn randomize<R: CryptoRng + RngCore>(&self, value: &Self::Value, rng: &mut R) -> Result<Report>;
}
