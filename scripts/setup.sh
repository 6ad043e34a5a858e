#!/usr/bin/env bash
# Installs what the build and the tests need, idempotently; sourced by the
# other scripts. `need_rust` is enough for the CLI; `need_wasm` adds the wasm
# target, wasm-pack, the wasm-bindgen CLI (the exact version Cargo.lock pins),
# Debian's rustc-web with its standard library's source (the shipped modules
# rebuild std: scripts/build.sh) and the npm dev tools (binaryen's wasm-opt,
# vite, playwright-core); `wasm_compiler` sets up the compiler of everything
# built for wasm; `need_browser` adds Debian's Chromium and chromedriver.

need_rust() {
  if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
  command -v cargo >/dev/null 2>&1 || { echo "setup: cargo not found (install Rust with rustup)" >&2; exit 1; }
  # A CI run builds once in a fresh clone: incremental caches (about 1 GB)
  # would only take disk.
  if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
}

# True when Debian's rustc-web and rust-web-src are installed, of one
# version, at least 1.96.
rust_web_installed() {
  local want='^installed:(1\.(9[6-9]|[1-9][0-9][0-9])\.[^ ]+) installed:\1 $'
  [[ "$(dpkg-query -W -f '${db:Status-Status}:${Version} ' rustc-web rust-web-src 2>/dev/null)" =~ $want ]]
}

need_wasm() {
  need_rust
  rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
  local want
  want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print }' Cargo.lock)
  if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $want" ]; then
    # Without --locked: its lockfile pins a crate the registry mirror lacks.
    cargo install wasm-bindgen-cli --version "$want" --force
  fi
  if [ "$(wasm-pack --version 2>/dev/null)" != "wasm-pack 0.15.1" ]; then
    cargo install wasm-pack --version 0.15.1 --locked --force
  fi
  # A compiler and its own std source, from one Debian package version
  # (rustup's rust-src cannot be fetched here): rustc-web from
  # bookworm-security, at least 1.96 (bookworm's own 1.85 has no
  # -Cpanic=immediate-abort). It conflicts with Debian's rustc package (apt
  # would remove it), not with rustup's toolchains.
  if ! rust_web_installed; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends rustc-web rust-web-src >/dev/null && apt-get clean
    rust_web_installed || {
      echo "setup: needs Debian's rustc-web and rust-web-src >= 1.96, of one version (bookworm-security); apt has: $(apt-cache policy rustc-web | sed -n 's/ *Candidate: //p')" >&2
      exit 1
    }
  fi
  if [ ! -x node_modules/.bin/wasm-opt ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund
  fi
}

# The compiler of everything built for wasm (the shipped modules and the
# wasm tests): Debian's rustc-web, which compiles std from its own source
# (the callers pass cargo -Zbuild-std). RUSTC_BOOTSTRAP lets the stable
# compiler take the unstable flags (build scripts that probe for nightly
# features see them too). Cargo, wasm-pack's checks and the linker stay
# rustup's default toolchain, put first on PATH (its rust-lld links: Debian's
# rustc has none).
wasm_compiler() {
  need_wasm
  local toolchain
  toolchain=$(dirname "$(rustup which rustc)")
  export PATH="$toolchain:$PATH" RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$toolchain/../lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/rust-lld"
  [ -x "$CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER" ] || { echo "setup: no rust-lld at $CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER" >&2; exit 1; }
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER
}

need_browser() {
  if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null && apt-get clean
  fi
}
