//! Numbers as text and the float functions, identical native and in wasm:
//! the shortest round-trip text of a number, the parser that takes what
//! Rust's `str::parse` takes, and `exp`/`ln` (`localdp::privacy` re-exports
//! the public ones).

/// A number as text, shortest round-trip form (as in JSON: `1.0`, `0.25`,
/// `1e-7`, `1.5e+300`). Used instead of `{}` formatting, whose float code
/// would add kilobytes to the wasm build; there the shortest digits come
/// from JS (`String(x)`), natively from Rust's `{:e}`, and
/// both are laid out as serde_json lays numbers out, so ids and messages
/// are the same text.
///
/// ```
/// use localdp::privacy::number_text;
/// assert_eq!([number_text(1.0), number_text(0.25), number_text(1e-7)], ["1.0", "0.25", "1e-7"]);
/// assert_eq!(number_text(f64::NEG_INFINITY), "-Infinity");
/// ```
pub fn number_text(x: f64) -> String {
    if !x.is_finite() {
        return (if x.is_nan() { "NaN" } else if x > 0.0 { "Infinity" } else { "-Infinity" }).to_string();
    }
    shortest_layout(&shortest(x))
}

/// JS's shortest round-trip text of `x`.
#[cfg(js)]
fn shortest(x: f64) -> String {
    crate::js::number_string(x)
}

/// JS's shortest round-trip text of `x` (a module without wasm-bindgen).
#[cfg(all(target_arch = "wasm32", target_os = "unknown", not(js)))]
fn shortest(x: f64) -> String {
    crate::host::number_string(x)
}

/// Natively: the shortest round-trip digits, as JS's.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn shortest(x: f64) -> String {
    format!("{x:e}")
}

/// Lays out a finite number's shortest digits, given as any decimal text
/// (`-0.000001`, `1.5e+21`, `123.45`, `1e-7`), as serde_json writes
/// numbers: `1.0` for integers up to 16 digits, a point inside the digits
/// or `0.0000d` down to `1e-5`, else `d.ddde-7` / `de+16`.
fn shortest_layout(text: &str) -> String {
    // Byte by byte: str's patterns, `chars` and `parse` cost the GRR
    // module 1.2 KB here (0.6 KB gzipped).
    let (negative, text) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        text => (false, text),
    };
    let e = text.iter().position(|&c| c == b'e' || c == b'E').unwrap_or(text.len());
    let (mantissa, exponent) = text.split_at(e);
    let (sign, exponent) = match exponent.get(1..).unwrap_or_default() {
        [b'-', rest @ ..] => (-1i32, rest),
        [b'+', rest @ ..] | rest => (1, rest),
    };
    let exponent = sign.wrapping_mul(exponent.iter().fold(0i32, |e, &c| e.wrapping_mul(10).wrapping_add(i32::from(c.wrapping_sub(b'0')))));
    let point = mantissa.iter().position(|&c| c == b'.');
    let frac = point.map_or(0, |p| mantissa.len() - p - 1) as i32;
    let mut all = mantissa.to_vec();
    if let Some(p) = point {
        all.remove(p);
    }
    let first = all.iter().position(|&c| c != b'0').unwrap_or(all.len());
    let end = all.iter().rposition(|&c| c != b'0').map_or(first, |last| last + 1);
    let trimmed = &all[first..end];
    let mut out = Vec::new();
    if negative {
        out.push(b'-');
    }
    // value = trimmed × 10^k; kk is the decimal point's place in `trimmed`.
    let length = trimmed.len() as i32;
    let k = exponent - frac + (all.len() - end) as i32;
    let kk = length + k;
    let zeros = |out: &mut Vec<u8>, n: i32| out.resize(out.len() + n.max(0) as usize, b'0');
    let mut tail = None;
    if trimmed.is_empty() {
        out.extend_from_slice(b"0.0");
    } else if k >= 0 && kk <= 16 {
        out.extend_from_slice(trimmed);
        zeros(&mut out, k);
        out.extend_from_slice(b".0");
    } else if 0 < kk && kk <= 16 {
        out.extend_from_slice(&trimmed[..kk as usize]);
        out.push(b'.');
        out.extend_from_slice(&trimmed[kk as usize..]);
    } else if -5 < kk && kk <= 0 {
        out.extend_from_slice(b"0.");
        zeros(&mut out, -kk);
        out.extend_from_slice(trimmed);
    } else {
        out.push(trimmed[0]);
        if length > 1 {
            out.push(b'.');
            out.extend_from_slice(&trimmed[1..]);
        }
        out.extend_from_slice(if kk > 1 { b"e+" } else { b"e" });
        tail = Some((kk - 1) as i64);
    }
    let mut out = String::from_utf8(out).unwrap_or_default();
    if let Some(exponent) = tail {
        crate::text::put!(&mut out, exponent);
    }
    out
}

