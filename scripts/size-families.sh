#!/usr/bin/env bash
# What a page that needs one family loads from `localdp/client/web` (its JS
# files and a client module built with that family's cargo feature alone),
# beside the shipped client with every family: a measurement, not a test.
#   bash scripts/size-families.sh [FAMILY...]   (default: every family)
# Builds into target/size/FAMILY (scripts/build.sh with
# LOCALDP_CLIENT_FEATURES=FAMILY) and prints bytes raw and gzip -9, summed
# over the files as tests/js/size-budget.json counts them.
set -euo pipefail
cd "$(dirname "$0")/.."
families=("$@")
[ ${#families[@]} -gt 0 ] || families=(frequency numeric rappor heavy distribution key_value marginals)
printf '%-14s %10s %10s %12s %12s\n' family 'wasm raw' 'wasm gzip' 'page raw' 'page gzip'
mkdir -p target/size
for family in "${families[@]}"; do
  out=target/size/$family
  LOCALDP_CLIENT_FEATURES=$family bash scripts/build.sh "$out" > "$out.log" 2>&1 || { cat "$out.log" >&2; exit 1; }
  wasm=$(sed -n 's/^client module .*: \([0-9]*\) bytes raw, \([0-9]*\) bytes gzipped$/\1 \2/p' "$out.log")
  page=$(sed -n 's/^what localdp\/client\/web loads .*: \([0-9]*\) bytes raw, \([0-9]*\) bytes gzipped$/\1 \2/p' "$out.log")
  # shellcheck disable=SC2086
  printf '%-14s %10s %10s %12s %12s\n' "$family" $wasm $page
done
