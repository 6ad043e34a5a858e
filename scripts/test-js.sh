#!/usr/bin/env bash
# Tests the npm package as a user gets it: pack it (`npm run pack`, as the README
# says; a plain `npm pack` at the root must refuse), install the tarball into
# a scratch project, and run the JS tests there with node --test (in Node, in
# headless Chromium, through a Vite build), and the demo (www/) served by
# `localdp serve` in Chromium. Expects dist/ and the CLI built; the size test
# learns the wasm route dist/ was built by from target/dist.route.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
need_browser
root=$PWD
scratch=$root/target/js-scratch
rm -rf "$scratch" && mkdir -p "$scratch"
# The root's README is not the package's: npm pack (and npm publish) there refuse.
if refused=$(npm pack --dry-run 2>&1) || ! grep -q 'use npm run pack' <<<"$refused"; then
  echo "a plain npm pack at the root was not refused by the prepack guard: $refused" >&2
  exit 1
fi
# The documented command, as typed: npm runs the prepack guard before it.
tarball=$(basename "$(npm run pack -- "$scratch" | tail -n 1)")
cp -r tests/js/. "$scratch/"
cd "$scratch"
echo '{ "name": "localdp-scratch", "private": true, "type": "module" }' > package.json
npm install --no-audit --no-fund --silent "./$tarball"
# playwright-core and vite resolve from the repository's node_modules above.
LOCALDP_BUILT_ROUTE=$(cat "$root/target/dist.route" 2>/dev/null || true) \
  LOCALDP_CLI=$root/target/release/localdp LOCALDP_WWW=$root/www LOCALDP_FUZZ_CONFIGS=$root/fuzz/corpus/config \
  ARTIFACTS=$root/target/artifacts \
  node --test --test-timeout=300000 --test-reporter=spec ./*.test.mjs
