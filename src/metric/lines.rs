//! JSON Lines at column speed: a line that is, byte for byte, the canonical
//! serialization of one of the metric's reports ([`localdp_core::Report::to_json`]:
//! its field order, this metric's envelope, integers without leading zeros,
//! bits in lower-case hex) has only its payload integers read, into columns
//! that are counted as a [`crate::columnar::ReportBatch`]. Any other line goes through the
//! full parser ([`Aggregator::add_json`]), so validation and rejection
//! counts are those of parsing every line.

use crate::columnar::{Columns, Presence, ReportFields, Row, BATCH};
use localdp_core::error::Error;
use crate::metric::aggregator::Aggregator;
use localdp_core::report::{BitVector, Payload};
use localdp_core::text::text;

impl Aggregator {
    /// Parses, validates and adds every report of a buffer of whole JSON
    /// Lines (blank lines are skipped), counting rejections exactly as
    /// [`Aggregator::add_json`] of each line would; returns the first
    /// rejected line, numbered from 0 with blank lines included, and its
    /// error (`None` if every report was accepted).
    ///
    /// Lines that are byte for byte the canonical serialization of this
    /// metric's reports ([`Report::to_json`](localdp_core::Report::to_json)) take a fast path: only their
    /// payload integers are read, and they are counted as a batch of columns
    /// ([`Aggregator::add_batch`]); any other line is parsed in full.
    ///
    /// ```
    /// use localdp::{Aggregator, Metric, SimulationRng};
    /// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#).unwrap();
    /// let mut rng = SimulationRng::seed_from_u64(1); // simulation only
    /// let mut line = |v: &str| metric.randomize_text(v, &mut rng).unwrap().to_json();
    /// let text = format!("{}\n\n{}\nnot json\n{}\n", line("0"), line("3"), line("2"));
    /// let mut aggregator = Aggregator::new(metric.clone());
    /// let (line, _) = aggregator.add_json_lines(text.as_bytes()).unwrap();
    /// assert_eq!((line, aggregator.n(), aggregator.rejected().total()), (3, 3, 1));
    /// ```
    pub fn add_json_lines(&mut self, text: &[u8]) -> Option<(usize, Error)> {
        add(self, text)
    }
}

/// The payloads the scanner reads.
#[derive(Clone, Copy)]
enum Shape {
    /// `"value":N}`
    Value,
    /// `"seed":S,"value":N}`
    SeedValue,
    /// `"bits":"HEX"}` of `width` bytes.
    Bits { width: usize },
}

/// The canonical form of a metric's report lines.
struct Canonical {
    /// Everything before the payload's first field.
    prefix: Vec<u8>,
    shape: Shape,
}

impl Canonical {
    /// The canonical form of the metric's reports, if their payload is one
    /// the scanner reads.
    fn of(aggregator: &Aggregator) -> Option<Canonical> {
        let fields = aggregator.metric().report_fields();
        let (shape, sample, suffix) = match fields {
            ReportFields::INDEX => (Shape::Value, Payload::Index(0), "\"value\":0}".to_string()),
            ReportFields::HASHED => {
                (Shape::SeedValue, Payload::Hashed { seed: 0, value: 0 }, "\"seed\":0,\"value\":0}".to_string())
            }
            ReportFields { bits: Presence::Always, bits_width: Some(width), .. }
                if fields == ReportFields::bits(8 * width) =>
            {
                let bits = BitVector::from_bytes(vec![0; width]);
                (Shape::Bits { width }, Payload::Bits(bits), text!("\"bits\":\"", "0".repeat(2 * width), "\"}"))
            }
            _ => return None,
        };
        let line = localdp_core::metric::envelope(aggregator.metric().kind(), sample).to_json();
        let prefix = line.strip_suffix(&suffix)?.as_bytes().to_vec();
        Some(Canonical { prefix, shape })
    }
}

/// The canonical lines read so far, as columns, and their line numbers.
#[derive(Default)]
struct Pending {
    columns: Columns,
    lines: Vec<usize>,
    /// The bytes of the line being read.
    bits: Vec<u8>,
}

