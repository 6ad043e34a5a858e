#!/usr/bin/env bash
# Installs what the build and the tests need, idempotently; sourced by the
# other scripts. `need_rust` is enough for the CLI; `need_wasm` adds the wasm
# target, wasm-pack, the wasm-bindgen CLI (the exact version Cargo.lock pins)
# and the npm dev tools (binaryen's wasm-opt, vite, playwright-core);
# `wasm_compiler` picks the compiler of everything built for wasm (a route:
# see there; docs/building.md) and installs it if it must; `need_browser`
# adds Debian's Chromium and chromedriver; `need_nginx` Debian's nginx.

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
  if [ ! -x node_modules/.bin/wasm-opt ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund
  fi
}

# True when rustup's nightly toolchain has the standard library's source.
nightly_src_installed() {
  rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'
}

# The compiler of everything built for wasm (the shipped modules and the wasm
# tests): a route, the first of these that is here, or the one
# $LOCALDP_WASM_ROUTE names. Sets WASM_ROUTE and `build_std`, cargo's flags
# that rebuild std (empty on route stable), `ship_flags`, the flags of
# the modules the package ships (below), and `raw_flags`, those of the
# module without wasm-bindgen (GRR's: getrandom's custom backend, whose
# source is the page's, core/src/host.rs; in a target directory of its own,
# target/raw, since cargo rebuilds what other flags built), and says which
# route it took.
#  nightly: rustup's nightly toolchain with rust-src; it compiles std from
#    that source (the usual set-up on a laptop).
#  debian: Debian's rustc-web with rust-web-src, of one version, at least
#    1.96 (bookworm's own 1.85 has no -Cpanic=immediate-abort); what CI and
#    these machines use, since rustup's rust-src cannot be fetched here.
#    Installed when neither nightly's rust-src nor another route is there
#    and apt-get runs as root: the only step that needs root. It conflicts
#    with Debian's rustc package (apt would remove it), not with rustup's
#    toolchains.
#  stable: rustup's default toolchain and its prebuilt std: no std rebuild,
#    so the modules carry std's panic and formatting machinery and are
#    larger (scripts/build.sh prints by how much).
# On the routes that rebuild std, the compiler is RUSTC and RUSTC_BOOTSTRAP
# lets the stable cargo take -Z flags (build scripts that probe for nightly
# features see them too). Cargo, wasm-pack's checks and the linker stay
# rustup's default toolchain, put first on PATH (its rust-lld links:
# Debian's rustc has none; nightly needs no wasm32 target of its own).
wasm_compiler() {
  need_wasm
  WASM_ROUTE=${LOCALDP_WASM_ROUTE:-}
  case $WASM_ROUTE in
    '')
      if nightly_src_installed; then WASM_ROUTE=nightly
      elif rust_web_installed || { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }; then WASM_ROUTE=debian
      else WASM_ROUTE=stable
      fi ;;
    nightly | debian | stable) ;;
    *) echo "setup: LOCALDP_WASM_ROUTE=$WASM_ROUTE: the routes are nightly, debian and stable" >&2; exit 1 ;;
  esac
  local rustc
  case $WASM_ROUTE in
    nightly)
      nightly_src_installed || {
        echo "setup: route nightly needs rustup's nightly toolchain with rust-src: rustup toolchain install nightly --component rust-src" >&2
        exit 1
      }
      rustc=$(rustup which --toolchain nightly rustc)
      echo "setup: wasm route nightly: rustup's $("$rustc" -V), std rebuilt from its rust-src" >&2 ;;
    debian)
      if ! rust_web_installed; then
        [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && {
          apt-get update -qq && apt-get install -y -qq --no-install-recommends rustc-web rust-web-src >/dev/null && apt-get clean
        }
        rust_web_installed || {
          echo "setup: route debian needs Debian's rustc-web and rust-web-src >= 1.96, of one version (bookworm-security), installed as root; apt has: $(apt-cache policy rustc-web 2>/dev/null | sed -n 's/ *Candidate: //p')" >&2
          exit 1
        }
      fi
      rustc=/usr/bin/rustc
      echo "setup: wasm route debian: Debian's $("$rustc" -V), std rebuilt from rust-web-src" >&2 ;;
    stable)
      build_std=() ship_flags=()
      raw_flags=(--config 'target.wasm32-unknown-unknown.rustflags=["--cfg", "getrandom_backend=\"custom\""]' --target-dir target/raw)
      echo "setup: wasm route stable: rustup's $(rustc -V) with its prebuilt std: the modules are larger (panic and formatting code a rebuilt std leaves out). For the shipped size, install rustup's nightly with its std source (no root: rustup toolchain install nightly --component rust-src), or as root on Debian 12, rustc-web and rust-web-src >= 1.96 (bookworm-security)" >&2
      return ;;
  esac
  build_std=(-Zbuild-std=std,panic_abort)
  # The shipped modules' std is built with panic=immediate-abort: a panic is
  # a bare trap, as it already ended the module, so no panic machinery,
  # location or message is linked (client module -8 KB gzipped, full module
  # -26 KB); and without the reference-types feature, so wasm-bindgen keeps
  # JS values in a JS array rather than an externref table with its shims in
  # the wasm (client page -0.6 KB gzipped, full module -1 KB). Route stable
  # links rustup's prebuilt std, which has neither.
  local flags='"-Zunstable-options", "-Cpanic=immediate-abort", "-Zlocation-detail=none", "-Ctarget-feature=-reference-types"'
  ship_flags=(--config "target.wasm32-unknown-unknown.rustflags=[$flags]" "${build_std[@]}" -Zbuild-std-features=optimize_for_size)
  raw_flags=(--config "target.wasm32-unknown-unknown.rustflags=[$flags, \"--cfg\", \"getrandom_backend=\\\"custom\\\"\"]"
    "${build_std[@]}" -Zbuild-std-features=optimize_for_size --target-dir target/raw)
  local toolchain
  toolchain=$(dirname "$(rustup which rustc)")
  export PATH="$toolchain:$PATH" RUSTC=$rustc RUSTC_BOOTSTRAP=1
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$toolchain/../lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/rust-lld"
  [ -x "$CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER" ] || { echo "setup: no rust-lld at $CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER" >&2; exit 1; }
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER
}

# Debian's nginx, with curl and openssl: cli/tests/proxy.rs runs the
# deployment recipe (examples/deploy/) behind it.
need_nginx() {
  if [ ! -x /usr/sbin/nginx ] || ! command -v curl >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq nginx-light curl openssl >/dev/null && apt-get clean
  fi
}

need_browser() {
  if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null && apt-get clean
  fi
}

# The collector's PostgreSQL tests (cli/tests/postgres.rs) start throwaway
# clusters of their own with Debian's server binaries
# (/usr/lib/postgresql/N/bin), as the user postgres when run as root; the
# package's own cluster is not used.
need_postgres() {
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq && apt-get install -y -qq postgresql >/dev/null && apt-get clean
    else
      echo "setup: the collector's tests need PostgreSQL's server (apt-get install postgresql, as root)" >&2
      exit 1
    fi
  fi
}
