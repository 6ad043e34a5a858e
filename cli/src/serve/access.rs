//! Who may read and from where: bearer tokens (`--token-file` for
//! readers, `--shuffler-token-file` for the shuffler), the origins whose
//! pages may call the collector (`--allow-origin`) and the names it answers
//! to (`--bind`, `--host`).

use crate::serve::logging::{log_warn};
use axum::http::{header, HeaderMap};
use sha2::{Digest, Sha256};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The tokens of a token file (never printed: Debug says how many).
pub struct Tokens(Vec<Vec<u8>>);

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens({} tokens)", self.0.len())
    }
}

impl Tokens {
    /// One token per line; blank lines and lines starting with `#` are
    /// skipped, surrounding whitespace is not part of a token. `flag` names
    /// the file in errors and warnings.
    pub fn read(path: &Path, flag: &str) -> Result<Tokens, String> {
        let at = |e: &dyn std::fmt::Display| format!("{flag} {}: {e}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| at(&e))?;
        let mut tokens = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let token = line.trim();
            if token.is_empty() || token.starts_with('#') {
                continue;
            }
            // What an Authorization header can carry (RFC 6750's b64token and more).
            if !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(at(&format!("line {}: a token is printable ASCII without spaces", i + 1)));
            }
            if token.len() < 16 {
                log_warn!("localdp: {flag} line {}: a token of {} characters is easy to guess; use 32 random ones", i + 1, token.len());
            }
            tokens.push(token.as_bytes().to_vec());
        }
        if tokens.is_empty() {
            return Err(at(&"no token in it"));
        }
        Ok(Tokens(tokens))
    }

    /// The first token: the one a client of the collector (the shuffler)
    /// sends.
    pub fn first(&self) -> &[u8] {
        &self.0[0]
    }

    /// The [`fingerprint`] of each token, in the file's order.
    pub fn fingerprints(&self) -> Vec<String> {
        self.0.iter().map(|token| fingerprint(token)).collect()
    }

    /// Whether a token is in both `self` and `other`.
    pub fn shares_a_token_with(&self, other: &Tokens) -> bool {
        self.0.iter().any(|token| other.0.contains(token))
    }

    /// Whether `headers` carry `Authorization: Bearer <one of the tokens>`,
    /// and if so that token's [`fingerprint`]. Every token is compared,
    /// each in time that depends only on its length, never on where the
    /// bytes differ.
    pub fn admits(&self, headers: &HeaderMap) -> Access {
        let Some(value) = headers.get(header::AUTHORIZATION) else { return Access::Missing };
        let value = value.as_bytes();
        let Some(given) = value
            .get(..7)
            .filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
            .map(|_| value[7..].trim_ascii())
        else {
            return Access::Invalid;
        };
        let mut any = 0u8;
        for token in &self.0 {
            any |= constant_time_eq(token, given) as u8;
        }
        if std::hint::black_box(any) == 1 {
            // `given` is one of the tokens: its fingerprint is that token's.
            Access::Granted(fingerprint(given))
        } else {
            Access::Invalid
        }
    }
}

/// A token's short public name, for logs and the dashboard: the first 8 hex
/// digits of its SHA-256. It tells tokens apart; it reveals nothing a
/// guesser of a 32-character random token could use.
pub fn fingerprint(token: &[u8]) -> String {
    Sha256::digest(token)[..4].iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, PartialEq, Eq)]
pub enum Access {
    /// One of the tokens, with its [`fingerprint`].
    Granted(String),
    /// No Authorization header.
    Missing,
    /// Another scheme, or a token that is not one of ours.
    Invalid,
}

