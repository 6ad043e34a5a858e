//! The byte form of an aggregator's state: the unit a distributed engine
//! ships between machines (as DataFusion ships HyperLogLog registers).
//!
//! ```text
//! "LDPS"            4 bytes, the magic
//! version           1 byte, STATE_VERSION
//! id                varint length + UTF-8: protocol:ε:fingerprint, as reports carry
//! n                 varint: accepted reports
//! rejected          varint count + one varint per reason
//! counts            the mechanism's integer counts, varints (LEB128)
//! crc32             4 bytes little-endian: CRC-32 (IEEE) of everything before
//! ```
//!
//! Counts are at most [`MAX_COUNT`] (`2^53`). Everything is an integer, so merging is exact and the estimate of merged
//! states never depends on how the reports were split. Reading checks the
//! magic, the version, the checksum, the configuration's identity, every
//! length against the configuration and every count against `n`; anything
//! else is a typed [`StateError`], never a panic. Every number has one
//! encoding (no zero high bytes), so a state has exactly one byte form.

pub use localdp_core::error::StateError;

/// The only state format version this build writes and reads.
pub const STATE_VERSION: u8 = 1;

/// The largest count a state may hold (reports, per-value counts,
/// rejections): `2^53`, where every count is still exact as an `f64`, far
/// above any real collection, and low enough that sums and transforms of
/// counts cannot overflow. Larger numbers are refused when read and when
/// merged.
pub const MAX_COUNT: u64 = 1 << 53;

const MAGIC: &[u8; 4] = b"LDPS";

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320): the checksum a
/// state ends with, little-endian, over everything before it.
pub use localdp_core::bytes::crc32;

/// Writes a state (used by [`crate::Aggregate::to_bytes`]).
///
/// With [`StateReader`], which reads exactly what was written and refuses
/// anything else:
///
/// ```
/// use localdp::state::{StateError, StateReader, StateWriter, MAX_COUNT};
/// let mut w = StateWriter::new("grr:1.0:abc");
/// w.u64(7);
/// w.u128(1 << 100);
/// w.counts(&[3, 0, 4]);
/// let bytes = w.finish();
/// let mut r = StateReader::open(&bytes, "grr:1.0:abc")?;
/// assert_eq!((r.u64()?, r.u128()?), (7, 1 << 100));
/// let mut counts = [0; 3];
/// r.counts(&mut counts, MAX_COUNT, "the counts")?;
/// assert_eq!(counts, [3, 0, 4]);
/// r.finish()?;
/// assert!(matches!(StateReader::open(&bytes, "grr:2.0:abc"), Err(StateError::ConfigMismatch { .. })));
/// assert_eq!(StateReader::open(&bytes[..bytes.len() - 1], "grr:1.0:abc").err(), Some(StateError::Checksum));
/// let mut short = StateWriter::new("id");
/// short.u64(2);
/// let bytes = short.finish();
/// let mut r = StateReader::open(&bytes, "id")?;
/// assert!(r.length(1).is_err()); // a length above its bound
/// # Ok::<(), StateError>(())
/// ```
#[derive(Debug)]
pub struct StateWriter {
    bytes: Vec<u8>,
}

impl StateWriter {
    /// A state for the configuration `id`.
    ///
    /// See the example on [`StateWriter`].
    pub fn new(id: &str) -> Self {
        let mut w = StateWriter { bytes: MAGIC.to_vec() };
        w.bytes.push(STATE_VERSION);
        w.u64(id.len() as u64);
        w.bytes.extend_from_slice(id.as_bytes());
        w
    }

    /// One unsigned integer (LEB128).
    ///
    /// See the example on [`StateWriter`].
    pub fn u128(&mut self, mut x: u128) {
        loop {
            let byte = (x & 0x7f) as u8;
            x >>= 7;
            if x == 0 {
                self.bytes.push(byte);
                return;
            }
            self.bytes.push(byte | 0x80);
        }
    }

    /// One unsigned integer (LEB128).
    ///
    /// See the example on [`StateWriter`].
    pub fn u64(&mut self, x: u64) {
        self.u128(u128::from(x));
    }

    /// A length, then the counts.
    ///
    /// See the example on [`StateWriter`].
    pub fn counts(&mut self, counts: &[u64]) {
        self.u64(counts.len() as u64);
        for &c in counts {
            self.u64(c);
        }
    }

