//! `localdp aggregate --plot FILE.svg`: the estimate as a picture, for people
//! who collect reports elsewhere. A frequency estimate is one bar per value
//! (`frequency`, after `--post`) with the 95% interval of the unbiased
//! estimate (RAPPOR: one per detected candidate); a numeric one is each
//! attribute's mean with its interval on the attribute's range; a
//! distribution's is its histogram over the range, each bin's 95% interval,
//! and each quantile marked with its interval. Plain SVG written by hand: no
//! scripts, no fonts or images fetched, one `<rect class="bar">` per value
//! or bin, one `<circle class="mean">` per attribute and one `<g
//! class="quantile">` per quantile.

use localdp::{Aggregator, DistributionEstimate, Estimate, NumericEstimate, NumericMetric};
use std::fmt::Write;
use std::path::Path;

const WIDTH: f64 = 760.0;
const TOP: f64 = 64.0;
const STYLE: &str = "text{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:12px;fill:#222}\
.title{font-size:15px;font-weight:600}.note{fill:#555}.tick{fill:#666;font-size:11px}\
.grid{stroke:#e3e3e3}.zero{stroke:#888}.bar{fill:#4c78a8}.ci{stroke:#1d1d1d;stroke-width:1.5;fill:none}\
.track{stroke:#bbb;stroke-width:6;stroke-linecap:round}.mean{fill:#4c78a8;stroke:#1d1d1d}\
.band{fill:#e45756;fill-opacity:0.15}.mark{stroke:#e45756;stroke-width:1.5;stroke-dasharray:4 3}.qlabel{fill:#b8302f;font-size:11px}";

/// Writes the picture of `estimate` (made by `aggregator`) to `path`.
pub fn write(path: &Path, aggregator: &Aggregator, estimate: &Estimate) -> Result<(), String> {
    std::fs::write(path, svg(aggregator, estimate)).map_err(|e| format!("{}: {e}", path.display()))
}

/// The SVG document.
pub fn svg(aggregator: &Aggregator, estimate: &Estimate) -> String {
    match estimate {
        Estimate::Frequency(e) => {
            let post = serde_json::to_value(e.post).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            let rows = e.estimates.iter().map(|v| {
                let label = match &v.value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Row { label, frequency: v.frequency, ci95: v.ci95 }
            });
            bars(
                &format!("Estimated frequencies — {}, ε = {}, n = {}", e.protocol.name(), e.epsilon, e.n),
                &format!(
                    "bars: frequency (post-processing: {post}); lines: 95% intervals of the unbiased estimate; {} rejected",
                    e.rejected.total()
                ),
                &rows.collect::<Vec<_>>(),
            )
        }
        Estimate::Rappor(e) => {
            let rows = e.estimates.iter().map(|c| Row { label: c.value.clone(), frequency: c.frequency, ci95: c.ci95 });
            bars(
                &format!("Detected candidates — rappor, ε₁ = {}, ε∞ = {}, n = {}", e.epsilon, e.epsilon_infinity, e.n),
                &format!(
                    "bars: estimated frequency; lines: 95% intervals; {} candidates not detected; {} rejected",
                    e.not_detected.len(),
                    e.rejected.total()
                ),
                &rows.collect::<Vec<_>>(),
            )
        }
        Estimate::HeavyHitter(e) => {
            let rows = e.values().iter().map(|c| Row { label: c.value.clone(), frequency: c.frequency, ci95: c.ci95 });
            let what = if e.protocol.discovers() { "Heavy hitters found" } else { "Candidates scored" };
            bars(
                &format!("{what} — {}, ε = {}, n = {}", e.protocol, e.epsilon, e.n),
                &format!("bars: estimated frequency; lines: 95% intervals; {} rejected", e.rejected.total()),
                &rows.collect::<Vec<_>>(),
            )
        }
        Estimate::Distribution(e) => histogram(e),
        Estimate::Numeric(e) => {
            let ranges = aggregator.metric().mechanism::<NumericMetric>().map_or(&[][..], NumericMetric::ranges);
            numeric(e, ranges)
        }
        _ => String::new(),
    }
}

