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

# run LABEL [VAR=VALUE...]: each package's tests, one cargo invocation per
# package so that each links its own features (one invocation would unify
# them: the full module's tests would run on the client's allocator).
run() {
  local label=$1 out tests
  shift
  for tests in "localdp-wasm --test wasm" "localdp-wasm-client --test heap"; do
    # shellcheck disable=SC2086
    if ! out=$(env "$@" cargo test -p $tests --target wasm32-unknown-unknown "${build_std[@]}" 2>&1); then
      echo "$out"
      echo "wasm tests failed ($label, $tests)" >&2
      exit 1
    fi
    echo "$out" | grep -E '^(test |running|test result)'
    if ! echo "$out" | grep -Eq 'test result: ok\. [1-9][0-9]* passed'; then
      echo "wasm tests ($label, $tests) executed no test" >&2
      exit 1
    fi
  done
}

run node
# Chromium as root needs --no-sandbox; the runner reads webdriver.json here.
run chromium WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER="$(command -v chromedriver)"
