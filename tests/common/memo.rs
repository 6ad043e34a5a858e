//! What the ledger charges for the reports of one memo, against the exact ε
//! of their joint channel, enumerated here from the realized chain (not
//! from the formula the ledger uses): every longitudinal chain (L-GRR,
//! LOLOHA, L-SUE, L-OSUE, RAPPOR) for k = 1..4 reports over a grid of
//! domains, ε_∞ and ε_1, and every memoized protocol without a step. Run
//! natively (tests/memo_ledger.rs) and in wasm (wasm/full/tests/wasm.rs).

use localdp::client::{new_secret, Client};
use localdp::frequency::MemoChain;
use localdp::rappor::RapporMetric;
use localdp::{FrequencyOracle, Metric, SimulationRng};

/// The ε of `k` reports of one `m`-ary permanent response, by enumerating
/// every tuple of reports up to a renaming of the symbols other than the
/// two inputs `x`, `x'` (a tuple's probability depends only on which
/// reports equal `x`, which `x'`, and which equal one another otherwise):
/// labels 0 = x, 1 = x', 2.. = other symbols in order of first use.
fn symbols_exact(k: usize, m: u64, permanent: (f64, f64), step: (f64, f64)) -> f64 {
    fn walk(labels: &mut Vec<usize>, k: usize, others: u64, visit: &mut dyn FnMut(&[usize])) {
        if labels.len() == k {
            return visit(labels);
        }
        let used = labels.iter().filter(|&&l| l >= 2).max().map_or(0, |&l| l - 1);
        let choices = 2 + used + usize::from((used as u64) < others);
        for label in 0..choices {
            labels.push(label);
            walk(labels, k, others, visit);
            labels.pop();
        }
    }
    // P[tuple | input]: a sum over the permanent symbol s (x, x', each other
    // symbol the tuple uses, and the m − 2 − used others it does not).
    let probability = |labels: &[usize], input: usize| {
        let used = labels.iter().filter(|&&l| l >= 2).max().map_or(0, |&l| l - 1);
        let given = |s: usize| labels.iter().map(|&y| if y == s { step.0 } else { step.1 }).product::<f64>();
        let prior = |s: usize| if s == input { permanent.0 } else { permanent.1 };
        let named: f64 = (0..2 + used).map(|s| prior(s) * given(s)).sum();
        let unused = (m - 2 - used as u64) as f64 * permanent.1 * step.1.powi(k as i32);
        named + unused
    };
    let mut worst = 0.0f64;
    walk(&mut Vec::new(), k, m - 2, &mut |labels| {
        worst = worst.max((probability(labels, 0) / probability(labels, 1)).ln().abs());
    });
    worst
}

/// `ln max_Y P[Y | a] / P[Y | b]` over the `2^k` reports `Y` of one bit
/// whose permanent value has `(P[0], P[1])` = `a` (or `b`), flipped with
/// `flip` on each report.
fn bit_ratio(k: usize, a: (f64, f64), b: (f64, f64), flip: f64) -> f64 {
    let law = |(zero, one): (f64, f64), y: usize| {
        let given = |bit: usize| (0..k).map(|i| if (y >> i) & 1 == bit { 1.0 - flip } else { flip }).product::<f64>();
        one * given(1) + zero * given(0)
    };
    (0..1usize << k).map(|y| (law(a, y) / law(b, y)).ln()).fold(f64::MIN, f64::max)
}

/// The ε of `k` reports of a unary chain: positions other than the two
/// inputs' own bits have one law under both and cancel, and the two
/// positions are independent, so the worst pair of outcomes is the worst
/// of each: `max ln P[Y|own]/P[Y|other] + max ln P[Y|other]/P[Y|own]`.
fn bits_exact(k: usize, own: (f64, f64), other: (f64, f64), flip: f64) -> f64 {
    bit_ratio(k, own, other, flip) + bit_ratio(k, other, own, flip)
}

