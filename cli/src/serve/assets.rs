//! Static files (`--www`, `--pkg`) as a web server serves them: compressed
//! with brotli or gzip as the request's `Accept-Encoding` allows, a
//! content-hashed name (`index-D4k9yZ1a.js`, `main.3f9a1c2b4d.css`) cached
//! for a year as `immutable`, any other name revalidated by its `ETag`
//! (`304 Not Modified` when it matches `If-None-Match`).

use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// Files smaller than this are sent as they are (compression saves little).
const COMPRESS_FROM: usize = 1024;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Encoding {
    Brotli,
    Gzip,
}

impl Encoding {
    fn name(self) -> &'static str {
        match self {
            Encoding::Brotli => "br",
            Encoding::Gzip => "gzip",
        }
    }

    fn compress(self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Encoding::Brotli => {
                let params = brotli::enc::BrotliEncoderParams { quality: 11, lgwin: 22, ..Default::default() };
                let mut input = bytes;
                // Writing to a Vec cannot fail.
                let _ = brotli::BrotliCompress(&mut input, &mut out, &params);
            }
            Encoding::Gzip => {
                let mut encoder = flate2::write::GzEncoder::new(&mut out, flate2::Compression::best());
                let _ = encoder.write_all(bytes).and_then(|()| encoder.try_finish());
            }
        }
        out
    }

    /// What `Accept-Encoding` allows, brotli first: a coding listed with a
    /// weight above 0 (`q=0`, or a weight that cannot be read, refuses it),
    /// and one not listed as `*` is.
    fn negotiate(headers: &HeaderMap) -> Option<Encoding> {
        // Whether br, gzip and * are allowed, where listed.
        let (mut br, mut gzip, mut star) = (None, None, None);
        for value in headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()) {
            for item in value.split(',') {
                let mut parts = item.split(';').map(str::trim);
                let coding = parts.next().unwrap_or("").to_ascii_lowercase();
                let weight = parts.find_map(|p| p.strip_prefix("q=")).map_or(Some(1.0), |q| q.parse::<f32>().ok());
                let allowed = weight.is_some_and(|q| q > 0.0);
                let listed = match coding.as_str() {
                    "br" => &mut br,
                    "gzip" => &mut gzip,
                    "*" => &mut star,
                    _ => continue,
                };
                *listed = Some(listed.unwrap_or(false) || allowed);
            }
        }
        let allows = |listed: Option<bool>| listed.or(star).unwrap_or(false);
        if allows(br) {
            Some(Encoding::Brotli)
        } else if allows(gzip) {
            Some(Encoding::Gzip)
        } else {
            None
        }
    }
}

/// The compressed copies made so far, by file and encoding, with the tag
/// of the content they were made from (a changed file is compressed again).
/// Each is made once: the requests that come while it is being made wait
/// for it rather than make their own (brotli at its best takes about a
/// second for 390 KB of wasm).
#[derive(Default)]
pub(super) struct Assets {
    compressed: Mutex<HashMap<(PathBuf, Encoding), Slot>>,
}

/// The tag of the content a copy is made from, and the copy once made.
type Slot = (u64, Arc<OnceLock<Bytes>>);

impl Assets {
    /// The answer to a GET or HEAD of `file`, whose content is `bytes`;
    /// `compressible` for text and wasm.
    pub(super) fn serve(&self, request: &HeaderMap, file: PathBuf, bytes: Vec<u8>, compressible: bool) -> Response {
        let tag = {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            bytes.hash(&mut hasher);
            hasher.finish()
        };
        let encoding = (compressible && bytes.len() >= COMPRESS_FROM).then(|| Encoding::negotiate(request)).flatten();
        // One ETag per representation: the compressed bytes differ from the file's.
        let etag = format!("\"{tag:016x}{}\"", encoding.map_or(String::new(), |e| format!("-{}", e.name())));
        let hashed = file.file_name().and_then(|n| n.to_str()).is_some_and(content_hashed);
        let mut response = if not_modified(request, &etag) {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            match encoding {
                None => (StatusCode::OK, bytes).into_response(),
                Some(encoding) => {
                    let body = self.compressed(file, encoding, tag, || encoding.compress(&bytes));
                    let mut response = (StatusCode::OK, body).into_response();
                    response.headers_mut().insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding.name()));
                    response
                }
            }
        };
        let out = response.headers_mut();
        if let Ok(value) = HeaderValue::from_str(&etag) {
            out.insert(header::ETAG, value);
        }
        let cache = if hashed { "public, max-age=31536000, immutable" } else { "no-cache" };
        out.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        if compressible {
            out.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        }
        response
    }

    /// The content tagged `tag` of `file` compressed with `encoding` by
    /// `compress`, which runs once per content: concurrent requests wait
    /// for the one that runs it.
    fn compressed(&self, file: PathBuf, encoding: Encoding, tag: u64, compress: impl FnOnce() -> Vec<u8>) -> Bytes {
        let slot = {
            let mut compressed = self.compressed.lock().unwrap_or_else(|e| e.into_inner());
            let (made_from, slot) = compressed.entry((file, encoding)).or_insert_with(|| (tag, Arc::default()));
            if *made_from != tag {
                (*made_from, *slot) = (tag, Arc::default());
            }
            Arc::clone(slot)
        };
        slot.get_or_init(|| Bytes::from(compress())).clone()
    }
}

