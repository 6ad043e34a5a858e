#!/usr/bin/env bash
# What a client module's bytes are: bash bench/wasm-parts.sh [FAMILY]
# [--no-inline] builds the client module of FAMILY (default grr; `every` for
# the module of every family) as scripts/build.sh does, but keeping its
# function names (wasm-opt -g), and prints twiggy's items grouped by what
# they do, as the table in docs/building.md. The names section itself is not
# counted: the total is about 2% above the shipped module's size before
# gzip, whose import and export names are one letter
# (scripts/short-names.mjs). wasm-opt inlines a function called once into
# its caller, so a part holds what only it calls (an export's shim holds
# the core's code behind it); --no-inline turns wasm-opt's inlining off, so
# that each function the compiler left counts where it is written (the
# total is then about 5% larger).
# Installs twiggy (crates.io, pinned) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
family=grr
inline=()
for arg in "$@"; do
  case $arg in
    --no-inline) inline=(--no-inline='*') ;;
    -*) echo "wasm-parts: unknown option $arg (usage: bash bench/wasm-parts.sh [FAMILY] [--no-inline])" >&2; exit 2 ;;
    *) family=$arg ;;
  esac
done
wasm_compiler
command -v twiggy >/dev/null || cargo install twiggy --version 0.8.0 --locked
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# GRR's module has no wasm-bindgen (scripts/build.sh): built as it is.
if [ "$family" = grr ]; then
  cargo build --quiet --profile wasm --target wasm32-unknown-unknown -p localdp-wasm-client --no-default-features --features heap,grr "${raw_flags[@]}"
  cp target/raw/wasm32-unknown-unknown/wasm/localdp_wasm_client.wasm "$work/localdp_wasm_client_bg.wasm"
else
  features=()
  [ "$family" = every ] || features=(--no-default-features --features "heap,$family")
  cargo build --quiet --profile wasm --target wasm32-unknown-unknown -p localdp-wasm-client "${features[@]}" "${ship_flags[@]}"
  wasm-bindgen --target web --keep-debug --out-dir "$work" target/wasm32-unknown-unknown/wasm/localdp_wasm_client.wasm
fi
node_modules/.bin/wasm-opt "${inline[@]}" -Oz -g --low-memory-unused --converge --strip-producers --strip-dwarf \
  "$work/localdp_wasm_client_bg.wasm" -o "$work/named.wasm"
twiggy top -n 1000000 --format csv "$work/named.wasm" | FAMILY=$family node -e '
// CSV: Name,ShallowSize,...; a quoted name doubles its quotes.
const rows = require("fs").readFileSync(0, "utf8").trim().split("\n").slice(1).map((line) => {
  const [, name, bytes] = line.match(/^("(?:[^"]|"")*"|[^,]*),(\d+),/);
  return [name.replace(/^"(.*)"$/, "$1").replace(/""/g, "\"").replace(/\[[0-9a-f]+\]/g, ""), Number(bytes)];
});
// First match wins; a path is read from its first crate::module, so
// `<localdp_core::client::Client as ...>::f` is the client.
const parts = [
  ["the family: its config reading and checks, randomizers, channel constants", /^<*localdp_core::(frequency|numeric|rappor|heavy|distribution|key_value|marginals|randomizer|privacy)\b/],
  ["reading configs (the generic readers: json, config, domain, number, names, protocol, settings)", /^<*localdp_core::(json|config|domain|number|names|protocol|settings)\b/],
  ["device state: the ledger (with its composition where the delta feature is on), memos, the stored state", /^<*(localdp_core::(client|accounting|bytes|metric)|libm)\b/],
  ["reports: the wire form, hashes, text", /^<*localdp_core::(report|hash|text)\b/],
  ["randomness and memo keys: rng, getrandom, HMAC-SHA256", /^<*(localdp_core::rng|getrandom|sha2|hmac|digest|block_buffer|crypto_common|generic_array|typenum)\b/],
  ["errors (codes and parameters; the messages are in messages.mjs)", /^<*localdp_core::error\b/],
  ["JS bindings: wasm-bindgen exports and shims (GRR: its plain exports, core host), the JS built-ins (core js), convert, the allocator", /^<*(localdp_wasm_client|localdp_core::(js|host)|wasm_bindgen)\b|wbindgen|__wbg|^clientcore_|^aggregator_|multivalue shim|^import |^export |^(client|load|protocol|id|state|epsilon|spent|randomize|free|out_ptr|out_len|alloc|input)$/],
  ["strings and tables (data)", /^data segment/],
  ["the Rust runtime (core, alloc, std) and the module sections", /./],
];
const sums = parts.map(() => 0);
let total = 0;
for (const [name, bytes] of rows) {
  if (/names" subsection|^producers/.test(name)) continue;
  sums[parts.findIndex(([, pattern]) => pattern.test(name))] += bytes;
  total += bytes;
}
console.log(`client module (${process.env.FAMILY}): ${total} bytes before gzip, names section not counted\n`);
console.log("| part | bytes | share |\n|---|--:|--:|");
parts.map(([name], i) => [name, sums[i]]).sort((a, b) => b[1] - a[1])
  .forEach(([name, bytes]) => console.log(`| ${name} | ${bytes.toLocaleString("en")} | ${(100 * bytes / total).toFixed(1)}% |`));
'
