//! What a module without wasm-bindgen (the client module of GRR, whose JS
//! is written by hand: js/raw.mjs) imports from its page, as plain
//! functions of numbers and memory: the browser's CSPRNG and JS's text of
//! a number, where a module with wasm-bindgen calls them through
//! `crate::js`. The page's side is `imports()` in js/raw.mjs.

#[link(wasm_import_module = "l")]
extern "C" {
    /// `crypto.getRandomValues` on `len` bytes at `dest`; 0, or 1 when the
    /// page has no Web Crypto API.
    #[link_name = "r"]
    fn random(dest: *mut u8, len: usize) -> u32;
    /// `String(x)` written at `out` (room for 32 bytes: a number's text is
    /// at most 24); its length.
    #[link_name = "d"]
    fn digits(x: f64, out: *mut u8) -> usize;
}

/// The layout of `len` bytes (one at least), or the end of the module: a
/// length no block can have.
fn layout(len: usize) -> std::alloc::Layout {
    std::alloc::Layout::array::<u8>(len.max(1)).unwrap_or_else(|_| std::process::abort())
}

/// `len` bytes the page fills (and, for what it passes in, the module
/// frees: [`take`]). Out of memory ends the module, as any allocation's
/// failure does.
#[no_mangle]
pub extern "C" fn alloc(len: usize) -> *mut u8 {
    let layout = layout(len);
    // SAFETY: the layout's size is not zero.
    let ptr = unsafe { std::alloc::alloc(layout) };
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    ptr
}

/// The `len` bytes at `ptr` that `alloc` gave, taken over (freed with the
/// vector, uncopied: a domain's labels may be many megabytes).
///
/// # Safety
/// `ptr` is `alloc(len)`'s, written in full, and not used again.
pub unsafe fn take(ptr: *mut u8, len: usize) -> Vec<u8> {
    // SAFETY: `alloc` gave `ptr` with `layout(len)`, a vector's of
    // capacity `len.max(1)`, and the caller wrote `len` of its bytes.
    unsafe { Vec::from_raw_parts(ptr, len, len.max(1)) }
}

/// `String(x)`: JS's shortest round-trip text of a number.
pub(crate) fn number_string(x: f64) -> String {
    let mut out = vec![0u8; 32];
    // SAFETY: the page writes at most 32 bytes at `out`, ASCII.
    let len = unsafe { digits(x, out.as_mut_ptr()) };
    out.truncate(len.min(32));
    String::from_utf8(out).unwrap_or_default()
}

/// getrandom's source in this module (`--cfg getrandom_backend="custom"`,
/// scripts/build.sh): the page's `crypto.getRandomValues`.
#[no_mangle]
unsafe extern "Rust" fn __getrandom_v03_custom(dest: *mut u8, len: usize) -> Result<(), getrandom::Error> {
    // SAFETY: getrandom passes a buffer of `len` writable bytes.
    match unsafe { random(dest, len) } {
        0 => Ok(()),
        _ => Err(getrandom::Error::UNSUPPORTED),
    }
}
