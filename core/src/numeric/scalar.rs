//! What every numeric mechanism provides: a one-dimensional channel on a
//! grid ([`Scalar`]) whose outputs decode affinely by pieces ([`Component`]).

use crate::rng::RngCore;

/// One output index range whose values decode affinely: output `k` in
/// `start..end` estimates `t` as `scale · k + offset`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[doc(hidden)]
pub struct Component {
    pub start: u64,
    pub end: u64,
    pub scale: f64,
    pub offset: f64,
}

/// A one-dimensional channel on a grid, as described in the module docs.
pub(crate) trait Scalar: Send + Sync {
    /// `G`: the input grid is `t_i = −1 + 2i/G`, `i = 0..=G`.
    fn steps(&self) -> u64;
    /// The number of output indices.
    fn outputs(&self) -> u64;
    /// An output index for grid input `i`.
    fn sample(&self, input: u64, rng: &mut dyn RngCore) -> u64;
    /// `P[output | grid input]` under the realized coins.
    fn probability(&self, input: u64, output: u64) -> f64;
    /// `E[y² | grid input]`, `y` the decoded output.
    fn second_moment(&self, input: u64) -> f64;
    /// How output indices decode (at most two pieces).
    fn components(&self) -> &[Component];
}
