//! Untrusted columns and JSON Lines: `Aggregator::add_batch` of a batch
//! whose columns, validity bitmaps and offsets are cut from the input, and
//! `Aggregator::add_json_lines` of the input as text, against the fixed
//! configurations (one per payload shape).
//!
//! Properties: no panic; every row is counted exactly once (accepted or
//! rejected); a batch counts what its rows count one by one as JSON
//! (`ReportBatch::row`, then `add_json` of the report); `add_json_lines`
//! counts what `add_json` of each non-blank line counts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use localdp::columnar::{Bitmap, Bytes, Column, List, ReportBatch};
use localdp::{Aggregator, Metric, Report};
use std::sync::OnceLock;

mod configs;
use configs::CONFIGS;

fn metrics() -> &'static [Metric] {
    static METRICS: OnceLock<Vec<Metric>> = OnceLock::new();
    METRICS.get_or_init(|| CONFIGS.iter().map(|c| Metric::from_json(c).expect("a valid fuzz config")).collect())
}

/// Fixed-width values read from bytes (little-endian, the rest dropped).
fn words<const N: usize>(bytes: &[u8]) -> Vec<[u8; N]> {
    bytes.chunks_exact(N).map(|c| c.try_into().unwrap()).collect()
}

fuzz_target!(|data: &[u8]| {
    // The first bytes choose the shape; the rest is cut into eight parts.
    let [shape, len, offset, ..] = *data else { return };
    let rest = &data[3..];
    let part = rest.len() / 8;
    let cut = |i: usize| &rest[i * part..(i + 1) * part];
    let value: Vec<u64> = words::<8>(cut(0)).into_iter().map(|w| u64::from_le_bytes(w) % 70).collect();
    let seed: Vec<u32> = words::<4>(cut(1)).into_iter().map(u32::from_le_bytes).collect();
    let cohort: Vec<u32> = words::<4>(cut(2)).into_iter().map(|w| u32::from_le_bytes(w) % 20).collect();
    let offsets: Vec<i32> = words::<4>(cut(3)).into_iter().map(|w| i32::from_le_bytes(w) % 64).collect();
    let small: Vec<u32> = cut(4).iter().map(|&b| u32::from(b % 8)).collect();
    let items: Vec<u64> = cut(5).iter().map(|&b| u64::from(b % 4)).collect();
    let bits = cut(6);
    let valid = cut(7);
    let bitmap = (shape & 0x40 != 0).then_some(Bitmap { bytes: valid, offset: usize::from(offset % 16) });
    let len = usize::from(len);
    for metric in metrics() {
        let id = metric.id();
        let width = metric.report_fields().bits_width.unwrap_or(2).max(1);
        let batch = ReportBatch {
            value: (shape & 1 != 0).then_some(Column { values: &value, valid: bitmap.filter(|_| shape & 0x80 != 0) }),
            seed: (shape & 2 != 0).then_some(Column { values: &seed, valid: None }),
            cohort: (shape & 4 != 0).then_some(Column { values: &cohort, valid: bitmap }),
            bits: (shape & 8 != 0).then_some(if shape & 0x80 != 0 {
                Bytes::Variable { offsets: &offsets, data: bits, valid: bitmap }
            } else {
                Bytes::Fixed { data: bits, width, valid: None }
            }),
            attributes: (shape & 16 != 0).then_some(List { offsets: &offsets, values: &small, valid: None }),
            values: (shape & 32 != 0).then_some(List { offsets: &offsets, values: &items, valid: bitmap }),
            ..ReportBatch::new(1, &id, len)
        };
        let mut columns = Aggregator::new(metric.clone());
        columns.add_batch(&batch);
        assert_eq!(columns.n() + columns.rejected().total(), len as u64, "every row counted once");
        // The same rows one by one, as JSON.
        let fingerprint = id.rsplit(':').next().unwrap().to_string();
        let mut rows = Aggregator::new(metric.clone());
        for i in 0..len {
            let line = match batch.row(i) {
                Ok(payload) => Report {
                    version: 1,
                    protocol: metric.protocol(),
                    epsilon: metric.epsilon(),
                    domain: fingerprint.clone(),
                    payload,
                }
                .to_json(),
                Err(_) => "{}".to_string(), // malformed, as the row is
            };
            let _ = rows.add_json(&line);
        }
        assert_eq!(columns.to_bytes(), rows.to_bytes(), "a batch counts as its rows");

        // The input as JSON Lines.
        let mut text = Aggregator::new(metric.clone());
        text.add_json_lines(data);
        let mut lines = Aggregator::new(metric.clone());
        for line in data.split(|&b| b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)) {
            let _ = lines.add_json(line);
        }
        assert_eq!(text.to_bytes(), lines.to_bytes(), "JSON Lines count as their lines");
    }
});
