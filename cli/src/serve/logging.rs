//! The log lines of the collector and the shuffler, on stderr: a UTC
//! timestamp (RFC 3339, milliseconds), a level and the message, or with
//! `--log-format json` one JSON object per line (`{"ts", "level", "msg"}`).
//! Lines never hold a report, a value, an address, an origin or a token.

use std::io::Write;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often at most a repeated kind of line (a metric's commits, the
/// refusals) is written: what happened meanwhile is added up.
pub const EVERY: Duration = Duration::from_secs(10);

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `2026-11-29T08:40:01.123Z INFO message`.
    Text,
    /// `{"ts": "2026-11-29T08:40:01.123Z", "level": "info", "msg": "message"}`.
    Json,
}

static FORMAT: OnceLock<Format> = OnceLock::new();

/// Sets the format of every line from now on (the first call wins).
pub fn set_format(format: Format) {
    let _ = FORMAT.set(format);
}

#[derive(Clone, Copy)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// Writes one line (each line of a message of several is a line of its own).
pub fn write(level: Level, message: &str) {
    let ts = timestamp(SystemTime::now());
    let (upper, lower) = match level {
        Level::Info => ("INFO", "info"),
        Level::Warn => ("WARN", "warn"),
        Level::Error => ("ERROR", "error"),
    };
    let mut out = String::new();
    for text in message.lines() {
        match FORMAT.get().copied().unwrap_or(Format::Text) {
            Format::Text => out.push_str(&format!("{ts} {upper} {text}\n")),
            Format::Json => {
                let line = serde_json::json!({"ts": ts, "level": lower, "msg": text});
                out.push_str(&format!("{line}\n"));
            }
        }
    }
    // One write: lines of concurrent requests do not interleave.
    let _ = std::io::stderr().lock().write_all(out.as_bytes());
}

/// `log_info!("…", args)`: a line at level info (`log_warn!`, `log_error!`).
macro_rules! log_info {
    ($($arg:tt)*) => { $crate::serve::logging::write($crate::serve::logging::Level::Info, &format!($($arg)*)) };
}
macro_rules! log_warn {
    ($($arg:tt)*) => { $crate::serve::logging::write($crate::serve::logging::Level::Warn, &format!($($arg)*)) };
}
macro_rules! log_error {
    ($($arg:tt)*) => { $crate::serve::logging::write($crate::serve::logging::Level::Error, &format!($($arg)*)) };
}
pub(crate) use {log_error, log_info, log_warn};

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn timestamp(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (days, rest) = ((seconds / 86_400) as i64, seconds % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // 2000-02-29 (a leap day of a century year) 12:34:56.789.
        assert_eq!(timestamp(UNIX_EPOCH + Duration::from_millis(951_827_696_789)), "2000-02-29T12:34:56.789Z");
        assert_eq!(timestamp(UNIX_EPOCH + Duration::from_secs(1_798_761_599)), "2026-12-31T23:59:59.000Z");
    }
}
