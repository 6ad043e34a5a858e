//! The GRR client module's face: plain functions of numbers and memory,
//! for its JS written by hand (js/raw.mjs), in place of wasm-bindgen's
//! `ClientCore` (lib.rs), whose glue and runtime weigh more than GRR
//! itself. The page flattens the config it was given (`JSON.parse` of its
//! `JSON.stringify`, `localdp_core::json::flat`), and the core reads it as
//! the wasm-bindgen modules read a JS object. A result, or an error (its
//! class, name, message and properties: [`crate::face::describe`]), is left in
//! [`OUT`] as bytes: a report's fields (`Report::to_fields`), an error as
//! JSON, the state's bytes.
//!
//! The page passes bytes in through `alloc` (localdp_core::host), and the
//! module frees them.

use crate::face::{clock, index_text, Class, Failure, Input, Sink};
use localdp_core::client::Client;
use localdp_core::host::take;
use localdp_core::json::{string_literal, ConfigObject};
use localdp_core::number::number_text;
use localdp_core::SecureRng;
use std::cell::RefCell;

thread_local! {
    /// What the last call left for the page: its result or its error.
    static OUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// Where the page writes a value to randomize ([`input`]), kept from
    /// one report to the next: the page needs no allocation to pass it.
    static INPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The address of room for `len` bytes of a value to randomize, which the
/// page writes before calling [`randomize`] (until the next call of either).
#[no_mangle]
pub extern "C" fn input(len: usize) -> *mut u8 {
    INPUT.with(|input| {
        let mut input = input.borrow_mut();
        if input.len() < len {
            input.resize(len, 0);
        }
        input.as_mut_ptr()
    })
}

fn out(bytes: Vec<u8>) {
    OUT.with(|o| *o.borrow_mut() = bytes);
}

/// The address of what the last call left ([`out_len`] bytes).
#[no_mangle]
pub extern "C" fn out_ptr() -> *const u8 {
    OUT.with(|o| o.borrow().as_ptr())
}

/// The length of what the last call left.
#[no_mangle]
pub extern "C" fn out_len() -> usize {
    OUT.with(|o| o.borrow().len())
}

/// An error as JSON for the page: `{"class", "name", "message",
/// "props"}`, the properties in the order they are set ([`Sink`]).
struct Json(String, Vec<String>);

impl Json {
    /// A property, `[key, value]`; a number's `[key, "text", 1]` (JSON has
    /// no `Infinity`: the page reads the text as a number).
    fn prop(&mut self, key: &str, value: &str, number: bool) {
        let comma = if self.0.ends_with('[') { "" } else { "," };
        self.0.push_str(&[comma, "[\"", key, "\",", value, if number { ",1]" } else { "]" }].concat());
    }
}

impl Sink for Json {
    fn open(&mut self, class: Class, message: &str) {
        let (class, name) = match class {
            Class::Type => ("TypeError", None),
            Class::Range => ("RangeError", None),
            Class::Error(name) => ("Error", name),
        };
        let name = name.map_or("null".into(), string_literal);
        self.0 = ["{\"class\":\"", class, "\",\"name\":", &name, ",\"message\":", &string_literal(message), ",\"props\":["].concat();
    }
    fn text(&mut self, key: &'static str, value: &str) {
        self.prop(key, &string_literal(value), false);
    }
    fn number(&mut self, key: &'static str, value: f64) {
        self.prop(key, &string_literal(&number_text(value)), true);
    }
    fn param(&mut self, text: &str) {
        self.1.push(string_literal(text));
    }
    fn params(&mut self) {
        let params = ["[", &self.1.join(","), "]"].concat();
        self.prop("params", &params, false);
    }
}

/// Leaves the error for the page; 1.
fn fail(failure: Failure) -> u32 {
    let mut json = Json(String::new(), Vec::new());
    failure.describe(&mut json);
    json.0.push_str("]}");
    out(json.0.into_bytes());
    1
}

/// A client with its CSPRNG.
pub struct Core {
    client: Client,
    rng: SecureRng,
}

/// The text of `len` bytes the page passed at `ptr` (`alloc`), freed.
unsafe fn text(ptr: *mut u8, len: usize) -> String {
    // SAFETY: as `take`.
    String::from_utf8(unsafe { take(ptr, len) }).unwrap_or_default()
}

/// `new ClientCore(config, secret)`: the flattened config (`len` bytes at
/// `config`), the secret's text; the client, or null and the error in OUT.
///
/// # Safety
/// Both are `alloc`ated by the page, written in full; the module frees them.
#[no_mangle]
pub unsafe extern "C" fn client(config: *mut u8, len: usize, secret: *mut u8, secret_len: usize) -> *mut Core {
    // SAFETY: as the caller promises.
    let (config, secret) = unsafe { (take(config, len), text(secret, secret_len)) };
    let Some(config) = ConfigObject::from_flat(&config) else {
        fail(Failure::Type("config must be a JSON object"));
        return std::ptr::null_mut();
    };
    let built = Client::from_config(config, &secret, None).and_then(|client| Ok(Core { client, rng: SecureRng::new()? }));
    match built {
        Ok(core) => Box::into_raw(Box::new(core)),
        Err(e) => {
            fail(Failure::Core(e));
            std::ptr::null_mut()
        }
    }
}

/// `load(secret, state)`: the state's bytes (`has_state` 0: none); 0 and
/// the resets found in OUT (one byte), or 1 and the error.
///
/// # Safety
/// `core` is `client`'s; the bytes are `alloc`ated by the page.
#[no_mangle]
pub unsafe extern "C" fn load(core: *mut Core, secret: *mut u8, secret_len: usize, state: *mut u8, len: usize, has_state: u32) -> u32 {
    // SAFETY: as the caller promises.
    let (core, secret, state) = unsafe { (&mut *core, text(secret, secret_len), take(state, len)) };
    match core.client.load(&secret, (has_state != 0).then_some(&state[..])) {
        Ok(()) => {
            out(vec![core.client.resets().min(255) as u8]);
            0
        }
        Err(e) => fail(Failure::Core(e)),
    }
}

/// The resolved protocol's name, in OUT.
///
/// # Safety
/// `core` is `client`'s.
#[no_mangle]
pub unsafe extern "C" fn protocol(core: *const Core) {
    out(unsafe { &*core }.client.metric().protocol().name().as_bytes().to_vec());
}

/// The metric's id, in OUT.
///
/// # Safety
/// `core` is `client`'s.
#[no_mangle]
pub unsafe extern "C" fn id(core: *const Core) {
    out(unsafe { &*core }.client.metric().id().into_bytes());
}

/// The state's bytes, in OUT.
///
/// # Safety
/// `core` is `client`'s.
#[no_mangle]
pub unsafe extern "C" fn state(core: *const Core) {
    out(unsafe { &*core }.client.state_bytes());
}

/// ε of one report.
///
/// # Safety
/// `core` is `client`'s.
#[no_mangle]
pub unsafe extern "C" fn epsilon(core: *const Core) -> f64 {
    unsafe { &*core }.client.metric().epsilon()
}

/// ε spent in the window ending at `now` (ms since 1970); NaN and the
/// error in OUT for a clock out of range (a sum of charges, each finite
/// and ≥ 0, is never NaN).
///
/// # Safety
/// `core` is `client`'s.
#[no_mangle]
pub unsafe extern "C" fn spent(core: *const Core, now: f64) -> f64 {
    match clock(now) {
        Ok(now) => unsafe { &*core }.client.spent(now),
        Err(failure) => {
            fail(failure);
            f64::NAN
        }
    }
}

/// Randomizes a value at `now`: `kind` 0 a string (its `len` bytes of
/// UTF-8 written at [`input`]), 1 the number `number`, 2 anything else. 0
/// and the report's fields in OUT (`Report::to_fields`), or 1 and the error.
///
/// # Safety
/// `core` is `client`'s.
#[no_mangle]
pub unsafe extern "C" fn randomize(core: *mut Core, kind: u32, len: usize, number: f64, now: f64) -> u32 {
    // SAFETY: as the caller promises.
    let core = unsafe { &mut *core };
    let input = match kind {
        0 => Input::Text(INPUT.with(|input| String::from_utf8(input.borrow().get(..len).unwrap_or_default().to_vec()).unwrap_or_default())),
        1 => Input::Number(number),
        _ => Input::Other,
    };
    let now = match clock(now) {
        Ok(now) => now,
        Err(failure) => return fail(failure),
    };
    let size = match core.client.metric().value_kind() {
        localdp_core::metric::ValueKind::Index { size } => size,
        // GRR's metrics are of indices; no other metric is built here.
        _ => None,
    };
    let text = match index_text(size, input) {
        Ok(text) => text,
        Err(failure) => return fail(failure),
    };
    match core.client.randomize_text(&text, now, &mut core.rng) {
        Ok(report) => match report.to_fields() {
            Some(fields) => {
                out(fields);
                0
            }
            None => fail(Failure::Core(localdp_core::Error::CorruptMemo)),
        },
        Err(e) => fail(Failure::Core(e)),
    }
}

/// Frees a client.
///
/// # Safety
/// `core` is `client`'s, and not used again.
#[no_mangle]
pub unsafe extern "C" fn free(core: *mut Core) {
    drop(unsafe { Box::from_raw(core) });
}
