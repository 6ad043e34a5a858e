//! The demo's open-text population (`www/app.js`'s pages), shared by the
//! library's and the CLI's heavy-hitter tests.

/// The demo's ten pages held by 20,000 devices with shares 40.5%, 17.6%, …,
/// 2.2%.
pub const PAGES: [(&str, usize); 10] = [
    ("/", 8100),
    ("/pricing", 3520),
    ("/docs", 2260),
    ("/blog/ldp", 1540),
    ("/signup", 1060),
    ("/about", 1040),
    ("/careers", 740),
    ("/blog/rust", 660),
    ("/status", 640),
    ("/legal", 440),
];

/// The demo's metric at ε = `epsilon` (the demo's is 4).
pub fn config(epsilon: f64) -> String {
    format!(r#"{{"protocol":"heavy_hitters","epsilon":{epsilon},"max_length":12,"top":8,"truncate":true}}"#)
}
