//! Key-value data: PCKV against PCKV's closed forms, and against one
//! metric per key on the same data. Not a test: `cargo bench --bench
//! key_value` prints the tables (seeded: the same numbers every run).
//!
//! **Data.** `n` users, `K` keys with power-law popularity: user `u` holds
//! key `k` with probability `min(1, 0.9/(k+1)^0.7)` (drawn from a seeded
//! stream); a held key's value in `[0, 60]` is `60·(k mod 7 + 1)/8` plus a
//! uniform ±8, clipped. `ℓ` is the 90th percentile of the map sizes (PCKV's
//! advice), so about 10% of users hold more than `ℓ` keys and their keys
//! weigh `ℓ/|S|` (the padding bias, included in the error).
//!
//! **PCKV** (`"key_value"`, which picks PCKV-UE here): `R = 5` collections.
//! Frequency MSE is the mean over keys and runs of `(f̂_k − f_k)²`; mean MSE
//! the same for `m̂_k` in `[−1, 1]` units (PCKV's convention) over keys held
//! by at least 5% of users. The closed form beside each is PCKV's variance at
//! the expected shares of the data (`pckv_estimate` of
//! `KeyValueMetric::expected_shares`, with `f` the padded share `E[f̂]`),
//! plus the squared padding bias. `χ²` says whether the empirical sum of
//! squared errors, over the closed-form variances, lies in the two-sided
//! `α = 1e-6` acceptance region of `χ²` with `R·K` degrees of freedom
//! (Wilson–Hilferty), treating the keys as independent.
//!
//! **One metric per key**: each user sends `2K` reports, for every key a
//! "held" bit (GRR over `{0, 1}`) and its value (numeric `"auto"` over
//! `[0, 60]`; a non-holder sends the midpoint 30, so the presence of a report
//! says nothing), each at `ε/(2K)`: by sequential composition the user
//! spends `ε`, as with PCKV. The mean of key `k` is
//! `(Ê_k − (1 − f̂_k)·30)/f̂_k`. One collection (it is `2K` times the
//! work). Where `ε/(2K)` is below the library's minimum ε (0.01) the row
//! says so.

use localdp::key_value::pckv_estimate;
use localdp::rng::RngCore;
use localdp::{
    Aggregate, FrequencyAggregator, FrequencyOracle, KeyValueAggregator, KeyValueMetric, NumericAggregator,
    NumericMetric, Randomizer, SimulationRng,
};

const RANGE: [f64; 2] = [0.0, 60.0];
const RUNS: usize = 5;