/// Adds every line of `text` (whole lines; blank ones are skipped) to the
/// aggregator; returns the first rejected line (numbered from 0, blank
/// lines included) and its error.
fn add(aggregator: &mut Aggregator, text: &[u8]) -> Option<(usize, Error)> {
    let canonical = Canonical::of(aggregator);
    let mut pending = Pending::default();
    let mut first: Option<(usize, Error)> = None;
    let mut keep_first = |found: Option<(usize, Error)>| {
        if let Some((line, e)) = found {
            if first.as_ref().is_none_or(|(earlier, _)| line < *earlier) {
                first = Some((line, e));
            }
        }
    };
    let (mut at, mut line) = (0, 0);
    while at < text.len() {
        let rest = &text[at..];
        let scanned = canonical.as_ref().and_then(|c| scan(c, rest, &mut pending));
        let length = match scanned {
            Some(length) => {
                pending.lines.push(line);
                if pending.columns.len() == BATCH {
                    keep_first(flush(aggregator, &mut pending));
                }
                length
            }
            None => {
                let length = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
                let report = &rest[..length];
                if !report.iter().all(u8::is_ascii_whitespace) {
                    keep_first(aggregator.add_json(report).err().map(|e| (line, e)));
                }
                length
            }
        };
        // Past the line and its newline.
        at += length + 1;
        line += 1;
    }
    keep_first(flush(aggregator, &mut pending));
    first
}

/// Reads one canonical line at the start of `text` into `pending`; returns
/// its length (without the newline), or `None` if it is not canonical (then
/// nothing is read).
fn scan(canonical: &Canonical, text: &[u8], pending: &mut Pending) -> Option<usize> {
    let mut at = text.strip_prefix(canonical.prefix.as_slice())?;
    let mut row = Row::default();
    match canonical.shape {
        Shape::Value => {
            let value;
            (value, at) = integer(at.strip_prefix(b"\"value\":")?)?;
            at = at.strip_prefix(b"}")?;
            row.value = Some(value);
        }
        Shape::SeedValue => {
            let (seed, value);
            (seed, at) = integer(at.strip_prefix(b"\"seed\":")?)?;
            (value, at) = integer(at.strip_prefix(b",\"value\":")?)?;
            at = at.strip_prefix(b"}")?;
            (row.seed, row.value) = (Some(u32::try_from(seed).ok()?), Some(value));
        }
        Shape::Bits { width } => {
            at = at.strip_prefix(b"\"bits\":\"")?;
            let hex = at.get(..2 * width)?;
            at = at[2 * width..].strip_prefix(b"\"}")?;
            let mut bad = 0;
            pending.bits.clear();
            pending.bits.extend(hex.chunks_exact(2).map(|pair| {
                let (high, low) = (HEX[usize::from(pair[0])], HEX[usize::from(pair[1])]);
                bad |= high | low;
                high << 4 | low
            }));
            if bad >= 16 {
                return None;
            }
            row.bits = Some(&pending.bits);
        }
    }
    // The line ends here.
    if !(at.is_empty() || at[0] == b'\n') || !pending.columns.push(row) {
        return None;
    }
    Some(text.len() - at.len())
}

/// The value of each lower-case hex digit; 16 for any other byte.
const HEX: [u8; 256] = {
    let mut table = [16; 256];
    let mut i = 0;
    while i < 16 {
        table[b"0123456789abcdef"[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// A canonical unsigned integer (no sign, no leading zero, below 2^64) at
/// the start of `text`, and what follows it.
fn integer(text: &[u8]) -> Option<(u64, &[u8])> {
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || (digits > 1 && text[0] == b'0') {
        return None;
    }
    let mut n: u64 = 0;
    for &d in &text[..digits] {
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some((n, &text[digits..]))
}

/// Counts the pending rows as one batch and empties them; returns the first
/// rejected line.
fn flush(aggregator: &mut Aggregator, pending: &mut Pending) -> Option<(usize, Error)> {
    let first = aggregator.add_columns(&mut pending.columns).map(|(row, e)| (pending.lines[row], e));
    pending.lines.clear();
    first
}
