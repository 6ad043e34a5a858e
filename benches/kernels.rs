//! Aggregation throughput per protocol, one core: reports per second from
//! columns in memory (`Aggregator::add_batch`, the column kernels), from
//! JSON Lines text (`Aggregator::add_json_lines`, the canonical-line fast
//! path) and, for comparison, JSON parsed line by line (`add_json`).
//! Not a test: `cargo bench --bench kernels` prints the table.
//!
//! Domain d = 1024 for frequency protocols, range [0, 1] for numeric ones;
//! reports simulated with a fixed seed.

use localdp::columnar::{Bytes, Column, ReportBatch};
use localdp::{Aggregator, Metric, Payload, Report, SimulationRng};
use std::time::{Duration, Instant};

/// Owned dense columns of one payload shape.
#[derive(Default)]
struct Columns {
    value: Vec<u64>,
    seed: Vec<u32>,
    bits: Vec<u8>,
    width: usize,
}

impl Columns {
    fn new(reports: &[Report]) -> Columns {
        let mut c = Columns::default();
        for r in reports {
            match &r.payload {
                Payload::Index(v) => c.value.push(*v),
                Payload::Hashed { seed, value } => {
                    c.seed.push(*seed);
                    c.value.push(*value);
                }
                Payload::Bits(b) => {
                    c.width = b.byte_len();
                    c.bits.extend_from_slice(b.as_bytes());
                }
                _ => panic!("the benchmark's protocols have these payloads only"),
            }
        }
        c
    }

    fn batch<'a>(&'a self, id: &'a str, len: usize) -> ReportBatch<'a> {
        let column = |values: &'a [_]| (!values.is_empty()).then_some(Column { values, valid: None });
        ReportBatch {
            value: column(&self.value),
            seed: (!self.seed.is_empty()).then_some(Column { values: &self.seed, valid: None }),
            bits: (self.width > 0).then_some(Bytes::Fixed { data: &self.bits, width: self.width, valid: None }),
            ..ReportBatch::new(1, id, len)
        }
    }
}

/// Reports per second of `run` (which adds `n` reports), over at least
/// half a second.
fn rate(n: usize, mut run: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut rounds = 0;
    while start.elapsed() < Duration::from_millis(500) || rounds == 0 {
        run();
        rounds += 1;
    }
    (n * rounds) as f64 / start.elapsed().as_secs_f64()
}

fn millions(rate: f64) -> String {
    format!("{:>9.2}M", rate / 1e6)
}

fn main() {
    let cases: [(&str, usize); 13] = [
        (r#"{"protocol":"grr","epsilon":1,"domain":1024}"#, 1_000_000),
        (r#"{"protocol":"hr","epsilon":1,"domain":1024}"#, 1_000_000),
        (r#"{"protocol":"hrr","epsilon":1,"domain":1024}"#, 1_000_000),
        (r#"{"protocol":"sue","epsilon":1,"domain":1024}"#, 100_000),
        (r#"{"protocol":"oue","epsilon":1,"domain":1024}"#, 100_000),
        (r#"{"protocol":"ss","epsilon":1,"domain":1024}"#, 100_000),
        (r#"{"protocol":"blh","epsilon":1,"domain":1024}"#, 100_000),
        (r#"{"protocol":"olh","epsilon":1,"domain":1024}"#, 100_000),
        (r#"{"protocol":"duchi","epsilon":1,"range":[0,1]}"#, 1_000_000),
        (r#"{"protocol":"laplace","epsilon":1,"range":[0,1]}"#, 1_000_000),
        (r#"{"protocol":"piecewise","epsilon":1,"range":[0,1]}"#, 1_000_000),
        (r#"{"protocol":"hybrid","epsilon":1,"range":[0,1]}"#, 1_000_000),
        (r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,1]}"#, 1_000_000),
    ];
    println!("reports/s, one core (d = 1024 for frequency protocols)");
    println!("{:<10} {:>10} {:>10} {:>10}", "protocol", "columns", "JSON Lines", "add_json");
    for (config, n) in cases {
        let metric = Metric::from_json(config).expect("a valid config");
        let mut rng = SimulationRng::seed_from_u64(16);
        let numeric = config.contains("range");
        let reports: Vec<Report> = (0..n)
            .map(|i| {
                let value = if numeric { format!("{}", (i % 101) as f64 / 100.0) } else { (i * 7 % 1024).to_string() };
                metric.randomize_text(&value, &mut rng).expect("a value of the metric")
            })
            .collect();
        let id = metric.id();
        let columns = Columns::new(&reports);
        let batch = columns.batch(&id, n);
        let text = reports.iter().map(|r| r.to_json() + "\n").collect::<String>();

        let mut aggregator = Aggregator::new(metric.clone());
        let in_memory = rate(n, || assert!(aggregator.add_batch(&batch).is_none()));
        let mut aggregator = Aggregator::new(metric.clone());
        let lines = rate(n, || assert!(aggregator.add_json_lines(text.as_bytes()).is_none()));
        let mut aggregator = Aggregator::new(metric.clone());
        let one_by_one = rate(n, || {
            for line in text.lines() {
                aggregator.add_json(line).expect("accepted");
            }
        });
        println!("{:<10} {} {} {}", metric.protocol(), millions(in_memory), millions(lines), millions(one_by_one));
    }
}