/// Uniform in `[0, 1)` from the data stream (the data are not private).
fn unit(rng: &mut SimulationRng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

struct Data {
    maps: Vec<Vec<(usize, f64)>>,
    frequency: Vec<f64>,
    /// The mean of each key's value among its holders, in `[−1, 1]`.
    mean: Vec<f64>,
    pad: u64,
}

fn data(n: usize, keys: usize, seed: u64) -> Data {
    let mut rng = SimulationRng::seed_from_u64(seed);
    let mut maps = Vec::with_capacity(n);
    let (mut holders, mut sums) = (vec![0.0; keys], vec![0.0; keys]);
    for _ in 0..n {
        let mut map = Vec::new();
        for k in 0..keys {
            if unit(&mut rng) < (0.9 / ((k + 1) as f64).powf(0.7)).min(1.0) {
                let v = (60.0 * ((k % 7) as f64 + 1.0) / 8.0 + 16.0 * unit(&mut rng) - 8.0).clamp(RANGE[0], RANGE[1]);
                holders[k] += 1.0;
                sums[k] += v / 30.0 - 1.0;
                map.push((k, v));
            }
        }
        maps.push(map);
    }
    let mut sizes: Vec<usize> = maps.iter().map(Vec::len).collect();
    sizes.sort_unstable();
    let pad = sizes[n * 9 / 10].max(1) as u64;
    let frequency = holders.iter().map(|h| h / n as f64).collect();
    let mean = sums.iter().zip(&holders).map(|(s, h)| if *h > 0.0 { s / h } else { 0.0 }).collect();
    Data { maps, frequency, mean, pad }
}

fn map_json(map: &[(usize, f64)]) -> String {
    let pairs: Vec<String> = map.iter().map(|(k, v)| format!(r#""{k}":{v}"#)).collect();
    format!("{{{}}}", pairs.join(","))
}

/// The upper `alpha` quantile of χ² with `k` degrees of freedom (Wilson–Hilferty).
fn chi_square_quantile(z: f64, k: f64) -> f64 {
    let c = 2.0 / (9.0 * k);
    k * (1.0 - c + z * c.sqrt()).powi(3)
}

/// `Φ⁻¹(1 − 5e-7)`: the two-sided α = 1e-6 critical value.
const Z: f64 = 4.891_638_475_698_96;

struct Row {
    f_mse: f64,
    f_closed: f64,
    f_ok: bool,
    m_mse: f64,
    m_closed: f64,
    m_ok: bool,
}

fn pckv(data: &Data, keys: usize, epsilon: f64, seed: u64) -> (Row, String) {
    let n = data.maps.len();
    let config = format!(r#"{{"protocol":"key_value","epsilon":{epsilon},"keys":{keys},"range":[0,60],"pad":{}}}"#, data.pad);
    let metric = KeyValueMetric::from_json(&config).unwrap();
    let maps: Vec<String> = data.maps.iter().map(|m| map_json(m)).collect();
    // What the estimator converges to: each holder weighted min(1, ℓ/|S|).
    let mut padded = vec![0.0; keys];
    for map in &data.maps {
        let weight = (data.pad as f64 / map.len().max(1) as f64).min(1.0);
        for &(k, _) in map {
            padded[k] += weight / n as f64;
        }
    }
    let closed: Vec<(f64, f64, f64, f64)> =
        (0..keys).map(|k| pckv_estimate(&metric, metric.expected_shares(padded[k], data.mean[k]), n as u64)).collect();
    let mean_keys: Vec<usize> = (0..keys).filter(|&k| data.frequency[k] >= 0.05).collect();
    let mut rng = SimulationRng::seed_from_u64(seed);
    let (mut f_sq, mut f_chi, mut m_sq, mut m_chi) = (0.0, 0.0, 0.0, 0.0);
    for _ in 0..RUNS {
        let mut aggregator = KeyValueAggregator::new(metric.clone());
        for map in &maps {
            aggregator.add(&metric.randomize(map.as_str(), &mut rng).unwrap()).unwrap();
        }
        let estimate = aggregator.estimate().unwrap();
        for (k, e) in estimate.keys.iter().enumerate() {
            f_sq += (e.frequency.estimate - data.frequency[k]).powi(2);
            f_chi += (e.frequency.estimate - padded[k]).powi(2) / closed[k].1.powi(2);
        }
        for &k in &mean_keys {
            let m = estimate.keys[k].mean.estimate / 30.0 - 1.0;
            m_sq += (m - data.mean[k]).powi(2);
            m_chi += (m - data.mean[k]).powi(2) / closed[k].3.powi(2);
        }
    }
    let runs = RUNS as f64;
    let accept = |chi: f64, dof: f64| chi_square_quantile(-Z, dof) <= chi && chi <= chi_square_quantile(Z, dof);
    let f_closed = (0..keys).map(|k| closed[k].1.powi(2) + (padded[k] - data.frequency[k]).powi(2)).sum::<f64>() / keys as f64;
    let m_closed = mean_keys.iter().map(|&k| closed[k].3.powi(2)).sum::<f64>() / mean_keys.len() as f64;
    let row = Row {
        f_mse: f_sq / (runs * keys as f64),
        f_closed,
        f_ok: accept(f_chi, runs * keys as f64),
        m_mse: m_sq / (runs * mean_keys.len() as f64),
        m_closed,
        m_ok: accept(m_chi, runs * mean_keys.len() as f64),
    };
    (row, metric.protocol().name().to_string())
}

/// One metric per key, each of its two reports at ε/(2K): (frequency MSE,
/// mean MSE in [−1, 1] units over the keys held by ≥ 5%), or `None` below
/// the minimum ε.
fn per_key(data: &Data, keys: usize, epsilon: f64, seed: u64) -> Option<(f64, f64)> {
    let share = epsilon / (2 * keys) as f64;
    let held = FrequencyOracle::from_json(&format!(r#"{{"protocol":"grr","epsilon":{share},"domain":2}}"#)).ok()?;
    let value = NumericMetric::from_json(&format!(r#"{{"protocol":"auto","epsilon":{share},"range":[0,60]}}"#)).ok()?;
    let mut rng = SimulationRng::seed_from_u64(seed);
    let mut frequencies = vec![FrequencyAggregator::new(held.clone()); keys];
    let mut values = vec![NumericAggregator::new(value.clone()); keys];
    for map in &data.maps {
        let mut at = map.iter().peekable();
        for k in 0..keys {
            let v = at.next_if(|(key, _)| *key == k).map(|&(_, v)| v);
            frequencies[k].add(&held.randomize_index(usize::from(v.is_some()), &mut rng).unwrap()).unwrap();
            values[k].add(&value.randomize(&[v.unwrap_or(30.0)], &mut rng).unwrap()).unwrap();
        }
    }
    let (mut f_sq, mut m_sq, mut counted) = (0.0, 0.0, 0);
    for k in 0..keys {
        let f = frequencies[k].estimate().unwrap().estimates[1].unbiased_frequency;
        f_sq += (f - data.frequency[k]).powi(2);
        if data.frequency[k] >= 0.05 {
            let all = values[k].estimate().unwrap().attributes[0].mean;
            let m = ((all - (1.0 - f) * 30.0) / f.max(1.0 / data.maps.len() as f64)).clamp(RANGE[0], RANGE[1]) / 30.0 - 1.0;
            m_sq += (m - data.mean[k]).powi(2);
            counted += 1;
        }
    }
    Some((f_sq / keys as f64, m_sq / counted as f64))
}

fn main() {
    let n = std::env::args().skip_while(|a| a != "--n").nth(1).and_then(|v| v.parse().ok()).unwrap_or(100_000);
    println!("key-value data, n = {n}, power-law key popularity, ℓ = the 90th percentile of map sizes; PCKV over {RUNS} runs");
    println!("MSE: frequency (share of users holding a key); mean in [−1, 1] units over keys held by ≥ 5%");
    println!("closed form: PCKV's variance at the data (+ padding bias² for frequency); χ²: within the α = 1e-6 region");
    println!();
    println!("| K | ℓ | ε | PCKV | freq MSE | closed | χ² | mean MSE | closed | χ² | per-key freq MSE | per-key mean MSE |");
    println!("|--:|--:|--:|---|--:|--:|---|--:|--:|---|--:|--:|");
    for (i, keys) in [20usize, 50, 100].into_iter().enumerate() {
        let data = data(n, keys, 1000 + i as u64);
        for (j, epsilon) in [1.0, 2.0, 4.0].into_iter().enumerate() {
            let seed = 100 * i as u64 + j as u64;
            let (row, protocol) = pckv(&data, keys, epsilon, seed);
            let baseline = per_key(&data, keys, epsilon, seed + 50);
            let (bf, bm) = baseline.map_or(("ε/2K < 0.01".into(), "—".into()), |(f, m)| (format!("{f:.2e}"), format!("{m:.2e}")));
            let ok = |b: bool| if b { "ok" } else { "OUT" };
            println!(
                "| {keys} | {} | {epsilon} | {protocol} | {:.2e} | {:.2e} | {} | {:.2e} | {:.2e} | {} | {bf} | {bm} |",
                data.pad,
                row.f_mse,
                row.f_closed,
                ok(row.f_ok),
                row.m_mse,
                row.m_closed,
                ok(row.m_ok)
            );
        }
    }
}
