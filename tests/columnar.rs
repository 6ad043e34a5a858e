//! The columnar path counts exactly what the JSON path counts: for every
//! protocol, reports simulated with a fixed seed plus hostile ones give the
//! same state bytes, the same rejections by reason and the same first
//! rejection through `add_json` line by line, `add_batch` of their columns
//! and `add_json_lines` of their text; hostile columns (nulls, short
//! columns, bad offsets, another envelope) are counted, never a panic.

use localdp::columnar::{Bitmap, Bytes, Column, List, Presence, ReportBatch, ReportFields};
use localdp::metric::ValueKind;
use localdp::report::BitVector;
use localdp::{Aggregator, FrequencyProtocol, Metric, NumericProtocol, Payload, ProtocolFamily, Rejection, Report, SimulationRng};

#[path = "../fuzz/fuzz_targets/configs.rs"]
mod fuzz_configs;

/// Every frequency and numeric protocol (domains not a multiple of 8, so
/// bit vectors have padding), then one config per payload shape of every
/// family (the fuzz targets' list).
fn configs() -> Vec<String> {
    let frequency = FrequencyProtocol::ALL.iter().map(|p| match p.name() {
        "dbitflip" => r#"{"protocol":"dbitflip","epsilon":1,"domain":37,"d":3}"#.to_string(),
        name => format!(r#"{{"protocol":"{name}","epsilon":1.5,"domain":37}}"#),
    });
    let numeric = NumericProtocol::ALL.iter().map(|p| format!(r#"{{"protocol":"{}","epsilon":1,"range":[0,10]}}"#, p.name()));
    let wide = [
        r#"{"protocol":"oue","epsilon":1,"domain":64}"#.to_string(),
        r#"{"protocol":"olh","epsilon":3,"domain":300}"#.to_string(),
        r#"{"protocol":"hybrid","epsilon":2,"range":[[0,1],[0,5],[2,3]]}"#.to_string(),
        r#"{"protocol":"pckv_grr","epsilon":2,"keys":5,"range":[0,10],"pad":2}"#.to_string(),
        r#"{"protocol":"pckv_ue","epsilon":2,"keys":["a","b","c"],"range":[0,10],"pad":2}"#.to_string(),
    ];
    frequency.chain(numeric).chain(wide).chain(fuzz_configs::CONFIGS.iter().map(|c| c.to_string())).collect()
}

/// Values a metric's devices hold, the `i`-th.
fn value(metric: &Metric, i: usize) -> String {
    let [a, b] = metric.neighbours();
    match metric.value_kind() {
        ValueKind::Index { size: Some(d) } => ((i * 7) % d).to_string(),
        _ if i % 3 == 2 => a,
        _ => b,
    }
}

/// Payloads a device could not have sent, made from one it did.
fn hostile(payload: &Payload) -> Vec<Payload> {
    let bytes = |b: &BitVector, f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = b.as_bytes().to_vec();
        f(&mut v);
        BitVector::from_bytes(v)
    };
    match payload.clone() {
        Payload::Index(v) => vec![Payload::Index(v + 1000), Payload::Index(u64::MAX)],
        Payload::Hashed { seed, value } => vec![
            Payload::Hashed { seed, value: value + 1000 },
            Payload::Hashed { seed: u32::MAX, value: u64::MAX },
        ],
        Payload::Bits(b) => vec![
            Payload::Bits(bytes(&b, &|v| v.push(0))),
            Payload::Bits(bytes(&b, &|v| *v.last_mut().unwrap() |= 0x80)),
            Payload::Bits(bytes(&b, &|v| v[0] ^= 1)),
            Payload::Bits(bytes(&b, &|v| v.clear())),
        ],
        Payload::Cohort { cohort, bits } => vec![
            Payload::Cohort { cohort: cohort + 1000, bits: bits.clone() },
            Payload::Cohort { cohort, bits: bytes(&bits, &|v| v.push(1)) },
        ],
        Payload::Grouped { group, seed, value } => vec![
            Payload::Grouped { group: group + 1000, seed, value },
            Payload::Grouped { group, seed, value: value + 1000 },
        ],
        Payload::Sampled { attributes, values } => {
            let mut reversed = attributes.clone();
            reversed.reverse();
            let mut longer = values.clone();
            longer.push(0);
            vec![
                Payload::Sampled { attributes: reversed, values: values.clone() },
                Payload::Sampled { attributes: attributes.clone(), values: longer },
                Payload::Sampled { attributes: vec![u32::MAX; attributes.len()], values: values.clone() },
                Payload::Sampled { attributes, values: vec![u64::MAX; values.len()] },
            ]
        }
        _ => Vec::new(),
    }
}

/// A payload of another shape than the metric's (malformed for it).
fn foreign(payload: &Payload) -> Payload {
    match payload {
        Payload::Index(_) => Payload::Hashed { seed: 1, value: 0 },
        _ => Payload::Index(0),
    }
}

/// Reports simulated with a fixed seed.
fn simulated(metric: &Metric, n: usize) -> Vec<Report> {
    let mut rng = SimulationRng::seed_from_u64(16);
    (0..n).map(|i| metric.randomize_text(&value(metric, i), &mut rng).expect("a value of the metric")).collect()
}

/// Simulated reports interleaved with hostile ones of the same shape.
fn reports(metric: &Metric, n: usize) -> Vec<Report> {
    let mut out = Vec::new();
    for (i, report) in simulated(metric, n).into_iter().enumerate() {
        if i % 10 == 3 {
            out.extend(hostile(&report.payload).into_iter().map(|payload| Report { payload, ..report.clone() }));
        }
        out.push(report);
    }
    out
}

/// A column's validity bitmap, if any row is null.
type Validity = Option<Vec<u8>>;

/// A binary column's offsets (`Ok`, variable width) or its one width
/// (`Err`, fixed width).
type Widths = Result<Vec<i32>, usize>;

/// A list column: its offsets, its items and its validity.
type ListColumn<T> = (Vec<i32>, Vec<T>, Validity);

/// A validity bitmap of the rows that are `Some`, or none if all are.
fn bitmap<T>(rows: &[Option<T>]) -> Validity {
    rows.iter().any(Option::is_none).then(|| {
        let mut bits = vec![0u8; rows.len().div_ceil(8)];
        for (i, row) in rows.iter().enumerate() {
            if row.is_some() {
                bits[i / 8] |= 1 << (i % 8);
            }
        }
        bits
    })
}

/// A list column's offsets and items.
fn list<T: Copy>(rows: &[Option<Vec<T>>]) -> (Vec<i32>, Vec<T>) {
    let mut offsets = vec![0];
    let mut items = Vec::new();
    for row in rows {
        items.extend(row.iter().flatten().copied());
        offsets.push(items.len() as i32);
    }
    (offsets, items)
}

/// The list column of `rows`, or none if every row is null.
fn lists<T: Copy>(rows: &[Option<Vec<T>>]) -> Option<ListColumn<T>> {
    rows.iter().any(Option::is_some).then(|| {
        let (offsets, items) = list(rows);
        (offsets, items, bitmap(rows))
    })
}

/// Reports as owned columns, viewed as a [`ReportBatch`].
struct Columns {
    len: usize,
    value: Option<(Vec<u64>, Validity)>,
    seed: Option<(Vec<u32>, Validity)>,
    cohort: Option<(Vec<u32>, Validity)>,
    /// Its [`Widths`], the data and the validity.
    bits: Option<(Widths, Vec<u8>, Validity)>,
    attributes: Option<ListColumn<u32>>,
    values: Option<ListColumn<u64>>,
}

impl Columns {
    fn new(payloads: &[Payload]) -> Columns {
        let (mut value, mut seed, mut cohort, mut bits, mut attributes, mut values) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        for p in payloads {
            let (mut v, mut s, mut c, mut b, mut a, mut vs) = (None, None, None, None, None, None);
            match p.clone() {
                Payload::Index(x) => v = Some(x),
                Payload::Hashed { seed: x, value: y } => (s, v) = (Some(x), Some(y)),
                Payload::Bits(x) => b = Some(x.as_bytes().to_vec()),
                Payload::Cohort { cohort: x, bits: y } => (c, b) = (Some(x), Some(y.as_bytes().to_vec())),
                Payload::Grouped { group, seed: x, value: y } => (c, s, v) = (Some(group), Some(x), Some(y)),
                Payload::Sampled { attributes: x, values: y } => (a, vs) = (Some(x), Some(y)),
                _ => unreachable!("every payload is listed"),
            }
            value.push(v);
            seed.push(s);
            cohort.push(c);
            bits.push(b);
            attributes.push(a);
            values.push(vs);
        }
        fn fixed<T: Copy + Default>(rows: &[Option<T>]) -> Option<(Vec<T>, Validity)> {
            rows.iter().any(Option::is_some).then(|| (rows.iter().map(|r| r.unwrap_or_default()).collect(), bitmap(rows)))
        }
        let bits = bits.iter().any(Option::is_some).then(|| {
            let widths: Vec<usize> = bits.iter().flatten().map(Vec::len).collect();
            let valid = bitmap(&bits);
            if valid.is_none() && widths.windows(2).all(|w| w[0] == w[1]) {
                (Err(widths[0]), bits.iter().flatten().flatten().copied().collect(), None)
            } else {
                let (offsets, data) = list(&bits);
                (Ok(offsets), data, valid)
            }
        });
        Columns {
            len: payloads.len(),
            value: fixed(&value),
            seed: fixed(&seed),
            cohort: fixed(&cohort),
            bits,
            attributes: lists(&attributes),
            values: lists(&values),
        }
    }

    fn batch<'a>(&'a self, id: &'a str) -> ReportBatch<'a> {
        let valid = |v: &'a Validity| v.as_ref().map(|bytes| Bitmap { bytes, offset: 0 });
        ReportBatch {
            value: self.value.as_ref().map(|(values, v)| Column { values, valid: valid(v) }),
            seed: self.seed.as_ref().map(|(values, v)| Column { values, valid: valid(v) }),
            cohort: self.cohort.as_ref().map(|(values, v)| Column { values, valid: valid(v) }),
            bits: self.bits.as_ref().map(|(shape, data, v)| match shape {
                Err(width) => Bytes::Fixed { data, width: *width, valid: valid(v) },
                Ok(offsets) => Bytes::Variable { offsets, data, valid: valid(v) },
            }),
            attributes: self.attributes.as_ref().map(|(offsets, values, v)| List { offsets, values, valid: valid(v) }),
            values: self.values.as_ref().map(|(offsets, values, v)| List { offsets, values, valid: valid(v) }),
            ..ReportBatch::new(1, id, self.len)
        }
    }
}

/// State bytes, rejections and the first rejection (row and reason).
type Outcome = (Vec<u8>, Vec<u64>, Option<(usize, Rejection)>);

fn outcome(aggregator: &Aggregator, first: Option<(usize, localdp::Error)>) -> Outcome {
    let reason = |e: localdp::Error| match e {
        localdp::Error::Rejected { reason, .. } => reason,
        other => panic!("a rejection, not {other}"),
    };
    let rejected = Rejection::ALL.iter().map(|&r| aggregator.rejected().get(r)).collect();
    (aggregator.to_bytes(), rejected, first.map(|(i, e)| (i, reason(e))))
}

fn by_lines(metric: &Metric, lines: &[String]) -> Outcome {
    let mut aggregator = Aggregator::new(metric.clone());
    let mut first = None;
    for (i, line) in lines.iter().enumerate() {
        if let Err(e) = aggregator.add_json(line) {
            first = first.or(Some((i, e)));
        }
    }
    outcome(&aggregator, first)
}

fn by_batch(metric: &Metric, batch: &ReportBatch<'_>) -> Outcome {
    let mut aggregator = Aggregator::new(metric.clone());
    let first = aggregator.add_batch(batch);
    outcome(&aggregator, first)
}

fn by_text(metric: &Metric, lines: &[String]) -> Outcome {
    let mut aggregator = Aggregator::new(metric.clone());
    let first = aggregator.add_json_lines(lines.join("\n").as_bytes());
    outcome(&aggregator, first)
}

#[test]
fn every_path_counts_the_same_reports_alike() {
    for config in configs() {
        let metric = Metric::from_json(&config).expect("a valid config");
        let id = metric.id();
        let reports = reports(&metric, 400);
        let lines: Vec<String> = reports.iter().map(Report::to_json).collect();
        let payloads: Vec<Payload> = reports.iter().map(|r| r.payload.clone()).collect();
        let columns = Columns::new(&payloads);
        let expected = by_lines(&metric, &lines);
        assert!(expected.1.iter().sum::<u64>() > 0, "{config}: hostile reports are rejected");
        assert!(!expected.0.is_empty() && expected.2.is_some());
        assert_eq!(by_batch(&metric, &columns.batch(&id)), expected, "{config}: columns");
        assert_eq!(by_text(&metric, &lines), expected, "{config}: JSON Lines");

        // Reports of another shape mixed in: nullable columns, row by row.
        let mut mixed = payloads.clone();
        mixed.insert(5, foreign(&payloads[0]));
        let mixed_lines: Vec<String> = mixed.iter().map(|p| Report { payload: p.clone(), ..reports[0].clone() }.to_json()).collect();
        let expected = by_lines(&metric, &mixed_lines);
        assert_eq!(by_batch(&metric, &Columns::new(&mixed).batch(&id)), expected, "{config}: mixed columns");
        assert_eq!(by_text(&metric, &mixed_lines), expected, "{config}: mixed JSON Lines");
    }
}

#[test]
fn lines_that_are_not_canonical_take_the_full_parser() {
    let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":8}"#).unwrap();
    let canonical = metric.randomize_text("3", &mut SimulationRng::seed_from_u64(1)).unwrap().to_json();
    let value = canonical.rsplit_once(':').unwrap().1.trim_end_matches('}').to_string();
    let lines = vec![
        canonical.clone(),
        canonical.replace(",\"", ", \""),                           // spaces: accepted
        canonical.replace(&format!(":{value}}}"), &format!(":0{value}}}")), // leading zero: malformed
        canonical.replace(&format!(":{value}}}"), ":99999999999999999999999}"), // above 2^64: malformed
        canonical.replace(&format!(":{value}}}"), ":8}"),            // out of range
        canonical.replace("\"version\":1", "\"version\":2"),        // unsupported
        canonical.replace("\"epsilon\":1", "\"epsilon\":1.0000001"),
        format!("{canonical}\r"),
        "   ".to_string(),
        canonical[..canonical.len() - 1].to_string(),
        format!("{canonical} "),
    ];
    let lines_outcome = by_lines(&metric, &lines.iter().filter(|l| !l.trim().is_empty()).cloned().collect::<Vec<_>>());
    let text_outcome = by_text(&metric, &lines);
    assert_eq!((&text_outcome.0, &text_outcome.1), (&lines_outcome.0, &lines_outcome.1));
    assert_eq!(text_outcome.2, Some((2, Rejection::Malformed)), "the first rejected line, blank lines counted");
    assert_eq!(Aggregator::from_bytes(metric.clone(), &text_outcome.0).unwrap().n(), 4);

    // Bits: upper-case hex is accepted by the parser, not read by the scanner.
    let metric = Metric::from_json(r#"{"protocol":"oue","epsilon":1,"domain":12}"#).unwrap();
    let canonical = metric.randomize_text("3", &mut SimulationRng::seed_from_u64(1)).unwrap().to_json();
    let (head, hex) = canonical.rsplit_once(":\"").unwrap();
    let lines = vec![
        canonical.clone(),
        format!("{head}:\"{}", hex.to_uppercase()),
        format!("{head}:\"zz{}", &hex[2..]),
        format!("{head}:\"00{hex}"),
        format!("{head}:\"{}ff\"}}", &hex[..2]), // the second byte's padding bits
    ];
    let text_outcome = by_text(&metric, &lines);
    assert_eq!(text_outcome, by_lines(&metric, &lines));
    assert_eq!(text_outcome.1.iter().sum::<u64>(), 3, "bad hex, a bad length, padding set");
}

#[test]
fn hostile_columns_are_counted_never_a_panic() {
    for config in configs() {
        let metric = Metric::from_json(&config).expect("a valid config");
        let id = metric.id();
        let reports = reports(&metric, 60);
        let payloads: Vec<Payload> = reports.iter().map(|r| r.payload.clone()).collect();
        let columns = Columns::new(&payloads);
        let full = columns.batch(&id);
        let len = full.len;
        let malformed = |batch: &ReportBatch<'_>| {
            let mut aggregator = Aggregator::new(metric.clone());
            aggregator.add_batch(batch);
            (aggregator.n(), aggregator.rejected().get(Rejection::Malformed), aggregator.rejected().total())
        };
        let (n, _, total) = malformed(&full);
        assert_eq!(n + total, len as u64);

        // Rows past every column's end.
        let longer = ReportBatch { len: len + 7, ..full };
        let (n_longer, malformed_longer, total_longer) = malformed(&longer);
        assert_eq!((n_longer, total_longer), (n, total + 7), "{config}: short columns");
        assert!(malformed_longer >= 7);

        // Every row null: no field, malformed.
        let nothing = [0u8; 64];
        let null = Some(Bitmap { bytes: &nothing, offset: 3 });
        let all_null = ReportBatch {
            value: full.value.map(|c| Column { valid: null, ..c }),
            seed: full.seed.map(|c| Column { valid: null, ..c }),
            cohort: full.cohort.map(|c| Column { valid: null, ..c }),
            bits: full.bits.map(|b| match b {
                Bytes::Fixed { data, width, .. } => Bytes::Fixed { data, width, valid: null },
                Bytes::Variable { offsets, data, .. } => Bytes::Variable { offsets, data, valid: null },
            }),
            attributes: full.attributes.map(|l| List { valid: null, ..l }),
            values: full.values.map(|l| List { valid: null, ..l }),
            ..full
        };
        assert_eq!(malformed(&all_null), (0, len as u64, len as u64), "{config}: nulls");

        // A validity bitmap shorter than the batch.
        let short = Some(Bitmap { bytes: &[0xff], offset: 0 });
        let short_bitmap = ReportBatch { value: full.value.map(|c| Column { valid: short, ..c }), ..full };
        let (n_short, _, total_short) = malformed(&short_bitmap);
        assert_eq!(n_short + total_short, len as u64);

        // Offsets out of bounds, negative or decreasing.
        let bad = [0i32, 5, -1, 3, i32::MAX, 2, 1, 0];
        let bad_offsets = ReportBatch {
            bits: full.bits.map(|b| match b {
                Bytes::Fixed { data, .. } => Bytes::Fixed { data, width: usize::MAX, valid: None },
                Bytes::Variable { data, .. } => Bytes::Variable { offsets: &bad, data, valid: None },
            }),
            attributes: full.attributes.map(|l| List { offsets: &bad, ..l }),
            values: full.values.map(|l| List { offsets: &bad[1..], ..l }),
            ..full
        };
        let (n_bad, _, total_bad) = malformed(&bad_offsets);
        assert_eq!(n_bad + total_bad, len as u64);
        if full.bits.is_some() || full.attributes.is_some() {
            assert!(n_bad < n.max(1), "{config}: rows with bad offsets are not accepted");
        }

        // Another metric's or another version's batch: nothing accepted.
        let other = ReportBatch { id: "grr:1:0000000000000000", ..full };
        let version = ReportBatch { version: 2, ..full };
        let mut aggregator = Aggregator::new(metric.clone());
        aggregator.add_batch(&other);
        aggregator.add_batch(&version);
        assert_eq!(aggregator.n(), 0);
        assert_eq!(aggregator.rejected().get(Rejection::UnsupportedVersion), len as u64);
        assert_eq!(aggregator.rejected().get(Rejection::ConfigMismatch), len as u64, "{config}: every row is well formed");
    }
}

#[test]
fn report_fields_describe_the_reports() {
    for config in configs() {
        let metric = Metric::from_json(&config).expect("a valid config");
        let fields = metric.report_fields();
        let mut seen = ReportFields::NONE;
        for report in simulated(&metric, 200) {
            let shape = match &report.payload {
                Payload::Index(_) => ReportFields::INDEX,
                Payload::Hashed { .. } => ReportFields::HASHED,
                Payload::Bits(b) => ReportFields::bits(8 * b.byte_len()),
                Payload::Cohort { bits, .. } => ReportFields::cohort_bits(8 * bits.byte_len()),
                Payload::Grouped { .. } => ReportFields::GROUPED,
                Payload::Sampled { .. } => ReportFields::SAMPLED,
                _ => unreachable!(),
            };
            seen = if seen == ReportFields::NONE { shape } else { seen.either(shape) };
        }
        assert_eq!(seen, fields, "{config}");
        assert!(fields.bits == Presence::Never || fields.bits_width.is_some() || config.contains("hierarchical"));
    }
}
