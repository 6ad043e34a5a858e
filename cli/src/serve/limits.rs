//! Per-source abuse limits: how many report posts, and how many reports,
//! one client address may send per minute.
//!
//! Each source has two token buckets (Turner's leaky bucket as a meter):
//! one of capacity `L` that refills `L` per minute continuously. Whatever
//! the timing, a source gets at most `L·(1 + T)` through in any `T`
//! minutes (a full bucket, then the refill): the bound docs/privacy.md's
//! poisoning estimate uses. A request that does not fit takes nothing from
//! its bucket.
//!
//! A source is an IPv4 address or an IPv6 /64 (a host usually owns a whole
//! /64, so keying by full address would let it rotate through 2⁶⁴ of them).
//! Idle sources (full buckets) are forgotten once the table grows; past
//! [`MAX_SOURCES`] busy ones, new sources share one overflow bucket pair, so
//! memory stays bounded even under a flood of fresh addresses. A full table
//! is swept again at most once per [`SWEEP_PAUSE`], so a flood of busy
//! sources cannot make every request pay for a sweep, and sources that
//! went idle meanwhile are forgotten however many there were.

use axum::http::HeaderMap;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Tracked sources before idle ones are swept.
const SWEEP_AT: usize = 16_384;
/// Tracked sources at most; beyond, new ones share the overflow buckets.
pub const MAX_SOURCES: usize = 1 << 20;
/// The least time between two sweeps.
const SWEEP_PAUSE: Duration = Duration::from_secs(1);

/// Where a request comes from, as the limits count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    V4([u8; 4]),
    /// The /64 prefix.
    V6([u8; 8]),
    /// A shuffler token, by its fingerprint's first 4 bytes (a shuffled
    /// batch is limited per token, not per address).
    Shuffler([u8; 4]),
    /// Every source not tracked once the table is full.
    Overflow,
}

impl Source {
    /// The source of a shuffler token's batches, from its fingerprint (8
    /// hex digits, `access::fingerprint`).
    pub fn shuffler(fingerprint: &str) -> Source {
        let byte = |i: usize| fingerprint.get(2 * i..2 * i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()).unwrap_or(0);
        Source::Shuffler([byte(0), byte(1), byte(2), byte(3)])
    }

    pub fn of(address: IpAddr) -> Source {
        match address {
            IpAddr::V4(v4) => Source::V4(v4.octets()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Source::V4(v4.octets()),
                None => Source::V6(v6.octets()[..8].try_into().expect("8 bytes")),
            },
        }
    }
}

/// The client address of a request: the peer's, or with `trust_proxy` the
/// last address in the last `X-Forwarded-For` header (the one the proxy in
/// front of the collector appended; earlier entries are whatever the client
/// claimed). The peer's if that header is missing or unreadable.
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trust_proxy: bool) -> IpAddr {
    if !trust_proxy {
        return peer;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .next_back()
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.rsplit(',').next())
        .map(str::trim)
        .and_then(|last| {
            // `[v6]:port`, `v4:port` and bare addresses.
            last.parse::<IpAddr>()
                .ok()
                .or_else(|| last.parse::<std::net::SocketAddr>().ok().map(|s| s.ip()))
                .or_else(|| last.trim_start_matches('[').trim_end_matches(']').parse::<Ipv6Addr>().ok().map(IpAddr::V6))
        })
        .unwrap_or(peer)
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(capacity: f64, now: Instant) -> Bucket {
        Bucket { tokens: capacity, at: now }
    }

    /// Refills to `now`.
    fn refill(&mut self, capacity: f64, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * capacity / 60.0).min(capacity);
        self.at = now;
    }

    /// How long until `n` tokens are there (zero if they are).
    fn wait_for(&self, n: f64, capacity: f64) -> Duration {
        if self.tokens >= n {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((n - self.tokens) * 60.0 / capacity)
        }
    }
}

/// One source's buckets.
struct Meter {
    requests: Bucket,
    reports: Bucket,
}

/// The per-minute limits (0: none) and the sources' meters.
pub struct Limits {
    pub requests_per_minute: u32,
    pub reports_per_minute: u32,
    sources: Mutex<Table>,
}

struct Table {
    meters: HashMap<Source, Meter>,
    /// The size at which idle sources are swept next: doubles with the busy
    /// ones (up to [`MAX_SOURCES`]), so a flood of new sources costs
    /// amortized O(1) each.
    sweep_at: usize,
    /// When the last sweep ran: the next waits [`SWEEP_PAUSE`] (a full
    /// table of busy sources would otherwise be swept for every new one).
    swept: Option<Instant>,
}

/// A refusal: which limit, and when to try again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Refused {
    /// `"requests"` or `"reports"`.
    pub limit: &'static str,
    /// Whole seconds, at least 1 (the `Retry-After` value).
    pub retry_after: u64,
    /// The request can never fit (more reports than the limit).
    pub never: bool,
}

