//! Sealed byte records: what the device stores, and the checksum the
//! aggregation side's state bytes end with.
//!
//! ```text
//! magic      4 bytes
//! version    1 byte
//! length     4 bytes little-endian: the body's length
//! crc32      4 bytes little-endian: CRC-32 (IEEE) of the body
//! body       integers as LEB128 (one encoding each), floats as their 8
//!            bytes little-endian, text as a LEB128 length and UTF-8
//! ```
//!
//! Reading refuses, with a typed [`StateError`] and never a panic, bytes
//! that are truncated, corrupted, of another magic or version, or that
//! carry bytes after their body.

use crate::error::StateError;

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320).
///
/// ```
/// use localdp_core::bytes::crc32;
/// assert_eq!(crc32(b"123456789"), 0xCBF4_3926); // the standard check value
/// assert_eq!(crc32(b""), 0);
/// ```
pub fn crc32(bytes: &[u8]) -> u32 {
    // Four bytes at a time ("slicing-by-4"), through 4 KB of tables made at
    // each call (a few µs, against code or data in the device's module):
    // `t[k][b]` is the register after byte `b`, then `k` zero bytes.
    let mut t = [[0u32; 256]; 4];
    for (b, entry) in t[0].iter_mut().enumerate() {
        *entry = (0..8).fold(b as u32, |c, _| if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 });
    }
    for k in 1..4 {
        for b in 0..256 {
            let c = t[k - 1][b];
            t[k][b] = t[0][(c & 255) as usize] ^ (c >> 8);
        }
    }
    let mut c = !0u32;
    let mut rest = bytes;
    while let [b0, b1, b2, b3, tail @ ..] = rest {
        let x = c ^ u32::from_le_bytes([*b0, *b1, *b2, *b3]);
        c = t[3][(x & 255) as usize] ^ t[2][(x >> 8 & 255) as usize] ^ t[1][(x >> 16 & 255) as usize] ^ t[0][(x >> 24) as usize];
        rest = tail;
    }
    !rest.iter().fold(c, |c, &b| t[0][((c ^ u32::from(b)) & 255) as usize] ^ (c >> 8))
}

const HEADER: usize = 13;

/// Writes a body, then seals it under its header.
#[derive(Default)]
pub(crate) struct ByteWriter(Vec<u8>);

impl ByteWriter {
    /// An unsigned integer (LEB128).
    pub(crate) fn uint(&mut self, mut x: u64) {
        while x >= 0x80 {
            self.0.push(x as u8 | 0x80);
            x >>= 7;
        }
        self.0.push(x as u8);
    }

    /// A float's 8 bytes, exactly.
    pub(crate) fn float(&mut self, x: f64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }

    /// Bytes: their length, then themselves.
    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        self.uint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    /// Text: its length, then its UTF-8.
    pub(crate) fn text(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    /// The bytes written, unsealed (a part of a record: a memo).
    pub(crate) fn into_body(self) -> Vec<u8> {
        self.0
    }

    /// The record: the header (`magic`, `version`, the body's length and
    /// checksum), then the body.
    pub(crate) fn seal(self, magic: &[u8; 4], version: u8) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.0.len());
        out.extend_from_slice(magic);
        out.push(version);
        out.extend_from_slice(&(self.0.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32(&self.0).to_le_bytes());
        out.extend_from_slice(&self.0);
        out
    }
}

/// Reads a body that [`ByteReader::open`] checked.
pub(crate) struct ByteReader<'a>(&'a [u8]);

