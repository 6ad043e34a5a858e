//! A progress line on stderr for long aggregations. It is drawn only when
//! stderr is a terminal (never into a pipe or a log file), and only after
//! the first half second, so a short run prints nothing extra.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How long a run goes before the line appears.
const DELAY: Duration = Duration::from_millis(500);
/// Redraws at most this often.
const INTERVAL: Duration = Duration::from_millis(100);
/// Lines between two looks at the clock.
const CHECK_EVERY: u64 = 1024;
const WIDTH: usize = 30;

/// Progress over lines read from inputs of known total size (files) or not
/// (stdin).
pub struct Progress {
    enabled: bool,
    total_bytes: Option<u64>,
    bytes: u64,
    lines: u64,
    started: Instant,
    next_draw: Instant,
    drawn: bool,
}

impl Progress {
    /// `total_bytes`: the inputs' size, if known.
    pub fn new(total_bytes: Option<u64>) -> Progress {
        let started = Instant::now();
        Progress {
            enabled: std::io::stderr().is_terminal(),
            total_bytes,
            bytes: 0,
            lines: 0,
            started,
            next_draw: started + DELAY,
            drawn: false,
        }
    }

    /// One more line of `bytes` bytes read.
    pub fn advance(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
        self.lines += 1;
        if self.enabled && self.lines % CHECK_EVERY == 0 {
            let now = Instant::now();
            if now >= self.next_draw {
                self.draw(now);
                self.next_draw = now + INTERVAL;
            }
        }
    }

    /// The totals so far (bytes and lines read by every thread).
    pub fn update(&mut self, bytes: u64, lines: u64) {
        (self.bytes, self.lines) = (bytes, lines);
        let now = Instant::now();
        if self.enabled && now >= self.next_draw {
            self.draw(now);
            self.next_draw = now + INTERVAL;
        }
    }

    fn draw(&mut self, now: Instant) {
        let seconds = now.duration_since(self.started).as_secs_f64();
        let rate = self.lines as f64 / seconds;
        let line = match self.total_bytes {
            Some(total) if total > 0 => {
                let fraction = (self.bytes as f64 / total as f64).min(1.0);
                let filled = (fraction * WIDTH as f64) as usize;
                let left = if fraction > 0.0 { seconds * (1.0 - fraction) / fraction } else { 0.0 };
                format!(
                    "[{}{}] {:>3.0}%  {} lines  {}/s  {:.0} s left",
                    "█".repeat(filled),
                    "░".repeat(WIDTH - filled),
                    fraction * 100.0,
                    human(self.lines as f64),
                    human(rate),
                    left
                )
            }
            _ => format!("{} lines  {}B read  {}/s", human(self.lines as f64), human(self.bytes as f64), human(rate)),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}\x1b[K");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Erases the line, if it was drawn.
    pub fn finish(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// 1234567 → "1.2M".
fn human(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.1}G", x / 1e9),
        x if x >= 1e6 => format!("{:.1}M", x / 1e6),
        x if x >= 1e3 => format!("{:.1}k", x / 1e3),
        x => format!("{x:.0}"),
    }
}
