//! Longitudinal protocols: a permanent response memoized per value (at the
//! config's `epsilon`, the long-run `ε_∞`), randomized afresh on every
//! report by an *instantaneous* step, so that one report is an
//! `ε_1`-LDP channel of the value (`"instantaneous_epsilon"`).
//!
//! RAPPOR's IRR (Erlingsson, Pihur, Korolova, CCS 2014) for frequency
//! oracles: L-GRR, L-SUE and L-OSUE (Arcolezi, Couchot, Al Bouna, Xiao,
//! "Improving the utility of locally differentially private protocols for
//! longitudinal and multidimensional frequency estimates", 2022) and LOLOHA
//! (Arcolezi et al., "Frequency estimation of evolving data under local
//! differential privacy", EDBT 2023).
//!
//! * **grr** (L-GRR): GRR over the `d` values at `ε_∞`, then GRR over the
//!   `d` values. An `m`-ary randomized response at ε replaces its input, with
//!   probability `μ(ε) = m/(e^ε+m−1)`, by a uniform draw among all `m`
//!   symbols; two in a row resample with `μ' = 1 − (1−μ_1)(1−μ_2)`, so the
//!   step's `μ_2 = (μ(ε_1) − μ_1)/(1 − μ_1)` (`μ_1` realized) makes the
//!   composition exactly GRR at `ε_1`: `p' = 1 − μ'(m−1)/m`, `q' = μ'/m`.
//! * **olh**, **blh** (LOLOHA): one hash function per install (its seed is
//!   drawn once, so that a report's seed says nothing about a change), the
//!   permanent response is GRR over the `g` buckets at `ε_∞`, memoized per
//!   bucket (values that share a bucket share it), and the step is GRR over
//!   the `g` buckets as for L-GRR. Given the hash, one report is GRR over `g`
//!   at `ε_1`, so OLH's `g = round(e^{ε_1}) + 1` minimizes its variance.
//! * **sue**, **oue** (L-SUE, L-OSUE): the permanent bit vector (SUE or OUE
//!   at `ε_∞`, bits 1 with `p_1` own and `q_1` others, realized), then every
//!   bit flipped with probability `f`. The composed bits are 1 with
//!   `p' = p_1 − af` (own) and `q' = q_1 + cf` (others), `a = 2p_1 − 1`,
//!   `c = 1 − 2q_1`, and `p'(1−q')/((1−p')q') = e = e^{ε_1}` is the quadratic
//!   `Af² + Bf − C = 0` with `A = ac(e−1)`, `B = p_1c + a(1−q_1) +
//!   e((1−p_1)c + aq_1)`, `C = p_1(1−q_1) − e(1−p_1)q_1`, whose root in
//!   `[0, ½]` is `f = 2C/(B + √(B²+4AC))`. For OUE (`a = 0`) the composition
//!   is exactly OUE at `ε_1` (the best unary encoding for one report; the
//!   paper's L-OSUE, OUE then SUE); for SUE it is SUE at `ε_1`, RAPPOR's
//!   basic IRR (L-SUE).
//!
//! The formulas, the ledger rule and what a pair of reports reveals about a
//! change: PROTOCOLS.md §1.11.
//!
//! Every step's coin is rounded up (more change, more privacy) from
//! `e^{ε_1}` lowered by [`exp_epsilon_safe`], so the realized per-report ε
//! never exceeds `ε_1` and is within 1e-12 of it (the channel tests).

use super::channel::{ChannelOutputs, Likelihood, Mechanism};
use crate::{frequency::{grr::GeneralizedRandomizedResponse, local_hashing::LocalHashing, unary::UnaryEncoding}, protocol::FrequencyProtocol};
use crate::domain::Domain;
use crate::error::Result;
use crate::number::{exp, ln};
use crate::privacy::exp_epsilon_safe;
use crate::report::{BitVector, Payload};
use crate::rng::{Bernoulli, RngCore};
use crate::text::{text, Hex};

/// A permanent response and the instantaneous step applied to it.
pub(crate) struct Longitudinal {
    chain: Chain,
    /// The long-run ε of the permanent response (part of the identity).
    long_run: f64,
}

