//! The GRR client module's face: plain functions of numbers and memory,
//! for its JS written by hand (js/raw.mjs), in place of wasm-bindgen's
//! `ClientCore` (lib.rs), whose glue and runtime weigh more than GRR
//! itself. The page reads the config's shape (which keys, which types) and
//! passes its values as typed arguments ([`client`]); the core checks every
//! value, as it does for a config object, in the same order. A result, or
//! an error (its class, name, message and properties:
//! [`crate::face::describe`]), is left in [`OUT`] as bytes: a report's
//! fields (`Report::to_fields`), an error's ([`Fields`] both), the
//! state's bytes.
//!
//! The page passes bytes in through `alloc` (localdp_core::host), and the
//! module frees them.

use crate::face::{clock, index_text, Class, Failure, Input, Sink};
use localdp_core::client::{Client, ClientKeys, ClientSettings};
use localdp_core::frequency::{FrequencyConfig, FrequencyOracle};
use localdp_core::host::{take, Fields};
use localdp_core::number::number_text;
use localdp_core::{DomainSpec, Error, FrequencyProtocol, Metric, SecureRng, Selection};
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

/// An error for the page, as [`Fields`]: its `class` (0 `TypeError`, 1
/// `RangeError`, 2 `Error`), its own `name` if it has one, its `message`,
/// then its properties in the order they are set ([`Sink`]).
#[derive(Default)]
struct ErrorFields(Fields, Vec<String>);

impl Sink for ErrorFields {
    fn open(&mut self, class: Class, message: &str) {
        let (class, name) = match class {
            Class::Type => (0.0, None),
            Class::Range => (1.0, None),
            Class::Error(name) => (2.0, name),
        };
        self.0.number("class", class);
        if let Some(name) = name {
            self.0.text("name", name);
        }
        self.0.text("message", message);
    }
    fn text(&mut self, key: &'static str, value: &str) {
        self.0.text(key, value);
    }
    fn number(&mut self, key: &'static str, value: f64) {
        self.0.number(key, value);
    }
    fn param(&mut self, text: &str) {
        self.1.push(text.into());
    }
    fn params(&mut self) {
        self.0.texts("params", &self.1);
    }
}

/// Leaves the error for the page; 1.
fn fail(failure: Failure) -> u32 {
    let mut error = ErrorFields::default();
    failure.describe(&mut error);
    out(error.0 .0);
    1
}

/// A number's text as the core's messages write it ([`number_text`]), in
/// OUT: for the page's messages of a config's shape.
#[no_mangle]
pub extern "C" fn number(x: f64) {
    out(number_text(x).into_bytes());
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

/// `None` for NaN: how the page says a key is absent.
fn given(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

/// `new ClientCore(config, secret)`, the config's keys as the page read
/// them (NaN: absent). Its client-only keys: `memoize`; the budget's ε
/// (NaN: no budget), its window's text (`window_len` bytes at `window`)
/// and its δ; the granularity (NaN: absent; a value that is not a whole
/// number up to 2^53 − 1: any other). Then `shaped`: 0 if the page found
/// the metric's keys malformed, when only the client-only keys are checked
/// and the page throws its own error after. The metric's keys: ε; the
/// domain's size (NaN: labels, each as its length in 4 bytes, little
/// endian, and its UTF-8, `labels_len` bytes at `labels`); `d`; the
/// instantaneous ε. Then the secret's text. The client, or null and the
/// error in OUT (empty: the page's error).
///
/// # Safety
/// The texts are `alloc`ated by the page, written in full; the module
/// frees them.
#[no_mangle]
pub unsafe extern "C" fn client(
    memoize: u32, budget: f64, window: *mut u8, window_len: usize, delta: f64, granularity: f64, shaped: u32,
    epsilon: f64, size: f64, labels: *mut u8, labels_len: usize, d: f64, instantaneous: f64, secret: *mut u8,
    secret_len: usize,
) -> *mut Core {
    // SAFETY: as the caller promises.
    let (window, labels, secret) = unsafe { (text(window, window_len), take(labels, labels_len), text(secret, secret_len)) };
    let keys = ClientKeys {
        memoize: memoize != 0,
        budget: given(budget).map(|epsilon| (epsilon, window, given(delta))),
        granularity: given(granularity).map(localdp_core::json::whole),
    };
    let domain = match given(size) {
        Some(size) => DomainSpec::Size(size as u64),
        None => {
            let mut list = Vec::new();
            let mut rest = &labels[..];
            while let [a, b, c, e, tail @ ..] = rest {
                let Some((label, tail)) = tail.split_at_checked(u32::from_le_bytes([*a, *b, *c, *e]) as usize) else {
                    break;
                };
                list.push(String::from_utf8(label.to_vec()).unwrap_or_default());
                rest = tail;
            }
            DomainSpec::Labels(list)
        }
    };
    let config = FrequencyConfig {
        protocol: Selection::Fixed(FrequencyProtocol::Grr),
        epsilon,
        domain,
        d: given(d).map(|d| d as u64),
        instantaneous_epsilon: given(instantaneous),
    };
    let built = ClientSettings::new(keys).and_then(|settings| {
        if shaped == 0 {
            return Ok(None);
        }
        let metric = Metric::from(FrequencyOracle::for_client(&config, &settings)?);
        let client = Client::from_parts(metric, settings, &secret, None)?;
        Ok(Some(Core { client, rng: SecureRng::new()? }))
    });
    match built {
        Ok(Some(core)) => Box::into_raw(Box::new(core)),
        Ok(None) => {
            out(Vec::new());
            std::ptr::null_mut()
        }
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
            None => fail(Failure::Core(Error::CorruptMemo)),
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
