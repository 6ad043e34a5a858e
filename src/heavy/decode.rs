//! Heavy hitters' decoding on the server: PEM's and TreeHist's search of the
//! prefix tree over every level's reports, and SFP's assembly of values
//! from their scored fragments (the formulas: `discovery.rs`, `sfp.rs`).

use localdp_core::heavy::discovery::{complete, extend, half, plausible, prefix_key, value_of, Discovery, Pruning, PAD};
use localdp_core::heavy::sfp::{fragment_key, value_hash, Fragments};
use crate::aggregate::tally::Z95;
use localdp_core::hash::{bucket, key64};
use crate::rappor::aggregator::CandidateEstimate;

/// The fragments kept per position, of the 65,536 scored (about four per
/// value hash).
const KEPT: usize = 1024;

/// A device-side discovery or SFP config seen by its decoder: the searches
/// of this file are the aggregation side's, so they live on this wrapper
/// (the config's type is `localdp-core`'s) and read the config through it.
pub(super) struct Decoder<'a, T>(pub(super) &'a T);

impl<T> std::ops::Deref for Decoder<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0
    }
}

impl Decoder<'_, Discovery> {
    /// The heavy hitters from the reports of every level (`n` in all), most
    /// frequent first (see the module docs).
    ///
    /// Cross-fitted: two searches run side by side, search `h` scoring the
    /// complete values on half `h` of their reports; a value one search
    /// keeps is tested and estimated on the other half, so whichever half
    /// selected it never estimates it.
    pub(super) fn discover(&self, levels: &[Level], n: u64) -> Vec<CandidateEstimate> {
        let keep = 2 * self.top();
        let root = Candidate { bytes: Vec::new(), pools: [Pool::default(); 2] };
        let mut searches = [vec![root.clone()], vec![root]];
        for (i, level) in levels.iter().enumerate() {
            let bits = (i as u32 + 1) * self.step();
            let next = searches.each_ref().map(|candidates| self.extensions(candidates, bits));
            // Both searches mostly extend the same prefixes: score each once.
            let mut index = std::collections::HashMap::new();
            let mut keys = Vec::new();
            for c in next.iter().flatten() {
                let key = prefix_key(&c.bytes, bits);
                index.entry(key).or_insert_with(|| {
                    keys.push(key);
                    keys.len() - 1
                });
            }
            let supports = self.supports_of(level, &keys);
            let halves = level.seeds.iter().fold([0u64; 2], |mut h, &seed| {
                h[half(seed)] += 1;
                h
            });
            for (selector, (candidates, next)) in searches.iter_mut().zip(next).enumerate() {
                let mut scored: Vec<(f64, Candidate)> = next
                    .into_iter()
                    .filter_map(|mut c| {
                        let support = supports[index[&prefix_key(&c.bytes, bits)]];
                        if complete(&c.bytes, bits, self.max_length() as u32) {
                            for h in 0..2 {
                                c.pools[h] = c.pools[h].plus(support[h], halves[h]);
                            }
                            return Some((self.frequency(c.pools[selector]), c));
                        }
                        // TreeHist extends only the prefixes significantly above
                        // zero; a value is tested at the end, on its held-out reports.
                        let score = self.frequency(Pool { support: support[0] + support[1], reports: halves[0] + halves[1] });
                        let significant = score > Z95 * self.null_error(halves[0] + halves[1]);
                        (*self.pruning() == Pruning::Best || significant).then_some((score, c))
                    })
                    .collect();
                scored.sort_by(|a, b| b.0.total_cmp(&a.0));
                scored.truncate(keep);
                *candidates = scored.into_iter().map(|(_, c)| c).collect();
            }
        }
        // Listed: significantly above zero on the half that did not select
        // it, Bonferroni at α = 0.05 over the survivors of both searches.
        let tests = searches.iter().map(Vec::len).sum::<usize>().max(1);
        let z = crate::rappor::aggregator::normal_quantile(1.0 - 0.05 / (2.0 * tests as f64));
        // Per value listed: its pools, and which halves held it out.
        let mut listed: Vec<(Candidate, [bool; 2])> = Vec::new();
        for (selector, candidates) in searches.into_iter().enumerate() {
            for c in candidates {
                let (frequency, std_error) = self.estimate(c.pools[1 - selector], n);
                if c.pools[1 - selector].reports == 0 || frequency <= z * std_error {
                    continue;
                }
                match listed.iter_mut().find(|(l, _)| l.bytes == c.bytes) {
                    Some((_, by)) => by[1 - selector] = true,
                    None => listed.push((c, std::array::from_fn(|h| h == 1 - selector))),
                }
            }
        }
        // Estimated on the halves that held it out: both when both searches
        // listed it.
        let mut found: Vec<CandidateEstimate> = listed
            .into_iter()
            .filter_map(|(c, by)| {
                let pool = (0..2).filter(|&h| by[h]).fold(Pool::default(), |p, h| p.plus(c.pools[h].support, c.pools[h].reports));
                let (frequency, std_error) = self.estimate(pool, n);
                Some(CandidateEstimate {
                    value: value_of(&c.bytes)?.to_string(),
                    frequency,
                    std_error,
                    ci95: [frequency - Z95 * std_error, frequency + Z95 * std_error],
                })
            })
            .collect();
        found.sort_by(|a, b| b.frequency.total_cmp(&a.frequency));
        found.truncate(self.top());
        found
    }

    /// Every extension of the candidates by one symbol that can still begin
    /// a value (see the module docs).
    fn extensions(&self, candidates: &[Candidate], bits: u32) -> Vec<Candidate> {
        let mut next = Vec::new();
        for c in candidates {
            let symbols = if complete(&c.bytes, bits - self.step(), self.max_length() as u32) { (1 << self.step()) - 1..1 << self.step() } else { 0..1 << self.step() };
            for symbol in symbols {
                let bytes = extend(&c.bytes, bits - self.step(), symbol, self.step());
                let whole = bits % 8 != 0 || plausible(&bytes);
                if whole && (!complete(&bytes, bits, self.max_length() as u32) || value_of(&bytes).is_some()) {
                    next.push(Candidate { bytes, ..*c });
                }
            }
        }
        next
    }

    /// `(f̂, SE)` of a value from its pool among `n` reports in all: the
    /// OLH count's variance and the sampling of which devices the pool holds.
    fn estimate(&self, pool: Pool, n: u64) -> (f64, f64) {
        let big_n = pool.reports.max(1) as f64;
        let (count, variance) = self.count(pool.support, pool.reports);
        let frequency = count / big_n;
        let share = frequency.clamp(0.0, 1.0);
        let sampling = share * (1.0 - share) / big_n * (1.0 - big_n / n as f64);
        (frequency, (variance / (big_n * big_n) + sampling.max(0.0)).sqrt())
    }

    /// `ĉ/N` of a pool.
    fn frequency(&self, pool: Pool) -> f64 {
        self.count(pool.support, pool.reports).0 / pool.reports.max(1) as f64
    }

    /// `(ĉ, Var[ĉ])` of OLH from a support `s` among `reports`.
    fn count(&self, s: u64, reports: u64) -> (f64, f64) {
        let (p, q, n) = (self.grr().keep_probability(), 1.0 / self.buckets() as f64, reports as f64);
        let count = (s as f64 - n * q) / (p - q);
        (count, self.count_variance(n, count.clamp(0.0, n)))
    }

    /// The standard error of a frequency estimate of zero among `reports`.
    fn null_error(&self, reports: u64) -> f64 {
        self.count(0, reports).1.sqrt() / reports.max(1) as f64
    }

    /// `S` of every key in each half of a level's reports: one hash per
    /// (report, key).
    fn supports_of(&self, level: &Level, keys: &[u64]) -> Vec<[u64; 2]> {
        let g = self.buckets();
        let mut supports = vec![[0u64; 2]; keys.len()];
        for (&seed, &y) in level.seeds.iter().zip(&level.values) {
            let half = half(seed);
            for (s, &key) in supports.iter_mut().zip(keys) {
                s[half] += u64::from(bucket(seed, key, g) == u64::from(y));
            }
        }
        supports
    }
}