impl Limits {
    /// `None` when both limits are off.
    pub fn new(requests_per_minute: u32, reports_per_minute: u32) -> Option<Limits> {
        (requests_per_minute > 0 || reports_per_minute > 0).then(|| Limits {
            requests_per_minute,
            reports_per_minute,
            sources: Mutex::new(Table { meters: HashMap::new(), sweep_at: SWEEP_AT, swept: None }),
        })
    }

    /// Tracked sources.
    pub fn tracked(&self) -> usize {
        self.sources.lock().expect("no panics while holding the lock").meters.len()
    }

    /// Takes one request of `source` (before its body is read).
    pub fn take_request(&self, source: Source, now: Instant) -> Result<(), Refused> {
        let capacity = f64::from(self.requests_per_minute);
        if capacity == 0.0 {
            return Ok(());
        }
        self.with_meter(source, now, |meter| {
            let bucket = &mut meter.requests;
            bucket.refill(capacity, now);
            if bucket.tokens >= 1.0 {
                bucket.tokens -= 1.0;
                Ok(())
            } else {
                Err(Refused { limit: "requests", retry_after: seconds(bucket.wait_for(1.0, capacity)), never: false })
            }
        })
    }

    /// Takes `n` reports of `source`, all or none.
    pub fn take_reports(&self, source: Source, n: u64, now: Instant) -> Result<(), Refused> {
        let capacity = f64::from(self.reports_per_minute);
        if capacity == 0.0 || n == 0 {
            return Ok(());
        }
        let n = n as f64;
        if n > capacity {
            return Err(Refused { limit: "reports", retry_after: 60, never: true });
        }
        self.with_meter(source, now, |meter| {
            let bucket = &mut meter.reports;
            bucket.refill(capacity, now);
            if bucket.tokens >= n {
                bucket.tokens -= n;
                Ok(())
            } else {
                Err(Refused { limit: "reports", retry_after: seconds(bucket.wait_for(n, capacity)), never: false })
            }
        })
    }

    /// Gives back a request and its `n` reports that were taken but not
    /// counted (the batch could not be stored): a failure of the collector's
    /// is not the client's spending. Up to the capacity; a source forgotten
    /// meanwhile is full anyway.
    pub fn refund(&self, source: Source, n: u64, now: Instant) {
        let requests = f64::from(self.requests_per_minute);
        let reports = f64::from(self.reports_per_minute);
        let mut table = self.sources.lock().expect("no panics while holding the lock");
        let key = if table.meters.contains_key(&source) { source } else { Source::Overflow };
        if let Some(meter) = table.meters.get_mut(&key) {
            if requests > 0.0 {
                meter.requests.refill(requests, now);
                meter.requests.tokens = (meter.requests.tokens + 1.0).min(requests);
            }
            if reports > 0.0 {
                meter.reports.refill(reports, now);
                meter.reports.tokens = (meter.reports.tokens + n as f64).min(reports);
            }
        }
    }

    fn with_meter<T>(&self, source: Source, now: Instant, f: impl FnOnce(&mut Meter) -> T) -> T {
        let requests = f64::from(self.requests_per_minute);
        let reports = f64::from(self.reports_per_minute);
        let mut table = self.sources.lock().expect("no panics while holding the lock");
        let Table { meters, sweep_at, swept } = &mut *table;
        let mut key = source;
        let paused = swept.is_some_and(|at| now.saturating_duration_since(at) < SWEEP_PAUSE);
        if !meters.contains_key(&key) && meters.len() >= *sweep_at && !paused {
            // Forget the sources whose buckets have refilled: they are as
            // if never seen.
            meters.retain(|_, m| {
                let (mut a, mut b) = (m.requests, m.reports);
                a.refill(requests, now);
                b.refill(reports, now);
                a.tokens < requests || b.tokens < reports
            });
            *sweep_at = (2 * meters.len()).clamp(SWEEP_AT, MAX_SOURCES);
            *swept = Some(now);
        }
        if !meters.contains_key(&key) && meters.len() >= MAX_SOURCES {
            key = Source::Overflow;
        }
        let meter = meters
            .entry(key)
            .or_insert_with(|| Meter { requests: Bucket::full(requests, now), reports: Bucket::full(reports, now) });
        f(meter)
    }
}