/// `a == b` in time that depends on `a.len()` only (`a` is ours, `b` the
/// client's): every byte of `a` is looked at, the difference accumulated
/// without a branch.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() != b.len()) as u8;
    for (i, &x) in a.iter().enumerate() {
        let y = b.get(i).copied().unwrap_or(0);
        diff |= std::hint::black_box(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

/// `--allow-origin` and `--allow-origin-file`: origins whose pages may
/// call the collector.
#[derive(Default)]
pub struct Origins {
    /// Exact origins (`scheme://host[:port]`, lower case): they may post
    /// reports and read (with a token, when tokens are configured).
    listed: Vec<String>,
    /// `*`: any origin may post reports (and nothing else).
    any: bool,
}

/// The origins of `--allow-origin` and of `--allow-origin-file`, the file
/// read again on SIGHUP.
pub struct AllowedOrigins {
    flags: Vec<String>,
    file: Option<PathBuf>,
    current: RwLock<Arc<Origins>>,
}

impl AllowedOrigins {
    pub fn open(flags: Vec<String>, file: Option<PathBuf>) -> Result<AllowedOrigins, String> {
        let origins = Origins::read(&flags, file.as_deref())?;
        Ok(AllowedOrigins { flags, file, current: RwLock::new(Arc::new(origins)) })
    }

    /// The origins read last (a reload replaces them whole).
    pub fn current(&self) -> Arc<Origins> {
        Arc::clone(&self.current.read().expect("no panics while holding the lock"))
    }

    /// Reads `--allow-origin-file` again (SIGHUP): its origins, with the
    /// flags', from the next request on, or, if it does not read, the old
    /// ones kept and the error. `None` without the file.
    pub fn reload(&self) -> Option<Result<Arc<Origins>, String>> {
        self.file.as_ref()?;
        Some(Origins::read(&self.flags, self.file.as_deref()).map(|origins| {
            let origins = Arc::new(origins);
            *self.current.write().expect("no panics while holding the lock") = Arc::clone(&origins);
            origins
        }))
    }
}

/// What a cross-origin request may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Nothing: no CORS headers (and a report post is refused).
    None,
    /// Post reports: the origin is listed or `*` is.
    Post,
    /// Post and read: the origin is listed.
    Read,
}

impl Origins {
    /// The origins of the flags and of the file: one per line, blank lines
    /// and lines starting with `#` skipped, surrounding whitespace not part
    /// of an origin. An error names the file's line, not what is on it.
    pub fn read(flags: &[String], file: Option<&Path>) -> Result<Origins, String> {
        let mut origins = Origins::default();
        for value in flags {
            origins.add(value).map_err(|e| format!("--allow-origin {value:?}: {e}"))?;
        }
        if let Some(path) = file {
            let at = |e: &dyn std::fmt::Display| format!("--allow-origin-file {}: {e}", path.display());
            let text = std::fs::read_to_string(path).map_err(|e| at(&e))?;
            for (i, line) in text.lines().enumerate() {
                let value = line.trim();
                if !(value.is_empty() || value.starts_with('#')) {
                    origins.add(value).map_err(|e| at(&format!("line {}: {e}", i + 1)))?;
                }
            }
        }
        Ok(origins)
    }

    fn add(&mut self, value: &str) -> Result<(), &'static str> {
        if value == "*" {
            self.any = true;
            return Ok(());
        }
        let lower = value.to_ascii_lowercase();
        let rest = lower
            .strip_prefix("https://")
            .or_else(|| lower.strip_prefix("http://"))
            .ok_or("an origin is scheme://host[:port] (http or https), or *")?;
        if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
            return Err("an origin is scheme://host[:port], without a path or a trailing slash");
        }
        self.listed.push(lower);
        Ok(())
    }

    /// How many: the log says this, never the origins.
    pub fn describe(&self) -> String {
        format!("{} origins{}", self.listed.len(), if self.any { " and *" } else { "" })
    }

    /// What `origin` may do.
    pub fn grant(&self, origin: &str) -> Grant {
        if self.listed.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            Grant::Read
        } else if self.any {
            Grant::Post
        } else {
            Grant::None
        }
    }
}

/// A host as `Host` names it (without the port) or as `--host` gives it.
#[derive(Debug, PartialEq, Eq)]
enum Name {
    Ip(IpAddr),
    /// Lower case, without a trailing dot.
    Dns(String),
}

impl Name {
    /// `[v6]`, `v4` or a DNS name; `None` for anything else.
    fn parse(host: &str) -> Option<Name> {
        if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            return v6.parse::<Ipv6Addr>().ok().map(|ip| Name::Ip(IpAddr::V6(ip)));
        }
        if let Ok(v4) = host.parse::<Ipv4Addr>() {
            return Some(Name::Ip(IpAddr::V4(v4)));
        }
        let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        let valid = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        valid.then_some(Name::Dns(name))
    }

    /// The host of a `Host` value (`host[:port]`, `[v6][:port]`).
    fn of_host(value: &str) -> Option<Name> {
        let host = match value.find(']') {
            Some(end) if value.starts_with('[') => &value[..=end],
            _ => value.split(':').next().unwrap_or(value),
        };
        Name::parse(host)
    }
}