/// The chains by permanent response; the module of GRR alone (`grr`
/// without `oracles`) has the direct one only.
enum Chain {
    /// L-GRR.
    Direct { permanent: GeneralizedRandomizedResponse, step: GeneralizedRandomizedResponse },
    /// LOLOHA: the step is GRR over the buckets.
    #[cfg(feature = "oracles")]
    Hashed { permanent: LocalHashing, step: GeneralizedRandomizedResponse },
    /// L-SUE, L-OSUE: each bit flipped with this coin.
    #[cfg(feature = "oracles")]
    Unary { permanent: UnaryEncoding, flip: Bernoulli },
}

/// The step after `permanent` (realized) whose composition is `m`-ary
/// randomized response at `epsilon_1` (`e^{ε_1}` lowered toward privacy).
fn symbol_step(permanent: &GeneralizedRandomizedResponse, epsilon_1: f64) -> GeneralizedRandomizedResponse {
    let m = permanent.symbols();
    let target = m as f64 / (exp_epsilon_safe(epsilon_1) + (m - 1) as f64);
    let mu_1 = permanent.resample_probability();
    GeneralizedRandomizedResponse::resampling((target - mu_1) / (1.0 - mu_1), m)
}

impl Longitudinal {
    /// The longitudinal form of `protocol` at long-run ε `epsilon` and
    /// per-report ε `epsilon_1 < epsilon` over `domain`; `None` for protocols
    /// without one.
    pub(crate) fn new(protocol: FrequencyProtocol, epsilon: f64, epsilon_1: f64, domain: &Domain) -> Option<Self> {
        let d = domain.len();
        let chain = match protocol {
            FrequencyProtocol::Grr => {
                let permanent = GeneralizedRandomizedResponse::new(epsilon, d as u64);
                Chain::Direct { step: symbol_step(&permanent, epsilon_1), permanent }
            }
            #[cfg(feature = "oracles")]
            FrequencyProtocol::Olh | FrequencyProtocol::Blh => {
                let g = if protocol == FrequencyProtocol::Olh { LocalHashing::optimal_g(epsilon_1) } else { 2 };
                let permanent = LocalHashing::new(epsilon, g, domain.keys());
                Chain::Hashed { step: symbol_step(permanent.response(), epsilon_1), permanent }
            }
            #[cfg(feature = "oracles")]
            FrequencyProtocol::Sue | FrequencyProtocol::Oue => {
                let permanent = if protocol == FrequencyProtocol::Sue {
                    UnaryEncoding::symmetric(epsilon, d)
                } else {
                    UnaryEncoding::optimized(epsilon, d)
                };
                let (miss, q, e) = (permanent.miss(), permanent.support_probabilities().1, exp_epsilon_safe(epsilon_1));
                let (p, a, c) = (1.0 - miss, 1.0 - 2.0 * miss, 1.0 - 2.0 * q);
                let qa = a * c * (e - 1.0);
                let qb = p * c + a * (1.0 - q) + e * (miss * c + a * q);
                let qc = p * (1.0 - q) - e * miss * q;
                let f = 2.0 * qc / (qb + (qb * qb + 4.0 * qa * qc).sqrt());
                let flip = Bernoulli::rounded_up(crate::number::clamp(f, 0.0, 0.5)).expect("a probability");
                Chain::Unary { permanent, flip }
            }
            _ => return None,
        };
        Some(Longitudinal { chain, long_run: epsilon })
    }

    fn permanent(&self) -> &dyn Mechanism {
        match &self.chain {
            Chain::Direct { permanent, .. } => permanent,
            #[cfg(feature = "oracles")]
            Chain::Hashed { permanent, .. } => permanent,
            #[cfg(feature = "oracles")]
            Chain::Unary { permanent, .. } => permanent,
        }
    }

    /// The composed probabilities of a symbol: `(P[y=x], P[y=x'])`.
    fn symbols(permanent: &GeneralizedRandomizedResponse, step: &GeneralizedRandomizedResponse) -> (f64, f64) {
        let (mu_1, mu_2) = (permanent.resample_probability(), step.resample_probability());
        let mu = mu_1 + mu_2 - mu_1 * mu_2;
        let m = permanent.symbols() as f64;
        (1.0 - mu * (m - 1.0) / m, mu / m)
    }

    /// The permanent bits' `(P[0], P[1])`, the value's own and every
    /// other's, each as realized (`1 − p` is never recomputed from `p`).
    fn permanent_bits(permanent: &UnaryEncoding) -> ((f64, f64), (f64, f64)) {
        let (miss, q) = (permanent.miss(), permanent.support_probabilities().1);
        ((miss, 1.0 - miss), (1.0 - q, q))
    }

