//! JSON values as the page flattens them for a module without wasm-bindgen
//! (js/raw.mjs, `flatten`): the value of `JSON.parse(JSON.stringify(x))`,
//! one tag byte each, read one level at a time as the JS objects of the
//! wasm-bindgen modules are, so that a config reads here exactly as it
//! reads there.
//!
//! - `0` null, `1` false, `2` true;
//! - `3` a number: 8 bytes, an f64 little-endian;
//! - `4` a string: its UTF-8 length (4 bytes, little-endian), its bytes;
//! - `5` an array, `6` an object: the length of what follows (4 bytes),
//!   then each item, or each key (a string's length and bytes, no tag) and
//!   its value, in the object's order.


fn u32_at(bytes: &[u8], at: usize) -> Option<usize> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// The value at `*at` (its bytes, tag included), moving past it.
fn take<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let start = *at;
    let len = match *bytes.get(start)? {
        0..=2 => 1,
        3 => 9,
        4..=6 => 5 + u32_at(bytes, start + 1)?,
        _ => return None,
    };
    let value = bytes.get(start..start.checked_add(len)?)?;
    *at += len;
    Some(value)
}

/// The UTF-8 string at `*at` (its length, then its bytes), moving past it.
fn text(bytes: &[u8], at: &mut usize) -> Option<String> {
    let len = u32_at(bytes, *at)?;
    let s = bytes.get(*at + 4..(*at + 4).checked_add(len)?)?;
    *at += 4 + len;
    String::from_utf8(s.to_vec()).ok()
}

/// The items of an array's or object's bytes (tag and length included),
/// each read by `item`; `None` if they are not well formed.
fn items<T>(value: &[u8], mut item: impl FnMut(&[u8], &mut usize) -> Option<T>) -> Option<Vec<T>> {
    let body = value.get(5..)?;
    let mut at = 0;
    let mut out = Vec::new();
    while at < body.len() {
        out.push(item(body, &mut at)?);
    }
    Some(out)
}

/// One value, its arrays and objects read one level down (their items'
/// bytes), or `None` if it is not well formed.
pub(crate) enum Flat {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(f64),
    /// A string.
    Text(String),
    /// An array: its items' bytes.
    List(Vec<Vec<u8>>),
    /// An object: its keys and their values' bytes, in order.
    Object(Vec<(String, Vec<u8>)>),
}

/// The value of `value`'s bytes (tag included); `None` if they are not
/// well formed.
pub(crate) fn read(value: &[u8]) -> Option<Flat> {
    // Its length says where it ends: nothing may follow.
    if take(value, &mut 0)?.len() != value.len() {
        return None;
    }
    match value.first()? {
        0 => Some(Flat::Null),
        1 => Some(Flat::Bool(false)),
        2 => Some(Flat::Bool(true)),
        3 => value.get(1..9).map(|b| Flat::Number(f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))),
        4 => text(value, &mut 1).map(Flat::Text),
        5 => items(value, |b, at| take(b, at).map(<[u8]>::to_vec)).map(Flat::List),
        6 => items(value, |b, at| {
            let key = text(b, at)?;
            Some((key, take(b, at)?.to_vec()))
        })
        .map(Flat::Object),
        _ => None,
    }
}

/// A string's bytes (tag included).
pub(crate) fn string(s: &str) -> Vec<u8> {
    let mut out = vec![4];
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    out
}

/// A number's bytes (tag included).
pub(crate) fn number(x: f64) -> Vec<u8> {
    let mut out = vec![3];
    out.extend_from_slice(&x.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&[u8]]) -> Vec<u8> {
        let body = items.concat();
        [&[5][..], &(body.len() as u32).to_le_bytes(), &body].concat()
    }

    #[test]
    fn values_read_one_level_down() {
        assert!(matches!(read(&[0]), Some(Flat::Null)));
        assert!(matches!(read(&[2]), Some(Flat::Bool(true))));
        assert!(matches!(read(&number(-0.5)), Some(Flat::Number(x)) if x == -0.5));
        assert!(matches!(read(&string("é")), Some(Flat::Text(s)) if s == "é"));
        let inner = list(&[&[1]]);
        let Some(Flat::List(items)) = read(&list(&[&string("a"), &inner, &[0]])) else { panic!("a list") };
        assert_eq!(items, [string("a"), inner, vec![0]], "each item's bytes, the nested list unread");
        let object = [&[6][..], &9u32.to_le_bytes(), &1u32.to_le_bytes(), b"k", &[2], &[0, 0, 0]].concat();
        assert!(read(&object).is_none(), "a key without its value");
        let object = [&[6][..], &6u32.to_le_bytes(), &1u32.to_le_bytes(), b"k", &[2]].concat();
        assert!(matches!(read(&object), Some(Flat::Object(e)) if e == [("k".to_string(), vec![2])]));
        assert!(matches!(read(&list(&[])), Some(Flat::List(items)) if items.is_empty()));
    }

    #[test]
    fn bytes_not_well_formed_are_none() {
        for bad in [
            &[][..],
            &[7],
            &[3, 0, 0],
            &[4, 5, 0, 0, 0, b'a'],
            &[4, 255, 255, 255, 255],
            &[4, 2, 0, 0, 0, 0xff, 0xfe],
            &[5, 255, 255, 255, 255, 0],
            &[5, 2, 0, 0, 0, 9, 9],
            &[4, 1, 0, 0, 0, b'a', b'b'],
            &[0, 0],
            &[6, 1, 0, 0, 0, 0],
        ] {
            assert!(read(bad).is_none(), "{bad:?}");
        }
    }
}
