//! `cfg(js)`: the wasm build for the browser with wasm-bindgen (the
//! `bindgen` feature), whose configs, reports and errors are JS values.
//! A wasm build without it (the GRR client module) imports plain functions
//! instead (src/host.rs), and its page passes the config as typed
//! arguments.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(js)");
    let var = |name| std::env::var(name).unwrap_or_default();
    let browser = var("CARGO_CFG_TARGET_ARCH") == "wasm32" && var("CARGO_CFG_TARGET_OS") == "unknown";
    if browser && std::env::var_os("CARGO_FEATURE_BINDGEN").is_some() {
        println!("cargo::rustc-cfg=js");
    }
}
