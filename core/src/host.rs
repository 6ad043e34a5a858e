//! What a module without wasm-bindgen (the client module of GRR, whose JS
//! is written by hand: js/raw.mjs) imports from its page, as plain
//! functions of numbers and memory: the browser's CSPRNG and JS's text of
//! a number, where a module with wasm-bindgen calls them through
//! `crate::js`; and the form of what it hands the page ([`Fields`]). The
//! page's side is `imports()` and `fields()` in js/raw.mjs.

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

/// Named values for the page, in the order written, as js/raw.mjs's
/// `fields` reads them into an object: a report's fields
/// (`Report::to_fields`) and an error's (wasm/client's raw.rs). Each is its
/// key (its length in a byte, then its UTF-8), then 0 and a number (8
/// bytes, little endian), 1 and a text (its length in 4 bytes, little
/// endian, then its UTF-8), 2 and numbers (their count in 4 bytes, then
/// each as 0's), or 3 and texts (their count, then each as 1's). The
/// keys are the module's own names, each under 256 bytes.
#[derive(Default)]
pub struct Fields(pub Vec<u8>);

impl Fields {
    fn key(&mut self, key: &'static str, tag: u8) {
        self.0.push(key.len() as u8);
        self.0.extend_from_slice(key.as_bytes());
        self.0.push(tag);
    }

    fn count(&mut self, n: usize) {
        self.0.extend_from_slice(&(n as u32).to_le_bytes());
    }

    fn put(&mut self, s: &str) {
        self.count(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }

    /// A number.
    pub fn number(&mut self, key: &'static str, x: f64) {
        self.key(key, 0);
        self.0.extend_from_slice(&x.to_le_bytes());
    }

    /// A text.
    pub fn text(&mut self, key: &'static str, s: &str) {
        self.key(key, 1);
        self.put(s);
    }

    /// A list of numbers.
    pub fn numbers(&mut self, key: &'static str, list: impl ExactSizeIterator<Item = f64>) {
        self.key(key, 2);
        self.count(list.len());
        list.for_each(|x| self.0.extend_from_slice(&x.to_le_bytes()));
    }

    /// A list of texts.
    pub fn texts(&mut self, key: &'static str, list: &[String]) {
        self.key(key, 3);
        self.count(list.len());
        list.iter().for_each(|s| self.put(s));
    }
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