    /// The composed bit probabilities, each computed without cancelling:
    /// `((P[0], P[1]) of the value's own bit, (P[0], P[1]) of the others)`.
    fn bits(permanent: &UnaryEncoding, flip: &Bernoulli) -> ((f64, f64), (f64, f64)) {
        let (miss, q, f) = (permanent.miss(), permanent.support_probabilities().1, flip.probability());
        let through = |zero: f64, one: f64| (zero * (1.0 - f) + one * f, one * (1.0 - f) + zero * f);
        (through(miss, 1.0 - miss), through(1.0 - q, q))
    }
}

// Without the other oracles, the arms that read draws and coins are gone.
#[cfg_attr(not(feature = "oracles"), allow(unused_variables))]
impl Mechanism for Longitudinal {
    /// A one-time report: a fresh permanent response (and, for local
    /// hashing, a fresh hash), then the step.
    fn randomize(&self, index: usize, rng: &mut dyn RngCore) -> Payload {
        let permanent = self.permanent().randomize(index, rng);
        self.instantaneous(&permanent, rng)
    }

    fn validate(&self, payload: &Payload) -> Result<()> {
        self.permanent().validate(payload)
    }

    #[cfg(feature = "aggregate")]
    fn accumulate(&self, payload: &Payload, counts: &mut [u64]) {
        self.permanent().accumulate(payload, counts)
    }

