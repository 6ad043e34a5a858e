//! The timing check (not a test): does a randomizer's running time depend
//! on the private value? For every mechanism, batches of 200 `randomize`
//! calls on two different values are timed alternately (4000 batches each),
//! and Welch's t compares the two sets of batch times. |t| above ~4.5 would
//! be evidence of a dependence (a false alarm at that level is about 1e-5).
//!
//! `cargo run --release --example timing`

use localdp::{Metric, SimulationRng};
use std::hint::black_box;
use std::time::Instant;

fn welch_t(a: &[f64], b: &[f64]) -> f64 {
    let stats = |x: &[f64]| {
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        (mean, x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0), n)
    };
    let ((ma, va, na), (mb, vb, nb)) = (stats(a), stats(b));
    (ma - mb) / (va / na + vb / nb).sqrt()
}

fn main() {
    let configs = [
        (r#"{"protocol":"grr","epsilon":1,"domain":64}"#, ["0", "63"]),
        (r#"{"protocol":"sue","epsilon":1,"domain":64}"#, ["0", "63"]),
        (r#"{"protocol":"oue","epsilon":1,"domain":64}"#, ["0", "63"]),
        (r#"{"protocol":"blh","epsilon":1,"domain":64}"#, ["0", "63"]),
        (r#"{"protocol":"olh","epsilon":1,"domain":64}"#, ["0", "63"]),
        (r#"{"protocol":"olh","epsilon":1,"domain":["a","a-much-longer-label-of-forty-characters"]}"#, ["a", "a-much-longer-label-of-forty-characters"]),
        (r#"{"protocol":"hr","epsilon":1,"domain":64}"#, ["0", "63"]),
        (r#"{"protocol":"ss","epsilon":1,"domain":64}"#, ["0", "63"]),
        (r#"{"protocol":"duchi","epsilon":1,"range":[0,1]}"#, ["0", "1"]),
        (r#"{"protocol":"laplace","epsilon":1,"range":[0,1]}"#, ["0", "1"]),
        (r#"{"protocol":"piecewise","epsilon":1,"range":[0,1]}"#, ["0", "1"]),
        (r#"{"protocol":"hybrid","epsilon":1,"range":[0,1]}"#, ["0", "1"]),
        (r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,1]}"#, ["0", "1"]),
    ];
    println!("{:<72}{:>12}{:>12}{:>10}", "config (values)", "ns/call A", "ns/call B", "Welch t");
    let mut rng = SimulationRng::seed_from_u64(1);
    for (config, [a, b]) in configs {
        let metric = Metric::from_json(config).expect("valid");
        let (mut ta, mut tb) = (Vec::new(), Vec::new());
        for round in 0..8000 {
            let value = if round % 2 == 0 { a } else { b };
            let start = Instant::now();
            for _ in 0..200 {
                black_box(metric.randomize_text(black_box(value), &mut rng).expect("a value"));
            }
            let ns = start.elapsed().as_nanos() as f64 / 200.0;
            if round % 2 == 0 { ta.push(ns) } else { tb.push(ns) }
        }
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        let label = format!("{} ({a} vs {b})", config.chars().take(48).collect::<String>());
        println!("{label:<72}{:>12.1}{:>12.1}{:>10.2}", mean(&ta), mean(&tb), welch_t(&ta, &tb));
    }
}
