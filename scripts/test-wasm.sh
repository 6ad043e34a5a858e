#!/usr/bin/env bash
# wasm-bindgen tests in Node and in headless Chromium: the modules' bindings
# and the core (wasm/full/tests/wasm.rs) and the client module's allocator
# (wasm/client/tests/heap.rs). A run
# that executes no test fails: the Chrome runner skips silently when it is not
# told to use a browser.
# They are compiled by the shipped modules' compiler, std included where its
# route rebuilds std (setup.sh's wasm_compiler), but keep panic=abort: a
# failing assertion prints its message.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
wasm_compiler
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner

run() {
  local label=$1 out
  shift
  if ! out=$(env "$@" cargo test -p localdp-wasm --test wasm -p localdp-wasm-client --test heap --target wasm32-unknown-unknown "${build_std[@]}" 2>&1); then
    echo "$out"
    echo "wasm tests failed ($label)" >&2
    exit 1
  fi
  echo "$out" | grep -E '^(test |running|test result)'
  if ! echo "$out" | grep -Eq 'test result: ok\. [1-9][0-9]* passed'; then
    echo "wasm tests ($label) executed no test" >&2
    exit 1
  fi
}

run node
# Chromium as root needs --no-sandbox; the runner reads webdriver.json here.
run chromium WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER="$(command -v chromedriver)"