impl<'a> ByteReader<'a> {
    /// The body of a record of `magic` and `version`, once its length and
    /// checksum hold.
    pub(crate) fn open(bytes: &'a [u8], magic: &[u8; 4], version: u8) -> Result<Self, StateError> {
        if !bytes.starts_with(&magic[..bytes.len().min(4)]) {
            return Err(StateError::NotAState);
        }
        let header = bytes.get(..HEADER).ok_or(StateError::Truncated)?;
        if header[4] != version {
            return Err(StateError::UnsupportedVersion { found: header[4] });
        }
        let word = |at: usize| u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]);
        let body = &bytes[HEADER..];
        match body.len().cmp(&(word(5) as usize)) {
            core::cmp::Ordering::Less => Err(StateError::Truncated),
            core::cmp::Ordering::Greater => Err(StateError::TrailingBytes),
            core::cmp::Ordering::Equal if crc32(body) != word(9) => Err(StateError::Checksum),
            core::cmp::Ordering::Equal => Ok(ByteReader(body)),
        }
    }

    /// The bytes not read yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.0
    }

    /// Bytes that [`ByteWriter::into_body`] wrote, read without a header.
    pub(crate) fn body(bytes: &'a [u8]) -> Self {
        ByteReader(bytes)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], StateError> {
        if self.0.len() < n {
            return Err(StateError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    /// An unsigned integer (LEB128, at most 10 bytes; bits past 64 are
    /// dropped, so a reader that needs one encoding writes the value again
    /// and compares).
    pub(crate) fn uint(&mut self) -> Result<u64, StateError> {
        let mut x = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.take(1)?[0];
            x |= u64::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
            if byte < 0x80 {
                return Ok(x);
            }
        }
        Err(StateError::Malformed)
    }

    /// A length, at most the bytes left (each item takes one at least).
    pub(crate) fn count(&mut self) -> Result<usize, StateError> {
        usize::try_from(self.uint()?).ok().filter(|&n| n <= self.0.len()).ok_or(StateError::Malformed)
    }

    /// A float's 8 bytes.
    pub(crate) fn float(&mut self) -> Result<f64, StateError> {
        let b = self.take(8)?;
        Ok(f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// Text written by [`ByteWriter::text`]: ASCII, as every text a device
    /// stores is (ids, protocol names, fingerprints, memo keys).
    pub(crate) fn text(&mut self) -> Result<String, StateError> {
        ascii(self.bytes()?).ok_or(StateError::Malformed)
    }

    /// Bytes written by [`ByteWriter::bytes`].
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], StateError> {
        let n = self.count()?;
        self.take(n)
    }

    /// Ends the body: nothing may follow.
    pub(crate) fn finish(self) -> Result<(), StateError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(StateError::TrailingBytes)
        }
    }
}

/// ASCII bytes as text, or `None` (without linking UTF-8 validation).
pub(crate) fn ascii(bytes: &[u8]) -> Option<String> {
    bytes.is_ascii().then(|| bytes.iter().map(|&b| char::from(b)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_floats_and_text_read_back() {
        let mut w = ByteWriter::default();
        for x in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            w.uint(x);
        }
        w.float(-0.1);
        w.text("{\"a\":1}");
        let bytes = w.seal(b"TEST", 7);
        let mut r = ByteReader::open(&bytes, b"TEST", 7).unwrap();
        for x in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(r.uint(), Ok(x));
        }
        assert_eq!(r.float().map(f64::to_bits), Ok((-0.1f64).to_bits()));
        assert_eq!(r.text().as_deref(), Ok("{\"a\":1}"));
        r.finish().unwrap();
        let body = |b: &[u8]| {
            let mut w = ByteWriter::default();
            w.0.extend_from_slice(b);
            w.seal(b"TEST", 7)
        };
        assert_eq!(ByteReader::open(&body(&[0xff; 10]), b"TEST", 7).unwrap().uint(), Err(StateError::Malformed));
        assert_eq!(ByteReader::open(&body(&[0xff; 9]), b"TEST", 7).unwrap().uint(), Err(StateError::Truncated));
        assert_eq!(ByteReader::open(&body(&[0x61, 0xc3, 0xa9]), b"TEST", 7).unwrap().text(), Err(StateError::Malformed), "not ASCII");
        assert_eq!(ByteReader::open(&bytes, b"TEST", 8).err(), Some(StateError::UnsupportedVersion { found: 7 }));
        assert_eq!(ByteReader::open(&bytes, b"TEXT", 7).err(), Some(StateError::NotAState));
        assert_eq!(ByteReader::open(&[bytes.as_slice(), &[0]].concat(), b"TEST", 7).err(), Some(StateError::TrailingBytes));
    }

    /// The CRC four bytes at a time is the bitwise one, whatever bytes
    /// are left over.
    #[test]
    fn crc32_is_the_bitwise_crc() {
        let bitwise = |bytes: &[u8]| {
            !bytes.iter().fold(!0u32, |c, &b| (0..8).fold(c ^ u32::from(b), |c, _| if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 }))
        };
        let bytes: Vec<u8> = (0..9000u32).map(|i| (i * 151 + i / 256) as u8).collect();
        for n in (0..=9).chain([100, 4097, 9000]) {
            assert_eq!(crc32(&bytes[..n]), bitwise(&bytes[..n]), "{n} bytes");
        }
    }
}
