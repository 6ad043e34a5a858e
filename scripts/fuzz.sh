#!/usr/bin/env bash
# Fuzz the parsers that face untrusted input (fuzz/fuzz_targets/*.rs):
#   report  Report::from_json + Aggregator::add_json on fixed configs
#   config  Metric::from_json, then randomize and aggregate one report
#   state   Aggregator::from_bytes on fixed configs (state shipped between
#           machines), of the bytes as given or sealed with their checksum
#   client_state  Client::new over a device's stored state bytes, as given
#           or sealed with a valid header
#   columns Aggregator::add_batch of columns cut from the bytes, add_json_lines
#   parquet ParquetFile (localdp aggregate FILE.parquet) of the bytes
#
#   bash scripts/fuzz.sh [SECONDS]     # default 30 seconds per target
#
# Needs a nightly toolchain (skipped, exit 0, if there is none) and
# cargo-fuzz (installed at the pinned version if missing). First replays
# every saved input in fuzz/regressions/TARGET/ (each must run without a
# panic and within REPLAY_TIMEOUT seconds), then fuzzes each target for
# SECONDS from the seeds in fuzz/corpus/TARGET/; new inputs go to
# fuzz/target/corpus/TARGET/ (untracked). Exits non-zero if any input
# crashes or hangs; libFuzzer saves a new one under fuzz/artifacts/TARGET/
# (move it to fuzz/regressions/TARGET/ to keep it).
set -euo pipefail

CARGO_FUZZ_VERSION=0.13.1
TARGETS=(report config state client_state columns parquet)
SECONDS_PER_TARGET=${1:-30}
REPLAY_TIMEOUT=${REPLAY_TIMEOUT:-10}   # seconds per regression input
UNIT_TIMEOUT=${UNIT_TIMEOUT:-10}       # seconds per input while fuzzing

case $SECONDS_PER_TARGET in
  '' | *[!0-9]*) echo "usage: bash scripts/fuzz.sh [SECONDS]" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz: no nightly toolchain (rustup toolchain list shows none); cargo fuzz needs one." >&2
  echo "fuzz: install one with 'rustup toolchain install nightly' to run the fuzzers."
  echo "fuzz: skipped"
  exit 0
fi

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi
echo "fuzz: $(cargo +nightly fuzz --version), $(cargo +nightly --version)" >&2

for target in "${TARGETS[@]}"; do
  cargo +nightly fuzz build "$target"
done

# 1. Saved crashes and hangs, one at a time so that every failure is listed.
failed=()
for target in "${TARGETS[@]}"; do
  dir=fuzz/regressions/$target
  [ -d "$dir" ] || continue
  while IFS= read -r -d '' input; do
    if cargo +nightly fuzz run "$target" "$input" -- -runs=0 -timeout="$REPLAY_TIMEOUT" \
      >"fuzz/target/replay.log" 2>&1; then
      echo "fuzz: ok     $input" >&2
    else
      echo "fuzz: FAILED $input" >&2
      grep -m1 -E 'panicked at|ALARM|ERROR: libFuzzer' -A1 fuzz/target/replay.log >&2 || tail -5 fuzz/target/replay.log >&2
      failed+=("$input")
    fi
  done < <(find "$dir" -type f ! -name '.*' -print0 | sort -z)
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} regression input(s) still fail:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi

# 2. Fuzz each target. The first corpus directory receives new inputs; the
#    seeds in fuzz/corpus/TARGET/ stay as they are.
for target in "${TARGETS[@]}"; do
  work=fuzz/target/corpus/$target
  mkdir -p "$work" "fuzz/corpus/$target"
  dict=()
  [ -f "fuzz/$target.dict" ] && dict=(-dict="fuzz/$target.dict")
  echo "fuzz: $target for ${SECONDS_PER_TARGET}s" >&2
  cargo +nightly fuzz run "$target" "$work" "fuzz/corpus/$target" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout="$UNIT_TIMEOUT" -print_final_stats=1 "${dict[@]}"
done
echo "fuzz: no crashes"