/// One bar.
struct Row {
    label: String,
    frequency: f64,
    ci95: [f64; 2],
}

fn bars(title: &str, note: &str, rows: &[Row]) -> String {
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    let longest = labels.iter().map(|l| l.chars().count().min(28)).max().unwrap_or(1);
    let left = (longest as f64 * 7.0 + 20.0).clamp(48.0, 220.0);
    let right = 200.0;
    let (row, bar) = (24.0, 14.0);
    let bottom = TOP + row * rows.len() as f64;
    let height = bottom + 44.0;
    let low = rows.iter().flat_map(|v| [v.ci95[0], v.frequency]).fold(0.0, f64::min);
    let high = rows.iter().flat_map(|v| [v.ci95[1], v.frequency]).fold(0.01, f64::max);
    let axis = Axis::new(low, high, left, WIDTH - right);

    let mut out = header(height, title);
    let _ = write!(
        out,
        "<text class=\"title\" x=\"16\" y=\"24\">{}</text>\n<text class=\"note\" x=\"16\" y=\"44\">{}</text>\n",
        escape(title),
        escape(note)
    );
    out += &axis.grid(TOP - 6.0, bottom);
    for (i, (v, label)) in rows.iter().zip(labels).enumerate() {
        let y = TOP + row * i as f64;
        let middle = y + row / 2.0;
        let (x0, x1) = (axis.x(0.0), axis.x(v.frequency));
        let shown: String = if label.chars().count() > 28 {
            label.chars().take(27).chain(['…']).collect()
        } else {
            label.to_string()
        };
        let _ = writeln!(
            out,
            "<g class=\"value\"><title>{}: {:.4} (95% interval {:.4} to {:.4})</title>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
             <rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bar}\"/>\
             <path class=\"ci\" d=\"M{:.1} {:.1}H{:.1}M{:.1} {:.1}v8M{:.1} {:.1}v8\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{:.4}  [{:.4}, {:.4}]</text></g>",
            escape(label),
            v.frequency,
            v.ci95[0],
            v.ci95[1],
            left - 8.0,
            middle + 4.0,
            escape(&shown),
            x0.min(x1),
            middle - bar / 2.0,
            (x1 - x0).abs(),
            axis.x(v.ci95[0]),
            middle,
            axis.x(v.ci95[1]),
            axis.x(v.ci95[0]),
            middle - 4.0,
            axis.x(v.ci95[1]),
            middle - 4.0,
            WIDTH - right + 12.0,
            middle + 4.0,
            v.frequency,
            v.ci95[0],
            v.ci95[1],
        );
    }
    out += &axis.labels(bottom + 18.0);
    out += "</svg>\n";
    out
}

fn numeric(e: &NumericEstimate, ranges: &[[f64; 2]]) -> String {
    let row = 56.0;
    let bottom = TOP + row * e.attributes.len() as f64;
    let height = bottom + 12.0;
    let (left, right) = (110.0, 230.0);
    let mut out = header(height, "Estimated means");
    let _ = write!(
        out,
        "<text class=\"title\" x=\"16\" y=\"24\">Estimated {} — {}, ε = {}, n = {}</text>\n\
         <text class=\"note\" x=\"16\" y=\"44\">dots: unbiased means; lines: 95% intervals; the axis is the \
         configured range; {} rejected</text>\n",
        if e.vector { "means" } else { "mean" },
        e.protocol.name(),
        e.epsilon,
        e.n,
        e.rejected.total()
    );
    for (i, (a, &[lo, hi])) in e.attributes.iter().zip(ranges).enumerate() {
        let y = TOP + row * i as f64 + 22.0;
        // The range, widened to the interval if the mean fell outside by chance.
        let axis = Axis::exact(lo.min(a.ci95[0]), hi.max(a.ci95[1]), left, WIDTH - right);
        let name = if e.vector { format!("attribute {i}") } else { "mean".to_string() };
        let precision = decimals(a.std_error);
        let _ = writeln!(
            out,
            "<g class=\"attribute\"><title>{name}: {mean:.p$} (95% interval {c0:.p$} to {c1:.p$})</title>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{name}</text>\
             <line class=\"track\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>\
             <path class=\"ci\" d=\"M{:.1} {y:.1}H{:.1}M{:.1} {:.1}v12M{:.1} {:.1}v12\"/>\
             <circle class=\"mean\" cx=\"{:.1}\" cy=\"{y:.1}\" r=\"5\"/>\
             <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\">{lo}</text>\
             <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{hi}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\">{mean:.p$} ± {half:.p$}  [{c0:.p$}, {c1:.p$}]</text></g>",
            left - 12.0,
            y + 4.0,
            axis.x(lo),
            axis.x(hi),
            axis.x(a.ci95[0]),
            axis.x(a.ci95[1]),
            axis.x(a.ci95[0]),
            y - 6.0,
            axis.x(a.ci95[1]),
            y - 6.0,
            axis.x(a.mean),
            axis.x(lo),
            y + 22.0,
            axis.x(hi),
            y + 22.0,
            WIDTH - right + 16.0,
            y + 4.0,
            mean = a.mean,
            c0 = a.ci95[0],
            c1 = a.ci95[1],
            half = a.ci95[1] - a.mean,
            p = precision,
        );
    }
    out += "</svg>\n";
    out
}