/// Whether `If-None-Match` names `etag` (or is `*`).
fn not_modified(request: &HeaderMap, etag: &str) -> bool {
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

/// Whether a file's name carries a hash of its content, as bundlers name
/// their output: `[name]-[hash].ext` (Vite, Rollup: 8 characters of
/// base64url) or `[name].[hash].ext` (webpack: 8 or more). The hash must
/// hold a digit and a letter, so that `my-settings.js` is not taken for
/// one (a hash without a digit is then only revalidated: the safe side).
pub(super) fn content_hashed(name: &str) -> bool {
    let stem = name.rfind('.').map_or(name, |dot| &name[..dot]);
    let digit = |s: &str| s.bytes().any(|b| b.is_ascii_digit());
    // webpack's and Parcel's: lowercase hex, 8 or more digits, with a letter and a digit.
    let hex = |s: &str| {
        s.len() >= 8
            && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && digit(s)
            && s.bytes().any(|b| b.is_ascii_lowercase())
    };
    // Vite's and Rollup's: 8 of base64url, with upper and lower case and a digit
    // (a word or a version, `prod2024`, `Settings`, has not all three).
    let base64 = |s: &str| {
        s.len() == 8
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            && digit(s)
            && s.bytes().any(|b| b.is_ascii_uppercase())
            && s.bytes().any(|b| b.is_ascii_lowercase())
    };
    let dotted = stem.rsplit_once('.').is_some_and(|(_, hash)| hex(hash));
    let dashed = stem.len() > 9 && stem.is_char_boundary(stem.len() - 8) && stem.as_bytes()[stem.len() - 9] == b'-' && {
        let hash = &stem[stem.len() - 8..];
        hex(hash) || base64(hash)
    };
    dotted || dashed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundler_names_with_a_hash_are_recognized() {
        for hashed in ["index-D4k9yZ1a.js", "index-D-4k_yZ1.js", "vendor-3f9a1c2b.css", "main.3f9a1c2b4d5e6f7a.js"] {
            assert!(content_hashed(hashed), "{hashed}");
        }
        for plain in [
            "index.html",
            "app.js",
            "my-settings.js",
            "dashboard-Settings.js",
            "jquery-3.7.1.min.js",
            "metrics.json",
            "localdp_bg.wasm",
            "a-12345678",
            "config-prod2024.json",
            "app.v2024rc1.js",
            "release-20241201.js",
        ] {
            assert!(!content_hashed(plain), "{plain}");
        }
    }

    /// The encoding chosen for a request with `Accept-Encoding: value`.
    fn with(value: &str) -> Option<Encoding> {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT_ENCODING, value.parse().unwrap());
        Encoding::negotiate(&headers)
    }

    #[test]
    fn accept_encoding_prefers_brotli_honours_q_0_and_star_is_the_default_for_the_rest() {
        assert_eq!(with("gzip, deflate, br, zstd"), Some(Encoding::Brotli));
        assert_eq!(with("gzip"), Some(Encoding::Gzip));
        assert_eq!(with("br;q=0, gzip;q=0.5"), Some(Encoding::Gzip));
        assert_eq!(with("identity"), None);
        assert_eq!(Encoding::negotiate(&HeaderMap::new()), None);
        // `*` is the default for codings not listed: it neither overrides a q=0 nor stops at gzip.
        assert_eq!(with("*"), Some(Encoding::Brotli));
        assert_eq!(with("gzip;q=0, *"), Some(Encoding::Brotli));
        assert_eq!(with("br;q=0, *"), Some(Encoding::Gzip));
        assert_eq!(with("br;q=0, gzip;q=0, *"), None);
        assert_eq!(with("*;q=0, gzip"), Some(Encoding::Gzip));
        assert_eq!(with("*;q=0"), None);
        assert_eq!(with("gzip;q=0.000, identity"), None);
    }

    #[test]
    fn concurrent_requests_compress_a_file_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        const REQUESTS: usize = 8;
        let assets = Assets::default();
        let (started, compressions) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let barrier = std::sync::Barrier::new(REQUESTS);
        let bodies: Vec<Bytes> = std::thread::scope(|scope| {
            let requests: Vec<_> = (0..REQUESTS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        started.fetch_add(1, Ordering::SeqCst);
                        assets.compressed(PathBuf::from("app.wasm"), Encoding::Brotli, 1, || {
                            compressions.fetch_add(1, Ordering::SeqCst);
                            // Still compressing when every request has started.
                            while started.load(Ordering::SeqCst) < REQUESTS {
                                std::thread::yield_now();
                            }
                            b"compressed".to_vec()
                        })
                    })
                })
                .collect();
            requests.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert_eq!(compressions.load(Ordering::SeqCst), 1);
        assert!(bodies.iter().all(|b| b.as_ref() == b"compressed"));
        // A changed file (another tag) is compressed again, once.
        let again = assets.compressed(PathBuf::from("app.wasm"), Encoding::Brotli, 2, || b"changed".to_vec());
        assert_eq!(again.as_ref(), b"changed");
        assert_eq!(assets.compressed(PathBuf::from("app.wasm"), Encoding::Brotli, 2, || unreachable!()).as_ref(), b"changed");
    }
}