/// A prefix being extended; once complete, its supports pooled over the
/// levels in each half of their reports (`pools[h]`: half `h`).
#[derive(Debug, Clone)]
struct Candidate {
    bytes: Vec<u8>,
    pools: [Pool; 2],
}

/// A support `S` among `reports` reports.
#[derive(Debug, Clone, Copy, Default)]
struct Pool {
    support: u64,
    reports: u64,
}

impl Pool {
    fn plus(self, support: u64, reports: u64) -> Pool {
        Pool { support: self.support + support, reports: self.reports + reports }
    }
}

/// One level's reports (discovery keeps every report: the values to score
/// are found only when estimating).
#[derive(Debug, Clone, Default)]
pub(super) struct Level {
    pub(super) seeds: Vec<u32>,
    pub(super) values: Vec<u32>,
}

impl Level {
    pub(super) fn len(&self) -> usize {
        self.seeds.len()
    }
}

impl Decoder<'_, Fragments> {
    /// The heavy hitters from the sketch counts of `n` reports, most frequent
    /// first (see the module docs).
    pub(super) fn discover(&self, groups: &[u64], ones: &[u64], n: u64) -> Vec<CandidateEstimate> {
        let cells = (self.sketch().rows() * self.sketch().width()) as usize;
        let part = |p: usize| (&groups[p * cells..(p + 1) * cells], &ones[p * cells..(p + 1) * cells]);
        // found[h][p]: the bytes kept at position p with hash h, and their estimates.
        let mut found = vec![vec![Vec::<(u8, f64)>::new(); self.max_length()]; 256];
        // `p` indexes each hash's positions (found[h][p]), the hash `h`
        // chosen inside the loop: there is no one `found[h]` to iterate.
        #[allow(clippy::needless_range_loop)]
        for p in 0..self.max_length() {
            let (g, o) = part(p);
            let reports: u64 = g.iter().sum();
            let table = self.sketch().table(g, o);
            let mut kept: Vec<(f64, u8, u8)> = Vec::new();
            for h in 0..=255u8 {
                for byte in 0..=255u8 {
                    let (count, _) = self.sketch().estimate(&table, reports, fragment_key(p as u8, h, byte));
                    kept.push((count, h, byte));
                }
            }
            kept.sort_by(|a, b| b.0.total_cmp(&a.0));
            for &(count, h, byte) in kept.iter().take(KEPT) {
                found[usize::from(h)][p].push((byte, count));
            }
        }
        let (g, o) = part(self.max_length());
        let reports: u64 = g.iter().sum();
        let table = self.sketch().table(g, o);
        let big_n = reports.max(1) as f64;
        let candidates: Vec<String> = found
            .iter()
            .enumerate()
            .flat_map(|(h, positions)| assemble(positions).into_iter().filter(move |v| usize::from(value_hash(v)) == h))
            .collect();
        // Significant after a Bonferroni correction over the values assembled.
        let z = crate::rappor::aggregator::normal_quantile(1.0 - 0.05 / (2.0 * candidates.len().max(1) as f64));
        let mut estimates: Vec<CandidateEstimate> = Vec::new();
        for value in candidates {
            let (count, error) = self.sketch().estimate(&table, reports, key64(value.as_bytes()));
            let frequency = count / big_n;
            let share = frequency.clamp(0.0, 1.0);
            let sampling = share * (1.0 - share) / big_n * (1.0 - big_n / n as f64);
            let std_error = ((error / big_n).powi(2) + sampling.max(0.0)).sqrt();
            if frequency > z * std_error {
                estimates.push(CandidateEstimate {
                    value,
                    frequency,
                    std_error,
                    ci95: [frequency - Z95 * std_error, frequency + Z95 * std_error],
                });
            }
        }
        estimates.sort_by(|a, b| b.frequency.total_cmp(&a.frequency));
        estimates.truncate(self.top());
        estimates
    }
}