    /// The bytes, with their checksum.
    ///
    /// See the example on [`StateWriter`].
    pub fn finish(mut self) -> Vec<u8> {
        let crc = crc32(&self.bytes);
        self.bytes.extend_from_slice(&crc.to_le_bytes());
        self.bytes
    }
}

/// Reads a state (used by [`crate::Aggregate::from_bytes`]).
#[derive(Debug)]
pub struct StateReader<'a> {
    body: &'a [u8],
}

impl<'a> StateReader<'a> {
    /// Checks the magic, version, checksum and configuration identity.
    ///
    /// See the example on [`StateWriter`].
    pub fn open(bytes: &'a [u8], expected_id: &str) -> Result<Self, StateError> {
        if bytes.len() < MAGIC.len() + 1 + 4 {
            return Err(if bytes.starts_with(&MAGIC[..bytes.len().min(4)]) { StateError::Truncated } else { StateError::NotAState });
        }
        if &bytes[..4] != MAGIC {
            return Err(StateError::NotAState);
        }
        if bytes[4] != STATE_VERSION {
            return Err(StateError::UnsupportedVersion { found: bytes[4] });
        }
        let (content, crc) = bytes.split_at(bytes.len() - 4);
        if crc32(content) != u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) {
            return Err(StateError::Checksum);
        }
        let mut reader = StateReader { body: &content[5..] };
        let len = reader.length(usize::MAX)?;
        if reader.body.len() < len {
            return Err(StateError::Truncated);
        }
        let (id, rest) = reader.body.split_at(len);
        if id != expected_id.as_bytes() {
            return Err(StateError::ConfigMismatch {
                found: String::from_utf8_lossy(id).into_owned(),
                expected: expected_id.to_string(),
            });
        }
        reader.body = rest;
        Ok(reader)
    }

    /// One unsigned integer.
    ///
    /// See the example on [`StateWriter`].
    pub fn u128(&mut self) -> Result<u128, StateError> {
        let mut x = 0u128;
        for (i, &byte) in self.body.iter().enumerate() {
            if i == 19 || (i == 18 && byte > 0x03) {
                return Err(StateError::Malformed);
            }
            x |= u128::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                // One encoding per number: no zero high bytes.
                if byte == 0 && i > 0 {
                    return Err(StateError::Malformed);
                }
                self.body = &self.body[i + 1..];
                return Ok(x);
            }
        }
        Err(StateError::Truncated)
    }

    /// One count or length: at most [`MAX_COUNT`].
    ///
    /// See the example on [`StateWriter`].
    pub fn u64(&mut self) -> Result<u64, StateError> {
        u64::try_from(self.u128()?).ok().filter(|&x| x <= MAX_COUNT).ok_or(StateError::Inconsistent { what: "a count above 2^53" })
    }

    /// A length of at most `max`.
    ///
    /// See the example on [`StateWriter`].
    pub fn length(&mut self, max: usize) -> Result<usize, StateError> {
        usize::try_from(self.u64()?).ok().filter(|&l| l <= max).ok_or(StateError::Malformed)
    }

    /// Counts written by [`StateWriter::counts`]; there must be exactly
    /// `into.len()` of them, each at most `max`.
    ///
    /// See the example on [`StateWriter`].
    pub fn counts(&mut self, into: &mut [u64], max: u64, what: &'static str) -> Result<(), StateError> {
        if self.length(usize::MAX)? != into.len() {
            return Err(StateError::Inconsistent { what });
        }
        for slot in into.iter_mut() {
            *slot = self.u64()?;
            if *slot > max {
                return Err(StateError::Inconsistent { what });
            }
        }
        Ok(())
    }

    /// Ends the state: nothing may follow.
    ///
    /// See the example on [`StateWriter`].
    pub fn finish(self) -> Result<(), StateError> {
        if self.body.is_empty() {
            Ok(())
        } else {
            Err(StateError::TrailingBytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn varints_round_trip_at_their_limits() {
        let mut w = StateWriter::new("id");
        for x in [0u128, 1, 127, 128, u128::from(u64::MAX), u128::MAX] {
            w.u128(x);
        }
        let bytes = w.finish();
        let mut r = StateReader::open(&bytes, "id").unwrap();
        for x in [0u128, 1, 127, 128, u128::from(u64::MAX), u128::MAX] {
            assert_eq!(r.u128().unwrap(), x);
        }
        r.finish().unwrap();
    }
}