/// The histogram over the range: a bar per bin with its 95% interval, and
/// each quantile as a dashed line over its interval's band.
fn histogram(e: &DistributionEstimate) -> String {
    let (left, right, plot_top, plot_bottom) = (64.0, WIDTH - 24.0, TOP + 36.0, TOP + 300.0);
    let (lo, hi) = match (e.histogram.first(), e.histogram.last()) {
        (Some(first), Some(last)) => (first.lo, last.hi),
        _ => (0.0, 1.0),
    };
    let x = Axis::new(lo, hi, left, right);
    let top = e.histogram.iter().flat_map(|b| [b.frequency, b.ci95[1]]).fold(1e-9, f64::max);
    let floor = e.histogram.iter().flat_map(|b| [b.frequency, b.ci95[0]]).fold(0.0, f64::min);
    let y = |f: f64| plot_bottom - (f - floor) / (top - floor) * (plot_bottom - plot_top);
    let height = plot_bottom + 40.0;
    let title = format!("Estimated distribution — {}, ε = {}, n = {}", e.protocol, e.epsilon, e.n);
    let mut out = header(height, &title);
    let _ = write!(
        out,
        "<text class=\"title\" x=\"16\" y=\"24\">{}</text>\n<text class=\"note\" x=\"16\" y=\"44\">bars: share per bin, \
         lines: 95% intervals; dashed: quantiles, shaded: their 95% intervals; {} rejected</text>\n\
         <text class=\"note\" x=\"16\" y=\"62\">mean {:.p$} [{:.p$}, {:.p$}]</text>\n",
        escape(&title),
        e.rejected.total(),
        e.mean.value,
        e.mean.ci95[0],
        e.mean.ci95[1],
        p = decimals((e.mean.ci95[1] - e.mean.ci95[0]) / 4.0),
    );
    out += &x.grid(plot_top, plot_bottom);
    for b in &e.histogram {
        let (x0, x1) = (x.x(b.lo), x.x(b.hi));
        let middle = 0.5 * (x0 + x1);
        let _ = writeln!(
            out,
            "<g class=\"bin\"><title>[{}, {}): {:.4} (95% interval {:.4} to {:.4})</title>\
             <rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>\
             <path class=\"ci\" d=\"M{middle:.1} {:.1}V{:.1}\"/></g>",
            b.lo,
            b.hi,
            b.frequency,
            b.ci95[0],
            b.ci95[1],
            x0 + 0.5,
            y(b.frequency.max(0.0)),
            (x1 - x0 - 1.0).max(0.5),
            (y(0.0) - y(b.frequency.max(0.0))).max(0.0),
            y(b.ci95[0]),
            y(b.ci95[1]),
        );
    }
    for (i, q) in e.quantiles.iter().enumerate() {
        let name = format!("p{}", (q.q * 1000.0).round() / 10.0);
        let at = x.x(q.value);
        let _ = writeln!(
            out,
            "<g class=\"quantile\"><title>{name}: {:.4} (95% interval {:.4} to {:.4})</title>\
             <rect class=\"band\" x=\"{:.1}\" y=\"{plot_top:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>\
             <line class=\"mark\" x1=\"{at:.1}\" y1=\"{plot_top:.1}\" x2=\"{at:.1}\" y2=\"{plot_bottom:.1}\"/>\
             <text class=\"qlabel\" x=\"{:.1}\" y=\"{:.1}\">{name} {:.p$}</text></g>",
            q.value,
            q.ci95[0],
            q.ci95[1],
            x.x(q.ci95[0]),
            (x.x(q.ci95[1]) - x.x(q.ci95[0])).max(1.0),
            plot_bottom - plot_top,
            at + 3.0,
            plot_top - 8.0 - 12.0 * (i % 2) as f64,
            q.value,
            p = decimals((q.ci95[1] - q.ci95[0]) / 4.0),
        );
    }
    out += &x.labels(plot_bottom + 18.0);
    out += "</svg>\n";
    out
}