    #[cfg(feature = "aggregate")]
    fn kernel(&self) -> super::channel::Kernel<'_> {
        self.permanent().kernel()
    }

    fn counts_len(&self) -> usize {
        self.permanent().counts_len()
    }

    #[cfg(feature = "aggregate")]
    fn support_counts(&self, counts: &[u64], n: u64) -> Vec<f64> {
        self.permanent().support_counts(counts, n)
    }

    /// The composed channel's `(p*, q*)`.
    fn support_probabilities(&self) -> (f64, f64) {
        match &self.chain {
            Chain::Direct { permanent, step } => Self::symbols(permanent, step),
            #[cfg(feature = "oracles")]
            Chain::Hashed { permanent, step } => {
                (Self::symbols(permanent.response(), step).0, permanent.support_probabilities().1)
            }
            #[cfg(feature = "oracles")]
            Chain::Unary { permanent, flip } => {
                let ((_, own), (_, other)) = Self::bits(permanent, flip);
                (own, other)
            }
        }
    }

    /// `P[payload | value at index]` under the composed channel.
    #[cfg(feature = "aggregate")]
    fn likelihood(&self, index: usize, payload: &Payload) -> Likelihood {
        match (&self.chain, payload) {
            (Chain::Direct { permanent, step }, Payload::Index(y)) if *y < permanent.symbols() => {
                let (keep, other) = Self::symbols(permanent, step);
                Likelihood::new(if *y == index as u64 { keep } else { other })
            }
            #[cfg(feature = "oracles")]
            (Chain::Hashed { permanent, step }, Payload::Hashed { seed, value }) if *value < permanent.buckets() => {
                let (keep, other) = Self::symbols(permanent.response(), step);
                let p = if permanent.bucket_of(*seed, index) == *value { keep } else { other };
                Likelihood::new(1.0 / 4_294_967_296.0).times(p)
            }
            #[cfg(feature = "oracles")]
            (Chain::Unary { permanent, flip }, Payload::Bits(bits)) => {
                let (own, other) = Self::bits(permanent, flip);
                (0..self.counts_len()).fold(Likelihood::new(1.0), |l, i| {
                    let (zero, one) = if i == index { own } else { other };
                    l.times(if bits.get(i) { one } else { zero })
                })
            }
            _ => Likelihood::new(0.0),
        }
    }

    fn report_bits(&self) -> u64 {
        self.permanent().report_bits()
    }

    /// The permanent response's long-run ε changes what a report means (the
    /// envelope carries `ε_1`).
    fn identity(&self) -> Option<String> {
        Some(text!("longitudinal:", Hex(self.long_run.to_bits())))
    }

    #[cfg(feature = "aggregate")]
    fn channel_outputs(&self, d: usize, rng: &mut dyn RngCore) -> ChannelOutputs<Payload> {
        self.permanent().channel_outputs(d, rng)
    }

    #[cfg(feature = "aggregate")]
    fn check_counts(&self, counts: &[u64], n: u64) -> Result<()> {
        self.permanent().check_counts(counts, n)
    }

    /// Local hashing: the install's hash seed.
    fn memo_draws(&self, rng: &mut dyn RngCore) -> Vec<u64> {
        match self.chain {
            #[cfg(feature = "oracles")]
            Chain::Hashed { .. } => vec![u64::from(rng.next_u32())],
            _ => Vec::new(),
        }
    }

    fn memo_draws_valid(&self, draws: &[u64]) -> bool {
        match self.chain {
            #[cfg(feature = "oracles")]
            Chain::Hashed { .. } => matches!(draws, [seed] if *seed <= u64::from(u32::MAX)),
            _ => draws.is_empty(),
        }
    }

    /// Local hashing: values in one bucket of the install's hash share one
    /// permanent response.
    fn memo_key(&self, index: usize, draws: &[u64]) -> String {
        match &self.chain {
            #[cfg(feature = "oracles")]
            Chain::Hashed { permanent, .. } => text!(permanent.bucket_of(seed_of(draws), index)),
            _ => text!(index),
        }
    }

    fn randomize_memoized(&self, index: usize, draws: &[u64], rng: &mut dyn RngCore) -> Payload {
        match &self.chain {
            #[cfg(feature = "oracles")]
            Chain::Hashed { permanent, .. } => {
                let seed = seed_of(draws);
                Payload::Hashed { seed, value: permanent.response().perturb(permanent.bucket_of(seed, index), rng) }
            }
            _ => self.permanent().randomize(index, rng),
        }
    }

    #[cfg(feature = "aggregate")]
    fn memo_chain(&self) -> Option<super::channel::MemoChain> {
        use super::channel::MemoChain;
        let symbols = |g: &GeneralizedRandomizedResponse| (g.probability(0, 0), g.probability(0, 1));
        Some(match &self.chain {
            Chain::Direct { permanent, step } => {
                MemoChain::Symbols { m: permanent.symbols(), permanent: symbols(permanent), step: symbols(step) }
            }
            #[cfg(feature = "oracles")]
            Chain::Hashed { permanent, step } => {
                let response = permanent.response();
                MemoChain::Symbols { m: response.symbols(), permanent: symbols(response), step: symbols(step) }
            }
            #[cfg(feature = "oracles")]
            Chain::Unary { permanent, flip } => {
                let (own, other) = Self::permanent_bits(permanent);
                MemoChain::Bits { own, other, flip: flip.probability() }
            }
        })
    }

    /// The exact ε of `reports` reports of one permanent response: the
    /// largest log-ratio, over two inputs and every tuple of reports, of
    /// their joint channel (PROTOCOLS.md §1.11), rounded up. The reports are
    /// independent given the permanent response, not given the value, so
    /// this exceeds `reports·ε_1` for L-GRR and LOLOHA on larger domains.
    fn memo_epsilon(&self, reports: u64) -> Option<f64> {
        let epsilon = match &self.chain {
            Chain::Direct { permanent, step } => symbol_chain_epsilon(permanent, step, reports),
            #[cfg(feature = "oracles")]
            Chain::Hashed { permanent, step } => symbol_chain_epsilon(permanent.response(), step, reports),
            #[cfg(feature = "oracles")]
            Chain::Unary { permanent, flip } => {
                let (own, other) = Self::permanent_bits(permanent);
                bit_chain_epsilon(own, other, flip.probability(), reports)
            }
        };
        // Each log is within a few ulps of values up to about ε_∞ + ln d
        // (< 60): 1e-12 covers their rounding, whatever ε. A NaN (no such
        // chain is built) is charged as the long-run ε.
        Some(if epsilon.is_nan() { f64::INFINITY } else { crate::privacy::epsilon_rounded_up(epsilon.max(0.0) + 1e-12) })
    }

    fn instantaneous(&self, permanent: &Payload, rng: &mut dyn RngCore) -> Payload {
        match (&self.chain, permanent) {
            (Chain::Direct { step, .. }, Payload::Index(x)) => Payload::Index(step.perturb(*x, rng)),
            #[cfg(feature = "oracles")]
            (Chain::Hashed { step, .. }, Payload::Hashed { seed, value }) => {
                Payload::Hashed { seed: *seed, value: step.perturb(*value, rng) }
            }
            #[cfg(feature = "oracles")]
            (Chain::Unary { flip, .. }, Payload::Bits(bits)) => {
                let mut out = BitVector::zeros(self.counts_len());
                for i in 0..self.counts_len() {
                    if bits.get(i) != flip.sample(rng) {
                        out.set(i);
                    }
                }
                Payload::Bits(out)
            }
            // Validated before use: a payload of another shape is not ours.
            (_, other) => other.clone(),
        }
    }
}