/// Parses a number as Rust's `str::parse::<f64>` does: an optional sign,
/// digits with an optional point, an optional exponent, or `inf`,
/// `infinity`, `nan` in any case. The digits are converted by
/// [`js_parse_float`]: in a module with wasm-bindgen JS's `parseFloat`
/// (correctly rounded in the major engines), so that the modules link no
/// decimal parser (its tables alone are over 10 KB; the GRR module, without
/// wasm-bindgen, parses no number).
pub(crate) fn parse_number(text: &str) -> Option<f64> {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let negative = text.starts_with('-');
    let is = |word: &str| unsigned.eq_ignore_ascii_case(word);
    let special = if is("inf") || is("infinity") {
        Some(f64::INFINITY)
    } else if is("nan") {
        Some(f64::NAN)
    } else {
        None
    };
    if let Some(x) = special {
        return Some(if negative { -x } else { x });
    }
    let (mantissa, exponent) = unsigned.split_once(['e', 'E']).unwrap_or((unsigned, "0"));
    let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let valid = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty()) && digits(exponent);
    (valid && !exponent.is_empty()).then(|| js_parse_float(text))
}

/// The number that decimal text (as [`parse_number`] accepts it) denotes,
/// correctly rounded.
#[cfg(js)]
fn js_parse_float(text: &str) -> f64 {
    crate::js::parse_float(text)
}

/// Natively, and in a module without wasm-bindgen (which parses no
/// number: its config arrives as typed arguments).
#[cfg(not(js))]
fn js_parse_float(text: &str) -> f64 {
    text.parse().unwrap_or(f64::NAN)
}

/// `x.clamp(lo, hi)` for `lo ≤ hi` (NaN stays NaN), without `f64::clamp`'s
/// check of its bounds, whose panic message formats floats: on the client's
/// path it would link core's float formatting into the wasm modules.
pub(crate) fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
    if x < lo {
        lo
    } else if x > hi {
        hi
    } else {
        x
    }
}

/// `e^x` with the project's single implementation (identical native and wasm).
///
/// See the example on [`crate::privacy::exp_epsilon_safe`].
pub fn exp(x: f64) -> f64 {
    libm::exp(x)
}

/// `ln x` with the project's single implementation (identical native and wasm).
///
/// See the example on [`crate::privacy::exp_epsilon_safe`].
pub fn ln(x: f64) -> f64 {
    libm::log(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_number_accepts_what_str_parse_accepts() {
        for text in [
            "0", "-0", "+1", "1.", ".5", "-.5", "1e5", "1E-5", "1e+5", "2.5e-3", "007", "1.7976931348623157e308", "inf",
            "-Infinity", "NaN", "", "+", "-", ".", "e5", "1e", "1e+", "1.2.3", "1,5", " 1", "0x10", "1_000", "∞", "in",
            "1.e5", "+inf", "-nan", "INFINITY", "infinit", "1e5.0", "1e+-5", "++1",
        ] {
            let expected = text.parse::<f64>().ok();
            let found = parse_number(text);
            assert_eq!(found.map(f64::to_bits), expected.map(f64::to_bits), "{text:?}");
        }
    }

    /// The wasm build's layout of JS's shortest digits is serde_json's text.
    #[test]
    fn shortest_layout_is_serde_jsons() {
        let mut values = vec![0.0, -0.0, 1.0, -1.0, 0.1, 0.25, 1.5, 30.0, 1e15, 1e16, 1.5e16, 123456789012345680.0, 1e21, 1e-4, 1e-5, 1.25e-5, 1e-6, 1e-7, 5e-324, f64::MAX, f64::MIN_POSITIVE, 2.0f64.powi(53), 1.0 / 3.0];
        let mut x = 1.0f64;
        for i in 0..2000 {
            x = x * 1.7 + (i as f64) * 1e-3;
            values.extend([x, 1.0 / x, -x]);
        }
        for v in values.into_iter().filter(|v| v.is_finite()) {
            assert_eq!(shortest_layout(&shortest(v)), serde_json::Value::from(v).to_string(), "{v:e}");
        }
        // The forms JS's String(x) writes.
        for (js, json) in [("1.5e+21", "1.5e+21"), ("0.000001", "1e-6"), ("0.00001", "0.00001"), ("123.45", "123.45"), ("-7", "-7.0"), ("0", "0.0"), ("1e+21", "1e+21"), ("100", "100.0"), ("1.2e-7", "1.2e-7")] {
            assert_eq!(shortest_layout(js), json, "{js}");
        }
    }
}