fn header(height: f64, title: &str) -> String {
    let title = escape(title);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\">\n<title>{title}</title>\n<style>{STYLE}</style>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
    )
}

/// Enough decimals to show a number to about a tenth of its standard error.
fn decimals(std_error: f64) -> usize {
    if std_error > 0.0 && std_error.is_finite() {
        (1.0 - std_error.log10().floor()).clamp(0.0, 6.0) as usize
    } else {
        2
    }
}

/// A linear scale from data to x pixels, with round ticks.
struct Axis {
    low: f64,
    high: f64,
    step: f64,
    left: f64,
    right: f64,
}

impl Axis {
    /// `[low, high]` (padded by 2%), with ticks at multiples of 1, 2 or 5 × 10^k.
    fn new(low: f64, high: f64, left: f64, right: f64) -> Axis {
        let pad = 0.02 * (high - low);
        let (low, high) = (if low < 0.0 { low - pad } else { low }, high + pad);
        let raw = (high - low) / 5.0;
        let magnitude = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|&s| s >= raw).unwrap_or(raw);
        Axis { low, high, step, left, right }
    }

    fn exact(low: f64, high: f64, left: f64, right: f64) -> Axis {
        let high = if high > low { high } else { low + 1.0 };
        Axis { low, high, step: high - low, left, right }
    }

    fn x(&self, value: f64) -> f64 {
        self.left + (value - self.low) / (self.high - self.low) * (self.right - self.left)
    }

    /// The multiples of the step inside the axis.
    fn ticks(&self) -> Vec<f64> {
        let first = (self.low / self.step - 1e-9).ceil() as i64;
        let last = (self.high / self.step + 1e-9).floor() as i64;
        (first..=last).map(|i| i as f64 * self.step).collect()
    }

    fn grid(&self, top: f64, bottom: f64) -> String {
        let mut out = String::new();
        for t in self.ticks() {
            let class = if t.abs() < self.step * 1e-9 { "zero" } else { "grid" };
            let _ = writeln!(out, "<line class=\"{class}\" x1=\"{0:.1}\" y1=\"{top:.1}\" x2=\"{0:.1}\" y2=\"{bottom:.1}\"/>", self.x(t));
        }
        out
    }

    fn labels(&self, y: f64) -> String {
        let precision = decimals(self.step / 10.0).saturating_sub(1);
        let mut out = String::new();
        for t in self.ticks() {
            let t = if t.abs() < self.step * 1e-9 { 0.0 } else { t };
            let _ = writeln!(out, "<text class=\"tick\" x=\"{:.1}\" y=\"{y:.1}\" text-anchor=\"middle\">{t:.precision$}</text>", self.x(t));
        }
        out
    }
}

/// Text for XML: `&`, `<`, `>`, quotes escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out += "&amp;",
            '<' => out += "&lt;",
            '>' => out += "&gt;",
            '"' => out += "&quot;",
            '\'' => out += "&apos;",
            c if (c as u32) < 0x20 && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
