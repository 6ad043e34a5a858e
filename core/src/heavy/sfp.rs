//! Apple's sequence fragment puzzle (SFP; Apple Differential Privacy Team,
//! "Learning with Privacy at Scale", 2017), with one-byte fragments.
//!
//! A value of at most `L` bytes is padded to `L` bytes with `0xFF` (as for
//! PEM). A device draws one of `2L` equally likely slots: slot `p < L`
//! reports the **fragment** `(p, h(x), x_p)` — the position, an 8-bit public
//! hash of the whole value `h(x)` (the top byte of `key64(x)`), and the
//! padded value's byte at `p` — and slots `p ≥ L` report the **whole value**.
//! Either is sent through an HCMS sketch ([`super::Sketch`]) of its own part
//! (the `L` positions and the whole value: `L + 1` sketches of `k×m`), so a
//! report is HCMS's: `ε` as HCMS's, the slot independent of the value.
//!
//! The aggregator scores, at every position, all `256 × 256` (hash, byte)
//! fragments with that position's sketch and keeps the 1,024 best (about four
//! per value hash). For each hash `h` it then assembles
//! values position by position from the fragments kept with that `h`
//! (UTF-8 prefixes only, then padding; at most 32 per hash, by the sum of
//! their fragments' estimates), keeps those whose own hash is `h`, and
//! scores them with the whole-value sketch: frequency `ĉ/N`, the HCMS
//! variance over `N` plus `f(1−f)/N·(1−N/n)` for which devices drew it. The
//! values listed are those significantly above zero (Bonferroni, α = 0.05
//! over the values assembled), at most `top`.

use super::discovery::PAD;
use super::sketch::Sketch;
use crate::error::{Rejection, Result};
use crate::frequency::channel::Likelihood;
use crate::hash::key64;
use crate::report::Payload;
use crate::rng::{uniform_below, RngCore};
use crate::text::text;

/// A configured SFP mechanism.
#[derive(Debug, Clone)]
pub struct Fragments {
    sketch: Sketch,
    max_length: u32,
    pub(super) top: usize,
}

/// What the aggregation side (`localdp`) reads of it.
#[doc(hidden)]
impl Fragments {
    /// The `top` field.
    pub fn top(&self) -> usize {
        self.top
    }
}

impl Fragments {
    /// For an HCMS `sketch`, values of at most `max_length` bytes and the
    /// `top` values reported.
    pub(crate) fn new(sketch: Sketch, max_length: u32, top: usize) -> Self {
        Fragments { sketch, max_length, top }
    }

    /// The sketch each part uses.
    ///
    /// See the example on [`crate::HeavyHitterMetric`].
    pub fn sketch(&self) -> &Sketch {
        &self.sketch
    }

    /// The longest value, in bytes.
    ///
    /// See the example on [`crate::HeavyHitterMetric`].
    pub fn max_length(&self) -> usize {
        self.max_length as usize
    }

    /// The slots a device draws one of: `2L`, the last `L` the whole value.
    ///
    /// See the example on [`crate::HeavyHitterMetric`].
    pub fn slots(&self) -> u64 {
        2 * u64::from(self.max_length)
    }

    /// The parts with a sketch each: `L` positions and the whole value.
    #[doc(hidden)]
    pub fn parts(&self) -> u64 {
        u64::from(self.max_length) + 1
    }

    /// The hash key a value reports in `slot`.
    ///
    /// See the example on [`crate::HeavyHitterMetric`].
    pub fn key(&self, value: &str, slot: u64) -> u64 {
        let position = slot as usize;
        if position >= self.max_length() {
            return key64(value.as_bytes());
        }
        let byte = value.as_bytes().get(position).copied().unwrap_or(PAD);
        fragment_key(position as u8, value_hash(value), byte)
    }

    /// The randomized payload of `value` in `slot`: a fresh sketch row, and
    /// the part and row as the report's group (`part·k + row`).
    pub(crate) fn randomize(&self, value: &str, slot: u64, rng: &mut dyn RngCore) -> Payload {
        let row = uniform_below(rng, self.sketch.rows());
        match self.sketch.randomize(self.key(value, slot), row, rng) {
            Payload::Grouped { group, seed, value } => {
                let part = slot.min(u64::from(self.max_length));
                Payload::Grouped { group: (part * self.sketch.rows()) as u32 + group, seed, value }
            }
            other => other,
        }
    }

    /// Checks a payload's shape and ranges.
    pub(crate) fn validate(&self, payload: &Payload) -> Result<()> {
        match payload {
            Payload::Grouped { group, .. } if u64::from(*group) >= self.parts() * self.sketch.rows() => {
                Err(Rejection::OutOfRange.error(text!("the group (cohort) must be below ", self.parts() * self.sketch.rows())))
            }
            Payload::Grouped { group, seed, value } => {
                self.sketch.validate(&Payload::Grouped { group: *group % self.sketch.rows() as u32, seed: *seed, value: *value })
            }
            _ => Err(Rejection::Malformed.error("expected cohort, seed and value")),
        }
    }

    /// The part, and the payload as its sketch sees it.
    fn split(&self, payload: &Payload) -> Option<(u64, Payload)> {
        match *payload {
            Payload::Grouped { group, seed, value } => {
                let rows = self.sketch.rows();
                Some((u64::from(group) / rows, Payload::Grouped { group: (u64::from(group) % rows) as u32, seed, value }))
            }
            _ => None,
        }
    }

    /// `P[payload | value]`, realized.
    pub(crate) fn likelihood(&self, value: &str, payload: &Payload) -> Likelihood {
        match self.split(payload) {
            Some((part, inner)) if self.validate(payload).is_ok() => {
                let slots = if part < u64::from(self.max_length) { 1.0 } else { f64::from(self.max_length) };
                let key = self.key(value, part);
                self.sketch.likelihood(key, &inner).times(slots / self.slots() as f64)
            }
            _ => Likelihood::new(0.0),
        }
    }

    /// True when the payload supports `value`'s key of its part.
    pub(crate) fn supports(&self, value: &str, payload: &Payload) -> bool {
        match self.split(payload) {
            Some((part, inner)) if part < self.parts() => self.sketch.supports(self.key(value, part), &inner),
            _ => false,
        }
    }

    /// Outputs that exercise the channel: every part, both bits of several
    /// columns.
    pub(crate) fn channel_outputs(&self, values: &[&str], rng: &mut dyn RngCore) -> Vec<Payload> {
        let mut out = Vec::new();
        for (i, value) in values.iter().enumerate() {
            let slot = (i as u64 * 5) % self.slots();
            if let Payload::Grouped { group, .. } = self.randomize(value, slot, rng) {
                for seed in 0..self.sketch.width().min(8) as u32 {
                    out.extend((0..2).map(|value| Payload::Grouped { group, seed, value }));
                }
            }
        }
        out
    }

}

/// The 8-bit public hash of a whole value.
#[doc(hidden)]
pub fn value_hash(value: &str) -> u8 {
    (key64(value.as_bytes()) >> 56) as u8
}

/// The hash key of a fragment: position, value hash and byte.
#[doc(hidden)]
pub fn fragment_key(position: u8, hash: u8, byte: u8) -> u64 {
    key64(&[b'f', position, hash, byte])
}