/// The values one hash's fragments spell: position by position, UTF-8
/// prefixes then padding (padding continues by itself), at most 32 at a
/// time by the sum of their fragments' estimates.
fn assemble(positions: &[Vec<(u8, f64)>]) -> Vec<String> {
    let mut beam: Vec<(Vec<u8>, f64)> = vec![(Vec::new(), 0.0)];
    for fragments in positions {
        let mut next = Vec::new();
        for (bytes, score) in &beam {
            if bytes.last() == Some(&PAD) {
                let found = fragments.iter().find(|(b, _)| *b == PAD).map_or(0.0, |&(_, c)| c);
                next.push(([bytes.as_slice(), &[PAD]].concat(), score + found));
                continue;
            }
            for &(byte, count) in fragments {
                let extended = [bytes.as_slice(), &[byte]].concat();
                if plausible(&extended) {
                    next.push((extended, score + count));
                }
            }
        }
        next.sort_by(|a, b| b.1.total_cmp(&a.1));
        next.truncate(32);
        beam = next;
    }
    beam.into_iter()
        .filter_map(|(bytes, _)| {
            let end = bytes.iter().position(|&b| b == PAD).unwrap_or(bytes.len());
            std::str::from_utf8(&bytes[..end]).ok().map(str::to_string)
        })
        .collect()
}