/// The spent ε after each of `k` reports of one value through a client of
/// `config` (a budget added, so that the ledger keeps its charges).
fn charges(config: &str, value: &str, k: usize, rng: &mut SimulationRng) -> Vec<f64> {
    let config = format!(r#"{},"budget":{{"epsilon":1000,"window":"1d"}}}}"#, config.strip_suffix('}').unwrap());
    let mut client = Client::new(&config, &new_secret(rng), None).unwrap();
    (0..k)
        .map(|_| {
            client.randomize_text(value, 0, rng).unwrap();
            client.spent(0)
        })
        .collect()
}

const K: usize = 4;

/// Worst charge ÷ exact over a chain's grid, asserting each ≥ 1.
struct Worst {
    name: &'static str,
    ratio: f64,
    at: String,
    cases: usize,
}

impl Worst {
    fn new(name: &'static str) -> Self {
        Worst { name, ratio: f64::INFINITY, at: String::new(), cases: 0 }
    }
    fn check(&mut self, what: &str, charged: f64, exact: f64) {
        assert!(charged >= exact, "{}: {what}: charged {charged} < exact ε {exact}", self.name);
        self.cases += 1;
        if charged / exact < self.ratio {
            (self.ratio, self.at) = (charged / exact, format!("{what}: charged {charged:.4}, exact {exact:.4}"));
        }
    }
}

/// Every chain's grid: the ledger's charge after `k = 1..4` reports of one
/// memo is at least the exact ε of their joint channel. Returns the table
/// of worst ratios (charge ÷ exact) per chain, as Markdown.
pub fn the_ledger_never_charges_a_memo_below_its_joint_channel() -> String {
    let mut rng = SimulationRng::seed_from_u64(40);
    let mut table = Vec::new();
    for protocol in ["grr", "olh", "blh", "sue", "oue"] {
        let mut worst = Worst::new(match protocol {
            "grr" => "L-GRR",
            "olh" => "LOLOHA (olh)",
            "blh" => "LOLOHA (blh)",
            "sue" => "L-SUE",
            _ => "L-OSUE",
        });
        for d in [2usize, 3, 4, 30, 64, 100, 1000] {
            for long_run in [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0] {
                for share in [0.05, 0.1, 0.25, 0.5, 0.9] {
                    let e1 = long_run * share;
                    let config = format!(
                        r#"{{"protocol":"{protocol}","epsilon":{long_run},"instantaneous_epsilon":{e1},"domain":{d},"memoize":true}}"#
                    );
                    let metric = Metric::from_json(&config).unwrap();
                    let oracle = metric.mechanism::<FrequencyOracle>().unwrap();
                    let chain = oracle.mechanism().memo_chain().expect("a longitudinal chain");
                    let spent = charges(&config, "1", K, &mut rng);
                    for k in 1..=K {
                        let exact = match chain {
                            MemoChain::Symbols { m, permanent, step } => symbols_exact(k, m, permanent, step),
                            MemoChain::Bits { own, other, flip } => bits_exact(k, own, other, flip),
                        };
                        if k == 1 {
                            // The enumeration agrees with the per-report ε the channel tests hold.
                            let tight = exact <= e1 && e1 - exact <= super::channel::tight_within(e1);
                            assert!(tight, "{config}: one report {exact} vs ε_1 {e1}");
                        }
                        worst.check(&format!("d {d}, ε∞ {long_run}, ε1 {e1}, k {k}"), spent[k - 1], exact);
                        assert!(spent[k - 1] <= long_run, "{config}: {k} reports charged above ε_∞");
                    }
                }
            }
        }
        table.push(worst);
    }
    // RAPPOR charges ε_∞ on a memo's first report: check that it covers k
    // reports. Two values' Bloom filters differ in at most 2h bits, each
    // bit's reports independent given the permanent bits.
    let mut worst = Worst::new("RAPPOR");
    for (k_bits, h) in [(16usize, 1u64), (64, 2), (128, 4)] {
        for f in [0.1, 0.25, 0.5, 0.75] {
            for (p, q) in [(0.25, 0.75), (0.5, 0.75), (0.4, 0.6)] {
                let config = format!(
                    r#"{{"protocol":"rappor","bits":{k_bits},"hashes":{h},"cohorts":4,"f":{f},"p":{p},"q":{q},"candidates":["a","b","c"]}}"#
                );
                let Ok(metric) = Metric::from_json(&config) else { continue };
                let rappor = metric.mechanism::<RapporMetric>().unwrap();
                let (f, p, q) = rappor.parameters();
                let (set, unset) = (1.0 - f / 2.0, f / 2.0);
                // Each report bit is 1 with q from a set permanent bit, p from an unset one.
                let bit = |a: f64, b: f64, k: usize| {
                    let law = |one: f64, y: usize| {
                        let given = |permanent: bool| {
                            let pr = if permanent { q } else { p };
                            (0..k).map(|i| if (y >> i) & 1 == 1 { pr } else { 1.0 - pr }).product::<f64>()
                        };
                        one * given(true) + (1.0 - one) * given(false)
                    };
                    (0..1usize << k).map(|y| (law(a, y) / law(b, y)).ln()).fold(f64::MIN, f64::max)
                };
                let spent = charges(&config, "a", K, &mut rng);
                for k in 1..=K {
                    let exact = h as f64 * (bit(set, unset, k) + bit(unset, set, k));
                    worst.check(&format!("k {k_bits}, h {h}, f {f}, p {p}, q {q}, reports {k}"), spent[k - 1], exact);
                }
            }
        }
    }
    assert!(worst.cases > 0, "no RAPPOR config was valid");
    table.push(worst);
    let mut out = String::from("| chain | cases | worst charge ÷ exact ε | at |\n|---|--:|--:|---|\n");
    for w in &table {
        out += &format!("| {} | {} | {:.4} | {} |\n", w.name, w.cases, w.ratio, w.at);
    }
    out
}

/// Without an instantaneous step a memo's reports are one report sent
/// again: their joint channel is one report's (the channel tests hold it to
/// ε), and the ledger charges ε_∞ once.
pub fn a_memo_without_a_step_resends_one_report_charged_once() {
    let event = r#"{"browser":"Safari","os":3,"mobile":"1"}"#;
    let attributes = r#"[{"name":"browser","domain":["Chrome","Firefox","Safari"]},{"name":"os","domain":4},{"name":"mobile","domain":2}]"#;
    let configs = [
        (r#"{"protocol":"grr","epsilon":2,"domain":30"#.to_string(), "7"),
        (r#"{"protocol":"oue","epsilon":2,"domain":30"#.into(), "7"),
        (r#"{"protocol":"sue","epsilon":2,"domain":30"#.into(), "7"),
        (r#"{"protocol":"olh","epsilon":2,"domain":30"#.into(), "7"),
        (r#"{"protocol":"blh","epsilon":2,"domain":30"#.into(), "7"),
        (r#"{"protocol":"ss","epsilon":2,"domain":30"#.into(), "7"),
        (r#"{"protocol":"hr","epsilon":2,"domain":30"#.into(), "7"),
        (r#"{"protocol":"hrr","epsilon":2,"domain":30"#.into(), "7"),
        (r#"{"protocol":"dbitflip","epsilon":2,"domain":30,"d":3"#.into(), "7"),
        (r#"{"protocol":"one_bit_mean","epsilon":2,"range":[0,10]"#.into(), "3.5"),
        (r#"{"protocol":"square_wave","epsilon":2,"range":[0,100],"bins":10"#.into(), "42"),
        (r#"{"protocol":"hierarchical","epsilon":2,"range":[0,1],"bins":64"#.into(), "0.3"),
        (r#"{"protocol":"pem","epsilon":2,"max_length":16"#.into(), "/checkout"),
        (r#"{"protocol":"treehist","epsilon":2,"max_length":16"#.into(), "/checkout"),
        (r#"{"protocol":"sfp","epsilon":2,"max_length":16,"sketch":{"hashes":8,"width":64}"#.into(), "/checkout"),
        (r#"{"protocol":"cms","epsilon":2,"sketch":{"hashes":8,"width":16}"#.into(), "/checkout"),
        (r#"{"protocol":"hcms","epsilon":2,"sketch":{"hashes":8,"width":64}"#.into(), "/checkout"),
        (r#"{"protocol":"pckv_grr","epsilon":2,"keys":["search","share","print"],"range":[0,60],"pad":2"#.into(), r#"{"print": 12.5}"#),
        (r#"{"protocol":"pckv_ue","epsilon":2,"keys":20,"range":[0,60],"pad":3"#.into(), r#"{"3": 12.5}"#),
        (format!(r#"{{"protocol":"marginals_oue","epsilon":2,"attributes":{attributes}"#), event),
        (format!(r#"{{"protocol":"marginals_olh","epsilon":2,"way":3,"attributes":{attributes}"#), event),
    ];
    let mut rng = SimulationRng::seed_from_u64(41);
    for (config, value) in configs {
        let config = config + r#","memoize":true,"budget":{"epsilon":1000,"window":"1d"}}"#;
        let mut client = Client::new(&config, &new_secret(&mut rng), None).unwrap();
        let long_run = client.metric().long_run_epsilon();
        let first = client.randomize_text(value, 0, &mut rng).unwrap();
        for _ in 1..K {
            assert_eq!(client.randomize_text(value, 0, &mut rng).unwrap(), first, "{config}: a memo resends its report");
            assert_eq!(client.spent(0), long_run, "{config}: charged once");
        }
    }
}

/// The review's case: ε_∞ 2, ε_1 0.5, d 30, a budget of 1. Two reports of
/// one value are 1.284 together: the second is refused.
pub fn the_second_report_of_an_l_grr_memo_does_not_fit_a_budget_of_twice_epsilon_1() {
    let config = r#"{"protocol":"grr","epsilon":2,"instantaneous_epsilon":0.5,"domain":30,"memoize":true,
                     "budget":{"epsilon":1,"window":"1d"}}"#;
    let mut rng = SimulationRng::seed_from_u64(42);
    let mut client = Client::new(config, &new_secret(&mut rng), None).unwrap();
    client.randomize_text("3", 0, &mut rng).unwrap();
    assert!(client.randomize_text("3", 1, &mut rng).is_err(), "two reports of one memo cost more than 1.0");
    assert_eq!(client.spent(1), 0.5);
}
