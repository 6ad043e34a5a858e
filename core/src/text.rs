//! Text put together without `core::fmt`.
//!
//! Messages, metric ids and fingerprints are made of a few strings and
//! integers. [`text!`] pushes each piece onto one `String`: no `Formatter`,
//! padding or integer `Display`, which `format!` brings even for `"{}:{}"`
//! (issue #12: no `format!` in the modules). The public types' `Display` (what the CLI
//! prints) writes the same text, made by [`Piece::put`].

/// Something that writes itself onto a `String`.
pub trait Piece {
    /// Appends this piece's text to `out`.
    fn put(&self, out: &mut String);
}

impl Piece for str {
    fn put(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl Piece for String {
    fn put(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl Piece for char {
    fn put(&self, out: &mut String) {
        out.push(*self);
    }
}

impl Piece for bool {
    fn put(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl<T: Piece + ?Sized> Piece for &T {
    fn put(&self, out: &mut String) {
        (**self).put(out);
    }
}

/// Unsigned integers in decimal.
macro_rules! decimal {
    ($($t:ty),*) => {$(
        impl Piece for $t {
            fn put(&self, out: &mut String) {
                put_digits(*self as u64, 10, 1, out);
            }
        }
    )*};
}
decimal!(u8, u32, u64, usize);

impl Piece for i64 {
    fn put(&self, out: &mut String) {
        if *self < 0 {
            out.push('-');
        }
        put_digits(self.unsigned_abs(), 10, 1, out);
    }
}

/// An integer in lowercase hexadecimal, as `{:x}` writes it.
pub(crate) struct Hex(pub u64);

impl Piece for Hex {
    fn put(&self, out: &mut String) {
        put_digits(self.0, 16, 1, out);
    }
}

/// An integer as 16 lowercase hexadecimal digits, as `{:016x}` writes it.
pub(crate) struct Hex16(pub u64);

impl Piece for Hex16 {
    fn put(&self, out: &mut String) {
        put_digits(self.0, 16, 16, out);
    }
}

/// Bytes as lowercase hexadecimal, two digits per byte (a bit vector, a
/// secret, a memo key).
pub(crate) struct HexBytes<'a>(pub &'a [u8]);

impl Piece for HexBytes<'_> {
    fn put(&self, out: &mut String) {
        out.reserve(2 * self.0.len());
        for &b in self.0 {
            out.push(char::from(DIGITS[usize::from(b >> 4)]));
            out.push(char::from(DIGITS[usize::from(b & 15)]));
        }
    }
}

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The bytes that hexadecimal text spells, two digits a byte (either case),
/// as [`HexBytes`] writes them; `None` for an odd length or anything but a
/// digit.
pub(crate) fn hex_bytes(hex: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let raw = hex.as_bytes();
    if raw.len() % 2 != 0 {
        return None;
    }
    let mut bytes = Vec::with_capacity(raw.len() / 2);
    for pair in raw.chunks_exact(2) {
        bytes.push(digit(pair[0])? << 4 | digit(pair[1])?);
    }
    Some(bytes)
}

/// `n`'s digits in `radix` (at most 16), at least `width` of them.
fn put_digits(mut n: u64, radix: u64, width: usize, out: &mut String) {
    let mut digits = [b'0'; 64];
    let mut start = digits.len();
    while n > 0 || digits.len() - start < width {
        start -= 1;
        digits[start] = DIGITS[(n % radix) as usize];
        n /= radix;
    }
    out.extend(digits[start..].iter().map(|&d| d as char));
}

/// Appends the pieces given to a `String`, one after another:
/// `put!(out, "d=", d)`.
#[doc(hidden)]
#[macro_export]
macro_rules! __put {
    ($out:expr, $($piece:expr),+ $(,)?) => {{
        let out: &mut String = $out;
        $($crate::text::Piece::put(&$piece, out);)+
    }};
}
pub use crate::__put as put;

/// The text of the pieces given, one after another: `text!("d=", d)`.
#[doc(hidden)]
#[macro_export]
macro_rules! __text {
    ($($piece:expr),+ $(,)?) => {{
        let mut out = String::new();
        $crate::text::put!(&mut out, $($piece),+);
        out
    }};
}
pub use crate::__text as text;

/// The pieces' text with `separator` between them (a slice's `join`
/// instantiates a copying loop per element type; this is one push loop).
pub fn join<P: Piece>(pieces: impl IntoIterator<Item = P>, separator: &str) -> String {
    let mut out = String::new();
    for (i, piece) in pieces.into_iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        piece.put(&mut out);
    }
    out
}

/// `Display` for public types that are [`Piece`]s: the same text.
macro_rules! display_as_piece {
    ($($t:ty),+) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&$crate::text::text!(self))
            }
        }
    )+};
}
pub(crate) use display_as_piece;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_read_as_format_writes_them() {
        for n in [0u64, 1, 9, 10, 255, 4096, 1 << 53, u64::MAX] {
            assert_eq!(text!(n), n.to_string());
            assert_eq!(text!(Hex(n)), format!("{n:x}"));
            assert_eq!(text!(Hex16(n)), format!("{n:016x}"));
        }
        for n in [0i64, -1, 7, i64::MIN, i64::MAX] {
            assert_eq!(text!(n), n.to_string());
        }
        assert_eq!(text!("d=", 3usize, ':', String::from("x"), &"y"), "d=3:xy");
        assert_eq!(text!(HexBytes(&[0x00, 0x0f, 0xa5, 0xff])), "000fa5ff");
        assert_eq!(hex_bytes("000fA5ff"), Some(vec![0x00, 0x0f, 0xa5, 0xff]));
        for bad in ["0", "+f", "0g", " 0", "é0"] {
            assert_eq!(hex_bytes(bad), None, "{bad}");
        }
    }
}