/// The names the collector answers to: the address it is bound to (any IP
/// address when bound to all of them), `localhost` and the loopback
/// addresses when loopback reaches it, and `--host`. A page that reached it
/// under a name of its own, resolved to the collector's address (DNS
/// rebinding), sends that name as `Host`: it is none of these.
pub struct Names {
    bound: IpAddr,
    /// `--host`.
    listed: Vec<Name>,
}

impl Names {
    pub fn new(bound: IpAddr, hosts: &[String]) -> Result<Names, String> {
        let listed = hosts
            .iter()
            .map(|host| {
                host.parse::<IpAddr>().ok().map(Name::Ip).or_else(|| Name::parse(host)).ok_or_else(|| {
                    format!("--host {host:?}: a host name or address as Host gives it, without a scheme or a port")
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Names { bound, listed })
    }

    /// Whether a request naming `host` (a `Host` value) is meant for the collector.
    pub fn admits(&self, host: &str) -> bool {
        let Some(name) = Name::of_host(host) else { return false };
        let loopback = self.bound.is_loopback() || self.bound.is_unspecified();
        let own = match &name {
            Name::Ip(ip) => *ip == self.bound || self.bound.is_unspecified() || (loopback && ip.is_loopback()),
            Name::Dns(dns) => loopback && dns == "localhost",
        };
        own || self.listed.contains(&name)
    }
}

/// Whether `origin` is the collector's own (the page it serves), judged
/// from the request's `Host` (one of the collector's [`Names`], checked
/// before), or from the browser's `Sec-Fetch-Site: same-origin` (which a
/// page cannot set; it holds behind a proxy that rewrites `Host`): such
/// requests are not cross-origin.
pub fn same_origin(origin: &str, headers: &HeaderMap) -> bool {
    if headers.get("sec-fetch-site").is_some_and(|site| site == "same-origin") {
        return true;
    }
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else { return false };
    let authority = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    authority.is_some_and(|a| a.eq_ignore_ascii_case(host))
}

/// Whether `origin` is a browser extension's (`chrome-extension://…`,
/// `moz-extension://…`, `safari-web-extension://…`): an extension posts
/// under the host permissions its manifest declares, which let it read any
/// answer, so it is taken as a client without `Origin` is.
pub fn extension(origin: &str) -> bool {
    ["chrome-extension://", "moz-extension://", "safari-web-extension://"].iter().any(|scheme| origin.starts_with(scheme))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        headers
    }

    #[test]
    fn tokens_are_read_one_per_line_and_compared_whole() {
        let dir = std::env::temp_dir().join(format!("localdp-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tokens");
        std::fs::write(&file, "# readers\n  0123456789abcdef0123456789abcdef  \n\nsecond-token-0123456789\n").unwrap();
        let tokens = Tokens::read(&file, "--token-file").unwrap();
        let fingerprints = tokens.fingerprints();
        // SHA-256("second-token-0123456789") begins 27f11cd7.
        assert_eq!(fingerprints[1], "27f11cd7");
        assert_eq!(tokens.admits(&bearer("Bearer 0123456789abcdef0123456789abcdef")), Access::Granted(fingerprints[0].clone()));
        assert_eq!(tokens.admits(&bearer("bearer second-token-0123456789")), Access::Granted(fingerprints[1].clone()));
        for wrong in [
            "Bearer 0123456789abcdef0123456789abcde",
            "Bearer 0123456789abcdef0123456789abcdef0",
            "Bearer 0123456789abcdef0123456789abcdeF",
            "Bearer ",
            "Basic 0123456789abcdef0123456789abcdef",
            "0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(tokens.admits(&bearer(wrong)), Access::Invalid, "{wrong}");
        }
        assert_eq!(tokens.admits(&HeaderMap::new()), Access::Missing);
        std::fs::write(&file, "# nothing\n\n").unwrap();
        assert!(Tokens::read(&file, "--token-file").unwrap_err().contains("no token"));
        std::fs::write(&file, "with space\n").unwrap();
        assert!(Tokens::read(&file, "--shuffler-token-file").unwrap_err().starts_with("--shuffler-token-file "));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"abc", b"abc\0"));
        assert!(!constant_time_eq(b"ab\0", b"ab"));
    }

    #[test]
    fn origins_grant_posting_or_reading() {
        let origins = Origins::read(&["https://App.example".into(), "http://127.0.0.1:5173".into()], None).unwrap();
        assert_eq!(origins.grant("https://app.example"), Grant::Read);
        assert_eq!(origins.grant("http://127.0.0.1:5173"), Grant::Read);
        assert_eq!(origins.grant("http://127.0.0.1:5174"), Grant::None);
        assert_eq!(origins.grant("null"), Grant::None);
        let any = Origins::read(&["*".into(), "https://app.example".into()], None).unwrap();
        assert_eq!(any.grant("https://elsewhere.example"), Grant::Post);
        assert_eq!(any.grant("https://app.example"), Grant::Read);
        for bad in ["app.example", "https://app.example/", "https://app.example/path", "ftp://x", "https://"] {
            assert!(Origins::read(&[bad.into()], None).is_err(), "{bad}");
        }
        assert_eq!(Origins::read(&[], None).unwrap().grant("https://app.example"), Grant::None);
    }

    #[test]
    fn an_origin_file_adds_to_the_flags_and_names_a_bad_line_not_its_text() {
        let dir = std::env::temp_dir().join(format!("localdp-origins-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("origins.txt");
        std::fs::write(&file, "# the app\n  https://App.example  \n\nhttp://127.0.0.1:5173\n").unwrap();
        let origins = Origins::read(&["https://flag.example".into()], Some(&file)).unwrap();
        for origin in ["https://flag.example", "https://app.example", "http://127.0.0.1:5173"] {
            assert_eq!(origins.grant(origin), Grant::Read, "{origin}");
        }
        assert_eq!(origins.describe(), "3 origins");
        std::fs::write(&file, "").unwrap();
        assert_eq!(Origins::read(&[], Some(&file)).unwrap().describe(), "0 origins");
        std::fs::write(&file, "https://ok.example\nhttps://secret.example/path\n").unwrap();
        let error = Origins::read(&[], Some(&file)).err().unwrap();
        assert!(error.starts_with("--allow-origin-file ") && error.contains("line 2: "), "{error}");
        assert!(!error.contains("secret"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_collectors_own_origin_is_recognized_by_its_host() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        assert!(same_origin("http://127.0.0.1:8080", &headers));
        assert!(!same_origin("http://127.0.0.1:8081", &headers));
        assert!(!same_origin("null", &headers));
        assert!(!same_origin("http://127.0.0.1:8080", &HeaderMap::new()));
        // Behind a proxy that rewrites Host, the browser still says so.
        let mut proxied = HeaderMap::new();
        proxied.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        proxied.insert("sec-fetch-site", "same-origin".parse().unwrap());
        assert!(same_origin("https://collector.example", &proxied));
        proxied.insert("sec-fetch-site", "cross-site".parse().unwrap());
        assert!(!same_origin("https://collector.example", &proxied));
        assert!(extension("chrome-extension://abcdefghijklmnopabcdefghijklmnop") && extension("moz-extension://x"));
        assert!(!extension("https://chrome-extension.example") && !extension("null"));
    }

    #[test]
    fn the_collector_answers_to_its_own_names_only() {
        let loopback = Names::new("127.0.0.1".parse().unwrap(), &["Collector.Example".into(), "[::2]".into()]).unwrap();
        for own in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:8080",
            "LOCALHOST",
            "localhost.:8080",
            "[::1]:8080",
            "127.0.0.2",
            "collector.example",
            "collector.example:443",
            "[::2]:80",
        ] {
            assert!(loopback.admits(own), "{own}");
        }
        for other in ["evil.example", "evil.example:8080", "localhost.evil.example", "10.0.0.1:8080", "", "[::1", "a b"] {
            assert!(!loopback.admits(other), "{other}");
        }
        // Bound to one address: that one and --host, no loopback name.
        let lan = Names::new("192.168.1.5".parse().unwrap(), &[]).unwrap();
        assert!(lan.admits("192.168.1.5:8080"));
        assert!(!lan.admits("localhost:8080") && !lan.admits("127.0.0.1") && !lan.admits("192.168.1.6"));
        // Bound to every address: any address, and localhost.
        let all = Names::new("::".parse().unwrap(), &[]).unwrap();
        assert!(all.admits("192.168.1.6:8080") && all.admits("[2001:db8::1]") && all.admits("localhost"));
        assert!(!all.admits("evil.example"));
        for bad in ["app.example:8080", "https://app.example", "", "app.example/x"] {
            assert!(Names::new("127.0.0.1".parse().unwrap(), &[bad.into()]).is_err(), "{bad}");
        }
    }
}
