//! What both accountants share: the checks of their parameters, the
//! margins that keep every bound above the truth, and the bisection.

use crate::error::{Error, Requirement, Result};

/// A relative error that covers every float operation's (a few ulps each,
/// `2^-40` ≈ 9.1e-13 is 4,096 ulps) times the magnitude it is applied to.
#[doc(hidden)]
pub const SLACK: f64 = 1.0 / (1u64 << 40) as f64;

/// δ must be above this. Every term lost to float underflow (below 2^-1022,
/// at most 10^14 of them in either accountant) together stay below
/// 10^-280, which the upper bounds add: far below any accepted δ.
pub const MIN_DELTA: f64 = 1e-200;

/// Added to every upper bound on δ: covers what underflow lost.
#[doc(hidden)]
pub const UNDERFLOW: f64 = 1e-280;

/// Bisection steps: the interval shrinks by 2^-64, below an ulp of ε.
pub(super) const BISECTION_STEPS: u32 = 64;

/// `delta` if it is in `(MIN_DELTA, 1)`, else the error naming `parameter`
/// (`"delta"`, or a budget's `"budget.delta"`).
pub fn check_delta(parameter: &'static str, delta: f64) -> Result<f64> {
    if delta > MIN_DELTA && delta < 1.0 {
        Ok(delta)
    } else {
        Err(Error::invalid(parameter, Requirement::ExclusiveRange { min: MIN_DELTA, max: 1.0, found: delta }))
    }
}

pub(super) fn check_count(parameter: &'static str, count: u64) -> Result<u64> {
    if count >= 1 {
        Ok(count)
    } else {
        Err(Error::invalid(parameter, Requirement::IntegerRange { min: 1, max: u64::MAX, found: count }))
    }
}

/// `a·b` rounded up: the exact product's upper bound. Dekker's product
/// gives the rounding error exactly (without an fma, which wasm lacks and
/// whose software version the device's module would carry) when no part
/// overflows or underflows; outside that range the next float up is taken.
pub(super) fn product_rounded_up(a: f64, b: f64) -> f64 {
    const SPLIT: f64 = 134_217_729.0; // 2^27 + 1
    let product = a * b;
    let exact = |x: f64| x.abs() < 1e290 && x.abs() > 1e-290;
    if !(exact(a) && exact(b) && exact(product)) {
        return product.next_up();
    }
    let split = |x: f64| {
        let c = SPLIT * x;
        let high = c - (c - x);
        (high, x - high)
    };
    let ((ah, al), (bh, bl)) = (split(a), split(b));
    let error = ((ah * bh - product) + ah * bl + al * bh) + al * bl;
    if error > 0.0 {
        product.next_up()
    } else {
        product
    }
}

/// `ln C(k, b)` with `libm::lgamma`.
#[doc(hidden)]
pub fn ln_binomial(k: u64, b: u64) -> f64 {
    libm::lgamma(k as f64 + 1.0) - libm::lgamma(b as f64 + 1.0) - libm::lgamma((k - b) as f64 + 1.0)
}

/// Bisection for a non-increasing `delta` on `[0, hi]`: `(lo, hi)` within
/// 2^-64·`hi` of each other, with `delta(hi) ≤ target` (when it holds at the
/// start) and `delta(lo) > target` unless `lo = 0`; `(0, 0)` when
/// `delta(0) ≤ target`.
#[doc(hidden)]
pub fn bisect(hi: f64, target: f64, delta: impl Fn(f64) -> f64) -> (f64, f64) {
    if delta(0.0) <= target {
        return (0.0, 0.0);
    }
    let (mut lo, mut hi) = (0.0, hi);
    for _ in 0..BISECTION_STEPS {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if delta(mid) <= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (lo, hi)
}