/// A wait in whole seconds for `Retry-After`, rounded up, at least 1.
fn seconds(wait: Duration) -> u64 {
    (wait.as_secs_f64().ceil() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_gets_the_capacity_then_the_refill() {
        let limits = Limits::new(0, 60).unwrap();
        let source = Source::of("10.0.0.1".parse().unwrap());
        let t0 = Instant::now();
        assert!(limits.take_reports(source, 50, t0).is_ok());
        // 10 left: 11 do not fit and take nothing.
        let refused = limits.take_reports(source, 11, t0).unwrap_err();
        assert_eq!((refused.limit, refused.retry_after, refused.never), ("reports", 1, false));
        assert!(limits.take_reports(source, 10, t0).is_ok());
        assert_eq!(limits.take_reports(source, 1, t0).unwrap_err().retry_after, 1);
        // One per second comes back.
        assert!(limits.take_reports(source, 3, t0 + Duration::from_secs(3)).is_ok());
        assert!(limits.take_reports(source, 1, t0 + Duration::from_secs(3)).is_err());
        // More than the limit never fits.
        assert!(limits.take_reports(source, 61, t0 + Duration::from_secs(3600)).unwrap_err().never);
        // Another source has its own bucket; requests are not limited.
        let other = Source::of("10.0.0.2".parse().unwrap());
        assert!(limits.take_reports(other, 60, t0).is_ok());
        assert!(limits.take_request(other, t0).is_ok());
    }

    #[test]
    fn retry_after_is_the_wait_for_the_whole_request() {
        let limits = Limits::new(2, 0).unwrap();
        let source = Source::of("10.0.0.1".parse().unwrap());
        let t0 = Instant::now();
        assert!(limits.take_request(source, t0).is_ok());
        assert!(limits.take_request(source, t0).is_ok());
        assert_eq!(limits.take_request(source, t0).unwrap_err().retry_after, 30);
        assert_eq!(limits.take_request(source, t0 + Duration::from_secs(29)).unwrap_err().retry_after, 1);
        assert!(limits.take_request(source, t0 + Duration::from_secs(30)).is_ok());
    }

    #[test]
    fn a_refund_gives_back_what_was_taken_up_to_the_capacity() {
        let limits = Limits::new(2, 10).unwrap();
        let source = Source::of("10.0.0.1".parse().unwrap());
        let t0 = Instant::now();
        assert!(limits.take_request(source, t0).is_ok());
        assert!(limits.take_reports(source, 10, t0).is_ok());
        assert!(limits.take_reports(source, 1, t0).is_err());
        limits.refund(source, 10, t0);
        assert!(limits.take_request(source, t0).is_ok());
        assert!(limits.take_request(source, t0).is_ok());
        assert!(limits.take_request(source, t0).is_err());
        assert!(limits.take_reports(source, 10, t0).is_ok());
        // Never past the capacity.
        limits.refund(source, 100, t0);
        limits.refund(source, 100, t0);
        assert!(limits.take_reports(source, 10, t0).is_ok());
        assert!(limits.take_reports(source, 1, t0).is_err());
    }

    #[test]
    fn an_ipv6_host_is_its_slash_64() {
        let a = Source::of("2001:db8:1:2::1".parse().unwrap());
        let b = Source::of("2001:db8:1:2:ffff::9".parse().unwrap());
        let c = Source::of("2001:db8:1:3::1".parse().unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(Source::of("::ffff:10.0.0.1".parse().unwrap()), Source::of("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn the_proxy_address_is_the_last_forwarded_one() {
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "203.0.113.9, 198.51.100.7".parse().unwrap());
        assert_eq!(client_address(peer, &headers, false), peer);
        assert_eq!(client_address(peer, &headers, true), "198.51.100.7".parse::<IpAddr>().unwrap());
        headers.insert("x-forwarded-for", "[2001:db8::1]:443".parse().unwrap());
        assert_eq!(client_address(peer, &headers, true), "2001:db8::1".parse::<IpAddr>().unwrap());
        headers.insert("x-forwarded-for", "garbage".parse().unwrap());
        assert_eq!(client_address(peer, &headers, true), peer);
        assert_eq!(client_address(peer, &HeaderMap::new(), true), peer);
    }

    #[test]
    fn idle_sources_are_forgotten_and_the_table_is_bounded() {
        let limits = Limits::new(10, 0).unwrap();
        let t0 = Instant::now();
        for i in 0..SWEEP_AT as u32 {
            let _ = limits.take_request(Source::V4(i.to_be_bytes()), t0);
        }
        assert_eq!(limits.tracked(), SWEEP_AT);
        // A minute later every bucket is full again: the next new source sweeps them.
        let _ = limits.take_request(Source::V4([255; 4]), t0 + Duration::from_secs(60));
        assert_eq!(limits.tracked(), 1);
    }

    #[test]
    fn a_full_table_still_forgets_its_idle_sources() {
        let limits = Limits::new(10, 0).unwrap();
        let t0 = Instant::now();
        // More busy sources than the table holds, all in one refill period:
        // the last ones share the overflow buckets.
        for i in 0..(MAX_SOURCES + 10) as u32 {
            let _ = limits.take_request(Source::V4(i.to_be_bytes()), t0);
        }
        assert_eq!(limits.tracked(), MAX_SOURCES + 1);
        // A minute later all of them are idle: a new source sweeps them and
        // has buckets of its own again (10 requests, not the overflow's).
        let later = t0 + Duration::from_secs(60);
        let fresh = Source::V4([255; 4]);
        for _ in 0..10 {
            assert!(limits.take_request(fresh, later).is_ok());
        }
        assert!(limits.take_request(fresh, later).is_err());
        assert!(limits.take_request(Source::V4([255, 255, 255, 254]), later).is_ok());
        assert_eq!(limits.tracked(), 2);
    }
}