/// The ε of `k` reports of one `m`-ary permanent response `s` (`P[s=x]
/// = p_1`, `q_1` for each other symbol), each the step's GRR of `s`
/// (`a` kept, `b` each other symbol; `r = a/b`). With `c_y` the reports
/// equal to `y` and `S = Σ_y r^{c_y}`, `P[reports | x] = b^k (q_1 S + (p_1 −
/// q_1) r^{c_x})`, so the ratio of inputs `x`, `x'` is `(q_1 S + Δ r^{c_x}) /
/// (q_1 S + Δ r^{c_x'})`: for given `c_x > c_x'` it falls as `S` grows, and
/// `S` is least when the other `k − c_x − c_x'` reports spread as evenly as
/// they can over the `m − 2` other symbols (`r^c` is convex). The largest
/// over `c_x > c_x'` is the exact ε.
fn symbol_chain_epsilon(permanent: &GeneralizedRandomizedResponse, step: &GeneralizedRandomizedResponse, k: u64) -> f64 {
    let (p1, q1) = (permanent.probability(0, 0), permanent.probability(0, 1));
    let t = ln(step.probability(0, 0) / step.probability(0, 1));
    let (delta, others) = (p1 - q1, permanent.symbols() - 2);
    let mut worst = 0.0f64;
    for own in 1..=k {
        for theirs in 0..own.min(k - own + 1) {
            let rest = k - own - theirs;
            if others == 0 && rest > 0 {
                continue;
            }
            let (base, extra) = rest.checked_div(others).zip(rest.checked_rem(others)).unwrap_or((0, 0));
            // Every power of r scaled by the largest, r^own.
            let top = t * own.max(base + u64::from(extra > 0)) as f64;
            let power = |c: u64| exp(t * c as f64 - top);
            let spread = extra as f64 * power(base + 1) + (others - extra) as f64 * power(base);
            let sum = q1 * (power(own) + power(theirs) + spread);
            // ln(A/B) as ln(1 + (A−B)/B): no cancellation of two large logs.
            let below = sum + delta * power(theirs);
            let ratio = libm::log1p(delta * (power(own) - power(theirs)) / below);
            if ratio.is_nan() {
                return f64::NAN;
            }
            worst = worst.max(ratio);
        }
    }
    worst
}

/// The ε of `k` reports of one permanent bit vector (a value's own bit
/// with `(P[0], P[1])` = `own`, every other with `other`), each bit flipped
/// with `f` on every report. Bits are independent, and only the two
/// inputs' own bits differ in law, so the ε is `max_j g(j) − min_j g(j)`
/// with `g(j)` the log-ratio of `j` ones among one bit's `k` reports under
/// `own` and under `other`: `P[j | (z, o)] ∝ o·(1−f)^j f^{k−j} + z·f^j (1−f)^{k−j}`.
fn bit_chain_epsilon(own: (f64, f64), other: (f64, f64), f: f64, k: u64) -> f64 {
    let u = ln((1.0 - f) / f);
    let g = |j: u64| {
        let (ones, zeros) = (u * j as f64, u * (k - j) as f64);
        let top = ones.max(zeros);
        let law = |(zero, one): (f64, f64)| one * exp(ones - top) + zero * exp(zeros - top);
        ln(law(own)) - ln(law(other))
    };
    let (mut lo, mut hi) = (f64::MAX, f64::MIN);
    for j in 0..=k {
        let x = g(j);
        if x.is_nan() {
            return f64::NAN; // f64::min and max would drop it
        }
        (lo, hi) = (lo.min(x), hi.max(x));
    }
    hi - lo
}

/// The install's hash seed among its draws (validated by `memo_draws_valid`).
fn seed_of(draws: &[u64]) -> u32 {
    draws.first().map_or(0, |&s| s as u32)
}
